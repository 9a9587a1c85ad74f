"""What maintenance needs of a saver: the store, the codec, the snapshot policy; and
the first two alone, what reading a store for people needs (:class:`StoreReading`,
which ``inspection`` takes).

``JsonlSaver`` has all three as public attributes; maintenance never reaches into a
saver beyond them, and never imports the saver (the saver calls maintenance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..disk.store import Store

if TYPE_CHECKING:  # annotations only: `langgraph-jsonl` imports maintenance without LangGraph
    from ..values.codec import ValueCodec
    from ..values.records import SnapshotPolicy


class StoreReading(Protocol):
    """A store and how its values are encoded (a ``JsonlSaver`` is one; so is an
    ``inspection.StoreReader``)."""

    @property
    def store(self) -> Store:
        """The store directory and its thread logs."""
        ...

    @property
    def codec(self) -> ValueCodec:
        """Values to cells and back, with the saver's serializer."""
        ...


class StoreAccess(StoreReading, Protocol):
    """A store, how its values are encoded, and when full values are stored (what
    maintenance writes with; a ``JsonlSaver`` is one)."""

    @property
    def snapshot_policy(self) -> SnapshotPolicy:
        """When full values are stored instead of deltas."""
        ...
