"""The listing cache (``LISTING.idx``, ``inspection/listing.py``): ``langgraph-jsonl
threads`` gives the same rows with and without it, reads no log that did not change since
the last listing, and shows what other processes did since: appends, new and deleted
threads, a run holding a thread now. A damaged or forged cache is ignored and replaced; a
store where it cannot be written still lists."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk import files
from langgraph_jsonl_checkpoint.disk.paths import thread_file_stem
from langgraph_jsonl_checkpoint.disk.store import Store
from langgraph_jsonl_checkpoint.inspection import export_store, listing
from langgraph_jsonl_checkpoint.inspection.checkpoints import StoreReader
from langgraph_jsonl_checkpoint.inspection.threads import thread_summaries
from langgraph_jsonl_checkpoint.inspection.values import jsonable
from tests.harness.bounded import within
from tests.harness.cli_store import EXPECTED_STATUS, BuiltStore

CP = [f"1ef00000-0000-6000-8000-{i:012d}" for i in range(40)]


def put_checkpoints(store: Path, thread_id: str, n: int, start: int = 0) -> None:
    """``n`` checkpoints on ``thread_id`` (ids from ``CP[start]``), each after the last."""
    with JsonlSaver(store) as saver:
        cfg: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        latest = saver.get_tuple(cfg)
        if latest is not None:
            cfg = latest.config
        for i in range(start, start + n):
            version = f"{i + 1:012d}.0"
            cp = {"v": 4, "id": CP[i], "ts": f"2026-01-01T00:00:{i:02d}+00:00", "channel_values": {"m": [i]},
                  "channel_versions": {"m": version}, "versions_seen": {}, "updated_channels": ["m"]}
            cfg = saver.put(cfg, cp, {"step": i}, {"m": version})


class LogOpens:
    """Counts the thread logs opened through the disk layer's one door to the OS."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = files.os

        class Door:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def open(door, path: Any, *args: Any, **kwargs: Any) -> int:  # noqa: N805
                if str(path).endswith(".jsonl"):
                    self.paths.append(str(path))
                return real.open(path, *args, **kwargs)

        monkeypatch.setattr(files, "os", Door())


