"""A PostgreSQL target another session holds locked (an app's transaction, a migration's
ALTER TABLE, a LOCK TABLE): ``export`` waited in silence for as long as it was held, and
could not be told from a hang. It says that it waits, and who holds the lock, then goes
on once it is let go."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.migration import build_sqlite_app, run_cli_while_held

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
        run = run_cli_while_held(["export", str(store), pg_url, "--threads", "agent"], holder.rollback)
        first, running, out = run.first, run.running, run.out
    finally:
        holder.close()
    assert running, first
    assert "waiting for a lock" in first and str(pid) in first, first
    assert run.status == 0, first + run.rest + out
    assert "copied 1 thread(s)" in out, out
