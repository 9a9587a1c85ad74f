"""``langgraph-jsonl import``, ``copy`` and ``export postgresql://...``: reports, subsets,
dry runs, exit codes, errors, a copy SIGKILLed half-way then run again, and a source
store left byte for byte as it was."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.bounded import run_bounded
from tests.harness.migration import GRAPHS, build_sqlite_app, cfg, record_uncertain_call
from tests.harness.state_graphs import build_counter_graph
from tests.harness.terminal import sigint_as_in_a_terminal

CLI = [sys.executable, "-m", "langgraph_jsonl_checkpoint"]


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite_app(tmp_path_factory.mktemp("app") / "app.db")


@pytest.fixture(scope="module")
def many_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 threads of a small graph, three runs each (about 2,000 checkpoints)."""
    path = tmp_path_factory.mktemp("many") / "many.db"
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn, conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        for i in range(150):
            for n in range(3):
                graph.invoke({"n": n}, cfg(f"user-{i:03d}"))
    return path


@pytest.fixture(scope="module")
def many_store(many_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 150 threads of ``many_db`` in a store."""
    store = tmp_path_factory.mktemp("many-store") / "s"
    assert copy_threads(url(many_db), str(store)).ok
    return store


def url(path: Path) -> str:
    return "sqlite:///" + str(path)


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_import_prints_a_report_and_its_json(app_db: Path, tmp_path: Path, capsys) -> None:
    assert main(["import", url(app_db), str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert f"copied {len(GRAPHS)} thread(s) from {url(app_db)} to {tmp_path / 's'}" in out
    assert "verified: every copied thread's history equals the source's" in out
    code, report = run_json(["import", url(app_db), str(tmp_path / "t")], capsys)
    assert code == 0 and report["ok"] and report["threads"] == len(GRAPHS) and report["verified"]
    assert report["checkpoints"] > 0 and report["writes"] > 0 and report["bytes"] > 0
    assert report["seconds"] >= 0
    assert {t["thread_id"] for t in report["per_thread"]} == set(GRAPHS)
    assert set(report) >= {"journal_records", "problems", "mismatches", "present", "dry_run"}


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("as_url", [True, False])
def test_import_with_a_database_as_the_store_is_refused_as_swapped_operands(
    app_db: Path, many_store: Path, tmp_path: Path, capsys, dry_run: bool, as_url: bool
) -> None:
    """``import STORE app.db`` (the operands swapped): the store's threads were copied
    into the app's SQLite database (the dry run promised it too), where ``import`` is
    to bring threads into a store. It is refused before anything is read or written,
    naming the order and the command that copies out of a store."""
    db = tmp_path / "app.db"
    db.write_bytes(app_db.read_bytes())
    before = db.read_bytes()
    target = url(db) if as_url else str(db)
    code = main(["import", str(many_store), target, *(["--dry-run"] if dry_run else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert db.read_bytes() == before
    assert "imports into a store directory" in err, err
    assert f"langgraph-jsonl import {target} {many_store}" in err, err
    assert "langgraph-jsonl copy" in err, err


def test_import_into_the_store_named_by_the_environment(
    app_db: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "env"))
    code, report = run_json(["import", url(app_db), "--threads", "review", "nested"], capsys)
    assert code == 0 and [t["thread_id"] for t in report["per_thread"]] == ["nested", "review"]
    with JsonlSaver(tmp_path / "env") as saver:
        assert sorted(saver.store.thread_ids()) == ["nested", "review"]


def test_threads_glob_and_dry_run(app_db: Path, tmp_path: Path, capsys) -> None:
    code, dry = run_json(["copy", url(app_db), str(tmp_path / "s"), "--threads", "?e*", "--dry-run"], capsys)
    assert code == 0 and dry["dry_run"] and dry["bytes"] is None
    assert [t["thread_id"] for t in dry["per_thread"]] == ["delta", "nested", "review"]
    assert not (tmp_path / "s").exists()  # nothing created
    code, real = run_json(["copy", url(app_db), str(tmp_path / "s"), "--threads", "?e*"], capsys)
    assert code == 0 and (real["checkpoints"], real["writes"]) == (dry["checkpoints"], dry["writes"])


def test_a_difference_after_the_copy_exits_1_and_is_listed(app_db: Path, tmp_path: Path, capsys) -> None:
    assert main(["import", url(app_db), str(tmp_path / "s")]) == 0
    with JsonlSaver(tmp_path / "s") as saver:
        older = list(saver.list(cfg("counter")))[1]  # not the newest: no run adds writes to it
        saver.put_writes(older.config, [("n", 7)], "task-x", "~x")
    capsys.readouterr()
    assert main(["import", url(app_db), str(tmp_path / "s")]) == 1
    captured = capsys.readouterr()
    assert "DIFFERS thread counter: checkpoint " in captured.err and "pending write(s)" in captured.err
    code, report = run_json(["import", url(app_db), str(tmp_path / "s")], capsys)
    assert code == 1 and not report["ok"] and report["mismatches"][0]["thread_id"] == "counter"


def test_export_to_postgresql_and_the_transcript_export_beside_it(app_db: Path, tmp_path: Path, pg_url: str,
                                                                 capsys) -> None:
    store = str(tmp_path / "s")
    assert main(["import", url(app_db), store]) == 0
    capsys.readouterr()
    assert main(["export", store, pg_url]) == 2
    assert "--setup" in capsys.readouterr().err
    code, report = run_json(["export", store, pg_url, "--setup"], capsys)
    assert code == 0 and report["ok"] and report["threads"] == len(GRAPHS)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0] == len(GRAPHS)
    # the transcript export is unchanged, and refuses the copy's options
    assert main(["export", store, "review", "--format", "md"]) == 0
    assert "tea" in capsys.readouterr().out
    assert main(["export", store, "review", "--dry-run"]) == 2
    assert "for an export to a database" in capsys.readouterr().err
    assert main(["export", store, pg_url, "--all", str(tmp_path / "x")]) == 2


def test_clear_errors(app_db: Path, tmp_path: Path, capsys) -> None:
    assert main(["copy", url(app_db), "mysql://db/app"]) == 2
    assert "unknown kind of target URL (mysql://)" in capsys.readouterr().err
    assert main(["copy", url(app_db), "postgresql://postgres@127.0.0.1:1/x"]) == 2
    err = capsys.readouterr().err  # psycopg's first line (its own question dropped), then ours
    assert re.fullmatch(r"error: cannot connect to PostgreSQL at postgresql://postgres@127\.0\.0\.1:1/x: "
                        r"connection failed: .*port 1 failed: Connection refused\. Is the server running "
                        r"and the URL right \(postgresql://user@host:port/database\)\?\n", err), err
    assert main(["import", url(tmp_path / "missing.db"), str(tmp_path / "s")]) == 2
    assert "no such SQLite file" in capsys.readouterr().err


def test_a_database_that_does_not_exist_says_to_create_it(app_db: Path, tmp_path: Path, pg_url: str,
                                                          capsys) -> None:
    """`export ... --setup` into a database not created yet: --setup makes tables, not the
    database; the error says how to make it, dry run or not."""
    missing = pg_url.rsplit("/", 1)[0] + "/no_such_db_for_this_test"
    store = str(tmp_path / "s")
    assert main(["import", url(app_db), store]) == 0
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert main(["export", store, missing, "--setup", *extra]) == 2
        err = capsys.readouterr().err
        assert 'database "no_such_db_for_this_test" does not exist' in err, err
        assert "--setup creates the tables, not the database" in err, err
        assert "CREATE DATABASE no_such_db_for_this_test" in err, err
        assert "createdb -h 127.0.0.1 -p " in err and " -U postgres no_such_db_for_this_test" in err, err


def test_a_user_that_does_not_exist_is_not_told_to_create_the_database(app_db: Path, tmp_path: Path,
                                                                      pg_url: str, capsys) -> None:
    """A URL whose user (role) the server does not know: the server says 'role ... does not
    exist', and the error told to create the database (`createdb -U nouser ...`, which fails
    the same way); it says the user is unknown and to name one the server has."""
    store = str(tmp_path / "s")
    assert main(["import", url(app_db), store]) == 0
    capsys.readouterr()
    rest = pg_url.split("@", 1)[1]
    assert main(["export", store, f"postgresql://no_such_role_for_this_test@{rest}", "--setup"]) == 2
    err = capsys.readouterr().err
    assert 'role "no_such_role_for_this_test" does not exist' in err, err
    assert "CREATE DATABASE" not in err and "createdb" not in err, err
    assert "user" in err and "CREATE ROLE no_such_role_for_this_test" in err, err


def test_threads_before_the_endpoints_says_to_put_them_first(app_db: Path, tmp_path: Path, capsys) -> None:
    """--threads takes every word after it: written first, it swallows the endpoints."""
    store = str(tmp_path / "s")
    for argv in (["copy", "--threads", "t*", url(app_db), store],
                 ["import", "--threads", "t*", url(app_db)]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--threads takes every word after it" in err and "put them before --threads" in err, err
        assert f"(langgraph-jsonl {argv[0]} SOURCE" in err, err
    assert main(["import", url(app_db), store]) == 0
    capsys.readouterr()
    assert main(["export", "--threads", "t*", store, "postgresql://postgres@127.0.0.1:5432/app"]) == 2
    err = capsys.readouterr().err
    assert "--threads took postgresql://postgres@127.0.0.1:5432/app" in err, err
    assert "Put STORE DATABASE before --threads" in err, err


def test_a_source_file_that_is_empty_or_not_sqlite_is_named_so(tmp_path: Path, capsys) -> None:
    """A source is read, never made: no "give a new file" for it."""
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "notes.db").write_text("hello")
    for name, what in (("empty.db", "is empty (0 bytes)"), ("notes.db", "is not an SQLite database")):
        source = url(tmp_path / name)
        assert main(["import", source, str(tmp_path / "s")]) == 2
        assert capsys.readouterr().err == (
            f"error: {source}: {tmp_path / name} {what}, so not a file SqliteSaver wrote. Name the "
            "file your app's SqliteSaver writes to.\n")
    assert sorted(os.listdir(tmp_path)) == ["empty.db", "notes.db"]


# Without a database name, libpq connects to the user's own: "postgres" (the maintenance
# database) for the user postgres. Only a dry run is pointed at it (nothing is written,
# fix or not); the copies that would write use a user the server does not know.
@pytest.mark.parametrize("server, flags", [
    ("postgres://postgres@127.0.0.1:5432", ["--dry-run"]),
    ("postgresql://postgres@127.0.0.1:5432/", ["--dry-run"]),
    ("postgresql://lgj_test_no_such_user@127.0.0.1:5432", []),
    ("postgresql://lgj_test_no_such_user@127.0.0.1:5432/", ["--setup"]),
])
def test_a_postgresql_url_without_a_database_name_is_refused(app_db: Path, tmp_path: Path, server: str,
                                                             flags: list[str], capsys) -> None:
    """Not the server's default database (``postgres``, the maintenance one), silently:
    nothing is read or created there, as a source or a target."""
    for argv in (["copy", url(app_db), server, *flags], ["import", server, str(tmp_path / "s"), *flags]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == (f"error: {server}: the URL names no database (the server's default would be used, "
                       "often its 'postgres' maintenance database). Name one: "
                       "postgresql://user@host:port/database\n"), err
    assert not (tmp_path / "s").exists()
    assert main(["copy", url(app_db), "postgresql://127.0.0.1:5432/x?foo=bar", *flags]) == 2
    assert capsys.readouterr().err == ("error: postgresql://127.0.0.1:5432/x?foo=bar: not a PostgreSQL URL "
                                       "(invalid URI query parameter: \"foo\"). Give "
                                       "postgresql://user@host:port/database\n")


def _checkpoint_records(store: Path) -> int:
    n = 0
    for log in (store / "threads").glob("*.jsonl"):
        for line in log.read_bytes().splitlines():
            try:
                n += json.loads(line).get("t") == "checkpoint"
            except ValueError:  # a torn last line, left by the kill
                pass
    return n


def _source_checkpoints(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn, conn:
        return int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0])


@pytest.mark.parametrize("target", ["store", "postgres"])
def test_a_copy_killed_half_way_then_run_again_is_complete_without_duplicates(
    many_db: Path, tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    dst = str(tmp_path / "s") if target == "store" else request.getfixturevalue("pg_url")
    total = _source_checkpoints(many_db)
    if target == "postgres":
        tables_only = copy_threads(url(many_db), dst, threads=["none"], setup=True)
        assert tables_only.unmatched == ["none"] and not tables_only.threads and not tables_only.problems

    def copied() -> int:
        if target == "store":
            return len(list((tmp_path / "s" / "threads").glob("*.jsonl"))) if (tmp_path / "s").exists() else 0
        with psycopg.connect(dst) as conn:
            return int(conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0])

    child = subprocess.Popen([*CLI, "copy", url(many_db), dst, "--no-verify"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while copied() < 20 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.poll() is None, f"the copy ended before it could be killed: {child.stderr.read()!r}"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stderr.close()
    assert 20 <= copied() < 150

    rerun = subprocess.run([*CLI, "copy", url(many_db), dst, "--json"], capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["ok"] and report["verified"] and report["threads"] == 150
    assert report["present"] > 0 and report["present"] + report["checkpoints"] == total
    if target == "store":
        assert _checkpoint_records(tmp_path / "s") == total  # no checkpoint stored twice
    else:
        with psycopg.connect(dst) as conn:
            assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == total
    again = copy_threads(url(many_db), dst)
    assert again.ok and again.checkpoints == 0 and again.writes == 0


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_copy_onto_its_own_source_is_refused_however_it_is_spelled(
    app_db: Path, tmp_path: Path, pg_url: str, monkeypatch, capsys
) -> None:
    store = tmp_path / "s"
    assert main(["import", url(app_db), str(store)]) == 0
    mine = tmp_path / "mine.db"
    mine.write_bytes(app_db.read_bytes())
    (tmp_path / "up").symlink_to(tmp_path)  # a symlinked parent directory
    monkeypatch.chdir(tmp_path)
    before, db_before = _files(store), mine.read_bytes()
    capsys.readouterr()
    for argv in (["copy", str(store), str(store)], ["copy", "s", "./s"], ["copy", "./s", str(store) + "/"],
                 ["copy", "s", "up/s"], ["copy", "s/../s", "s"], ["import", "./s", "s"],
                 ["copy", url(mine), "mine.db"], ["copy", "mine.db", "sqlite:///up/mine.db"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "the same" in err and "onto itself" in err, (argv, err)
        assert "Traceback" not in err
    assert _files(store) == before and mine.read_bytes() == db_before

    assert main(["export", "s", pg_url, "--setup"]) == 0
    capsys.readouterr()
    other = pg_url.replace("postgresql://", "postgres://").replace(":5432/", "/")  # same database
    assert main(["copy", pg_url, other]) == 2
    err = capsys.readouterr().err
    assert "the same PostgreSQL database" in err and "onto itself" in err
    assert main(["copy", pg_url, "sqlite:///elsewhere.db"]) == 0  # another place: fine


def test_an_sqlite_url_with_a_trailing_slash_is_refused_saying_what_it_names(
    app_db: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    """`sqlite:///app.db/` named app.db to some checks and `app.db/` to others: copied onto
    `sqlite:///app.db` it got past the refusal of a copy onto itself (and opened the file
    to write); as a source it was "no such SQLite file (.../app.db)" beside that file; as
    a new target a dry run said it "would create new.db/" and the copy wrote new.db. A
    URL with a trailing slash is now refused, saying the URL without it, before anything
    is opened."""
    mine = tmp_path / "mine.db"
    mine.write_bytes(app_db.read_bytes())
    monkeypatch.chdir(tmp_path)
    before = mine.read_bytes()
    for argv in (["copy", "sqlite:///mine.db", "sqlite:///mine.db/"], ["copy", "sqlite:///mine.db/", "s"],
                 ["copy", "sqlite:///mine.db", "sqlite:///new.db/", "--dry-run"],
                 ["copy", "sqlite:///mine.db", "sqlite:///new.db//"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: sqlite:///") and "did you mean sqlite:///" in err, (argv, err)
        assert "/?)" not in err and "Traceback" not in err, err
    assert mine.read_bytes() == before
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "s").exists()


def test_copy_threads_given_no_thread_copies_none_and_a_lone_id_is_refused(
    app_db: Path, tmp_path: Path
) -> None:
    """`copy_threads(..., threads=[])` (a script's list that matched nothing) copied every
    thread, as `None` does; and `threads="user-1"` was read a character at a time
    ("no thread of the source matches --threads 'u'", ...)."""
    from langgraph_jsonl_checkpoint.errors import ConfigError

    report = copy_threads(url(app_db), str(tmp_path / "s"), threads=[])
    assert (report.to_json()["copied"], report.to_json()["threads"]) == (0, 0)
    assert not (tmp_path / "s").exists()
    refused = r"threads takes a list of thread ids or patterns.*threads=\['t-1'\]"
    with pytest.raises(ConfigError, match=refused):
        copy_threads(url(app_db), str(tmp_path / "s"), threads="t-1")
    assert not (tmp_path / "s").exists()


def _contents(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under ``root`` with its mode and, for a file, its bytes: a file made,
    changed or removed, a directory made or chmodded, all show."""
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def _checkpoint_ids(store: Path, thread_id: str) -> list[str]:
    with JsonlSaver(store, read_only=True) as saver:
        return sorted(t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg(thread_id)))


