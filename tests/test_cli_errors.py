"""The CLI and the store as a new user meets them on bad input: a typo, a damaged or
newer-format thread, a store of a newer format, odd thread ids."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from langgraph.checkpoint.base.id import uuid6

from langgraph_jsonl_checkpoint import FormatVersionError, JsonlSaver, __version__
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.errors import ConfigError, RestoreError, ThreadDeletedError
from langgraph_jsonl_checkpoint.maintenance.repair import repair
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.other_user import as_nobody
from tests.harness.raw_log import ThreadFiles


def _store(path: Path, threads: list[str]) -> None:
    with JsonlSaver(path) as saver:
        for i, tid in enumerate(threads):
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config(tid), make_checkpoint(cp_id(i), {"m": [tid]}, v), {}, v)


def _cells(line: str) -> list[str]:
    """The columns of a row of ``threads`` (columns are two or more spaces apart)."""
    return re.split(r"\s{2,}", line.strip())


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def _set_log_format(store: Path, thread_id: str, fmt: int) -> None:
    log = Path(ThreadFiles.of(store, thread_id).log)
    lines = log.read_bytes().split(b"\n")
    header = framing.parse_line(lines[0])
    header["format"] = fmt
    lines[0] = framing.frame(header)[:-1]
    log.write_bytes(b"\n".join(lines))
    idx = Path(ThreadFiles.of(store, thread_id).idx)
    if idx.exists():
        idx.unlink()


# -- the store's own format ------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True])
def test_a_store_of_a_newer_format_is_refused_naming_the_file(tmp_path: Path, read_only: bool) -> None:
    _store(tmp_path / "s", ["a"])
    marker = tmp_path / "s" / "STORE.json"
    marker.write_bytes(orjson.dumps({"store": "langgraph-jsonl-checkpoint", "format": 2}) + b"\n")
    before = marker.read_bytes()
    with pytest.raises(FormatVersionError) as err:
        JsonlSaver(tmp_path / "s", read_only=read_only)
    assert str(marker) in str(err.value) and "upgrade" in str(err.value).lower()
    assert marker.read_bytes() == before
    assert main(["threads", str(tmp_path / "s")]) == 2


def test_a_log_of_a_newer_format_is_reported_and_the_others_served(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["a", "b", "c"])
    _set_log_format(tmp_path / "s", "b", 2)
    with pytest.raises(FormatVersionError, match="Upgrade"):
        JsonlSaver(tmp_path / "s").get_tuple(config("b"))
    assert main(["threads", str(tmp_path / "s")]) == 1
    out = [_cells(line) for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[0] for row in out] == ["a", "b", "c"]
    assert out[1][1] == "damaged" and "format version 2" in out[1][-1]
    assert out[0][1:3] == ["done", "1"] and out[2][1:3] == ["done", "1"]
    assert main(["compact", str(tmp_path / "s")]) == 1
    captured = capsys.readouterr()
    assert "thread 'a'" in captured.out and "thread 'c'" in captured.out
    assert "thread 'b': skipped" in captured.err
    assert main(["verify", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    assert out.count("PROBLEM") == 1 and "format version 2" in out


# -- typos ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["repair", "--thread", "typo"], ["compact", "--thread", "typo"],
    ["compact", "--thread", "typo", "--keep-latest"], ["verify", "--thread", "typo"],
])
def test_an_unknown_thread_is_a_clear_error_and_creates_nothing(tmp_path: Path, capsys, command) -> None:
    _store(tmp_path / "s", ["a"])
    before = _files(tmp_path / "s")
    argv = [command[0], str(tmp_path / "s"), *command[1:]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no thread typo" in err and "langgraph-jsonl threads" in err
    assert _files(tmp_path / "s") == before
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("argv", [
    ["show", "STORE", "t1"], ["history", "STORE", "T-1"], ["verify", "STORE", "--thread", "t1"],
])
def test_a_mistyped_thread_id_names_the_close_one(tmp_path: Path, capsys, argv: list[str]) -> None:
    """`show ./checkpoints t1` for thread t-1: the error asks whether t-1 was meant."""
    _store(tmp_path / "s", ["t-1", "weather-53f23e42"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "did you mean t-1?" in err and "weather" not in err, err
    assert main(["show", str(tmp_path / "s"), "nothing-like-it"]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["threads", "verify", "compact"])
def test_a_store_path_typo_creates_no_store(tmp_path: Path, capsys, command) -> None:
    assert main([command, str(tmp_path / "nope")]) == 2
    assert "not a langgraph-jsonl-checkpoint store" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()


def test_a_path_next_to_a_store_names_the_store(tmp_path: Path, capsys, monkeypatch) -> None:
    """A folder inside a store (its threads/), the folder holding it, or a log file: the
    error names the store to pass instead."""
    _store(tmp_path / "checkpoints", ["t-1"])
    log = next((tmp_path / "checkpoints" / "threads").glob("*.jsonl"))
    monkeypatch.chdir(tmp_path)
    for given in ("checkpoints/threads", str(log), "."):
        assert main(["show", given, "t-1"]) == 2
        err = capsys.readouterr().err
        assert "not a langgraph-jsonl-checkpoint store" in err, err
        assert "did you mean checkpoints?" in err.replace(str(tmp_path / "checkpoints"), "checkpoints"), err
    assert main(["threads", str(tmp_path / "elsewhere")]) == 2
    assert "did you mean" not in capsys.readouterr().err
    # a typo of the store's own name, beside it: ./checkpoint for ./checkpoints
    assert main(["show", "./checkpoint", "t-1"]) == 2
    err = capsys.readouterr().err
    assert "there is no directory" in err and "did you mean checkpoints?" in err, err
    assert not (tmp_path / "checkpoint").exists()


@pytest.mark.parametrize("command", [["sweep", "--ttl", "60"], ["archived"], ["restore", "--thread", "t-1"]])
def test_a_mistyped_store_name_is_said_not_to_exist_and_the_store_named(
    tmp_path: Path, capsys, monkeypatch, command: list[str]
) -> None:
    """A store name with a typo ("chekpoints" for "checkpoints"): the error said the path
    had "no STORE.json in it", as if the folder were there and only lacked a file, and
    named no store. It now says the path does not exist and names the store beside it."""
    _store(tmp_path / "checkpoints", ["t-1"])
    monkeypatch.chdir(tmp_path)
    assert main([command[0], "chekpoints", *command[1:]]) == 2
    err = capsys.readouterr().err
    assert f"there is no directory {tmp_path / 'chekpoints'}" in err and "no STORE.json" not in err, err
    assert "did you mean checkpoints?" in err, err
    assert not (tmp_path / "chekpoints").exists()
    assert main([command[0], "zebra", *command[1:]]) == 2  # nothing like it: no guess
    assert "did you mean" not in capsys.readouterr().err


def test_a_relative_store_path_that_does_not_exist_says_where_it_was_looked_for(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """`langgraph-jsonl show ./checkpoints t-1` run from another folder than the one the
    app ran in: the error says there is no such directory there, naming the full path."""
    _store(tmp_path / "app" / "checkpoints", ["t-1"])
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["show", "./checkpoints", "t-1"]) == 2
    err = capsys.readouterr().err
    assert "./checkpoints is not a langgraph-jsonl-checkpoint store" in err, err
    assert f"there is no directory {tmp_path / 'elsewhere' / 'checkpoints'}" in err, err
    assert "a relative path is read from the current directory" in err, err
    assert "no STORE.json in it" not in err, err
    assert not (tmp_path / "elsewhere" / "checkpoints").exists()


@pytest.mark.parametrize(("command", "lister"), [("repair", "verify"), ("restore", "archived")])
def test_repair_or_restore_without_a_thread_says_which_command_finds_one(
    tmp_path: Path, capsys, command: str, lister: str
) -> None:
    """`langgraph-jsonl repair ./checkpoints` (no --thread): the error says how to name
    the thread and which command lists the candidates, without changing anything."""
    _store(tmp_path / "s", ["a"])
    before = _files(tmp_path / "s")
    assert main([command, str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "--thread THREAD" in err, err
    assert f"`langgraph-jsonl {lister} {tmp_path / 's'}`" in err, err
    assert _files(tmp_path / "s") == before


def test_a_store_from_the_environment_that_is_not_one_says_where_it_came_from(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "gone"))
    assert main(["show", "t-1"]) == 2
    err = capsys.readouterr().err
    gone = tmp_path / "gone"
    assert f"{gone} (from $LANGGRAPH_JSONL_STORE) is not a langgraph-jsonl-checkpoint store" in err, err
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE")
    assert main(["show", str(tmp_path / "gone"), "t-1"]) == 2  # named on the command line: no such note
    assert "(from $LANGGRAPH_JSONL_STORE)" not in capsys.readouterr().err


def test_a_mistyped_store_beside_the_environments_store_is_not_left_as_a_thread_id(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """With $LANGGRAPH_JSONL_STORE set, `show ./checkpoint t-1` (a typo for the store) reads
    ./checkpoint as the thread: the error says so."""
    _store(tmp_path / "checkpoints", ["t-1"])
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "checkpoints"))
    monkeypatch.chdir(tmp_path)
    assert main(["show", "./checkpoint", "t-1"]) == 2
    err = capsys.readouterr().err
    assert "has no thread ./checkpoint" in err, err
    assert "./checkpoint was read as the thread, the store being $LANGGRAPH_JSONL_STORE's" in err, err
    assert "no store directory ./checkpoint" in err, err


def test_library_maintenance_of_a_missing_thread_creates_no_files(tmp_path: Path) -> None:
    _store(tmp_path / "s", ["a"])
    before = _files(tmp_path / "s")
    saver = JsonlSaver(tmp_path / "s")
    assert saver.compact("typo") == (0, 0)
    saver.prune(["typo"])
    saver.delete_thread("typo")
    with pytest.raises(RestoreError, match="has no archive of thread 'typo'"):
        saver.restore("typo")
    saver.close()
    assert _files(tmp_path / "s") == before


def test_a_read_only_saver_never_creates_lock_files(tmp_path: Path) -> None:
    """A read-only saver refuses what would change a thread before taking its locks
    (restore, repair), and so creates no file for it, whether the thread exists or not."""
    _store(tmp_path / "s", ["a"])
    with JsonlSaver(tmp_path / "s") as saver:
        saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + 3600)
        assert [e.thread_id for e in saver.archived()] == ["a"]
    _store(tmp_path / "s", ["b"])
    before = _files(tmp_path / "s")
    saver = JsonlSaver(tmp_path / "s", read_only=True)
    for tid in ("a", "b", "typo"):
        with pytest.raises(ConfigError, match="read-only"):
            saver.restore(tid)
    with pytest.raises(ConfigError, match="read-only"):
        repair(saver, "b")
    saver.close()
    assert _files(tmp_path / "s") == before


def test_version_option(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"langgraph-jsonl {__version__}"


@pytest.mark.parametrize("argv", [
    ["compact", "STORE", "--dry-rn"],
    ["threads", "STORE", "--status", "done", "--bogus", "1"],
    ["repair", "STORE", "--thread", "t", "extra-operand"],
])
def test_an_unknown_option_is_named_with_the_command_s_own_usage(tmp_path: Path, capsys, argv) -> None:
    """argparse reports a command's unrecognized arguments from the top-level parser, whose
    usage line says nothing of the command's options; the command's own usage is printed."""
    argv = [str(tmp_path) if a == "STORE" else a for a in argv]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: langgraph-jsonl {argv[0]} " in err, err
    assert "unrecognized arguments: " + " ".join(argv[-1:] if argv[0] != "threads" else argv[-2:]) in err
    assert list(tmp_path.iterdir()) == []  # nothing ran


@pytest.mark.parametrize("argv, forms", [
    (["show", "STORE", "-dash"], ["show [OPTIONS] [STORE] -- -dash", "--thread=-dash"]),
    (["history", "STORE", "-dash", "--json"], ["history [OPTIONS] [STORE] -- -dash"]),
    (["show", "STORE", "--thread", "-dash"], ["--thread=-dash"]),  # argparse: expected one argument
    (["show", "STORE", "-h1"], ["show [OPTIONS] [STORE] -- -h1"]),  # argparse: -h with an argument
    (["repair", "STORE", "--thread", "-dash"], ["--thread=-dash"]),
    (["export", "STORE", "-dash"], ["export [OPTIONS] [STORE] -- -dash"]),
])
def test_a_thread_id_that_starts_with_a_dash_is_given_with_a_hint(
    tmp_path: Path, capsys, argv: list[str], forms: list[str]
) -> None:
    """``show STORE -dash`` failed with argparse's bare "unrecognized arguments: -dash",
    though ``show STORE -- -dash`` (and ``--thread=-dash``) works: the error now says so."""
    _store(tmp_path / "s", ["-dash", "-h1"])
    capsys.readouterr()
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    with pytest.raises(SystemExit) as done:
        main(argv)
    if "-h1" in argv and sys.version_info >= (3, 13):
        # argparse itself takes -h1 for -h from Python 3.13 on: the help, exit 0.
        assert done.value.code == 0 and "usage: langgraph-jsonl show" in capsys.readouterr().out
        return
    assert done.value.code == 2
    err = capsys.readouterr().err
    word = "-h1" if "-h1" in argv else "-dash"
    assert f"if {word} is a thread id" in err and all(f in err for f in forms), err
    if argv[0] == "show":  # and the ways it names work
        for way in (["--", "-dash"], ["--thread=-dash"]):
            assert main(["show", str(tmp_path / "s"), *way]) == 0
            assert "-dash" in capsys.readouterr().out


DB = "postgresql://postgres@127.0.0.1:5432/hunt_unused"


@pytest.mark.parametrize("argv, ids", [
    (["import", "SRC", "TGT", "--threads", "-abc"], ["-abc"]),  # argparse: expected at least one argument
    (["copy", "SRC", "TGT", "--threads", "a", "-abc"], ["-abc"]),  # argparse: unrecognized arguments
    (["copy", "SRC", "TGT", "--threads", "--", "-abc", "-d"], ["-abc", "-d"]),  # `--` does not help
    (["export", "SRC", DB, "--threads", "-abc"], ["-abc"]),
    (["export", "SRC", DB, "--thread", "-abc"], ["-abc"]),  # export's abbreviation of --threads
])
def test_a_dashed_thread_id_given_to_threads_is_given_with_a_hint(
    tmp_path: Path, capsys, argv: list[str], ids: list[str]
) -> None:
    """``import ... --threads -abc`` failed with argparse's bare "expected at least one
    argument" (export's hint said to give it after `--`, which made it a transcript's
    THREAD); on Python 3.11-3.13 only ``--threads=-abc`` works, one for each such id."""
    _store(tmp_path / "s", ["-abc", "-d", "a"])
    capsys.readouterr()
    paths = {"SRC": str(tmp_path / "s"), "TGT": str(tmp_path / "t")}
    with pytest.raises(SystemExit) as done:
        main([paths.get(a, a) for a in argv])
    assert done.value.code == 2
    err = capsys.readouterr().err
    forms = " ".join(f"--threads={i}" for i in ids)
    assert f"if {ids[0]} is a thread id" in err and forms in err, err
    assert "after `--`" not in err, err  # `--threads -- -abc` is refused too
    assert not (tmp_path / "t").exists()  # nothing ran
    # and the way it names works
    assert main(["copy", paths["SRC"], paths["TGT"], *forms.split(), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(t["thread_id"] for t in report["per_thread"]) == sorted(ids), report


@pytest.mark.parametrize("command", ["verify", "repair", "compact", "archived", "restore"])
def test_a_thread_given_as_an_operand_to_a_command_that_takes_thread_says_to_use_it(
    tmp_path: Path, capsys, command: str
) -> None:
    """``show STORE t-1`` takes the thread as an operand; ``verify STORE t-1`` failed with
    argparse's bare "unrecognized arguments: t-1": the error now gives the command with
    ``--thread`` (and that command works)."""
    _store(tmp_path / "my store", ["t-1"])
    capsys.readouterr()
    store = str(tmp_path / "my store")
    with pytest.raises(SystemExit) as done:
        main([command, store, "t-1"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    suggested = f"langgraph-jsonl {command} '{store}' --thread t-1"
    assert "unrecognized arguments: t-1" in err and suggested in err, err
    if command in ("verify", "compact"):
        assert main([command, store, "--thread", "t-1"]) == 0


def test_an_extra_operand_after_thread_gets_no_thread_hint(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["t"])
    with pytest.raises(SystemExit):
        main(["verify", str(tmp_path / "s"), "--thread", "t", "extra"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: extra" in err and "--thread extra" not in err, err


def test_no_command_lists_the_commands(capsys) -> None:
    """`langgraph-jsonl` alone said only "the following arguments are required: command":
    it now prints the commands, by group, with their purpose (bad usage all the same)."""
    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    for word in ("see:", "maintain:", "move:", "  threads ", "  verify ", "  import ", "--help"):
        assert word in captured.err, captured.err


def test_a_file_given_as_the_store_is_called_a_file_and_an_sqlite_one_gets_the_import(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """`langgraph-jsonl threads app.db` said "no STORE.json in it" of a file; it now says
    it is a file, and for SQLite's the import command."""
    import sqlite3
    from contextlib import closing

    monkeypatch.chdir(tmp_path)
    with closing(sqlite3.connect("app.db")) as db, db:  # closed: Python 3.13 warns of one left open
        db.execute("create table checkpoints (x)")
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["threads", "app.db"]) == 2
    err = capsys.readouterr().err
    assert "no STORE.json" not in err and "SQLite database" in err, err
    assert "langgraph-jsonl import sqlite:///app.db ./checkpoints" in err, err
    assert main(["show", "notes.txt", "t-1"]) == 2
    err = capsys.readouterr().err
    assert "no STORE.json" not in err and "is a file, not a directory" in err, err


