"""The replay journal in an app's own store made by an older langgraph-checkpoint-sqlite or
-postgres: ``SqliteStore``'s / ``PostgresStore``'s ``store`` table without the TTL columns
(``expires_at``, ``ttl_minutes``) later versions' migrations add, holding journal items.

Read, it needs no TTL column: an import copies the journal from it, changing nothing.
Written (an export into it): ``SqliteStore`` runs its migrations itself on first use, as
in the app; ``PostgresStore`` cannot put an item there, so the copy stops before copying
anything, naming the migrations and the store's own ``setup()`` to run (exit status 2),
and its dry run says the same. Once they have run (the command given, or ``--setup``), the
copy goes through.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.migration import cfg
from tests.harness.state_graphs import build_counter_graph

#: What an older release's ``store`` table looks like: the TTL migrations not run.
OLDER = {
    "sqlite": ("DROP INDEX idx_store_expires_at; ALTER TABLE store DROP COLUMN ttl_minutes; "
               "ALTER TABLE store DROP COLUMN expires_at; DELETE FROM store_migrations WHERE v >= 2"),
    "postgres": ("ALTER TABLE store DROP COLUMN expires_at CASCADE, DROP COLUMN ttl_minutes CASCADE; "
                 "DELETE FROM store_migrations WHERE v >= 2"),
}


@pytest.fixture
def journaled(tmp_path: Path) -> Path:
    """A store whose thread ``t1`` journals a started ``send_email`` call (two events)."""
    with JsonlSaver(tmp_path / "s") as saver:
        build_counter_graph().compile(checkpointer=saver).invoke({"n": 1}, cfg("t1"))
        cid = saver.get_tuple(cfg("t1")).config["configurable"]["checkpoint_id"]
        saver.record_tool_events("t1", [
            {"ev": "requested", "ns": "", "cp": cid, "call": "k1", "at": "2026-01-01T00:00:00+00:00",
             "name": "send_email", "args": saver.codec.encode({"to": "bob"}, "args")},
            {"ev": "started", "ns": "", "cp": cid, "call": "k1", "at": "2026-01-01T00:00:01+00:00",
             "proc": {"host": "gone", "pid": 1}},
        ])
    return tmp_path / "s"


def _target(kind: str, tmp_path: Path, pg_url: str) -> str:
    return "sqlite:///" + str(tmp_path / "app.db") if kind == "sqlite" else pg_url


def _make_older(kind: str, target: str, tmp_path: Path) -> None:
    if kind == "sqlite":
        with closing(sqlite3.connect(tmp_path / "app.db")) as conn, conn:
            conn.executescript(OLDER["sqlite"])
    else:
        with psycopg.connect(target, autocommit=True) as conn:
            for statement in OLDER["postgres"].split("; "):
                conn.execute(statement)


def _checkpoints(kind: str, target: str, tmp_path: Path) -> int:
    if kind == "sqlite":
        with closing(sqlite3.connect(tmp_path / "app.db")) as conn:
            return int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0])
    with psycopg.connect(target) as conn:
        row = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_import_reads_the_journal_of_an_older_store(
    journaled: Path, tmp_path: Path, pg_url: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every thread was reported "copy stopped: OperationalError: no such column:
    expires_at" (PostgreSQL: "UndefinedColumn: column s.ttl_minutes does not exist"),
    exit 1, and nothing named a way forward."""
    source = _target(kind, tmp_path, pg_url)
    assert main(["export", str(journaled), source, "--setup"]) == 0, capsys.readouterr().err
    _make_older(kind, source, tmp_path)
    before = (tmp_path / "app.db").read_bytes() if kind == "sqlite" else None
    capsys.readouterr()
    assert main(["import", source, str(tmp_path / "back"), "--json"]) == 0, capsys.readouterr()
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["problems"] == [] and report["journal_records"] == 2, report
    with JsonlSaver(tmp_path / "back", read_only=True) as back:
        assert [(r.key.call_id, r.state) for r in back.tool_calls("t1")] == [("k1", "started")]
    if before is not None:
        assert (tmp_path / "app.db").read_bytes() == before