@pytest.mark.parametrize("state", ["intact", "torn tail", "crashed writer"])
def test_a_copy_never_changes_its_source_store(
    app_db: Path, tmp_path: Path, pg_url: str, state: str, capsys
) -> None:
    """A source is only read, dry run or not (it may be a backup, or a store an app is
    writing): no file of it is made, changed or removed, whatever state it is in. A torn
    tail is read up to the last committed record, as a read-only saver reads it."""
    source = tmp_path / "src"
    assert main(["import", url(app_db), str(source)]) == 0
    with JsonlSaver(source) as saver:
        record_uncertain_call(saver, _checkpoint_ids(source, "agent")[-1])  # a journal to carry
        agent_log = Path(saver.store.thread_log("agent").path)
    committed = _checkpoint_ids(source, "agent")
    threads = source / "threads"
    if state != "intact":
        with agent_log.open("ab") as log:
            log.write(b'{"t":"checkpoint","partial')  # a writer killed mid-record
    if state == "crashed writer":  # no sidecar, lock or catalog left
        for leftover in [*threads.glob("*.idx"), *threads.glob("*.head"), *threads.glob("*.lock"),
                         *threads.glob("*.run"), source / "CATALOG.idx"]:
            leftover.unlink()
        (source / "tmp" / "x.tmp.999999999-1").write_bytes(b"a dead process's temp file")
    capsys.readouterr()
    before = _contents(source)
    for n, argv in enumerate((
        ["copy", str(source), str(tmp_path / "new"), "--dry-run"],
        ["copy", str(source), str(tmp_path / "t")],
        ["copy", str(source), str(tmp_path / "t"), "--dry-run"],
        ["import", str(source), str(tmp_path / "imported")],
        ["copy", str(source), url(tmp_path / "t.db")],
        ["export", str(source), pg_url, "--setup", "--dry-run"],
        ["export", str(source), pg_url, "--setup"],
    )):
        code, report = run_json(argv, capsys)
        assert code == 0 and report["ok"], (argv, report)
        assert _contents(source) == before, (argv, sorted(set(_contents(source)) ^ set(before)))
        assert report["threads"] == len(GRAPHS) and report["journal_records"] == (0 if n == 2 else 2)
    assert not (tmp_path / "new").exists()
    assert _checkpoint_ids(tmp_path / "t", "agent") == committed
    assert _checkpoint_ids(tmp_path / "imported", "agent") == committed


