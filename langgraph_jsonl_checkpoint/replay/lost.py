"""Calls of lost runs: started in a run that died, whose checkpoint the thread does not
hold (``durability="exit"`` saves nothing until a run ends; any checkpoint can be lost).

Their tool node will never run again from that checkpoint, so nothing would ever ask
about them; and the resumed run, re-planned from an earlier checkpoint, may ask for the
same tool again. So the next tool node of the thread asks a person about each one, in
the ``uncertain_tool_calls`` interrupt, marked ``"lost_run": True``:

- a call of the current message with the same tool and arguments is taken to be the
  lost call asked for again (*linked*): it is held like an uncertain call, and the
  answer applies to it ("retry" runs it, "skip" or a result answers it without running);
- a lost call no current call matches is asked about on its own (by the task of the
  message's first call, so parallel tasks do not ask twice); the answer closes it. A
  ``"skip"`` or a result still applies when a later message asks for that call again
  (same tool and arguments; one with the same id first): that call is answered with it
  and not run, once (the lost call *carries* the answer until then). After ``"retry"``
  it runs.

Lost calls of idempotent tools are closed without asking (running them again is
harmless). Every decision is journaled on the lost call (``finished`` with the answer,
or ``superseded`` when it may run again), so it is asked about once. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .calls import CallContext
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
from .plan import answer_message


def split_lost(
    orphans: Sequence[ToolCallRecord],
    ctx: CallContext,
    records: Mapping[ToolCallKey, ToolCallRecord],
    idempotent: Callable[[str], bool],
) -> tuple[list[ToolCallRecord], dict[str, ToolCallRecord], dict[str, ToolCallRecord]]:
    """Sort a thread's lost calls for one tool-node task.

    Args:
        orphans: The thread's lost calls: open, or carrying a person's answer.

    Returns:
        ``(harmless, linked, unmatched)``: lost calls of idempotent tools (close them);
        this task's calls matched to a lost call (call id -> lost call: open, held until
        a person answers, or carrying the answer a person gave); lost calls this task
        asks about on their own (question id -> lost call).
    """
    own = {ctx.key(c["id"]) for c in ctx.batch}
    # Calls recorded at the checkpoint this task runs from are this step's own tasks
    # (not saved yet under "exit"), never a lost run's.
    found = [o for o in orphans if o.key not in own and o.key.checkpoint_id != ctx.checkpoint_id]
    carrying = [o for o in found if o.state == FINISHED and o.carries_answer]
    lost = [o for o in found if o.state == STARTED]
    harmless = [o for o in lost if idempotent(o.name)]
    settled = {k.call_id for k, r in records.items() if r.state in (FINISHED, FAILED)}
    linked_any: dict[str, ToolCallRecord] = {}

    def asking_again(o: ToolCallRecord) -> list[Mapping[str, Any]]:
        """The calls of the message that ask for ``o`` again (same tool and arguments),
        not linked yet and not settled."""
        return [c for c in ctx.calls if c.get("id") not in linked_any and c.get("id") not in settled
                and c.get("name") == o.name and c.get("args") == o.args]

    alone: list[ToolCallRecord] = []
    for o in (o for o in lost if not idempotent(o.name)):
        same = asking_again(o)
        if same:
            linked_any[same[0]["id"]] = o
        else:
            alone.append(o)
    for o in carrying:  # answered already: the answer goes to a call asking for it again
        same = asking_again(o)
        match = next((c for c in same if c.get("id") == o.key.call_id), same[0] if same else None)
        if match is not None:
            linked_any[match["id"]] = o

    def not_run_yet(call_id: str) -> bool:  # what a carried answer may still answer
        rec = records.get(ctx.key(call_id))
        return rec is None or rec.state == REQUESTED

    batch_ids = {c["id"] for c in ctx.batch}
    linked = {cid: o for cid, o in linked_any.items()
              if cid in batch_ids and (not o.carries_answer or not_run_yet(cid))}
    unmatched: dict[str, ToolCallRecord] = {}
    if ctx.lists_lost_runs:
        taken = {c.get("id") for c in ctx.calls}
        for o in alone:
            qid = o.key.call_id
            if qid in taken or qid in unmatched:
                qid = f"{o.key.call_id}@{o.key.checkpoint_id}"
            unmatched[qid] = o
    return harmless, linked, unmatched


def lost_question(question_id: str, lost: ToolCallRecord) -> dict[str, Any]:
    """A lost call as the interrupt lists it."""
    return {
        "id": question_id,
        "name": lost.name,
        "args": lost.args,
        "started_at": lost.started_at,
        "lost_run": True,
        "checkpoint_id": lost.key.checkpoint_id,
    }


def closing_event(
    lost: ToolCallRecord,
    answer: Any,
    encode: Callable[[Any], Any],
    by: str | None = None,
    carry: bool = False,
) -> dict[str, Any]:
    """The event that settles a lost call once a person answered (or, for an idempotent
    tool, once it was seen): ``superseded`` when it may run again ("retry"), else
    ``finished`` with what the person said (``carry``: asked about on its own, so the
    answer still applies when the call is asked for again)."""
    if answer == "retry":
        return event_for(lost.key, SUPERSEDED, **({"by": by} if by else {}))
    msg, resolution = answer_message(lost.key.call_id, lost.name, answer)
    extra = {"carry": True} if carry else {}
    return event_for(lost.key, FINISHED, result=encode(msg), resolution=resolution, **extra)


def taken_event(lost: ToolCallRecord, by: str) -> dict[str, Any]:
    """The event saying the answer a lost call carried was given to call ``by`` (it no
    longer carries it; its outcome stays the person's answer)."""
    return event_for(lost.key, SUPERSEDED, by=by)
