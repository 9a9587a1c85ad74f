"""Tool calls left unanswered when new input arrived, answered from the journal.

A thread can get new input while the tool calls of its last AI message are pending: a
process died in the middle of a tool batch and the user typed something new instead of
resuming, or a new message came instead of an answer to the ``uncertain_tool_calls``
interrupt. LangGraph then drops the pending tool tasks, and the model would see an AI
message whose tool calls have no ToolMessages, which chat model APIs reject ("an
assistant message with tool_calls must be followed by tool messages"). Before the model
runs, each such *dangling* call is answered from what the journal knows:

=========================  ==================================================
journal                    the model is told
=========================  ==================================================
finished                   the recorded result (the tool is not run again)
failed                     the recorded error
started, never finished    interrupted, outcome unknown, superseded by new input
requested, or never seen   not run, superseded by new input
=========================  ==================================================

The ToolMessages go right after the AI message that asked (after any answers it has),
in the order of its tool calls, which every chat model API accepts. A call that had not
settled is journaled as ``superseded`` with the message the model got, so
``tool_calls()`` shows how it ended and a re-run of the step says the same.

The decisions are pure (:func:`dangling_calls`, :func:`answers_for`); :func:`settle`
is the one piece of logic with I/O, written as steps (:mod:`.steps`) on a journal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage, ToolMessage
from langgraph.types import Command

from .lifecycle import (
    FAILED,
    FINISHED,
    REQUESTED,
    STARTED,
    SUPERSEDED,
    ToolCallKey,
    ToolCallRecord,
    event_for,
)
from .plan import NOT_RUN_TEXT, SUPERSEDED_TEXT, for_call
from .steps import Steps, call

#: ``add_messages``' id meaning "every message": what lets an update insert in the middle.
REMOVE_ALL_MESSAGES = "__remove_all__"
#: The order in which records of one call id are trusted (first wins).
_PRECEDENCE = (FINISHED, FAILED, SUPERSEDED, STARTED, REQUESTED)
#: ToolNode's wording for a tool error (``TOOL_CALL_ERROR_TEMPLATE``).
_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."


@dataclass(frozen=True)
class Dangling:
    """One tool call of an AI message that no ToolMessage answers.

    Attributes:
        ai_index: Where the AI message is in the history.
        call: The tool call (``{"id", "name", "args"}``).
    """

    ai_index: int
    call: Mapping[str, Any]


def dangling_calls(messages: Sequence[Any]) -> list[Dangling]:
    """Every tool call in ``messages`` without a ToolMessage (pure).

    Called where the model is about to run, so a call still unanswered there is one
    whose tool task was dropped.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    out = []
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            out += [Dangling(i, c) for c in m.tool_calls if c.get("id") not in answered]
    return out


def best_record(records: Sequence[ToolCallRecord]) -> ToolCallRecord | None:
    """Which of a call id's records says what became of it: a settled outcome first
    (the tool's effect happened, whatever came later), then the newest of the rest."""
    for state in _PRECEDENCE:
        found = [r for r in records if r.state == state]
        if found:
            return found[-1]
    return None


def message_for(dangling: Dangling, record: ToolCallRecord | None) -> ToolMessage:
    """The ToolMessage that answers a dangling call, given its best record (pure)."""
    c = dangling.call
    call_id, name = c["id"], c.get("name")
    if record is not None and record.state in (FINISHED, SUPERSEDED):
        found = _tool_message_in(record.result, call_id)
        if found is not None:
            return found
        return ToolMessage(str(record.result), tool_call_id=call_id, name=name)
    if record is not None and record.state == FAILED:
        return ToolMessage(failure_text(record), tool_call_id=call_id, name=name, status="error")
    text = SUPERSEDED_TEXT if record is not None and record.state == STARTED else NOT_RUN_TEXT
    return ToolMessage(text, tool_call_id=call_id, name=name, status="error")


def failure_text(record: ToolCallRecord) -> str:
    """What the model is told of a failed call's recorded error, worded as ``ToolNode``
    words a tool error (the content of :func:`message_for`'s error ToolMessage)."""
    err = record.error or {}
    return _ERROR_TEMPLATE.format(error=f"{err.get('type', 'Error')}: {err.get('message', '')}")


