"""The tool-call lifecycle: events in, the state of each call out.

A tool call moves through events, each one a durable record::

    requested ──> started ──> finished   (result recorded)
        │            │  └───> failed     (error recorded)
        │            └──────> released   (the tool raised an interrupt(): back to requested)
        └────────────┴──────> superseded (new input came first: the model was told so)

A call that was ``started`` and has neither ``finished`` nor ``failed`` is *in flight*;
if the process that started it is gone it is *uncertain*: its effect may or may not
have happened. This module folds events into :class:`ToolCallRecord` values; it reads
and writes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..disk.processes import pid_alive
from ..disk.runlock import HOST

REQUESTED = "requested"
STARTED = "started"
FINISHED = "finished"
FAILED = "failed"
RELEASED = "released"
#: New input reached the thread before the call settled; the model was given the
#: recorded ToolMessage instead (see :mod:`.pending`).
SUPERSEDED = "superseded"
#: A started call whose process is gone (derived, never recorded).
UNCERTAIN = "uncertain"
#: A call the journal left open whose ToolMessage is in the thread's messages: someone
#: answered it in the state (``update_state(..., as_node="tools")``) (derived, never recorded).
ANSWERED = "answered"
#: A question the adapter put to a person, and the answer it got (both recorded under
#: :data:`ASKS_CALL_ID`, with the interrupt slot they belong to).
ASK = "ask"
ANSWER = "answer"
#: Pseudo call id under which a tool-node task's questions are journaled, in order.
ASKS_CALL_ID = "__asks__"

EVENTS = (REQUESTED, STARTED, FINISHED, FAILED, RELEASED, SUPERSEDED)

def parent_namespace(ns: str) -> str:
    """The namespace of the graph a task runs in (where the checkpoint it runs from is):
    ``"tools:<id>"`` -> ``""``, ``"sub:<id>|tools:<id>"`` -> ``"sub:<id>"``."""
    return ns.rsplit("|", 1)[0] if "|" in ns else ""


def now() -> str:
    """Current UTC time as ISO 8601, as stored in events."""
    return datetime.now(UTC).isoformat()


def event_for(key: ToolCallKey, ev: str, **fields: Any) -> dict[str, Any]:
    """An event about the call ``key`` (to record in a journal), stamped now."""
    return {"ev": ev, "ns": key.ns, "cp": key.checkpoint_id, "call": key.call_id, "at": now(), **fields}


def process_stamp() -> dict[str, Any]:
    """Who is running a call: host and pid, so a reader can tell a dead process."""
    return {"host": HOST, "pid": os.getpid()}


def _process_alive(stamp: dict[str, Any] | None) -> bool:
    if not stamp or stamp.get("host") != HOST:
        return False
    pid = stamp.get("pid")
    return isinstance(pid, int) and pid > 0 and pid_alive(pid)


@dataclass(frozen=True)
class ToolCallKey:
    """What identifies one execution of a tool call.

    Attributes:
        ns: Namespace of the tool-node task (``tools:<task id>``, nested with ``|``); the
            task id is derived from the checkpoint it ran from, so a later turn that
            reuses a call id gets a different key.
        checkpoint_id: The checkpoint the task ran from.
        call_id: The model's tool call id.
    """

    ns: str
    checkpoint_id: str
    call_id: str


@dataclass
class ToolCallRecord:
    """The lifecycle of one tool call, folded from its events.

    Attributes:
        key: Which call.
        name: Tool name.
        args: Arguments the model gave.
        state: ``requested``, ``started``, ``finished``, ``failed`` or ``superseded``
            (``effective_state`` adds ``uncertain`` and ``answered``).
        requested_at: When the tool node first saw the call.
        started_at: When the tool body was last entered (``None`` if never).
        finished_at: When it finished or failed.
        result: The recorded result (a ``ToolMessage`` or ``Command``) once finished;
            once superseded, the ToolMessage the model was given instead.
        error: ``{"type": ..., "message": ...}`` once failed.
        process: Host and pid that last started it.
        resolution: How a person resolved an uncertain call (``"skip"``, ``"result"``),
            if that is how it finished.
        superseded_from: The state a superseded call was in when new input came
            (``started``: its outcome is unknown; ``requested``: it never ran).
        lost_run: ``True`` for a started call whose checkpoint is not in the thread: its
            run died and its state was lost (``durability="exit"``, a lost checkpoint);
            set by the saver or journal that read the record (``None``: not checked).
        answered_with: For a call the journal left open (``requested`` or ``started``),
            or a ``failed`` one the adapter holds and asked a person about with no
            answer in the journal (see :func:`asked_unanswered`), the ToolMessage the
            thread's latest messages hold for it: written into the
            state by someone else than the adapter (a person's
            ``update_state(..., as_node="tools")``); set by the saver that read the
            record (``None``: none, or not checked). The journal is not changed.
        overtaken_with: For such a held ``failed`` call that new input overtook before
            a person answered, the error ToolMessage the adapter gave the model for it
            (``replay.pending``), which the thread's latest messages hold: no question
            waits for it any more, and it stays ``failed``; set by the saver that read
            the record (``None``: not overtaken, or not checked).
        carries_answer: For a call of a lost run a person answered (``"skip"`` or a
            result) at a tool node where no call matched it: its answer still applies
            when the model asks for that call again (see :mod:`.lost`); any later event
            (the call asked for again took it) clears it.
    """

    key: ToolCallKey
    name: str = ""
    args: Any = None
    state: str = REQUESTED
    requested_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    process: dict[str, Any] | None = None
    resolution: str | None = None
    superseded_from: str | None = None
    lost_run: bool | None = None
    answered_with: Any = None
    overtaken_with: Any = None
    carries_answer: bool = False
    events: list[str] = field(default_factory=list)
    #: For the question journal: ``("ask", slot, question)`` / ``("answer", slot, answer,
    #: about)`` in log order.
    asks: list[tuple[Any, ...]] = field(default_factory=list)

    def apply(self, event: dict[str, Any], decode: Any) -> None:
        """Fold one event (a decoded lifecycle record) into this record."""
        ev = event["ev"]
        self.events.append(ev)
        self.carries_answer = ev == FINISHED and bool(event.get("carry"))
        if ev == ASK:
            self.asks.append((ASK, event["slot"], decode(event["question"])))
        elif ev == ANSWER:
            self.asks.append((ANSWER, event["slot"], decode(event["answer"]), event["about"]))
        elif ev == REQUESTED:
            self.name = event.get("name", self.name)
            if "args" in event:
                self.args = decode(event["args"])
            self.requested_at = self.requested_at or event.get("at")
        elif ev == STARTED:
            if self.state == FINISHED:
                return  # a late duplicate never reopens a finished call
            # (a failed call is started again by a retry: until it ends, it is open)
            self.state = STARTED
            self.started_at = event.get("at")
            self.process = event.get("proc")
        elif ev == FINISHED:
            self.state = FINISHED
            self.finished_at = event.get("at")
            self.result = decode(event["result"]) if "result" in event else None
            self.resolution = event.get("resolution")
        elif ev == FAILED:
            self.state = FAILED
            self.finished_at = event.get("at")
            self.error = event.get("error")
        elif ev == RELEASED:
            if self.state == STARTED:
                self.state = REQUESTED
        elif ev == SUPERSEDED:
            if self.state in (FINISHED, FAILED):
                return  # a settled call keeps its outcome
            self.superseded_from = self.state
            self.state = SUPERSEDED
            self.finished_at = event.get("at")
            self.result = decode(event["result"]) if "result" in event else None

    @property
    def open_state(self) -> str:
        """``state``, with a superseded call seen as it was when new input came (what
        a re-run of its tool node from the same checkpoint, by time travel, goes by)."""
        if self.state == SUPERSEDED and self.superseded_from is not None:
            return self.superseded_from
        return self.state

    @property
    def effective_state(self) -> str:
        """``state``, with a call left open (or a failed call held for a person) that
        the thread's messages answer reported as answered (see ``answered_with``), and
        a started call whose process is gone as uncertain."""
        if self.answered_with is not None and self.state in (REQUESTED, STARTED, FAILED):
            return ANSWERED
        if self.state == STARTED and not _process_alive(self.process):
            return UNCERTAIN
        return self.state


def fold(events: list[dict[str, Any]], decode: Any) -> dict[ToolCallKey, ToolCallRecord]:
    """Fold lifecycle events (in log order) into one record per call.

    A task's questions to a person are folded under the pseudo call id
    :data:`ASKS_CALL_ID` (in ``asks``); :func:`calls_only` drops that entry.
    """
    out: dict[ToolCallKey, ToolCallRecord] = {}
    for event in events:
        key = ToolCallKey(event["ns"], event["cp"], event["call"])
        rec = out.get(key)
        if rec is None:
            rec = out[key] = ToolCallRecord(key)
        rec.apply(event, decode)
    return out


def calls_only(records: dict[ToolCallKey, ToolCallRecord]) -> list[ToolCallRecord]:
    """The records of real tool calls (without the per-task question journal)."""
    return [r for k, r in records.items() if k.call_id != ASKS_CALL_ID]


def asked_unanswered(records: dict[ToolCallKey, ToolCallRecord]) -> set[ToolCallKey]:
    """The calls a question to a person is still waiting on, by the journal: each call
    the last question of its task that named it asked about, with no answer about it
    journaled since (what a held ``failed`` call is until a person answers it).

    Args:
        records: Folded records of a thread, with each task's question journal
            (:data:`ASKS_CALL_ID`); the others are ignored.
    """
    waiting: set[ToolCallKey] = set()
    for key, rec in records.items():
        if key.call_id != ASKS_CALL_ID:
            continue
        for entry in rec.asks:
            if entry[0] == ASK:
                question = entry[2] if isinstance(entry[2], dict) else {}
                for call in question.get("calls", []):
                    if isinstance(call, dict):
                        waiting.add(ToolCallKey(key.ns, key.checkpoint_id, str(call.get("id"))))
            else:
                for call_id, *_ in entry[3] or ():
                    waiting.discard(ToolCallKey(key.ns, key.checkpoint_id, str(call_id)))
    return waiting
