"""What maintenance needs of a saver: the store, the codec, the snapshot policy.

``JsonlSaver`` has all three as public attributes; maintenance never reaches into a
saver beyond them, and never imports the saver (the saver calls maintenance).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..disk.store import Store

if TYPE_CHECKING:  # annotations only: `langgraph-jsonl` imports maintenance without LangGraph
    from ..values.codec import ValueCodec
    from ..values.records import SnapshotPolicy


class StoreAccess(Protocol):
    """A store and how its values are encoded (a ``JsonlSaver`` is one)."""

    @property
    def store(self) -> Store:
        """The store directory and its thread logs."""
        ...

    @property
    def codec(self) -> ValueCodec:
        """Values to cells and back, with the saver's serializer."""
        ...

    @property
    def snapshot_policy(self) -> SnapshotPolicy:
        """When full values are stored instead of deltas."""
        ...
