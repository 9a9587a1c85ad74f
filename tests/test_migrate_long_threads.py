"""Copies of long threads: bounded memory, and Ctrl-C that acts at once.

A long tool-calling conversation's checkpoint ``k`` holds its first ``k`` messages, so a
copy that reads a thread whole holds memory quadratic in its length (a 3,200-checkpoint
thread took 5 GB to read, and the verify step 11 GB), and a Ctrl-C waited minutes for
that read to end. The copy reads, puts and verifies a few checkpoints at a time
(:data:`~langgraph_jsonl_checkpoint.migrate.endpoints.CHUNK`): its peak memory is a
multiple of one checkpoint's, whatever the thread's length, and a stop acts between two
chunks.

Memory is measured with ``tracemalloc`` against a bound derived from the thread (the
memory of reading its newest checkpoint alone), not against time.
"""

from __future__ import annotations

import gc
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.bounded import run_bounded
from tests.harness.long_thread import build_long_sqlite, build_long_store
from tests.harness.terminal import sigint_as_in_a_terminal

CLI = [sys.executable, "-m", "langgraph_jsonl_checkpoint"]
#: Turns of the memory tests' thread (five checkpoints each).
TURNS = 60
#: The copy's peak traced memory may be this many times that of reading the thread's
#: newest checkpoint alone. A copy holding a chunk of each end (8 + 8) stays near 13;
#: the whole thread held at once (300 checkpoints, 150 of the newest one's on average,
#: on each end in turn) measured 134.
BOUND = 40
#: Seconds from SIGINT to the process's end that count as "at once" (a chunk's read and
#: puts take well under one on this thread; reading the whole of it took 15).
STOP_SECONDS = 6


