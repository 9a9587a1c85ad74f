"""What one tool call's request says: its thread, checkpoint and batch, and the state
the adapter keeps while a tool-node task runs.

A ``ToolNode`` task runs every pending call of the last AI message (its *batch*); with
``create_agent`` each call is its own task (a ``Send``). Records are keyed by the task's
namespace, the checkpoint it ran from and the call id, so a task re-executed after a
resume finds its own records.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolMessage

from ..errors import ConfigError
from .lifecycle import ToolCallKey, ToolCallRecord

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest


@dataclass
class CallContext:
    """Where one tool-node task's calls are journaled."""

    thread_id: str
    ns: str
    checkpoint_id: str
    batch: list[dict[str, Any]]  # the tool calls this task handles

    def key(self, call_id: str) -> ToolCallKey:
        return ToolCallKey(self.ns, self.checkpoint_id, call_id)


@dataclass
class Batch:
    """Per task execution: records loaded once, the person's answers asked once.

    Sync tools of one task may run in parallel threads (``lock``); async ones are
    tasks of one event loop (:meth:`async_lock`).
    """

    lock: threading.Lock = field(default_factory=threading.Lock)
    alock: asyncio.Lock | None = None
    ready: bool = False
    records: dict[ToolCallKey, ToolCallRecord] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None

    def async_lock(self) -> asyncio.Lock:
        """The batch's asyncio lock (made on first use, inside the running loop)."""
        if self.alock is None:
            self.alock = asyncio.Lock()
        return self.alock


def messages_of(state: Any) -> list[Any]:
    if isinstance(state, list):
        return state
    if isinstance(state, dict):
        return list(state.get("messages", []))
    return list(getattr(state, "messages", []) or [])


def thread_of(config: Any) -> str:
    """The thread id of a task's config.

    Raises:
        ConfigError: The graph runs without a thread id.
    """
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise ConfigError(
            "ReplayAdapter needs a thread_id: run the graph with a checkpointer and "
            "config={'configurable': {'thread_id': ...}}."
        )
    return str(thread_id)


def task_position(config: Any) -> tuple[str, str]:
    """``(namespace, checkpoint id)`` of the task a config belongs to: the checkpoint
    it runs from is its parent graph's."""
    conf = (config or {}).get("configurable") or {}
    ns = conf.get("checkpoint_ns", "")
    parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    return ns, (conf.get("checkpoint_map") or {}).get(parent_ns) or conf.get("checkpoint_id") or ""


def context_of(request: ToolCallRequest) -> CallContext:
    config = request.runtime.config if request.runtime is not None else None
    thread_id = thread_of(config)
    ns, checkpoint_id = task_position(config)
    path = ((config or {}).get("metadata") or {}).get("langgraph_path") or ()
    own = request.tool_call
    batch = [own]
    if not path or path[0] != "__pregel_push":
        # A ToolNode task runs every pending call of the last AI message.
        messages = messages_of(request.state)
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        for m in reversed(messages):
            if isinstance(m, AIMessage):
                pending = [c for c in m.tool_calls if c.get("id") not in answered]
                if any(c.get("id") == own.get("id") for c in pending):
                    batch = pending
                break
    return CallContext(thread_id, ns, checkpoint_id, batch)


def slots_held(request: ToolCallRequest) -> int | None:
    """How many of this task's interrupt() slots LangGraph holds a resume value for.

    Reads LangGraph's task scratchpad (internal, stable across 1.x); ``None`` if that
    is not available, in which case every journaled question is asked again in order.
    """
    conf = request.runtime.config.get("configurable", {}) if request.runtime else {}
    scratchpad = conf.get("__pregel_scratchpad")
    resume = getattr(scratchpad, "resume", None)
    get_null = getattr(scratchpad, "get_null_resume", None)
    if not isinstance(resume, list) or not callable(get_null):
        return None
    return len(resume) + (1 if get_null(False) is not None else 0)


