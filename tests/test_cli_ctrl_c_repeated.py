"""Ctrl-C pressed several times in quick succession ends ``langgraph-jsonl`` with the one
line and exit status 130, every time: never death by SIGINT (-2) or a traceback.

Started as a user starts it (``tests/harness/ctrl_c.py``), with bursts of real SIGINTs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.ctrl_c import start

#: (delay after the command began, SIGINTs, ms between them): the burst lands in the
#: command, in its saying it was interrupted, and as its process ends.
BURSTS = [
    (0, 2, 0), (0, 5, 1), (3, 3, 15), (5, 4, 2), (10, 5, 0.5), (15, 3, 3), (20, 4, 5), (30, 5, 1),
    (40, 2, 10), (50, 3, 5),
]


def _store(path: Path) -> Path:
    with JsonlSaver(path) as saver:
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config("t1"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    return path


def test_a_burst_of_ctrl_c_in_a_command_is_the_one_line_and_130(tmp_path: Path) -> None:
    """``verify`` (loading LangGraph as it starts reading: a few tenths of a second) sent
    2 to 5 SIGINTs at once: it said it was interrupted, then, about one time in three,
    died by SIGINT (-2; a shell shows 130, a script that checks for 130 does not): a
    Ctrl-C that came as Python ended, after it had put back the default action of
    SIGINT. It now exits 130 each time, the one line said."""
    store = _store(tmp_path / "s")

    def one(case: tuple[int, tuple[float, int, float]]) -> tuple[object, tuple[int, str, str]]:
        n, (delay, count, gap) = case
        where = tmp_path / f"run-{n}"
        where.mkdir()
        ready = "langgraph_jsonl_checkpoint.saver.jsonl_saver"  # imported as `verify` begins
        child = start("script", ["verify", str(store)], where, ready=ready)
        child.wait_ready()
        time.sleep(delay / 1000)
        for _ in range(count):
            child.interrupt()
            time.sleep(gap / 1000)
        return case, child.finish()

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, enumerate(BURSTS)))
    said = ("interrupted: langgraph-jsonl verify stopped before it finished; it changes nothing in the "
            "store. Run it again for the whole answer.\n")
    assert [(case, status, err) for case, (status, _, err) in results if (status, err) != (130, said)] == []


@pytest.mark.parametrize(("argv", "status"), [
    (["--help"], 0), (["threads", "--no-such-option"], 2), (["threads", "no-such-store"], 2),
])
def test_ctrl_c_as_a_command_that_ended_exits_keeps_its_status(
    tmp_path: Path, argv: list[str], status: int
) -> None:
    """A command that ended by printing its help, a usage error (both a SystemExit from
    argparse) or an error (exit 2) left Ctrl-C raising ``KeyboardInterrupt``: one as
    Python ended printed "Exception ignored in atexit callback" and a traceback. Its
    work is done: the Ctrl-C is ignored, as after any other command's, and the status
    is its own."""
    argv = [str(tmp_path / a) if a == "no-such-store" else a for a in argv]
    ran, out, err = start("-m", argv, tmp_path, at_exit=True).finish()
    assert ran == status and "Traceback" not in err and "KeyboardInterrupt" not in err, (ran, err)
    assert ("usage: langgraph-jsonl" in out) if status == 0 else ("error: " in err), (out, err)


@pytest.mark.parametrize("how", ["script", "-m"])
def test_ctrl_c_a_library_turned_into_its_own_error_is_the_one_line_and_130(tmp_path: Path, how: str) -> None:
    """A single Ctrl-C as ``verify`` loaded LangGraph, inside LangSmith's pydantic models,
    came out of ``pydantic_core`` as a ``SchemaError`` ("'cls' must be valid as the first
    argument to 'isinstance'"): a 70-line traceback and exit status 1. An error after
    the CLI's own Ctrl-C is the Ctrl-C's doing: the one line and 130."""
    store = _store(tmp_path / "s")
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"  # imported as `verify` begins
    status, out, err = start(how, ["verify", str(store)], tmp_path, swallowed=at).finish()
    assert (status, out) == (130, ""), err
    assert err == ("interrupted: langgraph-jsonl verify stopped before it finished; it changes nothing "
                   "in the store. Run it again for the whole answer.\n")


@pytest.mark.parametrize("how", ["script", "-m"])
def test_ctrl_c_again_as_the_first_unwinds_ends_at_once_with_the_one_line(tmp_path: Path, how: str) -> None:
    """A second Ctrl-C while the first one's ``KeyboardInterrupt`` was still unwinding
    the command, landing in a destructor or a callback Python ran meanwhile (importlib's
    module-lock callback, in real bursts), printed "Exception ignored in ..." and a
    traceback before the one line. It now ends the command at once: the one line, 130."""
    store = _store(tmp_path / "s")
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"  # imported as `verify` begins
    status, out, err = start(how, ["verify", str(store)], tmp_path, twice=at).finish()
    assert (status, out) == (130, ""), err
    assert err == ("interrupted: langgraph-jsonl verify stopped before it finished; it changes nothing "
                   "in the store. Run it again for the whole answer.\n")


@pytest.mark.parametrize("how", ["script", "-m"])
def test_a_ctrl_c_landing_in_a_destructor_still_stops_the_command(tmp_path: Path, how: str) -> None:
    """The first Ctrl-C landing while Python ran a destructor (or any callback whose
    exception it cannot raise: in real bursts, a type's slot named 'Path') was swallowed
    there, printed as "Exception ignored in ..." with a traceback: the command went on
    as if Ctrl-C had not been pressed (a burst's next Ctrl-C then ended it, after the
    traceback). It now stops the command: the one line, 130, no traceback."""
    store = _store(tmp_path / "s")
    at = "langgraph_jsonl_checkpoint.saver.jsonl_saver"  # imported as `verify` begins
    status, out, err = start(how, ["verify", str(store)], tmp_path, in_destructor=at).finish()
    assert (status, out, err) == (130, "", (
        "interrupted: langgraph-jsonl verify stopped before it finished; it changes nothing "
        "in the store. Run it again for the whole answer.\n"))
