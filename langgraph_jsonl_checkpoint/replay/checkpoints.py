"""What the replay adapter asks of a graph's checkpointer: is this checkpoint saved yet,
and is it still there. For any ``BaseCheckpointSaver`` (a ``JsonlSaver`` answers the
same questions from its index, see :mod:`~..saver.tool_log`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

from .lifecycle import STARTED, ToolCallRecord, parent_namespace
from .steps import Steps, call

#: Pauses between looks for a checkpoint being saved (growing up to the last).
_PAUSES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
    """The config that addresses one checkpoint."""
    conf = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
    return {"configurable": conf}


def poll_stored(checkpointer: Any, config: dict[str, Any], timeout: float) -> bool:
    """Look for the checkpoint until it is there (``False``: not within ``timeout``)."""
    deadline = time.monotonic() + timeout
    for pause in _pauses():
        if checkpointer.get_tuple(config) is not None:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
    return False  # pragma: no cover - _pauses never ends


async def apoll_stored(checkpointer: Any, config: dict[str, Any], timeout: float) -> bool:
    """:func:`poll_stored` with ``aget_tuple``, pausing on the event loop."""
    deadline = time.monotonic() + timeout
    for pause in _pauses():
        if await checkpointer.aget_tuple(config) is not None:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await asyncio.sleep(min(pause, left))
    return False  # pragma: no cover - _pauses never ends


def lost_runs(
    thread_id: str, records: list[ToolCallRecord], carrying: bool = False
) -> Steps[list[ToolCallRecord]]:
    """The started calls among ``records`` whose checkpoint the checkpointer does not
    hold (steps on a checkpointer: ``get_tuple``), marked ``lost_run`` (``carrying``:
    also such calls that carry a person's answer, see :mod:`.lost`)."""
    found = []
    for rec in records:
        if rec.state != STARTED and not (carrying and rec.carries_answer):
            continue
        cfg = checkpoint_config(thread_id, parent_namespace(rec.key.ns), rec.key.checkpoint_id)
        if (yield call("get_tuple", cfg)) is None:
            rec.lost_run = True
            found.append(rec)
    return found


def _pauses() -> Iterator[float]:
    yield from _PAUSES
    while True:
        yield _PAUSES[-1]
