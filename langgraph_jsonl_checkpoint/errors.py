"""Exceptions raised by langgraph-jsonl-checkpoint.

Every error the package raises on purpose derives from one root, so an application can
catch them all with one ``except``::

    JsonlCheckpointError
    ├── ConfigError            bad arguments: missing thread_id, a path that is not a directory
    ├── NotFoundError          a thread or checkpoint asked for by name is not in the store
    ├── StoreError             the store directory or a file in it cannot be used
    │   ├── ForeignFileError   a file in the store was not written by this package
    │   └── FormatVersionError a log written in a format this version cannot read
    ├── CorruptLogError        a record before the end of a log is damaged
    ├── EncodeError            a value the serializer cannot encode
    ├── DecodeError            a stored value the serializer cannot decode (another wrote it)
    ├── DeltaHistoryError      a deletion would cut the history a DeltaChannel needs
    ├── ThreadDeletedError     a late write for a checkpoint of a deleted thread
    ├── ConcurrentRunError     another run advanced the same thread meanwhile
    │   └── ThreadBusyError    another run is still working on the thread
    ├── DurabilityError        a write could not be made durable; nothing was acknowledged
    ├── RestoreError           an archived thread cannot be brought back now
    ├── CheckpointNotSavedError a side-effecting tool was not started: the checkpoint it
    │                          runs from was not saved in time
    └── MigrationError         a copy between checkpointers cannot start: an unknown URL,
                               an unreachable database, missing tables

Messages name the thread, the file and, where it helps, the byte offset, and say what to
do next. They never echo stored payloads.
"""

from __future__ import annotations


class JsonlCheckpointError(Exception):
    """Root of every exception raised by this package."""


class ConfigError(JsonlCheckpointError, ValueError):
    """The caller passed arguments the saver cannot work with."""


class NotFoundError(JsonlCheckpointError, LookupError):
    """A thread or checkpoint asked for by name (to show, export, compare) is not stored."""


class StoreError(JsonlCheckpointError):
    """The store directory, or a file in it, cannot be used."""


class ForeignFileError(StoreError):
    """A file in the store is not a log written by this package (or by another thread)."""


class FormatVersionError(StoreError):
    """A log's header names a format version this package cannot read."""


class CorruptLogError(JsonlCheckpointError):
    """A committed record in a thread's log is damaged.

    Attributes:
        path: The log file.
        offset: Byte offset of the first damaged record.
    """

    def __init__(self, message: str, *, path: str, offset: int) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


class EncodeError(JsonlCheckpointError, TypeError):
    """A value could not be encoded by the configured serializer.

    Attributes:
        path: Where in the value the part that cannot be encoded is, as
            ``["messages"][2].additional_kwargs["cb"]`` (empty: the value itself).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class DecodeError(JsonlCheckpointError, ValueError):
    """A stored value cannot be decoded by the saver's serializer: the store (or this
    value) was written through another one (an ``EncryptedSerializer`` with another key
    or none, ``pickle_fallback=True``, a custom ``serde=``). Nothing was changed."""

    @classmethod
    def in_log(cls, thread_id: str, path: str, exc: DecodeError) -> DecodeError:
        """``exc``, naming the thread and the log the value was read from."""
        return cls(f"thread {thread_id!r}, log {path}: {exc}")


class DurabilityError(JsonlCheckpointError, OSError):
    """A write or fsync failed; the batch was not acknowledged."""


class DeltaHistoryError(JsonlCheckpointError):
    """Deleting these checkpoints would leave a DeltaChannel unable to rebuild its value."""


class RestoreError(JsonlCheckpointError):
    """An archived thread cannot be restored: there is no archive of it, the thread has
    a log again (a run started it anew), or a run is working on it."""


class ThreadDeletedError(JsonlCheckpointError):
    """A write arrived for a checkpoint of a thread that was deleted since."""


class ConcurrentRunError(JsonlCheckpointError):
    """Another run wrote a newer checkpoint to the thread this run is advancing."""


class ThreadBusyError(ConcurrentRunError):
    """Another run is still working on the thread (``concurrent_runs="refuse"``, or
    ``"wait"`` past ``busy_timeout``); this run was refused before it wrote anything.

    Attributes:
        thread_id: The thread.
        holder: What the other run recorded of itself (``pid``, ``host``, ``run``,
            ``since``), as far as it could be read.
    """

    def __init__(self, message: str, *, thread_id: str, holder: dict[str, object] | None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.holder = holder or {}


class CheckpointNotSavedError(JsonlCheckpointError):
    """The checkpoint a side-effecting tool call runs from was not saved within the
    replay adapter's ``durable_timeout``; the tool was not started.

    Attributes:
        thread_id: The thread.
        checkpoint_id: The checkpoint the tool node runs from.
        call_id: The tool call that was held back.
    """

    def __init__(self, message: str, *, thread_id: str, checkpoint_id: str, call_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        self.call_id = call_id


class MigrationError(JsonlCheckpointError):
    """A copy of threads between checkpointers cannot start or go on: an endpoint URL of
    an unknown kind, a database that cannot be reached, a database without LangGraph's
    tables (``--setup`` creates them), a source that is not what its URL says."""
