"""``langgraph-jsonl``: look inside a store and look after it, from the shell.

A thin layer over the library: each module here registers its commands
(``register(subparsers)``) and calls the saver and :mod:`~..maintenance`; every command
takes the store directory first (or ``LANGGRAPH_JSONL_STORE``). Exit status: 0 when
all is well, 1 when a command found problems (a damaged thread, ``verify`` findings), 2
on bad usage or an error (printed without a traceback). One bad thread is reported and
the others are still served. Thread ids holding control characters (a newline, say) are
printed as JSON strings, so one id stays one row.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import JsonlCheckpointError
from . import conversation, export, maintenance, memory, migrate, retention, search, threads
from .common import EXIT_ERROR, EXIT_OK, EXIT_STATUS_HELP, UsageError, settle_operands

#: The modules whose commands make up the CLI, in the order ``--help`` lists them.
COMMAND_MODULES = (threads, conversation, memory, search, export, maintenance, retention, migrate)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (documented commands; tests check each has help)."""
    parser = argparse.ArgumentParser(
        prog="langgraph-jsonl",
        description="Look inside a JsonlSaver store, and look after it.",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        if hasattr(args, "operands"):
            settle_operands(args)
        return int(args.run(args))
    except (JsonlCheckpointError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other commands do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
