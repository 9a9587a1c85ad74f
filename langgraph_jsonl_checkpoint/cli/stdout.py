"""Standard output while a command runs: a write that fails (a full disk under ``> t.md``)
is one error, not a traceback (:func:`~langgraph_jsonl_checkpoint.cli.main` says it)."""

from __future__ import annotations

from typing import Any


class OutputError(Exception):
    """Standard output could not be written: a full disk (``> t.md``, ``> /dev/full``),
    an I/O error; a closed pipe (``| head``) is a ``BrokenPipeError``, as it was."""


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