def test_a_copy_never_changes_its_source_sqlite_file(app_db: Path, tmp_path: Path, capsys) -> None:
    """An SQLite file copied from is only read, dry run or not: opened for writing, the
    copy's connection checkpointed the -wal file a running (or killed) app left into the
    database file as it closed and removed it, though the app may still be using both."""
    source = tmp_path / "app" / "app.db"
    source.parent.mkdir()
    source.write_bytes(app_db.read_bytes())
    # As an app that is running (or was killed) leaves it: committed transactions in the
    # -wal file, not yet checkpointed into the database file.
    with closing(sqlite3.connect(app_db, check_same_thread=False)) as conn:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 2}, cfg("late"))
        source.write_bytes(app_db.read_bytes())
        Path(f"{source}-wal").write_bytes(Path(f"{app_db}-wal").read_bytes())
    before = _contents(source.parent)
    for argv in (
        ["import", url(source), str(tmp_path / "new"), "--dry-run"],
        ["import", url(source), str(tmp_path / "s")],
        ["copy", url(source), url(tmp_path / "t.db")],
    ):
        code, report = run_json(argv, capsys)
        assert code == 0 and report["ok"], (argv, report)
        # Any reader of a WAL database makes its shared-memory index (-shm) if missing;
        # the database and its -wal must stay as they were.
        after = {name: c for name, c in _contents(source.parent).items() if name != "app.db-shm"}
        assert after == before, (argv, sorted(set(after) ^ set(before)))
    assert _checkpoint_ids(tmp_path / "s", "agent") and _checkpoint_ids(tmp_path / "s", "late")


