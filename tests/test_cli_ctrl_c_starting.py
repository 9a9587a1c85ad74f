"""Ctrl-C while ``langgraph-jsonl`` starts (its first tenth of a second, loading its
modules) is the one line and exit status 130, as one later is: never a traceback.

Started as a user starts it (the console script, ``python -m``), in a fresh
interpreter; the moment is pinned by the import it lands in (``tests/harness/ctrl_c.py``),
then swept with real delays from the moment the package's own code runs. What comes
before that (Python's own start-up, ``site``) no code of the package can catch:
``docs/cli.md`` says what a Ctrl-C there does."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.ctrl_c import NOT_STARTED, start

HOW = ["script", "-m"]


def _store(path: Path) -> Path:
    with JsonlSaver(path) as saver:
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config("t1"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    return path


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("at", [
    "langgraph_jsonl_checkpoint._lazy",  # the package's __init__ (its imports: typing, the errors)
    "langgraph_jsonl_checkpoint.errors",
    "langgraph_jsonl_checkpoint.cli",  # __main__ loading the command line
    "argparse",
    "langgraph_jsonl_checkpoint.cli.common",
    "orjson",
    "uuid",  # imported by orjson's extension module as it loads: a KeyboardInterrupt there crashed it
])
def test_ctrl_c_as_the_command_loads_is_the_one_line_and_130(tmp_path: Path, how: str, at: str) -> None:
    """A Ctrl-C in the package's ``__init__`` printed a traceback and the process died
    by SIGINT (the entry point's guard came after it); one as ``orjson`` loaded killed
    it with SIGSEGV. Each is now the one line and exit status 130."""
    store = _store(tmp_path / "s")
    status, out, err = start(how, ["threads", str(store)], tmp_path, at=at).finish()
    assert (status, out, err) == (130, "", NOT_STARTED)


@pytest.mark.parametrize("how", HOW)
def test_ctrl_c_once_the_command_runs_is_still_its_own_line(tmp_path: Path, how: str) -> None:
    """Once the command line is loaded, a Ctrl-C is the command's, as before: its line
    names the command."""
    store = _store(tmp_path / "s")
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"  # imported as `verify` runs
    status, out, err = start(how, ["verify", str(store)], tmp_path, at=at).finish()
    assert status == 130 and out == "", err
    assert err == ("interrupted: langgraph-jsonl verify stopped before it finished; it changes "
                   "nothing in the store. Run it again for the whole answer.\n")


DELAYS_MS = [0, 0.5, 1, 2, 3, 5, 8, 12, 20, 30, 50, 80]


@pytest.mark.parametrize("argv", [["threads"], ["--help"]])
def test_ctrl_c_at_any_moment_of_the_start_is_130_or_the_answer(tmp_path: Path, argv: list[str]) -> None:
    """Real SIGINTs at delays from the moment the package's code starts running (its
    first import), through the loading of the command line, into the command: each
    ends with the one line and 130, or (the command done first) its whole answer and
    0; never a traceback, a crash, or death by SIGINT."""
    store = _store(tmp_path / "s")
    argv = [argv[0], str(store)] if argv == ["threads"] else argv
    whole = start("-m", argv, tmp_path).finish()  # uninterrupted
    assert whole[0] == 0 and whole[2] == "", whole

    def one(case: tuple[str, float]) -> tuple[str, float, tuple[int, str, str]]:
        how, delay = case
        where = tmp_path / f"{how}-{delay}"
        where.mkdir()
        child = start(how, argv, where, ready="langgraph_jsonl_checkpoint._lazy")
        child.wait_ready()
        time.sleep(delay / 1000)
        child.interrupt()
        return how, delay, child.finish()

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, [(how, delay) for how in HOW for delay in DELAYS_MS]))
    for how, delay, (status, out, err) in results:
        assert "Traceback" not in err and "Fatal" not in err, (how, delay, err)
        if status == 0:
            assert (out, err) == (whole[1], ""), (how, delay, err)
        else:
            assert status == 130 and out == "", (how, delay, status, err)
            (line,) = err.splitlines()
            assert line.startswith("interrupted: langgraph-jsonl"), (how, delay, line)


@pytest.mark.parametrize("thread", [["--thread", "t1"], []])
def test_ctrl_c_as_compact_loads_langgraph_says_nothing_changed(tmp_path: Path, thread: list[str]) -> None:
    """``compact`` imports LangGraph (through the saver) before it opens the store, up to
    a second on a slow machine: a Ctrl-C there said "the store is consistent (each
    thread's change is all or nothing). Run it again to finish", though nothing had been
    touched, and the CLI page promises that with nothing compacted yet the line says
    "nothing was changed". It now does, and every file is as it was."""
    from tests.harness.scratch import file_snapshot

    store = _store(tmp_path / "s")
    files = file_snapshot(str(store))
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"
    status, out, err = start("-m", ["compact", str(store), *thread], tmp_path, at=at).finish()
    assert (status, out) == (130, ""), err
    which = "the log of thread 't1' is as it was" if thread else "no log was compacted"
    assert err == ("interrupted: langgraph-jsonl compact stopped before it finished; nothing was "
                   f"changed ({which}). Run it again to compact.\n"), err
    assert file_snapshot(str(store)) == files


def test_ctrl_c_as_repair_loads_langgraph_says_the_log_is_as_it_was(tmp_path: Path) -> None:
    """``repair`` loads LangGraph (with the saver) before it looks at the thread: a
    Ctrl-C there said "the store is consistent (each thread's change is all or nothing).
    Run it again to finish", as if part of a repair were done, where ``compact`` says
    nothing was changed. It now says the log is as it was, and every file is."""
    from tests.harness.scratch import file_snapshot

    store = _store(tmp_path / "s")
    files = file_snapshot(str(store))
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"
    status, out, err = start("-m", ["repair", str(store), "--thread", "t1"], tmp_path, at=at).finish()
    assert (status, out) == (130, ""), err
    assert err == ("interrupted: langgraph-jsonl repair stopped before it finished; nothing was "
                   "changed (the log of thread 't1' is as it was). Run it again to repair.\n"), err
    assert file_snapshot(str(store)) == files


def test_ctrl_c_as_sweep_loads_langgraph_says_no_thread_was_swept(tmp_path: Path) -> None:
    """The same for ``sweep``: a Ctrl-C before it looked at any thread now says that no
    thread was swept, not "Run it again to finish"."""
    from tests.harness.scratch import file_snapshot

    store = _store(tmp_path / "s")
    files = file_snapshot(str(store))
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"
    status, out, err = start("-m", ["sweep", str(store), "--ttl", "0"], tmp_path, at=at).finish()
    assert (status, out) == (130, ""), err
    assert err == ("interrupted: langgraph-jsonl sweep stopped before it finished; nothing was "
                   "changed (no thread was swept). Run it again to sweep.\n"), err
    assert file_snapshot(str(store)) == files
