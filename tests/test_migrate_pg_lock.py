"""A PostgreSQL target another session holds locked (an app's transaction, a migration's
ALTER TABLE, a LOCK TABLE): ``export`` waited in silence for as long as it was held, and
could not be told from a hang. It says that it waits, and who holds the lock, then goes
on once it is let go."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.migration import build_sqlite_app

CLI = [sys.executable, "-m", "langgraph_jsonl_checkpoint"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    app_db = build_sqlite_app(tmp_path_factory.mktemp("app") / "app.db")
    path = tmp_path_factory.mktemp("store") / "s"
    assert copy_threads("sqlite:///" + str(app_db), str(path)).ok
    return path


def test_an_export_into_a_locked_table_says_it_waits_and_who_holds_it(store: Path, pg_url: str) -> None:
    assert copy_threads(str(store), pg_url, threads=["counter"], setup=True).ok  # the tables
    holder = psycopg.connect(pg_url)  # a transaction: the lock is held until it ends
    try:
        holder.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")
        pid = holder.info.backend_pid
        child = subprocess.Popen([*CLI, "export", str(store), pg_url, "--threads", "agent"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        stderr = child.stderr
        reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
        reader.start()
        try:
            try:
                first = lines.get(timeout=60)  # the start of Python and the CLI on a loaded machine
            except queue.Empty:
                first = ""
            running = child.poll() is None
            holder.rollback()
            out, _ = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        reader.join(timeout=30)
    finally:
        holder.close()
    assert running, first
    assert "waiting for a lock" in first and str(pid) in first, first
    assert child.returncode == 0, first + out
    assert "copied 1 thread(s)" in out, out