def test_copy_threads_refuses_one_saver_as_both_ends(tmp_path: Path) -> None:
    from langgraph_jsonl_checkpoint.errors import MigrationError

    with JsonlSaver(tmp_path / "s") as saver:
        with pytest.raises(MigrationError, match="onto itself"):
            copy_threads(saver, saver)
        with pytest.raises(MigrationError, match="onto itself"):
            copy_threads(saver, str(tmp_path / "s"))


INTERRUPTED = re.compile(r"interrupted after (\d+) of 150 threads \((\d+) checkpoint\(s\) copied"
                         r"(?:, \d+ of them by \d+ thread\(s\) stopped part-way)?\); "
                         r"run the same command again to continue\n")


@pytest.mark.parametrize("command", ["import", "copy", "export"])
def test_ctrl_c_stops_a_copy_with_one_line_and_a_rerun_completes_it(
    many_db: Path, many_store: Path, tmp_path: Path, command: str, request: pytest.FixtureRequest
) -> None:
    """SIGINT (what Ctrl-C sends) in the middle of each copying command: one line on
    stderr, exit status 130; the same command run again copies the rest and verifies."""
    if command == "export":
        dst = request.getfixturevalue("pg_url")
        argv = ["export", str(many_store), dst, "--setup"]
    else:
        dst = str(tmp_path / "t")
        argv = ["import", url(many_db), dst] if command == "import" else ["copy", str(many_store), dst]
    total = _source_checkpoints(many_db)

    def copied() -> int:
        if command != "export":
            return len(list((tmp_path / "t" / "threads").glob("*.jsonl"))) if (tmp_path / "t").exists() else 0
        with psycopg.connect(dst) as conn:
            tables = conn.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()[0]
            if not tables:
                return 0
            return int(conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()[0])

    child = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while copied() < 20 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.poll() is None, f"the copy ended before it could be interrupted: {child.stderr.read()!r}"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "Traceback" not in err and child.returncode == 130, err
    match = INTERRUPTED.fullmatch(err)
    assert match, err
    assert 0 < int(match.group(1)) < 150 and int(match.group(2)) >= int(match.group(1)) and out == ""

    rerun = run_bounded([*CLI, *argv, "--json"], seconds=600)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["ok"] and report["verified"] and report["threads"] == 150 and report["mismatches"] == []
    assert report["present"] > 0 and report["present"] + report["checkpoints"] == total


