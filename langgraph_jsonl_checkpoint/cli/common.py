"""What every ``langgraph-jsonl`` command shares: opening a store, naming a thread,
printing ids, exit codes, the store argument.

The store is the positional ``STORE`` argument, or ``LANGGRAPH_JSONL_STORE`` when it is
left out. A path that is not a store is an error (a typo must not create one).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..disk.store import MARKER
from ..saver.jsonl_saver import JsonlSaver

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2
#: The environment variable naming the store when the command line does not.
STORE_ENV = "LANGGRAPH_JSONL_STORE"
EXIT_STATUS_HELP = (
    "exit status: 0 all is well; 1 problems found (a damaged thread, verify findings); "
    "2 bad usage or an error"
)


class UsageError(Exception):
    """A command was given something it cannot work on (exit status 2)."""


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """The ``STORE`` positional, optional when ``LANGGRAPH_JSONL_STORE`` is set."""
    parser.add_argument(
        "store", nargs="?", default=None,
        help=f"the store directory (default: ${STORE_ENV})",
    )


def store_path(args: argparse.Namespace) -> str:
    """The store the command line names, or the environment's."""
    path = args.store or os.environ.get(STORE_ENV)
    if not path:
        raise UsageError(f"name the store directory, or set {STORE_ENV}")
    return str(path)


def shown(text: str) -> str:
    """A thread id (or other text) for one line of output: as it is when printable,
    else as a JSON string literal (a newline or tab would split a row)."""
    if text and text.isprintable() and text.strip() == text:
        return text
    return json.dumps(text, ensure_ascii=False)


def first_line(exc: BaseException) -> str:
    """An error's message, first line only (for a row of a listing)."""
    return str(exc).strip().split("\n", 1)[0]


@contextmanager
def open_saver(args: argparse.Namespace, *, write: bool = False) -> Iterator[JsonlSaver]:
    """Open the command's existing store (read-only unless ``write``); closed when done."""
    store = store_path(args)
    if not os.path.isfile(os.path.join(store, MARKER)):
        raise UsageError(
            f"{store} is not a langgraph-jsonl-checkpoint store (no {MARKER} in it). "
            "Pass the directory given to JsonlSaver(...)."
        )
    saver = JsonlSaver(store, read_only=not write)
    try:
        yield saver
    finally:
        saver.close()


def known_thread(saver: JsonlSaver, thread_id: str) -> str:
    """``thread_id``, if the store has it.

    Raises:
        UsageError: It does not (nothing is created for it).
    """
    if not saver.store.has_thread(thread_id):
        raise UsageError(
            f"store {saver.store.path} has no thread {shown(thread_id)}; "
            f"`langgraph-jsonl threads {saver.store.path}` lists its threads."
        )
    return thread_id