def test_an_export_into_an_older_sqlitestore_goes_through_and_so_does_its_dry_run(
    journaled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SqliteStore runs its own migrations on first use (as the app's does): the copy goes
    through. Its dry run (the store opened read-only, no migration run) reported every
    thread "copy stopped: OperationalError: no such column: expires_at"."""
    target = _target("sqlite", tmp_path, "")
    assert main(["export", str(journaled), target, "--threads", "none-such", "--setup"]) == 1
    _make_older("sqlite", target, tmp_path)
    capsys.readouterr()
    before = (tmp_path / "app.db").read_bytes()
    assert main(["export", str(journaled), target, "--dry-run", "--json"]) == 0, capsys.readouterr()
    dry = json.loads(capsys.readouterr().out)
    assert dry["ok"] and dry["problems"] == [] and dry["journal_records"] == 2, dry
    assert (tmp_path / "app.db").read_bytes() == before
    assert main(["export", str(journaled), target, "--json"]) == 0, capsys.readouterr()
    real = json.loads(capsys.readouterr().out)
    assert real["ok"] and real["journal_records"] == 2 and real["checkpoints"] == dry["checkpoints"], real


def test_an_export_into_an_older_postgresstore_names_the_migration_and_the_command(
    journaled: Path, tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every thread failed ("UndefinedColumn: column ttl_minutes ... does not exist") and
    nothing named what to do. It stops before copying anything, the dry run too, naming the
    migrations the table lacks and the store's own setup() to run; that command works."""
    assert main(["export", str(journaled), pg_url, "--setup", "--threads", "none-such"]) == 1
    _make_older("postgres", pg_url, tmp_path)
    capsys.readouterr()
    for dry in ([], ["--dry-run"]):
        assert main(["export", str(journaled), pg_url, *dry]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "PROBLEM" not in err, err
        assert err.startswith(f"error: {pg_url}: "), err
        assert "PostgresStore's migration(s) 2 to 3" in err and "expires_at, ttl_minutes" in err, err
        assert "--setup" in err and "Nothing was copied" in err, err
        assert _checkpoints("postgres", pg_url, tmp_path) == 0
    command = re.search(r'python -c "[^"]+"', err)
    assert command is not None, err
    done = subprocess.run(command.group(0).replace("python", sys.executable, 1), shell=True,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert main(["export", str(journaled), pg_url, "--json"]) == 0, capsys.readouterr()
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["journal_records"] == 2 and report["checkpoints"] > 0, report


def test_an_export_with_setup_into_an_older_postgresstore_runs_its_migrations(
    journaled: Path, tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(journaled), pg_url, "--setup", "--threads", "none-such"]) == 1
    _make_older("postgres", pg_url, tmp_path)
    capsys.readouterr()
    assert main(["export", str(journaled), pg_url, "--setup", "--json"]) == 0, capsys.readouterr()
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["journal_records"] == 2, report
    assert main(["import", pg_url, str(tmp_path / "back")]) == 0
    with JsonlSaver(tmp_path / "back", read_only=True) as back:
        assert [(r.key.call_id, r.state) for r in back.tool_calls("t1")] == [("k1", "started")]


def test_an_export_of_no_journal_into_an_older_postgresstore_is_not_stopped(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a journal to write needs the migrations: threads without one are copied."""
    with JsonlSaver(tmp_path / "plain") as saver:
        build_counter_graph().compile(checkpointer=saver).invoke({"n": 1}, cfg("t1"))
    assert main(["export", str(tmp_path / "plain"), pg_url, "--setup", "--threads", "none-such"]) == 1
    _make_older("postgres", pg_url, tmp_path)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "plain"), pg_url, "--dry-run"]) == 0, capsys.readouterr()
    assert main(["export", str(tmp_path / "plain"), pg_url]) == 0, capsys.readouterr()
    assert _checkpoints("postgres", pg_url, tmp_path) > 0