@pytest.mark.parametrize("name", ["app%41.db", "app?v=1.db", "app#2.db", "my app%20.db"])
@pytest.mark.parametrize("absolute", [False, True])
def test_the_import_an_sqlite_file_given_as_the_store_is_told_runs_as_pasted(
    tmp_path: Path, capsys, monkeypatch, name: str, absolute: bool
) -> None:
    """The `import 'sqlite:///PATH'` suggested for an SQLite file given as the store put
    the path in the URL as it is: a `%` was decoded (app%41.db read as appA.db), a `?` was
    refused as a query. The path is now percent-encoded, and pasted, the command imports."""
    import sqlite3
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.harness.state_graphs import build_counter_graph

    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / name) if absolute else name
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        graph.invoke({"n": 1}, {"configurable": {"thread_id": "t-1"}})
    assert main(["threads", path]) == 2
    argv = _suggested(capsys.readouterr().err, "import")
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["threads", "checkpoints", "--json"]) == 0
    assert [t["thread_id"] for t in json.loads(capsys.readouterr().out)] == ["t-1"]


@pytest.mark.parametrize(("argv", "command"), [
    (["show", "t-1"], "langgraph-jsonl show checkpoints t-1"),
    (["threads"], "langgraph-jsonl threads checkpoints"),
    (["verify", "--thread", "t-1"], "langgraph-jsonl verify checkpoints"),
])
def test_a_command_without_its_store_names_the_store_in_this_folder(
    tmp_path: Path, capsys, monkeypatch, argv: list[str], command: str
) -> None:
    """After the README (`./checkpoints`, thread t-1), `langgraph-jsonl show t-1` said only
    "name the store directory, or set LANGGRAPH_JSONL_STORE": it now names the store in
    the current folder, with the command that reads it (which works)."""
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE", raising=False)
    _store(tmp_path / "checkpoints", ["t-1"])
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "LANGGRAPH_JSONL_STORE" in err and f"`{command}" in err, err
    assert main(command.split()[1:]) == 0
    monkeypatch.chdir(tmp_path / "checkpoints" / "threads")  # inside it: named too
    capsys.readouterr()
    assert main(argv) == 2
    inside = command.replace(" checkpoints", " ..")
    assert f"`{inside}" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # a log file given for the store: not passed on as a thread
    (log,) = (tmp_path / "checkpoints" / "threads").glob("*.jsonl")
    assert main(["show", str(log)]) == 2
    err = capsys.readouterr().err
    assert "there is one here: checkpoints" in err and str(log) not in err.split("here:")[-1], err


