"""Asking a person about a tool-node task's uncertain calls: the questions, their slots,
the answers (the adapter's ``interrupt()`` side; see :mod:`.adapter`).

A call is uncertain when it is not idempotent and started and never finished, or failed
before this run (its effect may or may not have happened; not on a ``RetryPolicy``
retry of the node, which runs a failed call again), or when it stands for a call of a
lost run (see :mod:`.lost`). The task's uncertain calls are asked about in one question, an
``interrupt()`` whose value is ``{"type": "uncertain_tool_calls", "calls": [...]}``.

LangGraph hands resume values to a task's interrupt() calls by position ("slot"), and
keeps them only once the task finishes or interrupts. Questions and answers are
journaled with their slots; on re-execution :func:`deliberate` calls interrupt() again
for each of its slots LangGraph still holds a value for (so a tool's own interrupt()
later in the task keeps its slot), takes answers from the journal, and asks a new
question only for an uncertain call whose current run has no answer. A question carries
an ``"error"`` only about the answer to the last question asked: a refused answer to an
earlier one was reported when that later question was asked, so a plain ``invoke(None)``
asks afresh.

A new question goes after every slot LangGraph holds a value for. Values past the
journaled questions belong to a tool's own interrupt() in a run that died inside the
tool (its approval, say): they are passed by, never taken as the answer to a question
nobody has seen. The slots passed by lie before the question's, so a re-execution that
replays the question passes them by again. One exception: the last value held may be a
person's answer given before the question (a plain ``Command(resume={call_id: ...})``
right after a crash, or after a retry that failed or died): a mapping naming only calls
of the AI message, other than the last answer taken (LangGraph hands a plain answer again
to a later run: that leftover is passed by), is taken as the answer if it answers every
call asked about (journaled as a question and its answer at that slot), and otherwise
reported in the question's ``"error"``.

LangGraph keeps the plain value until the task's checkpoint is left, and a by-id answer
(``Command(resume={interrupt_id: ...})``, :meth:`~.adapter.ReplayAdapter.resume_command`)
leaves it in place: when the last question is answered by id, a plain value still held
is one a slot before the question took (the dead run's tool answer), and it is taken
away before the calls run again, so a retried tool asks its own question afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.types import interrupt

from .calls import Batch, CallContext, drop_plain_resume, null_resume_slot, slots_held
from .lifecycle import ANSWER, ASK, ASKS_CALL_ID, FAILED, REQUESTED
from .lost import closing_event, lost_question
from .plan import INTERRUPT_TYPE, answer_problems, failure_of, is_held

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest

#: Whether a tool (by name, and the tool object if known) may run twice.
IsIdempotent = Callable[[str | None, Any], bool]
#: A value to its stored form (the journal's encoder).
Encode = Callable[[Any], Any]
#: What the adapter's interrupt() shows for a slot it passes by (never seen: LangGraph
#: holds a value for that slot, so the call returns at once).
_PASSED_BY: dict[str, Any] = {"type": INTERRUPT_TYPE, "calls": []}


def uncertain_calls(
    ctx: CallContext, batch: Batch, request: ToolCallRequest, is_idempotent: IsIdempotent
) -> list[dict[str, Any]]:
    """The batch's calls a person must be asked about: side-effecting calls started and
    not finished, or failed (their entries say how), and calls standing for lost ones
    (with their questions)."""
    tools = {getattr(t, "name", None): t for t in (getattr(request.runtime, "tools", None) or [])}
    out = []
    for call in ctx.batch:
        rec = batch.records.get(ctx.key(call["id"]))
        idem = is_idempotent(call.get("name"), tools.get(call.get("name")))
        if rec is not None and is_held(rec, idempotent=idem, retrying=ctx.attempt > 1):
            entry = {
                "id": call["id"],
                "name": call.get("name"),
                "args": call.get("args"),
                "started_at": rec.started_at,
            }
            if rec.open_state == FAILED:
                entry["failed"] = failure_of(rec)
            out.append(entry)
        elif (
            call["id"] in batch.linked and not batch.linked[call["id"]].carries_answer
            and (rec is None or rec.state == REQUESTED)
        ):
            out.append(lost_question(call["id"], batch.linked[call["id"]]))
    return out + [lost_question(qid, lost) for qid, lost in batch.unmatched.items()]


def deliberate(
    ctx: CallContext,
    batch: Batch,
    request: ToolCallRequest,
    *,
    encode: Encode,
    is_idempotent: IsIdempotent,
) -> Iterator[list[dict[str, Any]]]:
    """Settle the batch's uncertain calls (``batch.answers``); yields events that must be
    durable first (a question before its ``interrupt()``, an answer before it is acted on).

    Raises:
        GraphInterrupt: A person has to answer (LangGraph's ``interrupt()``).
    """
    journal = batch.records.get(ctx.key(ASKS_CALL_ID))
    entries = journal.asks if journal else []
    questions: dict[int, tuple[int, dict[str, Any]]] = {}  # slot -> (ordinal, question)
    answered_slots: set[tuple[int, int]] = set()  # (slot, ordinal) answered
    answers: dict[str, tuple[Any, Any]] = {}  # call id -> (answer, started_at)
    last_answer: Any = None  # the last answer taken: what LangGraph may hand again
    slot_answers: dict[int, Any] = {}  # slot -> the answer journaled there
    ordinal = 0
    for entry in entries:
        if entry[0] == ASK:
            ordinal += 1
            questions[entry[1]] = (ordinal, entry[2])
        else:
            _, slot, answer, about = entry
            if slot in questions:
                answered_slots.add((slot, questions[slot][0]))
            last_answer = slot_answers[slot] = answer
            for call_id, started_at in about:
                answers[call_id] = (answer[call_id], started_at)
    held = slots_held(request)
    asked = max(questions) + 1 if questions else 0  # the slots up to the last question
    replay = asked if held is None else min(asked, held)
    problem: str | None = None
    latest = max(questions) if questions else -1  # the slot of the last question asked
    plain = null_resume_slot(request)
    carried: Any = None  # a new plain answer LangGraph handed to an answered slot
    by_id = False  # the last question answered now, by interrupt id (from the task's own values)
    for slot in range(replay):
        number, question = questions.get(slot, (0, _PASSED_BY))
        value = interrupt(question)  # LangGraph holds a value: returns it at once
        if held is not None and (slot, number) in answered_slots and slot == plain == held - 1 == replay - 1:
            # the run that took this slot's answer died before LangGraph kept it for the
            # task: a plain value here is new (a person's answer after the crash), unless
            # it is that same answer handed again
            if value != slot_answers.get(slot) and _meant_for(value, ctx):
                carried = value
        if slot not in questions or (slot, number) in answered_slots:
            continue  # passed by (a tool's answer), or answered in the journal
        refused = answer_problems(value, [c["id"] for c in question["calls"]], ctx.thread_id)
        # refused before and asked again since: said then, not again now
        problem = refused if slot == latest else None
        if refused is None:
            about = [[c["id"], c["started_at"]] for c in question["calls"]]
            yield [_answer_event(ctx, slot, value, about, encode), *_closing(batch, value, about, encode)]
            last_answer = value
            for call_id, started_at in about:
                answers[call_id] = (value[call_id], started_at)
            by_id = slot == latest and plain is not None and slot < plain
    if by_id and held is not None:
        # The last question was answered by id: a plain value LangGraph still holds was
        # there when it was asked, so a slot before it took it (a dead run's tool answer);
        # the tools about to run must not be handed it.
        drop_plain_resume(request)
        held -= 1
    slot = replay
    while True:
        uncertain = uncertain_calls(ctx, batch, request, is_idempotent)
        # An answer counts only for the run of the call it was about: a retry that
        # crashed again started later, and is asked about again.
        batch.answers = {
            c["id"]: answers[c["id"]][0]
            for c in uncertain
            if c["id"] in answers and answers[c["id"]][1] == c["started_at"]
        }
        open_calls = [c for c in uncertain if c["id"] not in batch.answers]
        if not open_calls:
            return
        early, carried = carried, None
        while held is not None and slot < held:  # a tool's answer from a run that died
            early = interrupt(_PASSED_BY)  # returns it at once; not an answer to this question
            slot += 1
        question = {"type": INTERRUPT_TYPE, "calls": open_calls}
        fresh = not questions or early != last_answer
        if fresh and early is not None and slot == held and _meant_for(early, ctx):
            # The last value held, given before this question was asked: right after the
            # crash (Command(resume=...) before any question), or a new answer after a
            # retry failed or died; an answer to the calls of this message, taken if valid.
            # (A value equal to the last answer taken is LangGraph's leftover of it, handed
            # again to a later run: never taken for a new run.)
            refused = answer_problems(early, [c["id"] for c in open_calls], ctx.thread_id)
            if refused is None:
                about = [[c["id"], c["started_at"]] for c in open_calls]
                ask = ctx.event(ASKS_CALL_ID, ASK, slot=slot - 1, question=encode(question))
                yield [ask, _answer_event(ctx, slot - 1, early, about, encode),
                       *_closing(batch, early, about, encode)]
                for call_id, started_at in about:
                    answers[call_id] = (early[call_id], started_at)
                continue
            problem = f"an answer given before this question was asked was not taken ({refused})"
        if problem is not None:
            question["error"] = problem
        yield [ctx.event(ASKS_CALL_ID, ASK, slot=slot, question=encode(question))]
        value = interrupt(question)  # raises until a person answers
        problem = answer_problems(value, [c["id"] for c in open_calls], ctx.thread_id)
        if problem is None:
            about = [[c["id"], c["started_at"]] for c in open_calls]
            yield [_answer_event(ctx, slot, value, about, encode), *_closing(batch, value, about, encode)]
            for call_id, started_at in about:
                answers[call_id] = (value[call_id], started_at)
        slot += 1


def _meant_for(value: Any, ctx: CallContext) -> bool:
    """Whether a value LangGraph holds is an answer meant for this task's question: a
    mapping whose keys are all tool call ids of the AI message (a tool's own answer
    from a run that died, "yes" say, is not)."""
    ids = {c.get("id") for c in ctx.calls} | {c.get("id") for c in ctx.batch}
    return isinstance(value, dict) and bool(value) and all(k in ids for k in value)


def _closing(batch: Batch, answer: Any, about: list[list[Any]], encode: Encode) -> list[dict[str, Any]]:
    """Events settling the lost calls asked about on their own (journaled with the answer;
    a "skip" or a result carried to the call if the model asks for it again)."""
    return [
        closing_event(batch.unmatched[qid], answer[qid], encode, carry=True)
        for qid, _ in about if qid in batch.unmatched
    ]


def _answer_event(
    ctx: CallContext, slot: int, answer: Any, about: list[list[Any]], encode: Encode
) -> dict[str, Any]:
    return ctx.event(ASKS_CALL_ID, ANSWER, slot=slot, answer=encode(answer), about=about)
