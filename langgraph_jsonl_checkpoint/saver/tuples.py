"""LangGraph's checkpoint tuple of a stored checkpoint, whether its parts come from the
thread's log (:mod:`.reads`) or from its head file (:mod:`.heads`): one shape for both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple, PendingWrite

from .config import config_of


def checkpoint_tuple(
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent: str | None,
    checkpoint: dict[str, Any],
    versions: Mapping[str, Any],
    values: dict[str, Any],
    metadata: Any,
    pending: list[PendingWrite],
) -> CheckpointTuple:
    """The tuple of checkpoint ``checkpoint_id``: ``checkpoint`` is its record's decoded
    ``cp`` (owned by the result from now on), completed with its id, a copy of its
    channel ``versions`` and its ``values``."""
    checkpoint["id"] = checkpoint_id
    checkpoint["channel_versions"] = dict(versions)
    checkpoint["channel_values"] = values
    return CheckpointTuple(
        config=config_of(thread_id, ns, checkpoint_id),
        checkpoint=checkpoint,  # type: ignore[arg-type]
        metadata=metadata,
        parent_config=config_of(thread_id, ns, parent) if parent else None,
        pending_writes=pending,
    )
