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
(decided by the ``new input``: the adapter answered it from the journal). A started
call whose checkpoint is not in the thread (its run died and its state was lost, as
under ``durability="exit"``) is marked ``lost run`` until a person answers about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..replay.lifecycle import ASKS_CALL_ID, RELEASED, STARTED, SUPERSEDED, ToolCallKey, ToolCallRecord
from ..saver.jsonl_saver import JsonlSaver
from .conversation import content_text
from .times import duration
from .values import jsonable

DECIDED = "decided"
PERSON, POLICY, INPUT = "person", "policy", "new input"


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
        decision: ``retry``, ``skip``, ``result``, ``re-run`` or ``asked`` (``None``: no
            decision was needed).
        decided_by: ``person``, ``policy`` or ``new input``.
        outcome: The result's text or the error, shortened.
        lost_run: Started in a run whose checkpoint is not in the thread.
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

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data (an item of ``tools --json``)."""
        return {
            "call_id": self.call_id, "name": self.name, "args": jsonable(self.args), "state": self.state,
            "ns": self.ns, "checkpoint_id": self.checkpoint_id, "requested_at": self.requested_at,
            "started_at": self.started_at, "finished_at": self.finished_at, "seconds": self.seconds,
            "attempts": self.attempts, "decision": self.decision, "decided_by": self.decided_by,
            "outcome": self.outcome, "lost_run": self.lost_run,
        }


def tool_rows(
    records: dict[ToolCallKey, ToolCallRecord], lost: frozenset[ToolCallKey] = frozenset()
) -> list[ToolCallRow]:
    """Rows from folded journal records, in the order calls were first seen. Pure but
    for the liveness check of a started call's process (``effective_state``).

    Args:
        records: ``JsonlSaver.tool_call_records(thread_id)``.
        lost: Keys of started calls whose run was lost (``orphaned_tool_calls``).
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
        elif rec.state == SUPERSEDED:
            decision, by = f"superseded (was {rec.superseded_from})", INPUT
        elif decision is None and where in asked:
            decision = "asked"
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
    """The lifecycle table of a thread's tool calls (see the module docstring).

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        thread_id: The thread.
    """
    lost = frozenset(rec.key for rec in saver.orphaned_tool_calls(thread_id))
    return tool_rows(saver.tool_call_records(thread_id), lost)


def _outcome(rec: ToolCallRecord) -> str:
    if rec.error:
        return f"{rec.error.get('type', 'Error')}: {rec.error.get('message', '')}"
    result = rec.result
    if result is None:
        return ""
    content = getattr(result, "content", None)
    if content is not None:
        return content_text(content)
    update = getattr(result, "update", None)
    if update is not None:
        return f"Command(update={sorted(update) if isinstance(update, dict) else '...'})"
    return content_text(result if isinstance(result, str) else jsonable(result))
