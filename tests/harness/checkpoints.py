"""Hand-made checkpoints and configs, and a ``Mirror`` that puts them into two savers.

``cp_id`` makes checkpoint ids that sort in the order of their number (as LangGraph's
uuid6 ids do); ``make_checkpoint`` a checkpoint dict with given values and versions;
``config`` / ``all_namespaces`` the configs that address them. ``Mirror`` applies the
same ``put`` / ``put_writes`` calls to a saver under test and to LangGraph's
``InMemorySaver`` (the expected answers), with identical channel versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver


def cp_id(i: int, prefix: str = "1ef00000-0000-6000-8000") -> str:
    """A checkpoint id; ids sort in the order of ``i`` (as LangGraph's uuid6 ids do)."""
    return f"{prefix}-{i:012d}"


def make_checkpoint(checkpoint_id: str, values: dict[str, Any], versions: dict[str, Any]) -> dict:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": dict(values),
        "channel_versions": dict(versions),
        "versions_seen": {},
        "updated_channels": sorted(values),
    }


def all_namespaces(thread_id: str) -> dict:
    """A config for ``list`` over every namespace of a thread (no ``checkpoint_ns``)."""
    return {"configurable": {"thread_id": thread_id}}


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


class Mirror:
    """Apply the same calls to a saver under test and to an ``InMemorySaver``.

    Channel versions come from the saver under test's ``get_next_version`` and are given
    to both, so stored versions are identical and answers compare directly.
    """

    def __init__(self, saver: JsonlSaver, memory: InMemorySaver | None = None) -> None:
        self.saver = saver
        self.memory = memory if memory is not None else InMemorySaver()
        # (thread, ns) -> (checkpoint id, channel versions, channel values) of the latest put
        self.heads: dict[tuple[str, str], tuple[str, dict, dict]] = {}

    def put(
        self,
        thread_id: str,
        checkpoint_id: str,
        changes: dict[str, Any],
        *,
        ns: str = "",
        parent: str | None | bool = True,
        metadata: dict | None = None,
        removed: Sequence[str] = (),
    ) -> dict:
        """Put a checkpoint that changes ``changes`` (and drops ``removed``) from its parent.

        ``parent=True`` chains onto the last checkpoint put in ``(thread, ns)``.
        """
        head = self.heads.get((thread_id, ns))
        if parent is True:
            parent = head[0] if head else None
        versions = dict(head[1]) if head else {}
        values = dict(head[2]) if head else {}
        new_versions = {}
        for ch, val in changes.items():
            new_versions[ch] = self.saver.get_next_version(versions.get(ch), None)
            versions[ch] = new_versions[ch]
            values[ch] = val
        for ch in removed:
            new_versions[ch] = self.saver.get_next_version(versions.get(ch), None)
            versions[ch] = new_versions[ch]
            values.pop(ch, None)
        cp = make_checkpoint(checkpoint_id, values, versions)
        cfg = config(thread_id, ns, parent or None)
        md = metadata if metadata is not None else {"step": len(values)}
        got = self.saver.put(cfg, cp, md, new_versions)
        self.memory.put(cfg, make_checkpoint(checkpoint_id, values, versions), md, new_versions)
        self.heads[(thread_id, ns)] = (checkpoint_id, versions, values)
        return got

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: list[tuple[str, Any]], task_id: str,
        task_path: str = "", ns: str = "",
    ) -> None:
        cfg = config(thread_id, ns, checkpoint_id)
        self.saver.put_writes(cfg, writes, task_id, task_path)
        self.memory.put_writes(cfg, writes, task_id, task_path)