@pytest.mark.parametrize("target", ["store", "sqlite"])
def test_a_copy_whose_threads_patterns_match_nothing_creates_nothing(
    app_db: Path, tmp_path: Path, capsys, target: str
) -> None:
    """`import sqlite:///app.db ./new --threads 'nomatch*'` (a typo) made an empty store,
    and a copy to `sqlite:///x.db` a 0-byte file, besides saying nothing matched: with
    nothing to copy, nothing is created now (still exit 1, naming the pattern)."""
    dest = tmp_path / "new" if target == "store" else tmp_path / "x.db"
    spec = str(dest) if target == "store" else url(dest)
    assert main(["copy", url(app_db), spec, "--threads", "nomatch*"]) == 1
    captured = capsys.readouterr()
    assert "PROBLEM no thread of the source matches --threads 'nomatch*'" in captured.err
    assert "copied 0 thread(s)" in captured.out
    assert not dest.exists()
    report = copy_threads(url(app_db), spec, threads=["nomatch*"])
    assert not report.ok and report.unmatched == ["nomatch*"] and report.creates == []
    assert not dest.exists()


def test_a_threads_pattern_that_matches_nothing_is_a_problem(app_db: Path, tmp_path: Path, capsys) -> None:
    """A typo in --threads must not pass for a copy of nothing: each pattern that matched
    no thread of the source is named, and the copy exits 1 (the others are copied)."""
    argv = ["copy", url(app_db), str(tmp_path / "s"), "--threads", "fan", "zzz*", "no-such-thread"]
    code, dry = run_json([*argv, "--dry-run"], capsys)
    assert code == 1 and not dry["ok"] and dry["unmatched"] == ["zzz*", "no-such-thread"]
    assert [t["thread_id"] for t in dry["per_thread"]] == ["fan"]
    assert {p["problem"] for p in dry["problems"]} == {
        "no thread of the source matches --threads 'zzz*'",
        "no thread of the source matches --threads 'no-such-thread'"}
    assert not (tmp_path / "s").exists()
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "PROBLEM no thread of the source matches --threads 'zzz*'" in captured.err
    assert "PROBLEM no thread of the source matches --threads 'no-such-thread'" in captured.err
    assert "copied 1 thread(s)" in captured.out
    with JsonlSaver(tmp_path / "s", read_only=True) as saver:
        assert list(saver.store.thread_ids()) == ["fan"]
    report = copy_threads(url(app_db), str(tmp_path / "s"), threads=["fan"])
    assert report.ok and report.unmatched == []


