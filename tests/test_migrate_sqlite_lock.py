"""An SQLite file another process holds locked (an app in a write transaction): a
``copy``/``export`` into it says at once that it waits for that lock, and for how long;
then goes on when it is let go, or fails as before when it is not."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.migration import build_sqlite_app, run_cli_while_held

CLI = [sys.executable, "-m", "langgraph_jsonl_checkpoint"]


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite_app(tmp_path_factory.mktemp("app") / "app.db")


@pytest.fixture(scope="module")
def store(app_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "s"
    assert copy_threads("sqlite:///" + str(app_db), str(path)).ok
    return path


def _saver_file(path: Path) -> Path:
    """A SqliteSaver file with its tables and no thread (write-ahead log mode, as SqliteSaver
    makes it): a copy into it writes every thread."""
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        SqliteSaver(conn).setup()
    return path


def _copy_while_locked(
    argv: list[str], target: Path, *, let_go: bool, writing: tuple[str, ...] = ()
) -> tuple[int, str, str, bool]:
    """Run ``langgraph-jsonl argv`` while this process holds ``target`` under BEGIN
    EXCLUSIVE, having run the ``writing`` statements in it (uncommitted, with a cache so
    small that they reach the file); let it go (roll back) once the CLI has said
    something on stderr (if ``let_go``).
    Returns the exit status, the first stderr line, the rest of stderr, and whether
    the CLI was still running when it said that line."""
    holder = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    with closing(holder):
        holder.execute("PRAGMA cache_size = 1")
        holder.execute("BEGIN EXCLUSIVE")
        for statement in writing:
            holder.execute(statement)
        run = run_cli_while_held(argv, (lambda: holder.execute("ROLLBACK")) if let_go else (lambda: None))
    return run.status, run.first, run.rest, run.running


@pytest.mark.parametrize("command", ["copy", "export"])
def test_a_locked_sqlite_target_is_said_to_be_waited_for_then_copied_once_let_go(
    command: str, store: Path, tmp_path: Path
) -> None:
    # It waited about 5 seconds a thread in silence: a person could not tell a wait from a hang.
    target = _saver_file(tmp_path / "app.db")
    argv = [command, str(store), "sqlite:///" + str(target)]
    status, first, rest, running = _copy_while_locked(argv, target, let_go=True)
    assert "waiting for the lock on the SQLite file" in first and str(target) in first, first
    assert "another process holds" in first and "up to 5 seconds" in first, first
    assert running  # said while it waited, not when it gave up
    assert status == 0, first + rest  # went on once the lock was let go
    assert "waiting" not in rest and "PROBLEM" not in rest, rest  # said once


@pytest.mark.parametrize("journal", ["rollback", "wal"])
def test_a_sqlite_target_locked_throughout_fails_as_before_after_saying_it_waits(
    journal: str, store: Path, tmp_path: Path
) -> None:
    """The wait is said once, then the copy fails as it did: a file in rollback-journal
    mode, which an exclusive lock keeps readers out of too, cannot even be opened; a
    SqliteSaver file (write-ahead log) opens, and each thread's write gives up."""
    if journal == "wal":
        target = _saver_file(tmp_path / "app.db")
    else:
        target = tmp_path / "other.db"
        with closing(sqlite3.connect(target)) as conn:
            conn.execute("CREATE TABLE checkpoints (thread_id TEXT)")
            conn.commit()
    argv = ["copy", str(store), "sqlite:///" + str(target), "--threads", "agent", "counter"]
    status, first, rest, running = _copy_while_locked(argv, target, let_go=False)
    assert running
    assert "waiting for the lock on the SQLite file" in first and str(target) in first, first
    assert "waiting" not in rest, rest  # said once, not for each thread
    if journal == "rollback":
        assert status == 2, first + rest
        assert rest.startswith(f"error: sqlite:///{target}: cannot open the SQLite file {target} "
                               "(database is locked)"), rest
        assert rest.count("\n") == 1, rest
        # What to do about a lock, not about a directory that cannot be written.
        assert "Another process holds it locked" in rest and "Name a file" not in rest, rest
    else:
        assert status == 1, first + rest
        for thread in ("agent", "counter"):
            problem = (f"PROBLEM thread {thread}: copy to sqlite:///{target} stopped: OperationalError: "
                       "database is locked (another process held the SQLite file locked for 5 seconds")
            assert problem in rest, rest