def tells_recorded_failure(message: Any, record: ToolCallRecord) -> bool:
    """Whether ``message`` is the error ToolMessage :func:`message_for` gives the model
    for the failed call ``record`` (new input came before a person answered about it),
    not an answer someone wrote into the state."""
    return (record.state == FAILED and getattr(message, "status", None) == "error"
            and getattr(message, "content", None) == failure_text(record))


def _tool_message_in(result: Any, call_id: str) -> ToolMessage | None:
    """The ToolMessage for ``call_id`` in a recorded result (a ToolMessage, with
    ``call_id`` if it was recorded with another, or a ``Command`` whose update holds it)."""
    if isinstance(result, ToolMessage):
        return for_call(result, call_id)  # type: ignore[no-any-return]
    if isinstance(result, Command) and isinstance(result.update, Mapping):
        for m in result.update.get("messages", []) or []:
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id:
                return m
    return None


def answered_history(messages: Sequence[Any], answers: Mapping[str, ToolMessage]) -> list[Any]:
    """``messages`` with each answer placed right after the AI message that asked for it
    (after the ToolMessages already there), in the order of its tool calls (pure)."""
    out: list[Any] = []
    pending: list[ToolMessage] = []
    for m in messages:
        if pending and not isinstance(m, ToolMessage):
            out += pending
            pending = []
        out.append(m)
        if isinstance(m, AIMessage):
            ids = [c["id"] for c in m.tool_calls if c["id"] is not None]
            pending = [answers[i] for i in ids if i in answers]
    return out + pending


def settle(
    thread_id: str,
    messages: Sequence[Any],
    *,
    position: tuple[str, str],
    encode: Any,
) -> Steps[list[Any] | None]:
    """Answer the dangling calls of ``messages``: steps on a journal (``all``,
    ``record``). Returns the new history, or ``None`` if nothing dangles (no I/O then).

    Args:
        thread_id: The thread.
        messages: The history the model is about to see.
        position: ``(namespace, checkpoint id)`` of the task answering, where calls the
            journal never saw are recorded.
        encode: The journal's value encoder.
    """
    dangling = dangling_calls(messages)
    if not dangling:
        return None
    wanted = {d.call["id"] for d in dangling}
    by_id: dict[str, list[ToolCallRecord]] = {}
    for rec in (yield call("all", thread_id)):
        if rec.key.call_id in wanted:
            by_id.setdefault(rec.key.call_id, []).append(rec)
    answers: dict[str, ToolMessage] = {}
    events: list[dict[str, Any]] = []
    for d in dangling:
        records = by_id.get(d.call["id"], [])
        best = best_record(records)
        msg = answers[d.call["id"]] = message_for(d, best)
        events += _superseded_events(d, records, best, msg, position, encode)
    if events:
        yield call("record", thread_id, events)
    return answered_history(messages, answers)


def _superseded_events(
    d: Dangling,
    records: Sequence[ToolCallRecord],
    best: ToolCallRecord | None,
    msg: ToolMessage,
    position: tuple[str, str],
    encode: Any,
) -> list[dict[str, Any]]:
    """Journal events that close every unsettled record of a dangling call."""
    if best is not None and best.state in (FINISHED, FAILED, SUPERSEDED):
        # Settled: the model gets its outcome; records left open elsewhere are closed.
        open_keys = [r.key for r in records if r.state in (STARTED, REQUESTED)]
    elif records:
        open_keys = [r.key for r in records]
    else:  # the journal never saw the call: record it where it was answered
        key = ToolCallKey(position[0], position[1], d.call["id"])
        seen = event_for(key, REQUESTED, name=d.call.get("name"), args=encode(d.call.get("args")))
        return [seen, event_for(key, SUPERSEDED, result=encode(msg))]
    return [event_for(k, SUPERSEDED, result=encode(msg)) for k in open_keys]


def replacing_update(messages_key: str, history: list[Any]) -> dict[str, Any]:
    """A state update that replaces the whole message list (``add_messages``)."""
    return {messages_key: [RemoveMessage(id=REMOVE_ALL_MESSAGES), *history]}
