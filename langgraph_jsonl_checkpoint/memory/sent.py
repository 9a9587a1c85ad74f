"""Names for the tasks a ``Send`` queued (pure), as the session memory tells them.

LangGraph names such a task by its place in the checkpoint's queue
(``~__pregel_push, 0000000000, 0000000000``), which tells a model or a person nothing;
``create_agent`` runs every tool call as one. The queue is in the checkpoint record
(the ``__pregel_tasks`` channel: the ``Send`` packets, each with its node and argument),
so the memory names the task by its node and the tool calls it runs:
``tools, refund(order_id=42)``. Under ``durability="async"`` a task's writes (an error,
an interrupt) may be logged before its checkpoint: what was told by the path then is
named when the checkpoint comes.

A task's result (the ToolMessage it wrote) is a pending write of the checkpoint that
asked for the call until the next checkpoint holds it, and it may never (another call
of the turn stopped the run: a resume reuses the write). The builder tells the call
finished from that write; one logged before its checkpoint (async durability: the AI
message asking for the call is not known yet) is kept here until the checkpoint comes
(:meth:`SentTasks.wrote`, :meth:`SentTasks.results`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import call_text
from .model import ITEM_CHARS, clip

#: Checkpoints whose queues (and items told before them) are remembered, newest last.
KEEP = 4
#: The channel holding the tasks ``Send`` queued.
TASKS = "__pregel_tasks"


def push_index(path: str) -> int | None:
    """The place in the queue of a task a ``Send`` queued, from its task path
    (``~__pregel_push, 0000000002, 0000000000``); ``None`` for any other task."""
    parts = path.split(", ")
    if len(parts) >= 2 and parts[0] == "~__pregel_push" and parts[1].isdigit():
        return int(parts[1])
    return None


def sent_task(packet: Any) -> str:
    """A queued ``Send`` as the memory names its task: the node, and the tool calls it
    runs (``create_agent`` sends each call to its tools node)."""
    arg = getattr(packet, "arg", None)
    if isinstance(arg, dict) and isinstance(arg.get("tool_call"), dict):
        arg = [arg["tool_call"]]  # a ToolCallWithContext, as a run holds it
    calls = [call_text(c.get("name", ""), c.get("args"))
             for c in (arg if isinstance(arg, list) else []) if isinstance(c, dict) and c.get("name")]
    return ", ".join([str(getattr(packet, "node", "?")), *calls])


class SentTasks:
    """The names of the tasks queued at the last few checkpoints (plain JSON state).

    Args:
        state: From :meth:`state`, to continue from.
    """

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        s = state or {}
        #: checkpoint -> the names of its queued tasks, in queue order
        self.queues: dict[str, list[str]] = dict(s.get("queues", {}))
        #: checkpoint -> [path, seq] of what was told by a task path before it came
        self.unnamed: dict[str, list[list[Any]]] = dict(s.get("unnamed", {}))
        #: checkpoint -> [tool message, seq] written by its tasks before it came
        self.written: dict[str, list[list[Any]]] = dict(s.get("written", {}))

    def state(self) -> dict[str, Any]:
        """The state as plain JSON."""
        return {"queues": self.queues, "unnamed": self.unnamed, "written": self.written}

    def wrote(self, checkpoint: str, message: dict[str, Any], seq: int) -> None:
        """Keep a tool message a task of ``checkpoint`` wrote before that checkpoint came
        (its ``content`` clipped: the memory tells no more of it)."""
        kept = {k: message.get(k) for k in ("type", "name", "tool_call_id", "status")}
        content = message.get("content", "")
        kept["content"] = clip(content, ITEM_CHARS) if isinstance(content, str) else content
        self.written.setdefault(checkpoint, []).append([kept, seq])
        _bound(self.written)

    def results(self, checkpoint: str) -> list[list[Any]]:
        """The tool messages (``[message, seq]``) tasks of ``checkpoint`` wrote before it
        came, forgotten here."""
        return self.written.pop(checkpoint, [])

    def name(self, path: str, checkpoint: str, seq: int) -> str:
        """The name of the task at ``path`` of ``checkpoint`` for an item told at ``seq``:
        the path itself for a task no ``Send`` queued, or one whose queue is not known
        yet (:meth:`queued` names the item when it is)."""
        index = push_index(path)
        if index is None:
            return path
        queue = self.queues.get(checkpoint)
        if queue is None:
            self.unnamed.setdefault(checkpoint, []).append([path, seq])
            _bound(self.unnamed)
            return path
        return queue[index] if index < len(queue) else path

    def queued(self, checkpoint: str, cell: Any, decode: Callable[[Any], Any],
               interrupts: dict[str, list[Any]], failed: list[list[Any]]) -> None:
        """A checkpoint record's queue (``cell``: its ``__pregel_tasks`` value): its
        names are kept, and the interrupts (``key -> [name, text, seq]``) and failed
        items (``[text, seq, ...]``) told by a path before it came are named."""
        try:
            packets = decode(cell)
        except Exception:  # noqa: BLE001 - unread, its tasks keep their paths for names
            return
        if not isinstance(packets, list) or not packets:
            return
        queue = self.queues[checkpoint] = [sent_task(p) for p in packets]
        _bound(self.queues)
        for path, seq in self.unnamed.pop(checkpoint, []):
            index = push_index(path)
            if index is None or index >= len(queue):
                continue
            for entry in interrupts.values():
                if entry[2] == seq and entry[0] == path:
                    entry[0] = queue[index]
            for item in failed:
                if item[1] == seq and item[0].startswith(f"step {path} "):
                    item[0] = clip(f"step {queue[index]} {item[0][len(path) + 6:]}", ITEM_CHARS)


def _bound(mapping: dict[str, Any]) -> None:
    while len(mapping) > KEEP:
        del mapping[next(iter(mapping))]