def test_a_sqlite_source_an_app_is_writing_in_rollback_mode_is_waited_for_not_read_half_written(
    app_db: Path, tmp_path: Path
) -> None:
    """A source file in rollback-journal mode that an app holds in a write transaction
    (its changes already in the file, the old pages in its -journal) is waited for as
    SQLite's locks say, not read as it is at that moment: the import read the app's
    uncommitted, later rolled back deletion of a thread and left that thread out."""
    source = tmp_path / "rollback.db"
    source.write_bytes(app_db.read_bytes())
    with closing(sqlite3.connect(source)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    target = tmp_path / "store"
    writing = tuple(f"DELETE FROM {table} WHERE thread_id = 'agent'" for table in ("writes", "checkpoints"))
    argv = ["import", "sqlite:///" + str(source), str(target), "--json"]
    status, first, rest, running = _copy_while_locked(argv, source, let_go=True, writing=writing)
    assert running, first + rest
    assert "waiting for the lock on the SQLite file" in first and str(source) in first, first + rest
    assert status == 0, first + rest
    with closing(sqlite3.connect(source)) as conn:  # the app rolled back: every thread is there
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
    assert "agent" in threads
    listed = {p.name for p in (target / "threads").iterdir()}
    assert any("agent" in name for name in listed), listed


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_sqlite_source_of_an_older_sqlitesaver_without_task_path_is_read_in_either_mode(
    app_db: Path, tmp_path: Path, journal: str
) -> None:
    """A file an older langgraph-checkpoint-sqlite wrote (its writes table without
    task_path), in write-ahead log or rollback-journal mode, is read as SqliteSaver reads
    it: without the column (its setup() would add it, which a read-only copy does not)."""
    source = tmp_path / "older.db"
    source.write_bytes(app_db.read_bytes())
    with closing(sqlite3.connect(source)) as conn:
        conn.execute("ALTER TABLE writes DROP COLUMN task_path")
        assert conn.execute(f"PRAGMA journal_mode = {journal}").fetchone() == (journal,)
        conn.commit()
        threads = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
    report = copy_threads("sqlite:///" + str(source), str(tmp_path / "store"))
    assert report.ok and report.verified, report.to_json()["problems"]
    assert len(report.threads) == threads > 1 and report.writes > 0


#: An app killed inside a write transaction of the SQLite file ``sys.argv[1]``: its
#: changes half in the file, the old pages in its hot ``-journal``.
_CRASHING_APP = ("import os, sqlite3, sys\n"
                 "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                 "c.execute('PRAGMA cache_size = 1'); c.execute('BEGIN EXCLUSIVE')\n"
                 "c.execute(\"DELETE FROM checkpoints WHERE thread_id = 'agent'\")\n"
                 "os._exit(9)\n")


def _rollback_mode_app(source: Path) -> str:
    """Put ``source`` in rollback-journal mode; the script of an app that crashes writing it."""
    with closing(sqlite3.connect(source)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    return _CRASHING_APP


def test_a_sqlite_source_with_a_crashed_apps_hot_journal_says_so_and_what_to_do(
    app_db: Path, tmp_path: Path
) -> None:
    """An app killed in a write transaction (rollback-journal mode) leaves its changes half in
    the file and the old pages in its -journal, which the next writer rolls back. The copy
    opens the file read-only, so cannot: it said "attempt to write a readonly database.
    Check the path and that the file can be read", which is neither what is wrong nor the fix."""
    source = tmp_path / "crashed.db"
    source.write_bytes(app_db.read_bytes())
    crash = _rollback_mode_app(source)
    subprocess.run([sys.executable, "-c", crash, str(source)], timeout=60)
    assert (tmp_path / "crashed.db-journal").exists()
    done = subprocess.run([*CLI, "import", "sqlite:///" + str(source), str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"{source}-journal" in done.stderr, done.stderr
    assert "did not finish" in done.stderr and "roll" in done.stderr, done.stderr
    assert "Check the path" not in done.stderr, done.stderr
    assert not (tmp_path / "store").exists()
    # The command the error gives rolls it back; then the import copies every thread.
    fix = done.stderr.split("`")[1]
    subprocess.run(fix, shell=True, check=True, timeout=60, cwd=tmp_path)
    assert not (tmp_path / "crashed.db-journal").exists()
    again = subprocess.run([*CLI, "import", "sqlite:///" + str(source), str(tmp_path / "store")],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "verified" in again.stdout, again.stdout
    assert any("agent" in p.name for p in (tmp_path / "store" / "threads").iterdir())


def test_a_hot_journal_left_mid_import_is_said_for_each_remaining_thread_with_what_to_do(
    app_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app that crashes while its file is imported (rollback-journal mode) leaves a hot
    journal; each thread read after it failed with a bare "OperationalError: attempt to
    write a readonly database", without what a fresh import says of it: which journal,
    why the copy cannot roll it back, and the command that does."""
    source = tmp_path / "crashing.db"
    source.write_bytes(app_db.read_bytes())
    crash = _rollback_mode_app(source)

    from langgraph_jsonl_checkpoint.migrate import copy as copy_module

    copied = []
    copy_thread = copy_module.copy_thread

    def crash_after_the_first(*args, **kwargs):  # the app crashes once the first thread is copied
        if copied:
            died = subprocess.run([sys.executable, "-c", crash, str(source)], timeout=60,
                                  capture_output=True, text=True)
            assert (tmp_path / "crashing.db-journal").exists(), died.stderr
        copied.append(args[2])
        return copy_thread(*args, **kwargs)

    monkeypatch.setattr(copy_module, "copy_thread", crash_after_the_first)
    report = copy_threads("sqlite:///" + str(source), str(tmp_path / "store"), workers=1)
    assert len(report.problems) == len(report.threads) - 1 > 0, report.threads
    for done in report.problems:
        assert f"{source}-journal" in done.problem, done.problem
        assert "did not finish" in done.problem and "PRAGMA quick_check" in done.problem, done.problem
