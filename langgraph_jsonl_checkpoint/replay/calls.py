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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, ToolMessage

from ..errors import ConfigError
from .lifecycle import ToolCallKey, ToolCallRecord, now, parent_namespace

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest


@dataclass
class CallContext:
    """Where one tool-node task's calls are journaled, and what the run around it is.

    Attributes:
        thread_id: The thread.
        ns: The task's namespace.
        checkpoint_id: The checkpoint the task runs from.
        batch: The tool calls this task handles.
        calls: Every tool call of the AI message (the batch's siblings, when each call
            is its own task).
        checkpointer: The graph's checkpointer (``None``: none).
        durability: The run's durability mode (``"sync"``, ``"async"``, ``"exit"``).
        attempt: Which attempt at the task this is (1-indexed): above 1 when
            LangGraph runs the node again under its ``RetryPolicy``.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    batch: Sequence[Mapping[str, Any]]
    calls: Sequence[Mapping[str, Any]] = field(default_factory=list)
    checkpointer: Any = None
    durability: str = "async"
    attempt: int = 1

    def key(self, call_id: str) -> ToolCallKey:
        return ToolCallKey(self.ns, self.checkpoint_id, call_id)

    def event(self, call_id: str, ev: str, **fields: Any) -> dict[str, Any]:
        """A journal event of one of this task's calls (or of its questions), stamped now."""
        return {"ev": ev, "ns": self.ns, "cp": self.checkpoint_id, "call": call_id, "at": now(), **fields}

    @property
    def graph_ns(self) -> str:
        """The namespace of the checkpoint the task runs from."""
        return parent_namespace(self.ns)

    @property
    def lists_lost_runs(self) -> bool:
        """Whether this task asks about lost runs no call of the message matches: the
        task of the message's first call (so sibling tasks do not ask twice)."""
        own = {c.get("id") for c in self.batch}
        return not self.calls or self.calls[0].get("id") in own


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
    #: Calls of lost runs (see :meth:`ToolJournal.orphans`): matched to a call of the
    #: message by tool and arguments (call id -> record), or not (question id -> record).
    linked: dict[str, ToolCallRecord] = field(default_factory=dict)
    unmatched: dict[str, ToolCallRecord] = field(default_factory=dict)

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
    return ns, (conf.get("checkpoint_map") or {}).get(parent_namespace(ns)) or conf.get("checkpoint_id") or ""


def context_of(request: ToolCallRequest) -> CallContext:
    config = request.runtime.config if request.runtime is not None else None
    thread_id = thread_of(config)
    ns, checkpoint_id = task_position(config)
    path = ((config or {}).get("metadata") or {}).get("langgraph_path") or ()
    own = request.tool_call
    batch, calls = [own], [own]
    messages = messages_of(request.state)
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for m in reversed(messages):
        if isinstance(m, AIMessage) and any(c.get("id") == own.get("id") for c in m.tool_calls):
            calls = list(m.tool_calls)
            pending = [c for c in m.tool_calls if c.get("id") not in answered]
            own_pending = any(c.get("id") == own.get("id") for c in pending)
            if own_pending and (not path or path[0] != "__pregel_push"):
                # A ToolNode task runs every pending call of the last AI message.
                batch = pending
            break
    conf = (config or {}).get("configurable") or {}
    return CallContext(
        thread_id, ns, checkpoint_id, batch, calls,
        checkpointer=conf.get("__pregel_checkpointer"),
        durability=conf.get("__pregel_durability") or "async",
        attempt=node_attempt(request),
    )


def node_attempt(request: ToolCallRequest) -> int:
    """Which attempt at its task a tool call runs in (LangGraph's ``node_attempt``,
    1-indexed; a ``RetryPolicy`` retry is 2, 3, ...); 1 where LangGraph does not say."""
    info = getattr(request.runtime, "execution_info", None)
    if info is None:  # a runtime built without it: LangGraph's own, from the config
        conf = request.runtime.config.get("configurable", {}) if request.runtime else {}
        info = getattr(conf.get("__pregel_runtime"), "execution_info", None)
    attempt = getattr(info, "node_attempt", 1)
    return attempt if isinstance(attempt, int) and attempt > 0 else 1


def _held_resumes(request: ToolCallRequest) -> tuple[list[Any], Any] | None:
    """The task's own resume values and the plain one (``None`` if none), from LangGraph's
    task scratchpad (internal, stable across 1.x); ``None`` if that is not available."""
    conf = request.runtime.config.get("configurable", {}) if request.runtime else {}
    scratchpad = conf.get("__pregel_scratchpad")
    resume = getattr(scratchpad, "resume", None)
    get_null = getattr(scratchpad, "get_null_resume", None)
    if not isinstance(resume, list) or not callable(get_null):
        return None
    return resume, get_null(False)


def slots_held(request: ToolCallRequest) -> int | None:
    """How many of this task's interrupt() slots LangGraph holds a resume value for;
    ``None`` if its scratchpad is not available, in which case every journaled question
    is asked again in order."""
    held = _held_resumes(request)
    if held is None:
        return None
    resume, plain = held
    return len(resume) + (1 if plain is not None else 0)


def null_resume_slot(request: ToolCallRequest) -> int | None:
    """The slot LangGraph hands its plain resume value (``Command(resume=value)``, not by
    interrupt id) to: the first past the task's own resume values; ``None`` when no such
    value is held (or the scratchpad is not available)."""
    held = _held_resumes(request)
    if held is None or held[1] is None:
        return None
    return len(held[0])


def drop_plain_resume(request: ToolCallRequest) -> None:
    """Take the plain resume value LangGraph holds away from this task's next
    ``interrupt()``: one a dead run already used (a tool's "yes" before the crash) and
    that a by-id answer left in place would otherwise be handed to the tool's own
    question when it runs again, as if someone had answered it."""
    conf = request.runtime.config.get("configurable", {}) if request.runtime else {}
    get_null = getattr(conf.get("__pregel_scratchpad"), "get_null_resume", None)
    if callable(get_null):
        get_null(True)


def call_id_of(call: Mapping[str, Any], thread_id: str) -> str:
    """The id of a tool call; the journal is keyed by it, so a call without one is refused."""
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise ConfigError(
            f"thread {thread_id!r}: tool call {call.get('name')!r} has no id; the replay adapter "
            "records each call under its id. Give every tool call an id (chat models do; a "
            "hand-built AIMessage needs tool_calls=[{'id': ..., 'name': ..., 'args': ...}])."
        )
    return call_id