def url(path: Path) -> str:
    return "sqlite:///" + str(path)


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one thread of 300 checkpoints."""
    path = tmp_path_factory.mktemp("long") / "s"
    assert build_long_store(path, TURNS) == 5 * TURNS
    return path


def newest_checkpoint_memory(store: Path) -> int:
    """Peak traced bytes of reading the newest checkpoint of ``long`` (and indexing its log)."""
    with JsonlSaver(store, read_only=True) as saver:
        gc.collect()
        tracemalloc.start()
        try:
            tup = saver.get_tuple({"configurable": {"thread_id": "long"}})
            assert tup is not None and len(tup.checkpoint["channel_values"]["messages"]) > 3 * TURNS
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def peak_memory(copy: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        report = copy()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and report.verified and report.checkpoints == 5 * TURNS, report.to_json()  # type: ignore[attr-defined]
    return peak


@pytest.mark.parametrize("target", ["sqlite", "postgres"])
def test_a_long_thread_is_copied_holding_a_few_checkpoints_at_once(
    long_store: Path, tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    """Store -> SQLite and store -> PostgreSQL, verified: the peak is a small multiple of
    one checkpoint's memory, not the thread's (a copy reading it whole fails this)."""
    one = newest_checkpoint_memory(long_store)
    dst = url(tmp_path / "t.db") if target == "sqlite" else request.getfixturevalue("pg_url")
    peak = peak_memory(lambda: copy_threads(str(long_store), dst, workers=1, setup=True))
    assert peak < BOUND * one, f"peak {peak:,} bytes = {peak / one:.1f} x one checkpoint's {one:,}"


def test_a_long_thread_is_imported_from_sqlite_holding_a_few_checkpoints_at_once(
    long_store: Path, tmp_path: Path
) -> None:
    """SQLite -> store, verified (the source read whole, then the target: both bounded)."""
    one = newest_checkpoint_memory(long_store)
    assert copy_threads(str(long_store), url(tmp_path / "app.db")).ok
    peak = peak_memory(lambda: copy_threads(url(tmp_path / "app.db"), str(tmp_path / "s"), workers=1))
    assert peak < BOUND * one, f"peak {peak:,} bytes = {peak / one:.1f} x one checkpoint's {one:,}"


# -- Ctrl-C ------------------------------------------------------------------------------

#: Heavier turns for the Ctrl-C tests: 20 more tool results each, so that reading the
#: thread whole takes many seconds (about 15 from SQLite), as a long thread's does.
HEAVY = {"turns": 100, "burst": 20}
#: No thread done; the checkpoints the one under way had put, if any, said (it goes on from them).
INTERRUPTED = re.compile(r"interrupted after 0 of 1 threads \((\d+) checkpoint\(s\) copied(, \1 of them by 1 "
                         r"thread\(s\) stopped part-way)?\); run the same command again to continue\n")


def copied_part_way(err: str) -> int:
    """The checkpoints the interrupted copy says the thread under way had put."""
    match = INTERRUPTED.fullmatch(err)
    assert match, err
    assert (match.group(2) is None) == (match.group(1) == "0"), err
    return int(match.group(1))


@pytest.fixture(scope="module")
def heavy_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("heavy") / "app.db"
    assert build_long_sqlite(path, HEAVY["turns"], burst=HEAVY["burst"]) == 5 * HEAVY["turns"]
    return path


@pytest.fixture(scope="module")
def heavy_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("heavy-store") / "s"
    assert build_long_store(path, HEAVY["turns"], burst=HEAVY["burst"]) == 5 * HEAVY["turns"]
    return path


def interrupt_when(argv: list[str], started: Callable[[], bool]) -> tuple[float, int, str]:
    """Run the CLI, send SIGINT once ``started()`` holds; returns the seconds it took to
    end after the signal (failing if more than :data:`STOP_SECONDS`), its exit status
    and its stderr."""
    child = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not started() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.poll() is None, f"the copy ended before it could be interrupted: {child.stderr.read()!r}"  # type: ignore[union-attr]
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, err = child.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the copy did not stop within {STOP_SECONDS} s of SIGINT")
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out == ""
    return took, child.returncode, err


def rerun_completes(argv: list[str], total: int) -> None:
    rerun = run_bounded([*CLI, *argv, "--json"], seconds=300)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["ok"] and report["verified"] and report["threads"] == 1 and report["mismatches"] == []
    assert report["present"] + report["checkpoints"] == total


def test_ctrl_c_stops_an_import_of_a_long_thread_at_once_and_a_rerun_completes_it(
    heavy_db: Path, tmp_path: Path
) -> None:
    """SIGINT two seconds into the thread's copy (reading it whole took ~15 s; the
    store directory is made as the copy opens its ends, just before): the copy ends
    within seconds with the one line and exit status 130."""
    target = tmp_path / "s"
    argv = ["import", url(heavy_db), str(target)]
    opened: list[float] = []

    def started() -> bool:
        if not opened and target.exists():
            opened.append(time.monotonic())
        return bool(opened) and time.monotonic() - opened[0] > 2

    took, code, err = interrupt_when(argv, started)
    assert "Traceback" not in err and code == 130, err
    copied_part_way(err)
    rerun_completes(argv, 5 * HEAVY["turns"])


def test_ctrl_c_stops_an_export_of_a_long_thread_to_postgres_at_once_and_a_rerun_completes_it(
    heavy_store: Path, pg_url: str
) -> None:
    """SIGINT half-way through the puts into PostgreSQL: the same."""
    argv = ["export", str(heavy_store), pg_url, "--setup"]

    def copied() -> bool:
        with closing(psycopg.connect(pg_url)) as conn:
            if not conn.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
                return False
            return int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]) >= 40  # type: ignore[index]

    took, code, err = interrupt_when(argv, copied)
    assert "Traceback" not in err and code == 130, err
    assert copied_part_way(err) >= 40, err  # not a bare "0 of 1 threads": the work done is said
    rerun_completes(argv, 5 * HEAVY["turns"])


def test_ctrl_c_stops_a_copy_of_a_long_thread_to_sqlite_at_once_and_a_rerun_completes_it(
    heavy_store: Path, tmp_path: Path
) -> None:
    """SIGINT half-way through the puts into an SQLite file: the same."""
    db = tmp_path / "t.db"
    argv = ["copy", str(heavy_store), url(db)]

    def copied() -> bool:
        if not db.exists():
            return False
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                return int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]) >= 40
        except sqlite3.OperationalError:  # no table yet, or locked
            return False

    took, code, err = interrupt_when(argv, copied)
    assert "Traceback" not in err and code == 130, err
    assert copied_part_way(err) >= 40, err  # not a bare "0 of 1 threads": the work done is said
    rerun_completes(argv, 5 * HEAVY["turns"])
