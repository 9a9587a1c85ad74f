"""``langgraph-jsonl``: look inside a store and look after it, from the shell.

A thin layer over the library: the commands are the rows of one table
(:mod:`.commands`: name, group, module, purpose) from which :mod:`.parser` builds the
parser; each command's module defines its arguments (``define_<name>``), is imported
only when that command runs, and calls the saver and :mod:`~..maintenance`; every command
takes the store directory first (or ``LANGGRAPH_JSONL_STORE``). Exit status: 0 when
all is well, 1 when a command found problems (a damaged thread, ``verify`` findings), 2
on bad usage or an error (printed without a traceback), 130 after Ctrl-C (one line).
One bad thread is reported and the others are still served. Thread ids holding control
characters (a newline, say) are printed as JSON strings, so one id stays one row.
Text the terminal's encoding cannot hold is printed escaped (``--json`` as JSON escapes).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .. import _ctrl_c
from .._ctrl_c import NOT_STARTED, hand_back
from ..errors import JsonlCheckpointError
from .commands import COMMANDS, GROUPS, Command
from .common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    StoppedSaying,
    UsageError,
    settle_operands,
    tolerant_output,
    work_done,
)
from .parser import build_parser
from .stdout import CheckedOutput, ClosedOutput, OutputError

__all__ = ["COMMANDS", "GROUPS", "Command", "build_parser", "main"]


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run the CLI; returns the exit status. A Ctrl-C once the command's work is done
    (see :func:`~.common.work_done`) is ignored: the status is the command's own. With
    ``exiting`` (the ``langgraph-jsonl`` entry point, whose process ends next) it stays
    ignored after the return; otherwise the caller's Ctrl-C handler is put back. Once a
    Ctrl-C has stopped the command, another ends the process at once with 130 (see
    :func:`_again_ends_at_once`), until the caller's handler is put back."""
    args = None
    tolerant_output()
    given_stdout = sys.stdout
    # (None: fd 1 closed, `>&-`, where print() would write nothing and exit 0)
    sys.stdout = ClosedOutput() if given_stdout is None else CheckedOutput(given_stdout)
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if on_main else None
    try:
        try:
            if on_main and hand_back():  # Ctrl-C ended the loading at once; now it stops the command
                previous = signal.getsignal(signal.SIGINT)
            args = build_parser(define=False).parse_args(argv)  # only the command run is imported
            _ctrl_c.saying = _interrupted(args, KeyboardInterrupt())
            if hasattr(args, "operands"):
                settle_operands(args)
            status = int(args.run(args))
            work_done()
            sys.stdout.flush()  # a write that fails, failing here: not as Python ends
            return status
        except (JsonlCheckpointError, UsageError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return int(getattr(exc, "exit_status", EXIT_ERROR))  # 1 for what damage lost
        except OutputError as exc:  # `> t.md` on a full disk; `>&-`
            if exc.closed:
                print(f"error: cannot write to standard output ({exc}): nothing was shown. Run it "
                      "without `>&-`, or send what it shows elsewhere (`> FILE`, `> /dev/null`)."
                      + _what_it_left(args), file=sys.stderr)
                return EXIT_ERROR
            _output_to_nowhere(given_stdout)
            print(f"error: cannot write to standard output ({exc}): what it holds is incomplete. "
                  "Free some space, or write elsewhere (`export` takes -o FILE)." + _what_it_left(args),
                  file=sys.stderr)
            return EXIT_ERROR
        except BrokenPipeError:
            # The reader went away (``| head``): stop quietly, as other commands do.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        except Exception:
            if not _ctrl_c.pressed:
                raise
            raise KeyboardInterrupt from None  # the Ctrl-C, which a library made its own error
    except KeyboardInterrupt as exc:
        # Also one landing in a handler above: a terminal's Ctrl-C ends the reader of a
        # pipe too, and the command may see its closed output first.
        if not on_main:
            print(_interrupted(args, exc), file=sys.stderr)
            return EXIT_INTERRUPTED
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        except KeyboardInterrupt:  # another Ctrl-C, come before SIGINT was blocked: the same stop
            pass
        try:
            signal.signal(signal.SIGINT, _again_ends_at_once)
            print(_interrupted(args, exc), file=sys.stderr, flush=True)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return EXIT_INTERRUPTED
    finally:
        sys.stdout = given_stdout
        if on_main and not exiting and previous is not None:
            signal.signal(signal.SIGINT, previous)


def _output_to_nowhere(stream: object) -> None:
    """Send what is left in ``stream``'s buffer (and any later write) to the null device:
    Python flushing it as it ends would fail again, with a traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        pass


def _what_it_left(args: argparse.Namespace | None) -> str:
    """For a command that changes the store, stopped by output it could not write: that
    what it changed until then is consistent, as after a Ctrl-C (see :func:`_interrupted`)."""
    command = next((c for c in COMMANDS if c.name == getattr(args, "command", None)), None)
    if command is None or not command.changes_store or getattr(args, "dry_run", False):
        return ""
    return (f" langgraph-jsonl {command.name} may have changed the store before it stopped; the "
            "store is consistent (each thread's change is all or nothing): run it again to finish "
            "and see what it did.")


def _again_ends_at_once(signum: int, frame: object) -> None:
    """The SIGINT handler once a command said it was interrupted: another Ctrl-C (a user
    pressing it again) ends the process at once with 130. A ``KeyboardInterrupt`` raised
    while the line was printed, or while Python ends (joining threads), printed a
    traceback. Safe: what the command left is what a kill leaves, which the store is
    consistent after."""
    os._exit(EXIT_INTERRUPTED)


def _interrupted(args: argparse.Namespace | None, stopped: KeyboardInterrupt) -> str:
    """The one line Ctrl-C ends a command with: what it left behind, what to do (the
    command's own line when it raised :class:`~.common.StoppedSaying`)."""
    if isinstance(stopped, StoppedSaying):
        return str(stopped)
    name = getattr(args, "command", None)
    if name is None:
        return NOT_STARTED
    command = next((c for c in COMMANDS if c.name == name), None)
    if command is None or not command.changes_store or getattr(args, "dry_run", False):
        return (f"interrupted: langgraph-jsonl {name} stopped before it finished; it changes "
                "nothing in the store. Run it again for the whole answer.")
    # Every change a command makes to a store is all-or-nothing per thread (a temp file
    # renamed into place, a durable append), so stopping between two of them leaves the
    # store consistent; the command run again goes on.
    return (f"interrupted: langgraph-jsonl {name} stopped before it finished; the store is "
            "consistent (each thread's change is all or nothing). Run it again to finish.")
