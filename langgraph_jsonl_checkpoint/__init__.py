"""langgraph-jsonl-checkpoint: a crash-safe LangGraph checkpointer on append-only JSONL logs.

Use::

    from langgraph_jsonl_checkpoint import JsonlSaver
    graph = builder.compile(checkpointer=JsonlSaver("./checkpoints"))

Public names:

- :class:`JsonlSaver` — the checkpointer (sync and async methods on one class).
- :class:`AsyncJsonlSaver` — the same, with an async ``from_conn_string``.
- :class:`JsonlCheckpointError` and its subclasses — every error raised on purpose.
"""

from .errors import (
    ConfigError,
    CorruptLogError,
    DeltaHistoryError,
    DurabilityError,
    EncodeError,
    ForeignFileError,
    FormatVersionError,
    JsonlCheckpointError,
    StoreError,
)
from .saver import AsyncJsonlSaver, JsonlSaver

__all__ = [
    "AsyncJsonlSaver",
    "ConfigError",
    "CorruptLogError",
    "DeltaHistoryError",
    "DurabilityError",
    "EncodeError",
    "ForeignFileError",
    "FormatVersionError",
    "JsonlCheckpointError",
    "JsonlSaver",
    "StoreError",
]

__version__ = "0.1.0"