def test_a_command_without_a_store_and_none_near_says_only_how_to_name_one(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["show", "t-1"]) == 2
    err = capsys.readouterr().err
    assert "name the store directory" in err and "`langgraph-jsonl" not in err, err


@pytest.mark.parametrize(("argv", "owners"), [
    (["show", "STORE", "t-1", "--format", "md"], "--format is an option of export"),
    (["history", "STORE", "t-1", "-n", "3"], "-n is an option of tail"),
    (["show", "STORE", "t-1", "--all"], "--all is an option of export"),
    (["threads", "STORE", "--thread", "t-1"], "--thread is an option of history, show, diff, tools, ..."),
])
def test_another_command_s_option_is_named_as_such_not_as_a_thread_id(
    tmp_path: Path, capsys, argv: list[str], owners: str
) -> None:
    """`show STORE t-1 --format md` was answered "if --format is a thread id, give it
    after `--`": the error now says which command takes that option."""
    _store(tmp_path / "s", ["t-1"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert owners in err and "is a thread id" not in err, err


def test_an_option_s_typo_is_not_taken_for_a_thread_id(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["t"])
    with pytest.raises(SystemExit):
        main(["show", str(tmp_path / "s"), "t", "--jsn"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --jsn" in err and "thread id" not in err, err


@pytest.mark.parametrize("workers", ["0", "-3", "two"])
def test_a_copy_with_no_workers_is_a_usage_error(tmp_path: Path, capsys, workers: str) -> None:
    """``--workers -3`` ran a copy with one worker, as if it had been asked for."""
    saver = JsonlSaver(tmp_path / "s")
    saver.close()
    with pytest.raises(SystemExit) as done:
        main(["copy", str(tmp_path / "s"), str(tmp_path / "t"), "--workers", workers, "--dry-run"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "usage: langgraph-jsonl copy" in err and "--workers" in err, err
    assert ("whole number" if workers == "two" else "must be 1 or more") in err, err


@pytest.mark.parametrize("limit", [[], ["--limit", "0"]])
def test_a_search_for_no_text_is_a_usage_error(tmp_path: Path, capsys, limit: list[str]) -> None:
    """With ``--limit 0`` the check of the text never ran: exit 0 for a search that is
    refused without it."""
    JsonlSaver(tmp_path / "s").close()
    assert main(["search", str(tmp_path / "s"), "", *limit]) == 2
    assert "search for some text" in capsys.readouterr().err


@pytest.mark.parametrize("json_out", [[], ["--json"]])
def test_a_search_for_a_role_no_message_can_have_is_a_usage_error(
    tmp_path: Path, capsys, json_out: list[str]
) -> None:
    """``--role bot`` (a typo, or a guess) searched and found nothing, exit 0: a person
    read "no such message" where no message could ever have matched."""
    JsonlSaver(tmp_path / "s").close()
    assert main(["search", str(tmp_path / "s"), "refund", "--role", "bot", *json_out]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "'bot'" in err and "human (user), ai (assistant), tool, system" in err, err
    for role in ("user", "AI", "tool", "system", "developer", "human"):  # the roles and aliases still go
        assert main(["search", str(tmp_path / "s"), "refund", "--role", role, *json_out]) == 0
    capsys.readouterr()


def test_help_documents_the_exit_codes() -> None:
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "threads", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert "exit status: 0" in run.stdout and "1 problems found" in run.stdout and "2 bad usage" in run.stdout


@pytest.mark.parametrize("argv", [
    ["history", "STORE", "a", "--limit", "-1"], ["threads", "STORE", "--limit", "-5"],
    ["search", "STORE", "text", "--limit", "-1"], ["tail", "STORE", "a", "-n", "-1"],
])
def test_a_negative_count_is_a_usage_error(tmp_path: Path, capsys, argv) -> None:
    """Not an empty listing with exit status 0, as if nothing were there."""
    _store(tmp_path / "s", ["a"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: langgraph-jsonl {argv[0]} " in err, err
    assert f"argument {argv[-2]}" in err and f": must be 0 or more, not {argv[-1]}" in err, err


# -- files the store did not make, paths an export cannot write -----------------------------


def test_a_directory_named_like_a_log_is_reported_and_the_others_served(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["a", "b"])
    (tmp_path / "s" / "threads" / "x-0.jsonl").mkdir()
    store = str(tmp_path / "s")
    for argv in (["threads", store], ["verify", store], ["search", store, "a"], ["compact", store],
                 ["compact", store, "--dry-run"], ["export", store, "--all", str(tmp_path / "out")]):
        assert main(argv) == 1, argv
        captured = capsys.readouterr()
        assert "x-0.jsonl" in captured.out + captured.err, (argv, captured)
    assert main(["threads", store, "--json"]) == 1
    rows = orjson.loads(capsys.readouterr().out)
    odd = next(r for r in rows if r["path"].endswith("x-0.jsonl"))
    assert odd["status"] == "damaged" and "not a regular file (a directory)" in odd["problem"]
    assert sorted(r["thread_id"] for r in rows if r["thread_id"]) == ["a", "b"]
    for argv in (["show", store, "a"], ["history", store, "b"], ["repair", store, "--thread", "a"]):
        assert main(argv) == 0, argv
    capsys.readouterr()


def _export_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_an_export_to_a_path_that_cannot_be_written_is_a_clear_error(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["a"])
    store = str(tmp_path / "s")
    missing = tmp_path / "no" / "such" / "x.md"
    err = _export_error(["export", store, "a", "-o", str(missing)], capsys)
    assert str(missing) in err and "No such file or directory" in err and "-o" in err, err
    err = _export_error(["export", store, "a", "-o", str(tmp_path)], capsys)
    assert str(tmp_path) in err and "Is a directory" in err and "-o" in err, err
    a_file = tmp_path / "f"
    a_file.write_text("mine\n")
    err = _export_error(["export", store, "--all", str(a_file)], capsys)
    assert str(a_file) in err and "not a directory" in err and "--all" in err, err
    err = _export_error(["export", store, "--all", str(a_file / "sub")], capsys)
    assert str(a_file / "sub") in err and "--all" in err, err
    assert a_file.read_text() == "mine\n" and not (tmp_path / "no").exists()


# -- odd ids ---------------------------------------------------------------------------------


def test_ids_with_control_characters_stay_on_one_row(tmp_path: Path, capsys) -> None:
    ids = ["plain", "two\nlines", "tab\there", " padded "]
    _store(tmp_path / "s", ids)
    assert main(["threads", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out.splitlines()[1:]
    assert len(out) == len(ids)
    shown = {_cells(line)[0] for line in out}
    assert shown == {"plain", '"two\\nlines"', '"tab\\there"', '" padded "'}


def test_a_foreign_file_is_reported_and_the_others_served(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["a", "b"])
    foreign = tmp_path / "s" / "threads" / "zzz-notes.jsonl"
    foreign.write_text("hello\n")
    os.chmod(foreign, 0o600)
    assert main(["threads", str(tmp_path / "s")]) == 1
    out = [_cells(line) for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[0] for row in out] == ["a", "b", "zzz-notes.jsonl"]
    assert out[2][1] == "damaged" and "not a langgraph-jsonl-checkpoint log" in out[2][-1]
    assert main(["verify", str(tmp_path / "s")]) == 1
    assert "zzz-notes.jsonl" in capsys.readouterr().out
    assert main(["search", str(tmp_path / "s"), "a"]) == 1  # not silently left out of the search
    err = capsys.readouterr().err
    assert "1 thread(s) not searched" in err, err
    assert f"`langgraph-jsonl threads {shlex.quote(str(tmp_path / 's'))}` says why" in err, err  # runnable



@pytest.mark.parametrize("content, says", [
    # A header line that names no thread, nothing after it: someone's file, not a log.
    (b'{"t":"header"}\n', "not a langgraph-jsonl-checkpoint log"),
    # A header line that fails its checksum but still names its thread: repair it.
    (b'{"t":"header","thread":"lost-1","seq":0,"c":"00000000"}\n', "--thread lost-1"),
])
def test_a_header_line_that_does_not_check_is_told_apart_by_what_it_names(
    tmp_path: Path, capsys, content: bytes, says: str
) -> None:
    """A file in threads/ holding only `{"t":"header"}` was said to have "a damaged header
    line, which named its thread; the records after it look intact", with `repair
    --thread THREAD` "with the thread's id": it named none, and no record followed. Such
    a file is now a foreign file to move out; a damaged header that still shows its
    thread's id gets the repair command with that id."""
    from langgraph_jsonl_checkpoint.disk.paths import thread_file_stem

    _store(tmp_path / "s", ["a"])
    name = thread_file_stem("lost-1") + ".jsonl"
    (tmp_path / "s" / "threads" / name).write_bytes(content)
    assert main(["verify", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if name in line]
    assert says in line and "which named its thread" not in line, line
    if "repair" in line:  # the command it names runs as pasted, and repairs the file
        argv = shlex.split(line.split("Run `")[1].split("`")[0])[1:]
        assert main(argv) == 0, argv
        capsys.readouterr()
        assert main(["verify", str(tmp_path / "s")]) == 0

def test_a_store_written_through_another_serializer_is_reported_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command reads through LangGraph's default serializer; a store written through
    EncryptedSerializer cannot be read by it. Each command says so, naming the thread,
    the log and what to do, instead of a traceback (show, history) or a silent
    ``0 message(s)`` with exit 0 (search)."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    store = tmp_path / "s"
    saver = JsonlSaver(store, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16))
    v = {"messages": f"{1:032}.{0:016}"}
    saver.put(config("t"), make_checkpoint(cp_id(1), {"messages": [AIMessage("hello there", id="a")]}, v),
              {"source": "loop", "step": 1}, v)
    saver.close()
    log = ThreadFiles.of(store, "t").log
    for command in (["show", str(store), "t"], ["history", str(store), "t"]):
        capsys.readouterr()
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: thread 't'") and log in err and "serde=" in err, err
        assert "Traceback" not in err
    assert main(["threads", str(store)]) == 1
    out = capsys.readouterr().out
    assert "damaged" in out and "serde=" in out, out
    assert main(["search", str(store), "hello"]) == 1
    err = capsys.readouterr().err
    assert "1 thread(s) not searched" in err and "read (t; " in err, err
    assert main(["search", str(store), "hello", "--thread", "t"]) == 2
    assert "serde=" in capsys.readouterr().err


AES = "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes"


def _encrypted_store(store: Path, key: bytes) -> str:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    saver = JsonlSaver(store, serde=EncryptedSerializer.from_pycryptodome_aes(key=key), snapshot_every=1)
    cfg = config("t")
    msgs: list = []
    for i in range(3):
        msgs = msgs + [HumanMessage(f"question {i}", id=f"h{i}"), AIMessage(f"secret answer {i}", id=f"a{i}")]
        v = {"messages": f"{i + 1:032}.{0:016}"}
        checkpoint = make_checkpoint(cp_id(i + 1), {"messages": msgs}, v)
        cfg = saver.put(cfg, checkpoint, {"source": "loop", "step": i}, v)
    saver.close()
    return ThreadFiles.of(store, "t").log


@pytest.mark.parametrize("how", ["--serde", "LANGGRAPH_JSONL_SERDE"])
def test_serde_lets_every_command_read_an_encrypted_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The key comes from LANGGRAPH_AES_KEY (what from_pycryptodome_aes reads without key=);
    the serializer is named by --serde or by the environment, as the server factory reads it."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    key = b"0123456789abcdef"
    store = tmp_path / "s"
    log = _encrypted_store(store, key)
    monkeypatch.setenv("LANGGRAPH_AES_KEY", key.decode())
    extra = ["--serde", AES] if how == "--serde" else []
    if how != "--serde":
        monkeypatch.setenv("LANGGRAPH_JSONL_SERDE", AES)
    assert main(["threads", str(store)]) == (0 if how != "--serde" else 1)  # (no --serde: damaged)
    capsys.readouterr()
    assert main(["show", str(store), "t", *extra]) == 0
    assert "secret answer 2" in capsys.readouterr().out
    assert main(["history", str(store), "t", *extra]) == 0
    assert main(["threads", str(store), *extra]) == 0
    assert "damaged" not in capsys.readouterr().out
    assert main(["search", str(store), "secret answer 1", *extra]) == 0
    assert "secret answer 1" in capsys.readouterr().out
    assert main(["verify", str(store), *extra]) == 0
    assert main(["export", str(store), "t", "--format", "md", *extra]) == 0
    assert "secret answer 2" in capsys.readouterr().out
    assert main(["compact", str(store), *extra]) == 0
    assert b"secret answer" not in Path(log).read_bytes()  # values rewritten still encrypted
    reader = JsonlSaver(store, serde=EncryptedSerializer.from_pycryptodome_aes(key=key), read_only=True)
    tup = reader.get_tuple(config("t"))
    assert tup is not None and [m.content for m in tup.checkpoint["channel_values"]["messages"]][-1] == (
        "secret answer 2")
    reader.close()


@pytest.mark.parametrize("command", [["memory"], ["tail", "-n", "30"]])
def test_memory_and_tail_of_a_store_they_cannot_decode_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """Without the serializer that wrote it, `memory` printed an empty memory and `tail`
    the journal without a message, both with exit 0, as if that were the thread."""
    key = b"0123456789abcdef"
    store = tmp_path / "s"
    _encrypted_store(store, key)
    capsys.readouterr()
    assert main([command[0], str(store), "t", *command[1:]]) == 1
    err = capsys.readouterr().err
    assert "thread 't'" in err and "could not be decoded" in err and "--serde" in err, err
    monkeypatch.setenv("LANGGRAPH_AES_KEY", key.decode())
    assert main([command[0], str(store), "t", *command[1:], "--serde", AES]) == 0
    out, err = capsys.readouterr()
    assert ("question 2" if command[0] == "memory" else "secret answer 2") in out and not err, (out, err)


@pytest.mark.parametrize("spec, says", [
    ("no_such_module_xyz:serde", "cannot be loaded"),
    ("json:no_such_attr", "cannot be loaded"),
    ("json:dumps", "calling dumps() failed"),
    ("json:__name__", "is a str, not a serializer"),
    ("json", "module:attr"),
    (AES, "LANGGRAPH_AES_KEY"),  # the factory is called, and fails: no key set
])
def test_a_serde_that_cannot_be_used_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, spec: str, says: str
) -> None:
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    store = tmp_path / "s"
    _encrypted_store(store, b"0123456789abcdef")
    capsys.readouterr()
    assert main(["show", str(store), "t", "--serde", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: serializer {spec!r}") and says in err and "Traceback" not in err, err


SLOW_COMMAND = """
import signal, sys, time
# Ctrl-C as in a terminal: a test run in the background (CI) inherits SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.cli.{module} as command_module
def slow(*args, **kwargs):
    print("ready", file=sys.stderr, flush=True)
    for _ in range(600):  # short sleeps: a SIGINT that lands before one began acts at the next
        time.sleep(0.1)
command_module.{function} = slow
from langgraph_jsonl_checkpoint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("module", "function", "argv"),
    [
        ("maintenance", "verify", ["verify"]),
        ("maintenance", "repair", ["repair", "--thread", "t", "--dry-run"]),
        ("search", "search_messages", ["search", "word"]),
        ("threads", "listed_summaries", ["threads"]),
        ("maintenance", "_compacted", ["compact"]),
    ],
)
def test_ctrl_c_ends_a_command_with_one_line_and_exit_130(
    tmp_path: Path, module: str, function: str, argv: list[str]
) -> None:
    """Ctrl-C in a long verify, repair, search or listing printed a 30-line traceback
    ending in KeyboardInterrupt; it now says in one line that the command was
    interrupted and how to finish, with the shell's 130."""
    saver = JsonlSaver(tmp_path / "s")
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    saver.close()
    command, *options = argv
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_COMMAND.format(module=module, function=function),
         command, str(tmp_path / "s"), *options],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    with child:
        try:
            assert child.stderr is not None and child.stderr.readline().strip() == "ready"
            child.send_signal(2)
            _, err = child.communicate(timeout=30)
        finally:
            child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"interrupted: langgraph-jsonl {command} stopped before it finished"), line
    # what it left behind: a command that reads (or a dry run) changed nothing; nor did a
    # compact stopped before its first new log was in place, and it says so
    if command == "compact":
        assert "nothing was changed" in line and "Run it again" in line, line
    else:
        assert "it changes nothing in the store" in line and "consistent" not in line, line


def test_ctrl_c_while_the_command_loads_is_one_line_too() -> None:
    """The first tenth of a second of ``langgraph-jsonl`` is loading its modules: a Ctrl-C
    then printed a traceback and died by SIGINT. The entry point catches it too."""
    script = (
        "import builtins, sys\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'cli' or name.endswith('.cli'):\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        "from langgraph_jsonl_checkpoint.__main__ import main\n"
        "sys.exit(main())\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 130, run.stderr
    said = "interrupted: langgraph-jsonl stopped before it started; nothing was changed."
    assert run.stderr.strip() == said


SLOW_SWEEP = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (see above)
import langgraph_jsonl_checkpoint.maintenance.retention as retention
real = retention._sweep_one
def first_then_slow(*args, **kwargs):
    real(*args, **kwargs)
    if not getattr(first_then_slow, "done", False):
        first_then_slow.done = True
        print("ready", file=sys.stderr, flush=True)
        for _ in range(40):  # Ctrl-C lands meanwhile; the sweep stops before its next thread
            time.sleep(0.05)
retention._sweep_one = first_then_slow
from langgraph_jsonl_checkpoint.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_stops_a_sweep_after_the_thread_under_way_and_says_what_it_did(tmp_path: Path) -> None:
    """Ctrl-C in a sweep ended it with exit 130 and printed none of the threads it had
    already archived (its lines came at the end). It now stops before the next thread,
    prints what it did, says how to finish, and the same command again finishes."""
    store = tmp_path / "s"
    _store(store, [f"t{i}" for i in range(5)])
    argv = ["sweep", str(store), "--ttl", "0", "--strategy", "archive"]
    child = subprocess.Popen([sys.executable, "-c", SLOW_SWEEP, *argv],
                             stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with child:
        try:
            assert child.stderr is not None and child.stderr.readline().strip() == "ready"
            child.send_signal(2)
            out, err = child.communicate(timeout=60)
        finally:
            child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err, err
    assert "interrupted: langgraph-jsonl sweep stopped after 1 thread(s) swept" in err, err
    (line,) = [line for line in out.splitlines() if line.endswith("\tarchived")]
    assert "1 thread(s) archived" in out, out
    # the counts are of the threads looked at: the summary says the rest were not
    assert "0 active (idle less than 0 minutes), the others not looked at (stopped)" in out, out
    assert len(os.listdir(store / "threads")) > 1  # the others are still there
    assert main(argv) == 0
    assert sorted(os.path.basename(p) for p in (store / "threads").glob("*.jsonl")) == []


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_text_the_terminal_cannot_encode_is_escaped_not_a_traceback(tmp_path: Path, encoding: str) -> None:
    """A terminal whose encoding is not UTF-8 (``PYTHONIOENCODING``, a Latin-1 locale):
    a command printed its first rows, then a ``UnicodeEncodeError`` traceback at the
    first character it could not encode. Such text is now escaped; ``--json`` stays
    valid JSON that reads back as the same text."""

    store = tmp_path / "s"
    tid, text = "tid-東京", "naïve café · 東京 🚀"
    with JsonlSaver(store) as saver:
        v = {"messages": saver.get_next_version(None, None)}
        saver.put(config(tid), make_checkpoint(cp_id(1), {"messages": [text]}, v), {"note": text}, v)
    env = {**os.environ, "PYTHONIOENCODING": encoding}

    def cli(*argv: str) -> str:
        run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                             capture_output=True, env=env, timeout=60)
        assert run.returncode == 0 and b"Traceback" not in run.stderr, (argv, run.stderr)
        return run.stdout.decode(encoding)

    assert "tid-\\u6771\\u4eac" in cli("threads", str(store))
    for argv in (["show", str(store), tid], ["history", str(store), tid], ["search", str(store), "café"],
                 ["export", str(store), tid], ["tools", str(store), tid]):
        cli(*argv)
    assert [t["thread_id"] for t in json.loads(cli("threads", str(store), "--json"))] == [tid]
    assert text in json.dumps(json.loads(cli("show", str(store), tid, "--json")), ensure_ascii=False)


def test_a_store_whose_marker_was_deleted_is_named_with_how_to_recreate_it(tmp_path: Path, capsys) -> None:
    """`langgraph-jsonl verify` of a store whose STORE.json was deleted said to pass the
    directory given to JsonlSaver (it was); it says the threads are there and what the
    marker holds."""
    _store(tmp_path / "s", ["t1", "t2"])
    (tmp_path / "s" / "STORE.json").unlink()
    assert main(["verify", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "2 thread logs" in err and '{"store": "langgraph-jsonl-checkpoint", "format": 1}' in err
    assert not (tmp_path / "s" / "STORE.json").exists()


def _read_only_saver_error(store: Path) -> int:
    from langgraph_jsonl_checkpoint import StoreError

    try:
        JsonlSaver(store, read_only=True)
    except StoreError as exc:
        print(exc)
        return 0
    return 1


@pytest.mark.parametrize("reach", ["directory", "marker"])
def test_another_user_s_store_is_named_as_unreadable_not_as_no_store(reach: str) -> None:
    """A store extracted from a tarball as root (files kept owned by their first user)
    and read as someone else: `langgraph-jsonl threads` said it was not a store (no
    STORE.json) or that the marker was unreadable and to "restore it", and a read-only
    JsonlSaver raised a bare PermissionError. Both say this user cannot read it, whose it
    is and what to do."""
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        base.chmod(0o755)
        store = base / "s"
        _store(store, ["t1"])
        for root, dirs, names in os.walk(store):
            for name in [root, *(os.path.join(root, n) for n in dirs + names)]:
                os.chown(name, 1000, 1000)
        if reach == "marker":
            store.chmod(0o755)
        code, err = as_nobody(lambda: main(["threads", str(store)]))
        assert code == 2 and "Traceback" not in err, err
        assert "cannot be read by this user" in err and "uid 1000" in err, err
        assert "no STORE.json" not in err and "restore it" not in err
        code, out = as_nobody(lambda: _read_only_saver_error(store))
        assert code == 0 and "cannot be read by this user" in out, out
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize("argv", [
    ["show", "STORE", "typo"], ["history", "STORE", "typo"], ["verify", "STORE", "--thread", "typo"],
    ["restore", "STORE", "--thread", "typo"], ["restore", "STORE", "--thread", "a"],
])
def test_the_command_a_refusal_suggests_runs_as_given_in_a_store_path_with_a_space(
    tmp_path: Path, capsys, argv: list[str]
) -> None:
    """A store in `my demo/checkpoints`: the command the error names (`langgraph-jsonl
    threads ...`, `langgraph-jsonl archived ...`), pasted into a shell, runs on that store."""
    store = tmp_path / "my demo" / "checkpoints"
    _store(store, ["a"])
    assert main([str(store) if a == "STORE" else a for a in argv]) == 2
    err = capsys.readouterr().err
    suggested = re.findall(r"`(langgraph-jsonl [^`]*)`", err)
    assert suggested, err
    for command in suggested:
        words = shlex.split(command)
        assert words[2] == str(store), (command, err)
        assert main(words[1:]) == 0, (command, capsys.readouterr().err)


def _suggested(err: str, word: str) -> list[str]:
    """The argv (after ``langgraph-jsonl``) of the command in backticks that starts with
    ``langgraph-jsonl WORD``, as a shell would split it when pasted."""
    found = re.search(rf"`(langgraph-jsonl {word} [^`]*)`", err)
    assert found, err
    return shlex.split(found.group(1))[1:]


@pytest.mark.parametrize("thread_id", ["-dash", "--help"])
def test_the_repair_command_a_damaged_dashed_thread_is_told_runs_as_pasted(
    tmp_path: Path, capsys, caplog, thread_id: str
) -> None:
    """A damaged thread whose id starts with a dash was told to run `langgraph-jsonl repair
    STORE --thread -dash`, which argparse refuses (`--thread --help` printed the help):
    the hint now spells it --thread=-dash, and pasted it repairs the thread."""
    store = tmp_path / "s"
    _store(store, [thread_id, "b"])
    with JsonlSaver(store) as saver:  # two more checkpoints, then a byte of the middle one flipped
        for i in (8, 9):
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config(thread_id), make_checkpoint(cp_id(i), {"m": ["x"]}, v), {}, v)
    log = Path(ThreadFiles.of(store, thread_id).log)
    data = bytearray(log.read_bytes())
    lines = data.split(b"\n")
    data[sum(len(line) + 1 for line in lines[:2]) + 40] ^= 0x01
    log.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["show", str(store), f"--thread={thread_id}"]) == 1
    argv = _suggested(capsys.readouterr().err + caplog.text, "repair")  # the saver's warning
    assert main([*argv, "--dry-run"]) == 1, argv  # it would drop the damaged line
    assert "would drop" in capsys.readouterr().out
    assert main(argv) == 0, argv
    assert main(["verify", str(store)]) == 0


@pytest.mark.parametrize("thread_id", ["-dash", "--help"])
def test_the_restore_command_an_archived_dashed_thread_is_told_runs_as_pasted(
    tmp_path: Path, capsys, thread_id: str
) -> None:
    """`show STORE --thread=-dash` of an archived thread said to bring it back with
    `langgraph-jsonl restore STORE --thread -dash`, which argparse refuses."""
    pytest.importorskip("zstandard")
    store = tmp_path / "s"
    _store(store, [thread_id, "b"])
    with JsonlSaver(store) as saver:
        os.utime(saver.store.log_paths(thread_id).log, (time.time() - 7200, time.time() - 7200))
        swept = saver.sweep({"default_ttl": 60, "strategy": "archive"})
        assert [t for t, _ in swept.swept] == [thread_id], swept
    capsys.readouterr()
    assert main(["show", str(store), f"--thread={thread_id}"]) == 2
    argv = _suggested(capsys.readouterr().err, "restore")
    assert main(argv) == 0, argv
    assert main(["show", str(store), f"--thread={thread_id}"]) == 0


def _dashed_thread_archived(tmp_path: Path) -> Path:
    """A store of threads -dash and b, -dash archived by a sweep."""
    pytest.importorskip("zstandard")
    store = tmp_path / "s"
    _store(store, ["-dash", "b"])
    with JsonlSaver(store) as saver:
        os.utime(saver.store.log_paths("-dash").log, (time.time() - 7200, time.time() - 7200))
        saver.sweep({"default_ttl": 60, "strategy": "archive"})
    return store


def test_the_copy_command_a_refused_restore_of_a_dashed_thread_names_runs_as_pasted(
    tmp_path: Path, capsys
) -> None:
    """A restore refused because a new thread of the id has a log said to keep it with
    `langgraph-jsonl copy STORE OTHER_STORE --threads -dash`, which argparse refuses."""
    store = _dashed_thread_archived(tmp_path)
    with JsonlSaver(store) as saver:  # a new run of the same id
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config("-dash"), make_checkpoint(str(uuid6(clock_seq=-1)), {"m": ["new"]}, v), {}, v)
    capsys.readouterr()
    assert main(["restore", str(store), "--thread=-dash"]) == 2
    argv = _suggested(capsys.readouterr().err, "copy")
    argv = [str(tmp_path / "other") if a == "OTHER_STORE" else a for a in argv]
    assert main([*argv, "--json"]) == 0, argv
    report = json.loads(capsys.readouterr().out)
    assert [t["thread_id"] for t in report["per_thread"]] == ["-dash"], report


def test_the_restore_command_a_late_write_to_an_archived_dashed_thread_names_runs_as_pasted(
    tmp_path: Path, capsys
) -> None:
    """A write from before a sweep archived thread -dash is refused, naming `langgraph-jsonl
    restore STORE --thread -dash`, which argparse refuses: now --thread=-dash."""
    store = _dashed_thread_archived(tmp_path)
    with JsonlSaver(store) as saver, pytest.raises(ThreadDeletedError) as refused:
        v = {"m": saver.get_next_version(None, None)}  # continuing a checkpoint from before the sweep
        late = make_checkpoint(cp_id(5), {"m": ["late"]}, v)
        saver.put(config("-dash", checkpoint_id=cp_id(0)), late, {}, v)
    argv = _suggested(str(refused.value), "restore")
    assert main(argv) == 0, argv
    assert "restored" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["history", "STORE", "--limit", "1", "t-1"], cp_id(0)),  # t-1's checkpoint
    (["show", "STORE", "--internal", "t-1"], "t-1"),
    (["show", "STORE", "--internal", "--", "-dash"], "-dash"),  # the hint's `-- -dash`, options first
    (["history", "STORE", "--limit", "1", "--", "-dash"], cp_id(1)),  # -dash's
    (["export", "STORE", "--format", "md", "t-1"], "t-1"),
    (["export", "STORE", "--format", "md", "--", "-dash"], "-dash"),
    (["search", "STORE", "--role", "human", "hello"], "no message matches 'hello'"),
    (["show", "--", "STORE", "-dash"], "-dash"),  # as before
    (["show", "STORE", "--", "--help"], "--help"),
])
def test_options_between_the_store_and_the_thread_are_taken(
    tmp_path: Path, capsys, argv: list[str], expected: str
) -> None:
    """`history ./checkpoints --limit 1 t-1` failed with "unrecognized arguments: t-1",
    and `show STORE --internal -- -dash` (the `-- -dash` the dash hint names, after an
    option) with "unrecognized arguments: -- -dash": argparse gave up the operands once
    an option came after the store. Options may now come anywhere among the operands."""
    _store(tmp_path / "s", ["t-1", "-dash", "--help"])
    capsys.readouterr()
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    assert main(argv) == 0, capsys.readouterr().err
    assert expected in capsys.readouterr().out


@pytest.mark.parametrize("given", [["--thread", "t-1"], ["--thread=-dash"], ["--thread", "t-1", "-o", "OUT"]])
def test_export_given_thread_as_an_option_says_how_to_give_it(
    tmp_path: Path, capsys, given: list[str]
) -> None:
    """`export STORE --thread t-1` (as show, history, ... take it) said only that "--threads,
    --dry-run, ... are for an export to a database": export's --thread abbreviates its
    --threads. The error now gives the command that exports the thread, which runs as pasted."""
    _store(tmp_path / "s", ["t-1", "-dash"])
    out = tmp_path / "t.md"
    capsys.readouterr()
    argv = ["export", str(tmp_path / "s"), *(str(out) if a == "OUT" else a for a in given)]
    assert main(argv) == 2
    suggested = _suggested(capsys.readouterr().err, "export")
    assert main(suggested) == 0, suggested
    thread = "-dash" if "--thread=-dash" in given else "t-1"
    text = out.read_text() if "-o" in given else capsys.readouterr().out
    assert f"# Thread `{thread}`" in text, text


def _damage_middle_record(store: Path, thread_id: str) -> None:
    """Three checkpoints of ``thread_id``, then a byte of the second one's record flipped."""
    _store(store, [thread_id])
    with JsonlSaver(store) as saver:
        for i in (8, 9):
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config(thread_id), make_checkpoint(cp_id(i), {"m": ["x"]}, v), {}, v)
    log = Path(ThreadFiles.of(store, thread_id).log)
    data = bytearray(log.read_bytes())
    data[sum(len(line) + 1 for line in data.split(b"\n")[:2]) + 40] ^= 0x01
    log.write_bytes(bytes(data))


@pytest.mark.parametrize("argv", [
    ["compact", "STORE", "--dry-run"],
    ["compact", "STORE", "--keep-latest", "--dry-run"],
    ["sweep", "STORE", "--ttl", "1", "--strategy", "keep_latest", "--dry-run"],
])
def test_a_dry_run_states_a_damaged_thread_once(tmp_path: Path, capsys, caplog, argv: list[str]) -> None:
    """`compact --dry-run` (and a keep_latest sweep's) said a damaged thread's damage twice in
    other words: the saver's warning that it serves the records before the damage, then
    the command's own line that skipped it (the command without --dry-run: once)."""
    store = tmp_path / "s"
    _damage_middle_record(store, "t-1")
    _store(store, ["b"])
    for p in (store / "threads").glob("*.jsonl"):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    capsys.readouterr()
    main([str(store) if a == "STORE" else a for a in argv])
    said = capsys.readouterr()
    told = said.out + said.err + caplog.text
    assert told.count("damaged") == 1, told


@pytest.mark.parametrize("name", ["my store", "it's here"])
def test_the_threads_command_a_missing_thread_operand_names_runs_as_pasted(
    tmp_path: Path, capsys, name: str
) -> None:
    """`show 'my store'` (no thread) said "`langgraph-jsonl threads my store` lists the
    threads": pasted, that is two operands, and the command fails."""
    store = tmp_path / name
    _store(store, ["t-1"])
    capsys.readouterr()
    assert main(["show", str(store)]) == 2
    argv = _suggested(capsys.readouterr().err, "threads")
    assert main(argv) == 0, argv
    assert "t-1" in capsys.readouterr().out


@pytest.mark.parametrize("as_url", [True, False])
def test_the_commands_import_with_swapped_operands_names_run_as_pasted(
    tmp_path: Path, capsys, as_url: bool
) -> None:
    """`import 'my store' 'my app.db'` (the operands swapped) said to run `langgraph-jsonl
    import my app.db my store` or `langgraph-jsonl copy my store my app.db`: pasted, each
    is four operands and fails. Both are now shell-quoted."""
    pytest.importorskip("langgraph.checkpoint.sqlite")
    store, db = tmp_path / "my store", tmp_path / "my app.db"
    _store(store, ["t-1"])
    assert main(["copy", str(store), f"sqlite:///{db}"]) == 0
    target = f"sqlite:///{db}" if as_url else str(db)
    capsys.readouterr()
    assert main(["import", str(store), target]) == 2
    err = capsys.readouterr().err
    for word in ("import", "copy"):
        argv = _suggested(err, word)
        assert main([*argv, "--dry-run"]) == 0, argv
        capsys.readouterr()


@pytest.mark.parametrize("argv", [["repair", "STORE", "--thread", "t-1"], ["compact", "STORE"]])
def test_output_that_cannot_be_written_by_a_command_changing_the_store_says_what_it_left(
    tmp_path: Path, argv: list[str]
) -> None:
    """`langgraph-jsonl compact STORE >&-` (or `> /dev/full`) did its work, then said only that
    standard output could not be written, exit 2: as if nothing had run. It now says what
    a Ctrl-C says of a store-changing command: the store is consistent; run it again."""
    _store(tmp_path / "s", ["t-1"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    done = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                          preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "cannot write to standard output" in done.stderr, done.stderr
    assert "the store is consistent" in done.stderr and "again" in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv, "--dry-run"],
                          preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2 and "the store is consistent" not in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["show", "STORE", "t-1"], ["threads", "STORE"], ["export", "STORE", "t-1"],
                                  ["history", "STORE", "t-1", "--json"]])
def test_output_to_a_full_disk_is_an_error_without_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    """`langgraph-jsonl export STORE t-1 > t.md` on a full disk (here `> /dev/full`) ended
    in an OSError traceback: it is now one line saying standard output could not be
    written, and exit status 2."""
    _store(tmp_path / "s", ["t-1"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert "cannot write to standard output" in done.stderr and "No space left" in done.stderr, done.stderr


@pytest.mark.parametrize("argv", [["threads", "STORE"], ["threads", "STORE", "--json"],
                                  ["show", "STORE", "t-1"], ["show", "STORE", "t-1", "--json"],
                                  ["export", "STORE", "t-1"],
                                  ["history", "STORE", "t-1"]])
def test_a_closed_standard_output_is_one_error_saying_so(tmp_path: Path, argv: list[str]) -> None:
    """`langgraph-jsonl show STORE t-1 --json >&-` (or `export`) ended in an AttributeError
    traceback (Python has no sys.stdout), and `threads STORE >&-` exited 0 having shown
    nothing: every command now says it cannot write to standard output, exit status 2."""
    _store(tmp_path / "s", ["t-1"])
    argv = [str(tmp_path / "s") if a == "STORE" else a for a in argv]
    done = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                          preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert "cannot write to standard output" in done.stderr and "closed" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
