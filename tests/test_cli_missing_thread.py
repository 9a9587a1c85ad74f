"""Every command of ``langgraph-jsonl``, given a thread id the store never held, on a
real store (``cli_store``, with one thread archived): it says so, and leaves the store
exactly as it was: no file added, removed or changed anywhere in it (no ``.lock`` or
``.run`` file for the thread it did not find).

The commands are enumerated from the CLI's parser, and each one's command line is built
from its declared operands and options: a new command is covered without touching this
file, or, if it takes an operand this file does not know, the test says which.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import build_parser, main
from tests.harness.bounded import within
from tests.harness.cli_store import BuiltStore

MISSING = "zzz-never-made"
#: A checkpoint id no thread holds (for commands that name checkpoints too).
NO_CHECKPOINT = "1f0c3b9e-0f1a-6b4e-8002-000000000000"


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command of the CLI, by name, as its parser declares it."""
    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


class Stores:
    """The store under test, and a second, empty store (the other end of a copy); the
    thread the command lines name."""

    def __init__(self, store: Path, other: Path, database: Path, thread: str = MISSING) -> None:
        self.store, self.other, self.database = str(store), str(other), f"sqlite:///{database}"
        self.thread = thread


#: What to pass for an operand, by its name: a function of the stores, or a list of
#: them (one command line each). Operands not listed here and optional are left out.
OPERANDS: dict[str, Callable[[Stores], str] | list[Callable[[Stores], str]]] = {
    "store": lambda s: s.store,
    "thread": lambda s: s.thread,
    "a": lambda s: NO_CHECKPOINT,
    "b": lambda s: NO_CHECKPOINT,
    "text": lambda s: "refund",
}
#: Commands that move threads between two ends: the store under test as each end.
ENDS = {
    "import": [["source", "store"], [lambda s: s.other, lambda s: s.store]],
    "copy": [["source", "target"], [lambda s: s.store, lambda s: s.other],
             [lambda s: s.other, lambda s: s.store]],
    "export": [["store", "thread"], [lambda s: s.store, lambda s: s.database]],
}
#: Options that name a thread, and what else a command needs to do anything at all.
THREAD_OPTIONS = ("--thread", "--threads")
EXTRA = {"sweep": ["--ttl", "1000000"]}
#: Listings whose ``--thread`` only filters what they list: none is an answer, not an error.
FILTERS = {"archived"}
#: Switches left out: ``tail -f`` waits for the thread to appear, by design.
WAITING_SWITCHES = {"follow"}


def command_lines(
    name: str, parser: argparse.ArgumentParser, s: Stores, *, switches: bool = True
) -> list[list[str]]:
    """The command lines that run ``name`` on the thread (one, or one per end), then
    each again with each of its switches (``--keep-latest``, ``--dry-run``, ``--json``...)."""
    positionals = [a for a in parser._actions if not a.option_strings]
    by_operand = any(a.dest == "thread" for a in positionals)
    options: list[str] = []
    for action in parser._actions:
        if not action.option_strings or (by_operand and action.dest == "thread_option"):
            continue  # (a reading command's --thread: the THREAD operand's other spelling)
        flag = next((o for o in action.option_strings if o in THREAD_OPTIONS), None)
        if flag is not None:
            options += [flag, s.thread]
        elif action.required:
            pytest.fail(f"{name}: required option {action.option_strings} unknown to this test: "
                        "say in EXTRA what to pass")
    base = []
    for action in positionals:
        given = OPERANDS.get(action.dest)
        if given is None and action.dest in {"source", "target"}:
            continue  # filled from ENDS below
        if given is None:
            if action.nargs == "?":
                continue
            pytest.fail(f"{name}: operand {action.dest} unknown to this test: add it to OPERANDS")
        assert callable(given)
        base.append(given(s))
    lines = [[name, *base, *options, *EXTRA.get(name, [])]]
    if name in ENDS:
        names, *variants = ENDS[name]
        lines = [[name, *(f(s) for f in v), *options] for v in variants]
        if name == "export":  # a transcript export of the thread, and a database export
            lines.insert(0, [name, s.store, s.thread])
    if not switches:
        return lines
    flags = [
        a.option_strings[-1] for a in parser._actions
        if isinstance(a, argparse._StoreTrueAction) and a.dest not in WAITING_SWITCHES
    ]
    return lines + [line + [flag] for flag in flags for line in lines]


