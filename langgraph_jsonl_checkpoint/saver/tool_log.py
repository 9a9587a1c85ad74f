"""The replay adapter's journal in the threads' own logs: ``JsonlSaver``'s tool-call methods.

Tool-call lifecycle events (:mod:`~..replay.lifecycle`) are ``tool`` records in the
thread's log, appended as one durable batch per call. What the adapter asks of them:

- the records of some calls, or of all (folded from the events, in log order);
- the *orphans*: calls ``started`` and never settled whose checkpoint is not in the
  thread (a run under ``durability="exit"``, or any run whose checkpoint was lost, died
  in the middle of them). Found from the index: only calls whose checkpoint is missing
  are read, and calls once seen settled are not read again;
- waiting until a checkpoint is in the log (:mod:`.landing`).

For people (``tool_calls``), a call the journal left open (or a failed one held for a
person's answer) is also checked against the thread's messages: a ToolMessage someone
wrote into the state for it (a person's ``update_state(..., as_node="tools")``) shows
it ``answered``; the journal is never rewritten.

:class:`ToolCallMethods` is mixed into ``JsonlSaver``: the journal's API on the saver,
its code here.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..disk.forks import renew_in_child
from ..disk.store import Store
from ..replay.lifecycle import (
    ASKS_CALL_ID,
    FAILED,
    REQUESTED,
    STARTED,
    ToolCallKey,
    ToolCallRecord,
    asked_unanswered,
    calls_only,
    fold,
    parent_namespace,
)
from ..replay.pending import tells_recorded_failure
from ..values.codec import ValueCodec
from .config import healing
from .landing import CheckpointLanding

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple

#: Threads whose settled calls are remembered (least recently used go first).
_SETTLED_THREADS = 256


class ToolLog:
    """A store's tool-call events: append, fold, find orphans, wait for checkpoints.

    Args:
        store: The store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.landing = CheckpointLanding(store)
        # thread -> (log generation, {key: events seen when it was settled})
        self._settled: OrderedDict[str, tuple[Any, dict[tuple[str, str, str], int]]] = OrderedDict()
        self._lock = threading.Lock()
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the lock's holder (a thread of the parent) is not here."""
        self._lock = threading.Lock()

    def record(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Append events to the thread's log as one durable batch."""
        if not events:
            return
        log = self.store.thread_log(thread_id)
        with log.writer():
            log.append([{"t": "tool", **e} for e in events])

    def records(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None, codec: ValueCodec
    ) -> dict[ToolCallKey, ToolCallRecord]:
        """Folded records (of ``keys`` only, if given), in the order calls were first seen."""
        log = self.store.thread_log(thread_id)

        def read() -> dict[ToolCallKey, ToolCallRecord]:
            with log.mutex:
                idx = log.refresh()
                if keys is None:
                    refs = [r for rs in idx.tool_events.values() for r in rs]
                else:
                    refs = [
                        r
                        for k in keys
                        for r in idx.tool_events.get((k.ns, k.checkpoint_id, k.call_id), [])
                    ]
                refs.sort(key=lambda r: r.seq)
                events = [log.read_record(r) for r in refs]
            return fold(events, codec.decode)

        return healing(read)

    def orphans(self, thread_id: str, codec: ValueCodec, carrying: bool = False) -> list[ToolCallRecord]:
        """Calls started and never settled whose checkpoint is not in the thread, each
        marked ``lost_run`` (``carrying``: and those carrying a person's answer to the
        call asked for again, see :mod:`~..replay.lost`)."""
        log = self.store.thread_log(thread_id)

        def read() -> tuple[Any, dict[tuple[str, str, str], int], dict[ToolCallKey, ToolCallRecord]]:
            with log.mutex:
                idx = log.refresh()
                generation = log.generation_token()
                settled = self._settled_of(thread_id, generation)
                candidates: dict[tuple[str, str, str], int] = {}
                refs = []
                for key, key_refs in idx.tool_events.items():
                    ns, cp, call_id = key
                    if call_id == ASKS_CALL_ID or settled.get(key) == len(key_refs):
                        continue
                    if cp in idx.checkpoints.get(parent_namespace(ns), ()):
                        continue
                    candidates[key] = len(key_refs)
                    refs += key_refs
                refs.sort(key=lambda r: r.seq)
                events = [log.read_record(r) for r in refs]
            return generation, candidates, fold(events, codec.decode)

        generation, candidates, records = healing(read)
        found = []
        with self._lock:
            settled = self._settled_of(thread_id, generation)
            for key, rec in records.items():
                if rec.state == STARTED or (carrying and rec.carries_answer):
                    rec.lost_run = True
                    found.append(rec)
                elif not rec.carries_answer:  # not read again until it has another event
                    raw = (key.ns, key.checkpoint_id, key.call_id)
                    settled[raw] = candidates[raw]
        return found

    def mark_lost(self, thread_id: str, records: Sequence[ToolCallRecord]) -> None:
        """Mark each started call whose checkpoint is not in the thread as ``lost_run``."""
        started = [r for r in records if r.state == STARTED]
        if not started:
            return
        log = self.store.thread_log(thread_id)
        with log.mutex:
            idx = log.refresh()
            for rec in started:
                ids = idx.checkpoints.get(parent_namespace(rec.key.ns), ())
                rec.lost_run = rec.key.checkpoint_id not in ids

    def open_in_thread(
        self, thread_id: str, records: Sequence[ToolCallRecord], held: Collection[ToolCallKey] = ()
    ) -> list[ToolCallRecord]:
        """The calls the journal left open (``requested`` or ``started``, or ``failed``
        and among ``held``: asked about, not answered) whose checkpoint is in the thread
        (a lost run's calls are not: see :meth:`orphans`)."""
        left_open = [r for r in records
                     if r.state in (REQUESTED, STARTED) or (r.state == FAILED and r.key in held)]
        if not left_open:
            return []
        log = self.store.thread_log(thread_id)
        with log.mutex:
            idx = log.refresh()
            return [r for r in left_open
                    if r.key.checkpoint_id in idx.checkpoints.get(parent_namespace(r.key.ns), ())]

    def _settled_of(self, thread_id: str, generation: Any) -> dict[tuple[str, str, str], int]:
        """The settled-call memo of a thread's current log generation (LRU)."""
        entry = self._settled.get(thread_id)
        if entry is None or entry[0] != generation:
            entry = self._settled[thread_id] = (generation, {})
        self._settled.move_to_end(thread_id)
        while len(self._settled) > _SETTLED_THREADS:
            self._settled.popitem(last=False)
        return entry[1]


class ToolCallMethods:
    """``JsonlSaver``'s tool-call journal methods (used by ``ReplayAdapter``)."""

    _tool_log: ToolLog

    if TYPE_CHECKING:
        @property
        def codec(self) -> ValueCodec:
            """The saver's value codec."""

        def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
            """The saver's checkpoint read."""

    def record_tool_events(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Append tool-call lifecycle events to a thread's log as one durable batch.

        Args:
            thread_id: The thread.
            events: Dicts with ``ev``, ``ns``, ``cp``, ``call`` and the event's fields
                (values already encoded as cells); see :mod:`~..replay.lifecycle`.
        """
        self._tool_log.record(str(thread_id), events)

    def tool_calls(self, thread_id: str, keys: Sequence[ToolCallKey] | None = None) -> list[ToolCallRecord]:
        """The lifecycle of every tool call recorded in a thread (or of ``keys`` only).

        Returns:
            One :class:`ToolCallRecord` per call, in the order calls were first seen;
            ``effective_state`` tells ``uncertain`` calls (started by a dead process),
            ``lost_run`` those started in a run whose checkpoint is not in the thread.
        """
        records = calls_only(self.tool_call_records(thread_id, keys))
        self._tool_log.mark_lost(str(thread_id), records)
        self.mark_answered(thread_id, records)
        return records

    def mark_answered(self, thread_id: str, records: Sequence[ToolCallRecord]) -> None:
        """Set ``answered_with`` on each call the journal left open (in a checkpoint of
        the thread) whose ToolMessage the latest messages of its graph hold: someone
        answered it in the state (``update_state(..., as_node="tools")``), so
        ``effective_state`` says ``answered``, not ``uncertain``. Reads the latest
        checkpoint of each graph such a call ran in; nothing when none is left open.
        A ``failed`` call the adapter holds (asked a person about, no answer in the
        journal) counts as left open: a ToolMessage written for it answers it too, and
        the error message the adapter itself gave the model when new input came instead
        of an answer sets ``overtaken_with``.
        """
        held: set[ToolCallKey] = set()
        if any(rec.state == FAILED for rec in records):
            held = asked_unanswered(self.tool_call_records(thread_id))
        left_open = self._tool_log.open_in_thread(str(thread_id), records, held)
        by_graph: dict[str, list[ToolCallRecord]] = {}
        for rec in left_open:
            by_graph.setdefault(parent_namespace(rec.key.ns), []).append(rec)
        for ns, recs in by_graph.items():
            tup = self.get_tuple({"configurable": {"thread_id": str(thread_id), "checkpoint_ns": ns}})
            values = tup.checkpoint.get("channel_values", {}) if tup is not None else {}
            answers = _tool_messages(values.values())
            for rec in recs:
                answer = answers.get(rec.key.call_id)
                if answer is not None and tells_recorded_failure(answer, rec):
                    rec.overtaken_with = answer  # the adapter told the model the error: new input
                    continue
                rec.answered_with = answer

    def tool_call_records(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> dict[ToolCallKey, ToolCallRecord]:
        """Folded lifecycle records by key, including each task's question journal."""
        return self._tool_log.records(str(thread_id), keys, self.codec)

    def orphaned_tool_calls(self, thread_id: str, *, carrying: bool = False) -> list[ToolCallRecord]:
        """Calls started and never settled in a run whose checkpoint is not in the
        thread (``durability="exit"``, or a checkpoint lost): what the replay adapter
        asks a person about the next time the thread runs a tool node. With
        ``carrying``, also such calls a person answered whose answer applies to the call
        when the model asks for it again (the adapter gives it, once)."""
        return self._tool_log.orphans(str(thread_id), self.codec, carrying)

    def wait_for_checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float
    ) -> bool:
        """Wait until a checkpoint is durable in the thread's log (``False``: it was
        not within ``timeout`` seconds)."""
        return self._tool_log.landing.wait(str(thread_id), checkpoint_ns, checkpoint_id, timeout)

    async def arecord_tool_events(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Async :meth:`record_tool_events`."""
        await asyncio.to_thread(self.record_tool_events, thread_id, events)

    async def atool_calls(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> list[ToolCallRecord]:
        """Async :meth:`tool_calls`."""
        return await asyncio.to_thread(self.tool_calls, thread_id, keys)

    async def atool_call_records(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> dict[ToolCallKey, ToolCallRecord]:
        """Async :meth:`tool_call_records`."""
        return await asyncio.to_thread(self.tool_call_records, thread_id, keys)

    async def aorphaned_tool_calls(self, thread_id: str, *, carrying: bool = False) -> list[ToolCallRecord]:
        """Async :meth:`orphaned_tool_calls`."""
        return await asyncio.to_thread(lambda: self.orphaned_tool_calls(thread_id, carrying=carrying))

    async def await_for_checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float
    ) -> bool:
        """Async :meth:`wait_for_checkpoint` (waits on the event loop)."""
        landing = self._tool_log.landing
        return await landing.await_stored(str(thread_id), checkpoint_ns, checkpoint_id, timeout)


def _tool_messages(values: Iterable[Any]) -> dict[str, Any]:
    """Tool call id -> the last ToolMessage for it in any list of messages among ``values``."""
    out: dict[str, Any] = {}
    for value in values:
        if isinstance(value, list):
            for m in value:
                call_id = getattr(m, "tool_call_id", None)
                if getattr(m, "type", None) == "tool" and isinstance(call_id, str):
                    out[call_id] = m
    return out