def listed(capsys: pytest.CaptureFixture[str], store: Path) -> tuple[int, list[dict[str, Any]], str]:
    """``threads --json`` and ``threads`` (the table) of ``store``: exit status, rows, table."""
    code = main(["threads", str(store), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert main(["threads", str(store)]) == code
    return code, rows, capsys.readouterr().out


def uncached(capsys: pytest.CaptureFixture[str], store: Path) -> tuple[int, list[dict[str, Any]], str]:
    """The listing without a cache (and the cache it leaves removed again)."""
    (store / listing.LISTING).unlink(missing_ok=True)
    out = listed(capsys, store)
    (store / listing.LISTING).unlink(missing_ok=True)
    return out


@pytest.fixture(autouse=True)
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs written a moment ago are cached too (the racy window has its own test)."""
    monkeypatch.setattr(listing, "RACY_SECONDS", 0.0)


@pytest.fixture
def varied(cli_store: BuiltStore, tmp_path: Path) -> Path:
    """A copy of the CLI store (done, waiting, interrupted, damaged threads), with a
    file that is not a log, a thread with no checkpoint left and a deleted thread."""
    store = tmp_path / "store"
    shutil.copytree(cli_store.path, store)
    (store / listing.LISTING).unlink(missing_ok=True)
    (store / "threads" / "stray-0000.jsonl").write_bytes(b"not a log\n")
    put_checkpoints(store, "gone", 2)
    with JsonlSaver(store) as saver:
        saver.delete_thread("gone")
    return store


def test_a_cached_listing_is_the_uncached_one_and_reads_no_log(
    varied: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = uncached(capsys, varied)
    statuses = {r["thread_id"]: r["status"] for r in before[1]}
    assert statuses.keys() == {*EXPECTED_STATUS, None}  # the stray file: no id
    assert statuses[None] == "damaged" and "gone" not in statuses
    assert {"done", "waiting", "interrupted", "damaged"} <= set(statuses.values())
    assert listed(capsys, varied) == before  # makes the cache
    assert listing.load(str(varied / listing.LISTING)).keys() == {
        os.path.basename(r["path"]) for r in before[1]}
    opens = LogOpens(monkeypatch)
    assert listed(capsys, varied) == before
    assert opens.paths == []
    with JsonlSaver(varied, read_only=True) as saver:  # the library's listing agrees
        by_path = sorted(before[1], key=lambda r: r["path"])
        assert [s.as_json() for s in thread_summaries(saver)] == by_path  # in file name order
    # --json prints its rows without jsonable's walk: the same bytes as with it
    assert main(["threads", str(varied), "--json"]) == before[0]
    printed = capsys.readouterr().out
    assert printed == orjson.dumps(jsonable(before[1]), option=orjson.OPT_INDENT_2).decode() + "\n"


def test_a_thread_another_process_wrote_since_is_shown_as_it_is_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    for tid in ("a", "b", "c"):
        put_checkpoints(store, tid, 3)
    _, rows, _ = listed(capsys, store)
    assert [r["checkpoints"] for r in rows] == [3, 3, 3]
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from tests.test_listing_cache import put_checkpoints
        from pathlib import Path
        put_checkpoints(Path({str(store)!r}), "b", 2, start=3)
        put_checkpoints(Path({str(store)!r}), "d", 1)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    opens = LogOpens(monkeypatch)
    now = listed(capsys, store)
    by_id = {r["thread_id"]: r for r in now[1]}
    assert {t: r["checkpoints"] for t, r in by_id.items()} == {"a": 3, "b": 5, "c": 3, "d": 1}
    assert by_id["b"]["latest"] == CP[4] and by_id["b"]["updated_at"] == "2026-01-01T00:00:04+00:00"
    assert {os.path.basename(p) for p in opens.paths} == {
        thread_file_stem(t) + ".jsonl" for t in ("b", "d")}  # only what changed was read
    monkeypatch.undo()
    assert uncached(capsys, store) == now


def test_a_deleted_thread_disappears_without_reading_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    for tid in ("a", "b"):
        put_checkpoints(store, tid, 2)
    listed(capsys, store)
    with JsonlSaver(store) as saver:
        saver.delete_thread("a")
    opens = LogOpens(monkeypatch)
    _, rows, _ = listed(capsys, store)
    assert [r["thread_id"] for r in rows] == ["b"] and opens.paths == []
    assert list(listing.load(str(store / listing.LISTING))) == [thread_file_stem("b") + ".jsonl"]


def test_a_live_run_shows_running_though_the_row_is_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    listed(capsys, store)
    run_file = store / "threads" / (thread_file_stem("a") + ".run")
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "run": "r-1", "since": "2026-01-01T00:00:00Z"}
    run_file.write_bytes(json.dumps(holder).encode())
    opens = LogOpens(monkeypatch)
    _, rows, table = listed(capsys, store)
    assert (rows[0]["status"], rows[0]["run"]) == ("running", holder)
    assert f"run by pid {os.getpid()}" in table and opens.paths == []
    monkeypatch.undo()
    assert uncached(capsys, store)[1] == rows
    run_file.write_bytes(b"")  # the run let go of the thread
    _, rows, _ = listed(capsys, store)
    assert (rows[0]["status"], rows[0]["run"]) == ("done", None)


@pytest.mark.parametrize("garbage", [
    b"",
    b"not json at all",
    b'{"t":"listing","v":1,"names":["x"]}\n',  # no checksum
    b"\x00" * 100,
])
def test_a_damaged_cache_is_ignored_and_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], garbage: bytes
) -> None:
    store = tmp_path / "store"
    for tid in ("a", "b"):
        put_checkpoints(store, tid, 2)
    expected = uncached(capsys, store)
    (store / listing.LISTING).write_bytes(garbage)
    assert listed(capsys, store) == expected
    assert len(listing.load(str(store / listing.LISTING))) == 2


def test_a_forged_row_with_a_valid_checksum_is_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache whose checksum holds but whose row has another shape (a hand edit, another
    release's) is not served: that row is read from the log again."""
    from langgraph_jsonl_checkpoint.disk import framing

    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    expected = uncached(capsys, store)
    listed(capsys, store)
    data = listing.load(str(store / listing.LISTING))
    ((name, (proof, row)),) = data.items()
    forged = {**row, "checkpoints": "many"}
    (store / listing.LISTING).write_bytes(framing.frame(
        {"t": "listing", "v": 1, "names": [name], "proofs": [proof], "rows": [forged]}))
    assert listed(capsys, store) == expected
    (store / listing.LISTING).write_bytes(framing.frame(
        {"t": "listing", "v": 99, "names": [name], "proofs": [proof], "rows": [row]}))
    assert listing.load(str(store / listing.LISTING)) == {}  # another version: ignored


def test_a_store_where_the_cache_cannot_be_written_still_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    expected = uncached(capsys, store)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(files, "replace_derived", refused)
    assert listed(capsys, store) == expected
    assert not (store / listing.LISTING).exists()
    shutil.rmtree(store / "tmp")  # a store copied without its temp folder: no place for the temp file
    monkeypatch.undo()
    assert listed(capsys, store) == expected


def test_a_log_changed_within_the_racy_window_is_read_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row is not kept while its log changed less than RACY_SECONDS before the listing
    (a change within one tick of the file system's clock could keep size and times)."""
    monkeypatch.setattr(listing, "RACY_SECONDS", 3600.0)
    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    listed(capsys, store)
    assert listing.load(str(store / listing.LISTING)) == {}
    opens = LogOpens(monkeypatch)
    listed(capsys, store)
    assert opens.paths  # read again


def test_the_cache_does_not_change_what_verify_and_copies_see(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cache is not a log: verify does not report it, and a copy of the store to
    another directory (whose inodes differ) reads every log again."""
    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    expected = uncached(capsys, store)
    listed(capsys, store)
    assert main(["verify", str(store)]) == 0
    assert "LISTING" not in capsys.readouterr().out
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    _, rows, _ = listed(capsys, copy)
    assert [{**r, "path": None} for r in rows] == [{**r, "path": None} for r in expected[1]]
    assert rows[0]["path"].startswith(str(copy))


LISTING_PROBE = """
import contextlib, io, json, sys
from langgraph_jsonl_checkpoint.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
rows = json.loads(out.getvalue())
heavy = ("langgraph.", "langchain_core", "langgraph_jsonl_checkpoint.saver.jsonl_saver")
saver = sorted(m for m in sys.modules if m.startswith(heavy))
print(json.dumps([code, {r["thread_id"]: [r["status"], r["checkpoints"], r["latest"]] for r in rows}, saver]))
"""


@pytest.mark.parametrize("limit", [[], ["--limit", "2"]])
def test_logs_read_for_a_listing_need_no_saver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: list[str]
) -> None:
    """A listing that must read logs (changed since the cache, or a first page) reads
    them without opening a saver, and decodes plain JSON cells without the value codec:
    threads that wait for nothing import neither the saver nor LangGraph nor LangChain
    (most of a second of a fresh process); the rows are what a saver reads (the
    cached-listing test compares every status with ``thread_summaries(saver)``)."""
    store = tmp_path / "store"
    for tid in ("a", "b"):
        put_checkpoints(store, tid, 2)
    listed(capsys, store)  # the cache
    put_checkpoints(store, "b", 1, start=2)
    argv = ["threads", str(store), "--json", *limit]
    run = subprocess.run([sys.executable, "-c", LISTING_PROBE, *argv],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    code, rows, imported = json.loads(run.stdout.strip().splitlines()[-1])
    assert imported == []
    assert rows == {"a": ["done", 2, CP[1]], "b": ["done", 3, CP[2]]}
    assert code == main(argv)
    assert {r["thread_id"]: [r["status"], r["checkpoints"], r["latest"]]
            for r in json.loads(capsys.readouterr().out)} == rows


def test_a_new_thread_a_run_holds_before_it_has_a_log_shows_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run with ``durability="exit"`` stores nothing until it ends: its new thread has a
    ``.run`` file and no log, and is listed running all the same (table, --json, the
    --status filter, a first page), never cached."""
    from tests.test_busy_threads import LiveRun

    store = tmp_path / "store"
    put_checkpoints(store, "other", 2)
    listed(capsys, store)  # a cache, with "other" only
    with JsonlSaver(store) as saver:
        run = LiveRun(saver, {"configurable": {"thread_id": "t1"}}, durability="exit")
        try:
            assert not (store / "threads" / (thread_file_stem("t1") + ".jsonl")).exists()
            code, rows, table = listed(capsys, store)
            assert code == 0 and [r["thread_id"] for r in rows] == ["other", "t1"]
            row = rows[1]
            assert (row["status"], row["checkpoints"], row["updated_at"]) == ("running", 0, None)
            assert (row["run"]["pid"], row["run"]["thread_id"]) == (os.getpid(), "t1")
            assert row["path"].endswith(thread_file_stem("t1") + ".jsonl")
            line = next(ln for ln in table.splitlines() if ln.startswith("t1"))
            assert "running" in line and f"run by pid {os.getpid()} since {row['run']['since']}" in line
            assert main(["threads", str(store), "--json", "--status", "running"]) == 0
            assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == ["t1"]
            assert main(["threads", str(store), "--json", "--limit", "5"]) == 0  # the first-page path
            assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == ["other", "t1"]
            assert list(listing.load(str(store / listing.LISTING))) == [thread_file_stem("other") + ".jsonl"]
        finally:
            run.finish()
    _, rows, _ = listed(capsys, store)
    assert [(r["thread_id"], r["status"], r["checkpoints"]) for r in rows] == [
        ("other", "done", 2), ("t1", "done", 1)]


def test_the_library_lists_a_thread_a_run_holds_before_it_has_a_log_as_the_cli_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``thread_summaries`` (the library's listing, and ``export_store``'s) gives the
    rows ``threads --json`` gives: a new thread a ``durability="exit"`` run holds
    before its first checkpoint is one of them, ``running`` with no checkpoint."""
    from tests.test_busy_threads import LiveRun

    store = tmp_path / "store"
    put_checkpoints(store, "other", 2)
    with JsonlSaver(store) as saver:
        run = LiveRun(saver, {"configurable": {"thread_id": "t 1/é"}}, durability="exit")
        try:
            with within(30, "threads"):
                code, rows, _ = uncached(capsys, store)
            assert code == 0 and [(r["thread_id"], r["status"]) for r in rows] == [
                ("other", "done"), ("t 1/é", "running")]
            with JsonlSaver(store, read_only=True) as reader, within(30, "thread_summaries"):
                assert [s.as_json() for s in thread_summaries(reader)] == rows
                written = export_store(reader, str(tmp_path / "out"), "jsonl")  # nothing of t1 to export
                assert [(w.thread_id, w.problem) for w in written] == [("other", None), (None, None)]
            plain = StoreReader(Store(str(store), read_only=True))  # the store alone, as the CLI reads
            with within(30, "thread_summaries"):
                assert [s.as_json() for s in thread_summaries(plain)] == rows
            plain.store.close()
        finally:
            run.finish()
    with JsonlSaver(store, read_only=True) as reader:
        assert [(s.thread_id, s.status, s.checkpoints) for s in thread_summaries(reader)] == [
            ("other", "done", 2), ("t 1/é", "done", 1)]


def test_a_thread_a_run_holds_whose_log_has_no_checkpoint_yet_shows_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under ``durability="exit"`` the replay adapter journals a run's tool calls in the
    thread's log before any checkpoint is stored: the log exists, with no checkpoint,
    and a run holds the thread. It is ``running`` (as before its first journal event),
    not ``empty``, in the CLI (cached or not, a first page) and the library alike; once
    the run ends, ``done``."""
    from tests.test_busy_threads import LiveRun

    store = tmp_path / "store"
    put_checkpoints(store, "other", 2)
    with JsonlSaver(store) as saver:
        run = LiveRun(saver, {"configurable": {"thread_id": "t1"}}, durability="exit")
        try:
            saver.record_tool_events("t1", [{"ev": "requested", "ns": "tools:x", "cp": CP[0], "call": "c1",
                                             "name": "send_email", "at": "2026-01-01T00:00:00+00:00"}])
            assert (store / "threads" / (thread_file_stem("t1") + ".jsonl")).exists()
            for _ in range(2):  # uncached, then from the cache
                with within(30, "threads"):
                    code, rows, table = listed(capsys, store)
                assert code == 0 and [(r["thread_id"], r["status"], r["checkpoints"]) for r in rows] == [
                    ("other", "done", 2), ("t1", "running", 0)]
                assert rows[1]["run"]["pid"] == os.getpid()
                line = next(ln for ln in table.splitlines() if ln.startswith("t1"))
                assert f"run by pid {os.getpid()}" in line
            assert main(["threads", str(store), "--json", "--limit", "5"]) == 0  # the first-page path
            assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["done", "running"]
            with JsonlSaver(store, read_only=True) as reader:
                assert [s.as_json() for s in thread_summaries(reader)] == rows
        finally:
            run.finish()
    _, rows, _ = listed(capsys, store)
    assert [(r["thread_id"], r["status"]) for r in rows] == [("other", "done"), ("t1", "done")]


def test_a_holder_record_without_a_thread_id_is_still_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older release's record (no ``thread_id``) still marks a thread with a log
    running; without a log it names no thread and is left out, never an error."""
    store = tmp_path / "store"
    put_checkpoints(store, "a", 2)
    old = {"pid": os.getpid(), "host": socket.gethostname(), "run": "r-1",
           "since": "2026-01-01T00:00:00+00:00"}
    (store / "threads" / (thread_file_stem("a") + ".run")).write_bytes(json.dumps(old).encode())
    (store / "threads" / (thread_file_stem("b") + ".run")).write_bytes(json.dumps(old).encode())
    code, rows, _ = listed(capsys, store)
    assert code == 0 and [(r["thread_id"], r["status"], r["run"]) for r in rows] == [("a", "running", old)]
    assert main(["threads", str(store), "--json", "--limit", "5"]) == 0
    assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == ["a"]


def test_a_running_thread_with_no_checkpoint_yet_is_recent_in_since_and_sort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A thread a run holds before its first checkpoint has no time of its own; ``threads
    --since 1h`` left it out and ``--sort updated`` put it last, as if it were the
    oldest. Its run's start is its time: it is listed as recent, and first."""
    from tests.test_busy_threads import LiveRun

    store = tmp_path / "store"
    put_checkpoints(store, "old", 1)
    old_log = next((store / "threads").glob("old-*.jsonl"))
    os.utime(old_log, (1_600_000_000, 1_600_000_000))
    with JsonlSaver(store) as saver:
        run = LiveRun(saver, {"configurable": {"thread_id": "new"}}, durability="exit")
        try:
            for args in (["--since", "1h"], ["--sort", "updated"], ["--sort", "created"]):
                with within(30, "threads"):
                    code = main(["threads", str(store), "--json", *args])
                ids = [r["thread_id"] for r in json.loads(capsys.readouterr().out)]
                assert code == 0 and ids[0] == "new", (args, ids)
        finally:
            run.finish()