def snapshot(path: Path) -> dict[str, str]:
    """Every entry under ``path``: directories by name, files with their bytes' hash; but
    the listing cache (``LISTING.idx``, derived and store-wide, not a thread's file: the
    one file ``threads`` writes, see ``tests/test_listing_cache.py``)."""
    out = {}
    for root, dirs, files in os.walk(path):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), path) + "/"] = "dir"
        for f in files:
            full = os.path.join(root, f)
            if full == os.path.join(path, "LISTING.idx"):
                continue
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def archived_store(cli_store: BuiltStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``cli_store`` with its ``fan`` thread archived (read-only for the tests)."""
    path = tmp_path_factory.mktemp("missing") / "store"
    shutil.copytree(cli_store.path, path, symlinks=True)
    with JsonlSaver(path) as saver:
        os.utime(saver.store.log_paths("fan").log, (time.time() - 7200, time.time() - 7200))
        swept = saver.sweep({"default_ttl": 60, "strategy": "archive"})
        assert [t for t, _ in swept.swept] == ["fan"], swept
    return path


def stores(archived_store: Path, tmp_path: Path, thread: str) -> Stores:
    """A copy of ``archived_store`` to run commands on, and the other end of a copy."""
    store = tmp_path / "store"
    shutil.copytree(archived_store, store, symlinks=True)
    with JsonlSaver(store) as saver:  # the catalog checks inodes: bring it to the copy's
        list(saver.store.thread_ids())
    JsonlSaver(tmp_path / "other").close()
    return Stores(store, tmp_path / "other", tmp_path / "copy.db", thread)


@pytest.mark.parametrize("name", sorted(commands()))
def test_a_command_on_a_missing_thread_leaves_the_store_as_it_was(
    name: str, archived_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = stores(archived_store, tmp_path, MISSING)
    store = Path(s.store)
    plain = command_lines(name, commands()[name], s, switches=False)
    for argv in command_lines(name, commands()[name], s):
        before = snapshot(store)
        with within(60, " ".join(argv)):
            code = main(argv)
        err = capsys.readouterr().err
        assert snapshot(store) == before, f"{argv} changed the store"
        assert "Traceback" not in err
        if argv not in plain:
            continue  # a switch may be refused first (export's database options, say)
        if name in FILTERS:
            assert code == 0, (argv, code, err)
        elif MISSING in argv[1:3] or "--thread" in argv:
            # A command that reads or changes one thread: it says that thread is missing.
            assert code == 2 and MISSING in err, (argv, code, err)


#: Commands that do not read one thread (an archived one is theirs to list or restore).
NOT_READING_ONE = FILTERS | {"restore", "threads", "sweep", "import", "copy"}


@pytest.mark.parametrize("name", sorted(set(commands()) - NOT_READING_ONE))
def test_a_command_on_an_archived_thread_says_when_it_was_archived_and_how_to_restore_it(
    name: str, archived_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = stores(archived_store, tmp_path, "fan")
    with JsonlSaver(s.store, read_only=True) as saver:
        (entry,) = saver.archived("fan")
    plain = command_lines(name, commands()[name], s, switches=False)
    lines = [a for a in command_lines(name, commands()[name], s) if "fan" in a and "--threads" not in a]
    assert lines
    for argv in lines:
        before = snapshot(Path(s.store))
        with within(60, " ".join(argv)):
            code = main(argv)
        err = capsys.readouterr().err
        assert snapshot(Path(s.store)) == before, argv
        if argv not in plain and "is archived" not in err:
            assert code == 2 and "--" in err, (argv, err)  # the switch refused first
            continue
        assert code == 2, (argv, err)
        assert "thread fan is archived" in err and entry.archived_at.strftime("%Y-%m-%d %H:%M:%S") in err, err
        assert f"`langgraph-jsonl restore {s.store} --thread fan`" in err, err
        assert "has no thread" not in err


def test_tail_f_of_an_archived_thread_says_so_while_it_waits(
    archived_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_jsonl_checkpoint.cli import conversation

    def ctrl_c(seconds: float) -> None:
        raise KeyboardInterrupt

    s = stores(archived_store, tmp_path, "fan")
    monkeypatch.setattr(conversation.time, "sleep", ctrl_c)  # the first poll ends it, as Ctrl-C
    with within(60, "tail -f"):
        assert main(["tail", s.store, "fan", "-f"]) == 0
    err = capsys.readouterr().err
    assert "thread fan is archived" in err and f"langgraph-jsonl restore {s.store} --thread fan" in err
    assert "waiting for thread fan to appear" in err


@pytest.mark.parametrize("name", ["show", "history", "tail", "tools"])
def test_a_thread_a_run_is_on_but_has_stored_nothing_yet_is_said_so(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A new thread run with durability="exit" has no checkpoint until the run ends, but
    # holds its live-run lock: "has no thread" alone sent the user looking for a typo.
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    lock = saver.store.run_lock("fresh")
    assert lock.try_acquire("run")
    try:
        with within(60, name):
            code = main([name, str(store), "fresh"])
        err = capsys.readouterr().err
    finally:
        lock.release()
        saver.close()
    assert code == 2 and "Traceback" not in err
    assert "thread fresh" in err and f"process {os.getpid()}" in err and "nothing" in err, err
    assert "durability" in err, err