def test_a_second_import_says_the_threads_were_already_up_to_date(
    app_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same `import` run twice: the second said "copied 3 thread(s) ... 0 checkpoint(s)",
    as if it had copied them again, and its --json said `"copied": 3`. Now the text, the
    dry run and the JSON say nothing was copied and the threads were already up to date;
    a thread the source went on with since is copied, the others named up to date."""
    import shutil

    app_db = Path(shutil.copy(app_db, tmp_path / "app.db"))  # the app goes on below
    store = str(tmp_path / "s")
    assert main(["import", url(app_db), store]) == 0
    first = capsys.readouterr().out
    threads = int(re.match(r"copied (\d+) thread\(s\)", first)[1])  # type: ignore[index]
    assert threads > 1, first
    for dry in ([], ["--dry-run"]):
        assert main(["import", url(app_db), store, *dry]) == 0
        out = capsys.readouterr().out
        verb = "would copy" if dry else "copied"
        assert out.startswith(f"{verb} nothing from {url(app_db)} to {store}: {threads} thread(s) "
                              "already up to date there, left as they were\n"), out
        assert f"{verb} {threads} thread(s)" not in out and "checkpoints/s" not in out, out
        code, report = run_json(["import", url(app_db), store, *dry], capsys)
        assert code == 0 and report["ok"] and report["copied"] == 0 and report["checkpoints"] == 0
        assert report["threads"] == threads and len(report["up_to_date"]) == threads, report
        assert all(t["up_to_date"] for t in report["per_thread"]), report
    with closing(sqlite3.connect(app_db, check_same_thread=False)) as conn, conn:  # the app goes on
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 7}, cfg("more"))
    assert main(["import", url(app_db), store]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"copied 1 thread(s) from {url(app_db)} to {store}: "), out
    assert f"\n{threads} thread(s) already up to date there, left as they were\n" in out, out
    code, report = run_json(["import", url(app_db), store], capsys)
    assert report["copied"] == 0 and len(report["up_to_date"]) == threads + 1, report
