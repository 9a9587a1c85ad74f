"""``--dry-run`` of ``import``, ``copy`` and ``export postgresql://...``: it creates nothing
(no store directory, no file, no table, no file beside an SQLite database), changes no
file of an existing target, and reports what the copy would put and create, counted as
the copy then counts them; into a database without tables it says which tables
``--setup`` would create, or that the copy needs ``--setup``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.migration import build_sqlite_app, cfg, record_uncertain_call

COUNTS = ("threads", "checkpoints", "writes", "journal_records")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the reference threads and two tool-call journal events."""
    root = tmp_path_factory.mktemp("src")
    db = build_sqlite_app(root / "app.db")
    assert main(["import", "sqlite:///" + str(db), str(root / "s")]) == 0
    with JsonlSaver(root / "s") as saver:
        cid = saver.get_tuple(cfg("agent")).config["configurable"]["checkpoint_id"]
        record_uncertain_call(saver, cid)
    return root / "s"


def files(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` (directories too) with its size and mtime (ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size if p.is_file() else 0, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def counts(report: dict[str, Any]) -> tuple[int, ...]:
    return tuple(report[k] for k in COUNTS)


def tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    return sorted(r[0] for r in rows)


@pytest.mark.parametrize("kind", ["new directory", "empty directory", "new SQLite file"])
def test_a_dry_run_into_a_new_target_creates_nothing_and_counts_what_the_copy_puts(
    source: Path, tmp_path: Path, kind: str, capsys
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = {"new directory": str(work / "d"), "empty directory": str(work / "e"),
              "new SQLite file": "sqlite:///" + str(work / "new.db")}[kind]
    if kind == "empty directory":
        (work / "e").mkdir()
    before = files(work)
    code, dry = run(["copy", str(source), target, "--dry-run"], capsys)
    assert files(work) == before  # no directory, no file, nothing inside the empty one
    assert code == 0 and dry["ok"] and dry["dry_run"] and dry["needs_setup"] == []
    assert dry["checkpoints"] > 0 and dry["writes"] > 0 and dry["journal_records"] == 2
    assert len(dry["creates"]) == 1 and ("store" in dry["creates"][0] or "SQLite file" in dry["creates"][0])

    assert main(["copy", str(source), target, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would copy 6 thread(s)") and "would create " in out
    assert files(work) == before

    code, real = run(["copy", str(source), target], capsys)
    assert code == 0 and real["ok"] and counts(real) == counts(dry)
    assert real["creates"] == dry["creates"]


@pytest.mark.parametrize("kind", ["store", "SQLite file"])
def test_a_dry_run_into_an_existing_target_changes_no_file(source: Path, tmp_path: Path, kind: str,
                                                           capsys) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = str(work / "t") if kind == "store" else "sqlite:///" + str(work / "t.db")
    assert main(["copy", str(source), target, "--threads", "agent", "review"]) == 0
    for leftover in work.glob("t.db-*"):  # as SQLite leaves a closed database: one file
        leftover.unlink()
    capsys.readouterr()
    before = files(work)
    code, dry = run(["copy", str(source), target, "--dry-run"], capsys)
    assert files(work) == before, sorted(set(files(work)) ^ set(before))
    assert code == 0 and dry["ok"] and dry["creates"] == []
    assert dry["present"] > 0 and dry["journal_records"] == 0  # agent's journal is there already
    code, real = run(["copy", str(source), target], capsys)
    assert code == 0 and real["ok"] and counts(real) == counts(dry) and real["present"] == dry["present"]
    code, again = run(["copy", str(source), target], capsys)  # nothing left, journal included
    assert code == 0 and (again["checkpoints"], again["writes"], again["journal_records"]) == (0, 0, 0)


@pytest.mark.parametrize("setup", [True, False])
def test_a_dry_run_into_a_database_without_tables(source: Path, pg_url: str, setup: bool, capsys) -> None:
    flags = ["--setup"] if setup else []
    code, dry = run(["export", str(source), pg_url, "--dry-run", *flags], capsys)
    assert tables(pg_url) == []  # nothing created
    assert not dry["problems"], dry["problems"]
    assert dry["checkpoints"] > 0 and dry["writes"] > 0 and dry["journal_records"] == 2
    wanted = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "store", "checkpoint_migrations",
              "store_migrations"]
    if setup:
        assert code == 0 and dry["ok"] and dry["needs_setup"] == []
        assert dry["creates"] == [f"the tables {', '.join(wanted)} (--setup)"]
    else:
        assert code == 1 and not dry["ok"] and dry["needs_setup"] == wanted and dry["creates"] == []

    assert main(["export", str(source), pg_url, "--dry-run", *flags]) == (0 if setup else 1)
    captured = capsys.readouterr()
    assert "UndefinedTable" not in captured.out + captured.err and "PROBLEM" not in captured.err
    if setup:
        assert "would create the tables checkpoints, checkpoint_blobs" in captured.out
    else:
        assert "without --setup the copy would stop before copying anything" in captured.out
    assert tables(pg_url) == []

    code, real = run(["export", str(source), pg_url, "--setup"], capsys)
    assert code == 0 and real["ok"] and counts(real) == counts(dry)
    assert sorted(wanted) == tables(pg_url)
    code, again = run(["export", str(source), pg_url, "--dry-run"], capsys)  # set up now: all present
    assert code == 0 and again["ok"] and again["creates"] == [] and again["checkpoints"] == 0


SAVER_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"]


@pytest.mark.parametrize("how", ["PostgresSaver.setup()", "--setup"])
def test_no_journal_needs_only_the_saver_s_tables(source: Path, pg_url: str, how: str, capsys) -> None:
    """--no-journal leaves the journal behind, so PostgresStore's tables are not needed:
    a database PostgresSaver was set up in is a target as it is, and --setup makes the
    saver's tables only."""
    from langgraph.checkpoint.postgres import PostgresSaver

    flags = ["--setup"] if how == "--setup" else []
    if not flags:
        with PostgresSaver.from_conn_string(pg_url) as saver:
            saver.setup()
    code, dry = run(["export", str(source), pg_url, "--no-journal", "--dry-run", *flags], capsys)
    assert code == 0 and dry["ok"] and dry["needs_setup"] == [], dry
    assert dry["creates"] == ([f"the tables {', '.join(SAVER_TABLES)} (--setup)"] if flags else [])
    code, real = run(["export", str(source), pg_url, "--no-journal", *flags], capsys)
    assert code == 0 and real["ok"] and counts(real) == counts(dry) and real["checkpoints"] > 0
    assert real["journal_records"] == dry["journal_records"] == 0
    assert tables(pg_url) == sorted(SAVER_TABLES)
    code, journal = run(["export", str(source), pg_url, "--dry-run"], capsys)  # the journal needs them
    assert code == 1 and journal["needs_setup"] == ["store", "store_migrations"]


def test_a_target_file_that_is_not_an_sqlite_database_is_a_clear_error(source: Path, tmp_path: Path,
                                                                      capsys) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    for flags in ([], ["--dry-run"]):
        assert main(["copy", str(source), "sqlite:///" + str(notes), *flags]) == 2
        err = capsys.readouterr().err
        assert "is not an SQLite database" in err and "Traceback" not in err
    assert notes.read_text() == "hello" and os.listdir(tmp_path) == ["notes.txt"]



def test_an_sqlite_target_of_something_else_is_refused(source: Path, tmp_path: Path, capsys) -> None:
    """An SQLite file with tables, none of them LangGraph's (an app's own database): not
    given LangGraph's tables beside its own. One SqliteStore was set up in is LangGraph's."""
    import sqlite3
    from contextlib import closing

    inventory = tmp_path / "inventory.db"
    with closing(sqlite3.connect(inventory)) as conn, conn:
        conn.execute("CREATE TABLE parts (x)")
    before = inventory.read_bytes()
    for flags in (["--dry-run"], []):
        assert main(["copy", str(source), "sqlite:///" + str(inventory), *flags]) == 2
        assert capsys.readouterr().err == (
            f"error: sqlite:///{inventory}: {inventory} is an SQLite database of something else (its "
            "tables: parts; none of SqliteSaver's): a copy would add LangGraph's tables to it. Name a "
            "new file or one SqliteSaver wrote.\n")
    assert inventory.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["inventory.db"]

    from langgraph.store.sqlite import SqliteStore

    with closing(sqlite3.connect(tmp_path / "store.db")) as conn, conn:
        SqliteStore(conn).setup()
    assert main(["copy", str(source), "sqlite:///" + str(tmp_path / "store.db")]) == 0

def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_a_target_that_cannot_be_created_is_a_clear_error_dry_run_or_not(
    source: Path, tmp_path: Path, capsys
) -> None:
    """An SQLite file in a directory that is not there or a directory, a store under a file: one line
    naming the target and what to do, exit status 2, nothing created; the dry run says
    the same instead of promising to create it."""
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    (tmp_path / "adir").mkdir()
    nodir = "sqlite:///" + str(tmp_path / "nodir" / "x.db")
    under_a_file = str(notes / "newstore")
    for flags in (["--dry-run"], []):
        assert main(["copy", str(source), nodir, *flags]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert nodir in line and f"{tmp_path / 'nodir'} does not exist" in line, line
        assert main(["copy", str(source), under_a_file, *flags]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert under_a_file in line and f"{notes} is not a directory" in line, line
        assert main(["copy", str(source), "sqlite:///" + str(tmp_path / "adir"), *flags]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert f"{tmp_path / 'adir'} is a directory; name an SQLite file" in line, line
    assert sorted(os.listdir(tmp_path)) == ["adir", "notes.txt"] and notes.read_text() == "hello"
    assert os.listdir(tmp_path / "adir") == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", ["copy", "import"])
def test_a_store_target_the_system_refuses_to_make_is_a_clear_error(source: Path, command: str,
                                                                    capsys) -> None:
    """/proc takes no new directory, whatever the permissions say (root's too): said as
    the target's, in the store's own words (what was refused, what to do)."""
    assert main([command, str(source), "/proc/newstore"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "/proc/newstore: cannot create a store there" in line, line
    assert "Pass a directory on an ordinary file system" in line, line
    assert line.count("cannot create") + line.count("cannot be created") == 1, line  # said once
    assert not os.path.exists("/proc/newstore")


def test_a_thread_with_an_empty_id_is_reported_alike_dry_run_or_not_with_what_to_do(
    tmp_path: Path, capsys
) -> None:
    """SqliteSaver holds a thread whose id is '' (an app passed thread_id=""); a store
    cannot. The dry run said it would copy it (exit status 0); the copy then failed on it
    with "put needs a thread_id ...: pass config=... to invoke/stream/get_state", advice
    for an app, not for an import. Both now name it as a problem, with how to bring it along."""
    import sqlite3
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.harness.state_graphs import build_counter_graph

    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        for tid in ("", "kept"):
            graph.invoke({"n": 1}, cfg(tid))
    outs = []
    for extra in (["--dry-run"], []):
        status = main(["import", "sqlite:///" + str(db), str(tmp_path / "s"), "--json", *extra])
        out = json.loads(capsys.readouterr().out)
        assert status == 1, out
        assert out["incomplete"] == [""], out
        (problem,) = out["problems"]
        assert problem["thread_id"] == "", problem
        said = problem["problem"]
        assert "empty" in said and "UPDATE checkpoints SET thread_id" in said, said
        assert "invoke/stream" not in said, said
        outs.append({k: out[k] for k in ("copied", "checkpoints", "writes")})
    assert outs[0] == outs[1]  # the dry run counts as the copy counts


def test_a_dry_run_stopped_by_ctrl_c_does_not_say_a_rerun_continues_it(source: Path, tmp_path: Path) -> None:
    """Ctrl-C in a dry run said "interrupted after 2 of 6 threads (... counted, ... by 1
    thread(s) stopped part-way); run the same command again to continue": a dry run keeps
    nothing, so nothing continues; run again, it counts every thread from the start."""
    import threading

    from langgraph_jsonl_checkpoint.migrate import CopyInterrupted, copy_threads

    def track(ids: list[str]) -> Any:
        for n, thread_id in enumerate(ids):
            if n == 2:
                raise KeyboardInterrupt
            yield thread_id

    target = tmp_path / "new"
    with pytest.raises(CopyInterrupted) as caught:
        copy_threads(str(source), str(target), dry_run=True, track=track, stop=threading.Event(), workers=1)
    said = str(caught.value)
    assert said.startswith("interrupted after 2 of "), said
    assert "counted" in said and "continue" not in said, said
    assert "nothing was written" in said and "from the start" in said, said
    assert not target.exists()
