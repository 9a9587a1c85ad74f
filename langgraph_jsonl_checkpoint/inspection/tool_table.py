"""The tool-call lifecycle of a thread as a table: each call's state, how long it ran,
and who decided what after a crash.

Read from the replay adapter's journal (``JsonlSaver.tool_call_records``). States:
``requested``, ``started`` (running, in a live process), ``finished``, ``failed``,
``uncertain`` (started by a process that is gone, not settled) and ``decided`` (a
person settled an uncertain call: ``skip`` or a supplied result). Decisions: a
person's answer to the adapter's ``uncertain_tool_calls`` question (``retry``,
``skip``, ``result``), or the policy's (``re-run``: an idempotent call a crash cut off
ran again without asking). A call that was asked about and not answered yet shows
``asked``. A call that new input overtook before it had a result is ``superseded``
(decided by the ``new input``: the adapter answered it from the journal); a ``failed``
call held for a person's answer that new input overtook instead (the adapter told the
model its error) stays ``failed``, decided ``superseded`` by the ``new input``; a call
asked about whose graph went on from the checkpoint that asked, with no answer (new
input came, and no pending-calls node answered it), is ``unanswered (thread went on)``:
no question waits for it any more, and its state is what the journal knows. A started
call whose checkpoint is not in the thread (its run died and its state was lost, as
under ``durability="exit"``) is marked ``lost run`` until a person answers about it. A
call the journal left open (``requested``, ``started`` or ``uncertain``), or a
``failed`` one held for a person's answer (``asked``), whose tool message is in the
thread's latest messages is ``answered``, decided by a ``state edit``: someone wrote
its answer into the state, as a person does with ``update_state(..., as_node="tools")``
(the journal is not changed; the state says it).

A thread that did not run with the replay adapter has no journal; its table is read
from the messages of its latest state instead (``source`` ``messages``): each tool call
an AI message asked for, ``answered`` when a tool message answers it (``failed`` when
that answer has ``status="error"``), else ``unanswered``. What the messages do not say
(when a call started, how long it ran, how many times) is left empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ..replay.lifecycle import (
    ASKS_CALL_ID,
    RELEASED,
    STARTED,
    SUPERSEDED,
    ToolCallKey,
    ToolCallRecord,
    calls_only,
    parent_namespace,
)
from .checkpoints import reading
from .conversation import Utterance, content_text
from .times import duration
from .transcript import TranscriptEntry, read_transcript
from .values import jsonable

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver

DECIDED = "decided"
#: The decision of a call asked about whose graph went on from the question's checkpoint
#: without an answer (new input came instead): no question waits for it any more.
WENT_ON = "unanswered (thread went on)"
PERSON, POLICY, INPUT, STATE_EDIT = "person", "policy", "new input", "state edit"
#: Where a row comes from: the replay adapter's journal, or the thread's messages.
JOURNAL, MESSAGES = "journal", "messages"
#: States of a call read from the messages (see the module docstring).
ANSWERED, FAILED, UNANSWERED = "answered", "failed", "unanswered"


@dataclass(frozen=True)
class ToolCallRow:
    """One tool call's lifecycle, for a table.

    Attributes:
        call_id: The model's tool call id.
        name: The tool.
        args: Its arguments.
        state: See the module docstring.
        ns: The tool node's namespace.
        checkpoint_id: The checkpoint the tool node ran from.
        requested_at: When the tool node first saw it.
        started_at: When its body was last entered.
        finished_at: When it finished or failed.
        seconds: From the last start to the end (``None`` if it did not end).
        attempts: How many times its body was entered.
        decision: ``retry``, ``skip``, ``result``, ``re-run``, ``answered``, ``asked``,
            ``unanswered (thread went on)``, ``lost run``, ``superseded`` or
            ``superseded (was <state>)`` (``None``: no decision was needed).
        decided_by: ``person``, ``policy``, ``new input`` or ``state edit``.
        outcome: The result's text or the error, shortened.
        lost_run: Started in a run whose checkpoint is not in the thread.
        source: ``journal`` or ``messages`` (see the module docstring).
        answered: Whether a tool message answers the call (``None``: not read from
            the messages; the journal's state says).
    """

    call_id: str
    name: str
    args: Any
    state: str
    ns: str
    checkpoint_id: str
    requested_at: str | None
    started_at: str | None
    finished_at: str | None
    seconds: float | None
    attempts: int
    decision: str | None
    decided_by: str | None
    outcome: str
    lost_run: bool = False
    source: str = JOURNAL
    answered: bool | None = None

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data (an item of ``tools --json``)."""
        return {
            "call_id": self.call_id, "name": self.name, "args": jsonable(self.args), "state": self.state,
            "ns": self.ns, "checkpoint_id": self.checkpoint_id, "requested_at": self.requested_at,
            "started_at": self.started_at, "finished_at": self.finished_at, "seconds": self.seconds,
            "attempts": self.attempts, "decision": self.decision, "decided_by": self.decided_by,
            "outcome": self.outcome, "lost_run": self.lost_run, "source": self.source,
            "answered": self.answered,
        }


@dataclass(frozen=True)
class ToolCallTable:
    """A thread's tool calls, from its journal or, without one, from its messages.

    Attributes:
        journal: Whether the thread has a replay journal (the rows come from it).
        rows: The calls, in the order they were first seen.
    """

    journal: bool
    rows: list[ToolCallRow]


def tool_rows(
    records: dict[ToolCallKey, ToolCallRecord],
    lost: frozenset[ToolCallKey] = frozenset(),
    heads: Mapping[str, str] | None = None,
) -> list[ToolCallRow]:
    """Rows from folded journal records, in the order calls were first seen. Pure but
    for the liveness check of a started call's process (``effective_state``).

    Args:
        records: ``JsonlSaver.tool_call_records(thread_id)`` (calls the thread's messages
            answer marked by ``JsonlSaver.mark_answered``).
        lost: Keys of started calls whose run was lost (``orphaned_tool_calls``).
        heads: The latest checkpoint id of each graph namespace of the thread: a call
            asked about at a checkpoint its graph went on from, with no answer, is
            ``unanswered (thread went on)``, not ``asked`` (``None``: not known).
    """
    answers: dict[tuple[str, str, str], str] = {}
    asked: set[tuple[str, str, str]] = set()
    for key, rec in records.items():
        if key.call_id != ASKS_CALL_ID:
            continue
        for entry in rec.asks:
            if entry[0] == "ask":
                question = entry[2] if isinstance(entry[2], dict) else {}
                for call in question.get("calls", []):
                    asked.add((key.ns, key.checkpoint_id, str(call.get("id"))))
            else:
                answer, about = entry[2], entry[3]
                for call_id, _started in about:
                    given = answer.get(call_id) if isinstance(answer, dict) else None
                    kind = "result" if isinstance(given, dict) else str(given)
                    answers[(key.ns, key.checkpoint_id, call_id)] = kind
    rows = []
    for key, rec in records.items():
        if key.call_id == ASKS_CALL_ID:
            continue
        where = (key.ns, key.checkpoint_id, key.call_id)
        state = rec.effective_state
        attempts = rec.events.count(STARTED)
        decision: str | None = answers.get(where)
        by = PERSON if decision else None
        if rec.resolution in ("skip", "result"):
            state, decision, by = DECIDED, rec.resolution, PERSON
        elif state == ANSWERED:  # the journal's derived state, named as for the messages
            decision, by = ANSWERED, STATE_EDIT
        elif rec.state == SUPERSEDED:
            decision, by = f"superseded (was {rec.superseded_from})", INPUT
        elif rec.overtaken_with is not None:  # held failed, asked; new input came instead
            decision, by = "superseded", INPUT
        elif decision is None and where in asked:
            head = heads.get(parent_namespace(key.ns)) if heads is not None else None
            decision = "asked" if head in (None, key.checkpoint_id) else WENT_ON
        elif decision is None and key in lost:
            decision = "lost run"
        elif decision is None and attempts > 1 and RELEASED not in rec.events:
            decision, by = "re-run", POLICY
        rows.append(ToolCallRow(
            call_id=key.call_id, name=rec.name, args=rec.args, state=state, ns=key.ns,
            checkpoint_id=key.checkpoint_id, requested_at=rec.requested_at, started_at=rec.started_at,
            finished_at=rec.finished_at, seconds=duration(rec.started_at, rec.finished_at),
            attempts=attempts, decision=decision, decided_by=by, outcome=_outcome(rec),
            lost_run=key in lost,
        ))
    return rows


def tool_table(saver: JsonlSaver, thread_id: str) -> list[ToolCallRow]:
    """The lifecycle table of a thread's tool calls from its journal (see the module
    docstring; empty without one: :func:`tool_calls` then reads the messages).

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        thread_id: The thread.
    """
    return _journal_rows(saver, thread_id, saver.tool_call_records(thread_id))


def tool_calls(saver: JsonlSaver, thread_id: str) -> ToolCallTable:
    """A thread's tool calls: the journal's table, or, for a thread that has no journal
    (it did not run with the replay adapter), the calls its latest state's messages hold.

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        thread_id: The thread.

    Raises:
        CorruptLogError: The log cannot be read.
    """
    records = saver.tool_call_records(thread_id)
    if records:
        return ToolCallTable(journal=True, rows=_journal_rows(saver, thread_id, records))
    try:
        entries = read_transcript(saver, thread_id).entries
    except NotFoundError:
        entries = ()  # no checkpoint yet: no messages
    return ToolCallTable(journal=False, rows=message_rows(entries))


def _journal_rows(
    saver: JsonlSaver, thread_id: str, records: dict[ToolCallKey, ToolCallRecord]
) -> list[ToolCallRow]:
    """Rows of a journal's records: lost runs and calls the thread's messages answer marked."""
    if not records:
        return []
    lost = frozenset(rec.key for rec in saver.orphaned_tool_calls(thread_id))
    saver.mark_answered(thread_id, calls_only(records))
    heads = reading(saver, thread_id, lambda facts: {
        ns: ids[-1] for ns, ids in facts.index.ordered_ids.items() if ids})
    return tool_rows(records, lost, heads)


def message_rows(entries: Sequence[TranscriptEntry]) -> list[ToolCallRow]:
    """Rows for the tool calls of a conversation's AI messages, each with the tool
    message answering it, if any (pure).

    Args:
        entries: A transcript's messages, oldest first.
    """
    answers: dict[str, Utterance] = {}
    for e in entries:
        u = e.utterance
        if u.role == "tool" and u.tool_call_id is not None:
            answers.setdefault(u.tool_call_id, u)
    rows = []
    for e in entries:
        for call in e.utterance.tool_calls if e.utterance.role == "ai" else ():
            answer = answers.get(call.call_id) if call.call_id is not None else None
            state = UNANSWERED if answer is None else FAILED if answer.status == "error" else ANSWERED
            rows.append(ToolCallRow(
                call_id=call.call_id or "", name=call.name, args=call.args, state=state, ns="",
                checkpoint_id=e.checkpoint_id or "", requested_at=e.at, started_at=None,
                finished_at=None, seconds=None, attempts=0, decision=None, decided_by=None,
                outcome=answer.text if answer is not None else "", source=MESSAGES,
                answered=answer is not None,
            ))
    return rows


def _outcome(rec: ToolCallRecord) -> str:
    if rec.error and rec.answered_with is None:  # a held failure answered: its answer
        return f"{rec.error.get('type', 'Error')}: {rec.error.get('message', '')}"
    result = rec.result if rec.result is not None else rec.answered_with
    if result is None:
        return ""
    content = getattr(result, "content", None)
    if content is not None:
        return content_text(content)
    update = getattr(result, "update", None)
    if update is not None:
        return f"Command(update={sorted(update) if isinstance(update, dict) else '...'})"
    return content_text(result if isinstance(result, str) else jsonable(result))
