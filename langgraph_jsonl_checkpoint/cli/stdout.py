"""Standard output while a command runs: a write that fails (a full disk under ``> t.md``)
is one error, not a traceback (:func:`~langgraph_jsonl_checkpoint.cli.main` says it)."""

from __future__ import annotations

import errno
import io
import os
import select
import stat
import sys
from typing import Any


class OutputError(Exception):
    """Standard output could not be written: a full disk (``> t.md``, ``> /dev/full``),
    an I/O error, none at all (``>&-``); a closed pipe (``| head``) is a
    ``BrokenPipeError``, as it was."""

    def __init__(self, reason: str, *, closed: bool = False) -> None:
        super().__init__(reason)
        self.closed = closed


class CheckedOutput:
    """A stream (``sys.stdout`` while a command runs) whose write errors are
    :class:`OutputError`, but a closed pipe's; everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> Any:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class ClosedOutput:
    """``sys.stdout`` while a command runs with no standard output (``>&-``: Python's
    ``sys.stdout`` is None, where ``print()`` writes nothing and ``.write`` is an
    ``AttributeError``): its first write is :class:`OutputError`, so a command that
    shows something says it could not, as on a full disk."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        if text:
            raise OutputError("it is closed", closed=True)
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("standard output is closed")


def waited_watching(seconds: float) -> bool:
    """Wait ``seconds`` watching standard output, if it is a pipe or socket: a follower
    with nothing new to write (``tail -f | head -1``) learns at once that its reader has
    gone, not at its next write, which may never come. False, at once, when there is
    nothing to watch (a terminal, a file, no descriptor, no ``poll``): the caller sleeps.

    Raises:
        BrokenPipeError: Its reader has gone (what a write would have raised).
        OutputError: There is no standard output (``>&-``): nothing could ever be shown.
    """
    if isinstance(sys.stdout, ClosedOutput):  # said at once, not at a first event that may never come
        raise OutputError("it is closed", closed=True)
    try:
        fd = sys.stdout.fileno()
        watched = stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: a test's capture
        return False
    if not watched or not hasattr(select, "poll"):
        return False
    watch = select.poll()
    watch.register(fd, 0)  # no event asked: only POLLERR (a pipe's reader gone) or POLLHUP
    if watch.poll(seconds * 1000):
        raise BrokenPipeError(errno.EPIPE, "the reader of standard output has gone")
    return True
