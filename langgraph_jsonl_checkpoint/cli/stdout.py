"""Standard output while a command runs: a write that fails (a full disk under ``> t.md``)
is one error, not a traceback (:func:`~langgraph_jsonl_checkpoint.cli.main` says it)."""

from __future__ import annotations

import io
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
