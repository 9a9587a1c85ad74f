"""langgraph-jsonl-checkpoint: a crash-safe LangGraph checkpointer on append-only JSONL logs.

Use::

    from langgraph_jsonl_checkpoint import JsonlSaver
    graph = builder.compile(checkpointer=JsonlSaver("./checkpoints"))

Public names:

- :class:`JsonlSaver` — the checkpointer (sync and async methods on one class).
- :class:`AsyncJsonlSaver` — the same, with an async ``from_conn_string``.
- :class:`ReplayAdapter` — journals tool calls so a resumed run does not redo finished
  ones and holds uncertain side-effecting ones behind an ``interrupt()``.
- :class:`ToolCallRecord` / :class:`ToolCallKey` — a tool call's lifecycle.
- :class:`SessionMemory` — a thread's bounded session memory (``saver.session_memory``);
  :func:`session_memory_middleware` / :func:`with_session_memory` give it to a model.
- :class:`JsonlTracer` — an opt-in callback handler writing a debug trace per thread.
- :class:`JsonlCheckpointError` and its subclasses — every error raised on purpose.
"""

from __future__ import annotations

# First of all: run as `langgraph-jsonl`, a Ctrl-C from here on is its one line, not a
# traceback (see _ctrl_c). Any other importer's Ctrl-C is left as it was.
from . import _ctrl_c as _ctrl_c

# isort: split
from typing import TYPE_CHECKING

from ._lazy import lazy_names
from ._version import __version__ as __version__  # the one source: _version.py
from .errors import (
    CheckpointNotSavedError,
    ConcurrentRunError,
    ConfigError,
    CorruptLogError,
    DecodeError,
    DeltaHistoryError,
    DurabilityError,
    EncodeError,
    ForeignFileError,
    FormatVersionError,
    JsonlCheckpointError,
    RestoreError,
    StoreError,
    ThreadBusyError,
    ThreadDeletedError,
)

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and the API reference
    from .memory import SessionMemory, session_memory_middleware, with_session_memory
    from .replay.adapter import ReplayAdapter
    from .replay.lifecycle import ToolCallKey, ToolCallRecord
    from .replay.plan import RecordedToolError
    from .saver.async_saver import AsyncJsonlSaver
    from .saver.jsonl_saver import JsonlSaver
    from .tracing import JsonlTracer

#: The public names imported on first use, by the module that defines them: importing
#: the package (``langgraph-jsonl threads``, the errors) must not import LangGraph and
#: LangChain, which take about a second (issue 28).
_LAZY = {
    "SessionMemory": ".memory",
    "session_memory_middleware": ".memory",
    "with_session_memory": ".memory",
    "ReplayAdapter": ".replay.adapter",
    "ToolCallKey": ".replay.lifecycle",
    "ToolCallRecord": ".replay.lifecycle",
    "RecordedToolError": ".replay.plan",
    "AsyncJsonlSaver": ".saver.async_saver",
    "JsonlSaver": ".saver.jsonl_saver",
    "JsonlTracer": ".tracing",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "CheckpointNotSavedError",
    "AsyncJsonlSaver",
    "ConcurrentRunError",
    "ConfigError",
    "CorruptLogError",
    "DecodeError",
    "DeltaHistoryError",
    "DurabilityError",
    "EncodeError",
    "ForeignFileError",
    "FormatVersionError",
    "JsonlCheckpointError",
    "JsonlSaver",
    "JsonlTracer",
    "RecordedToolError",
    "ReplayAdapter",
    "RestoreError",
    "SessionMemory",
    "StoreError",
    "ThreadBusyError",
    "ThreadDeletedError",
    "ToolCallKey",
    "ToolCallRecord",
    "session_memory_middleware",
    "with_session_memory",
]
