"""What to do with one tool call after a restart, given its journaled lifecycle. Pure.

=====================  =====================================================
record                 what happens
=====================  =====================================================
finished               the recorded result is returned; the tool is not called
failed, idempotent     the tool runs again
failed, side effects   held, as a started one (on a ``RetryPolicy`` retry of
                       the node: the tool runs)
requested, never run   the tool runs
started, idempotent    the tool runs again
started, side effects  held: a person answers ``retry``, ``skip`` or a result
=====================  =====================================================

A failed call's outcome is in doubt when the tool has side effects: it may have taken
effect before it raised (a timeout after the email went out). LangGraph's retry of the
node runs it again, as it would without the adapter (the node's policy chose to); a
resumed run asks a person first, in the same question as the uncertain calls. Nothing
here ends a resumed run with an error of its own, so no thread is wedged.

A call superseded by new input (see :mod:`.pending`) is planned as it was then: its
tool node runs again only by time travel to the checkpoint it ran from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from langchain_core.messages import ToolMessage

from ..errors import JsonlCheckpointError
from .lifecycle import FAILED, FINISHED, REQUESTED, ToolCallRecord

#: The ``type`` of the interrupt that asks a person about uncertain calls.
INTERRUPT_TYPE = "uncertain_tool_calls"
#: What the model is told of an uncertain call that new input superseded.
SUPERSEDED_TEXT = (
    "This tool call was interrupted while it was running, and its outcome is unknown: it "
    "may or may not have taken effect. It was superseded by new input and was not run again."
)
#: What the model is told of a call that never started before new input superseded it.
NOT_RUN_TEXT = (
    "This tool call was not run: the run that asked for it stopped before the tool started, "
    "and it was superseded by new input."
)
#: What the model is told of a call a person chose to skip.
SKIPPED_TEXT = (
    "This tool call was interrupted by a crash while it was running, and its outcome is "
    "unknown: it may or may not have taken effect. It was not run again."
)
#: What the model is told of a failed call a person chose to skip (``{error}``: the
#: tool's error, ``Type: message``).
FAILED_SKIPPED_TEXT = (
    "This tool call failed with {error}. It may have taken effect before it failed. "
    "It was not run again."
)

# plan_call outcomes
RUN = "run"
REPLAY_RESULT = "replay_result"
HOLD = "hold"
SKIP = "skip"
SUPPLY = "supply"


class RecordedToolError(JsonlCheckpointError, RuntimeError):
    """Formerly raised when a resumed run met a tool call that had failed before; no
    longer raised by anything in the adapter.

    That wedged threads whose tool node could not retry it (``create_agent``'s). A
    failed call is now run again in a resumed run if its tool is idempotent, and held
    behind the ``uncertain_tool_calls`` interrupt if it has side effects (the question
    says how it failed). Kept so code that imports or catches it keeps working.

    Attributes:
        call_id: The tool call.
        error_type: The class name of the error the tool raised.
        error_message: Its message.
    """

    def __init__(
        self, message: str, *, call_id: str = "", error_type: str = "", error_message: str = ""
    ) -> None:
        super().__init__(message)
        self.call_id = call_id
        self.error_type = error_type
        self.error_message = error_message


def plan_call(
    record: ToolCallRecord | None, *, idempotent: bool, answer: Any = None, retrying: bool = False
) -> str:
    """Decide what to do with one tool call, given its record. Pure.

    Args:
        record: The call's lifecycle record, or ``None`` if never seen.
        idempotent: Whether the tool may safely run twice.
        answer: A person's answer for an uncertain call (``"retry"``, ``"skip"`` or
            ``{"result": ...}``), if one was given.
        retrying: Whether LangGraph runs the node again under its ``RetryPolicy`` (an
            attempt after the first of one execution): a failed call then runs again.

    Returns:
        One of ``RUN``, ``REPLAY_RESULT``, ``HOLD`` (ask a person), ``SKIP``, ``SUPPLY``.
    """
    state = record.open_state if record is not None else REQUESTED
    if state == REQUESTED:
        return RUN
    if state == FINISHED:
        return REPLAY_RESULT
    if idempotent or (state == FAILED and retrying):
        return RUN
    # a side-effecting call started and never settled, or failed before this run
    return answered_action(answer)


def is_held(record: ToolCallRecord | None, *, idempotent: bool, retrying: bool) -> bool:
    """Whether a person must answer for a call before it runs again (pure): what
    :func:`plan_call` holds when there is no answer."""
    return record is not None and plan_call(record, idempotent=idempotent, retrying=retrying) == HOLD


def failure_of(record: ToolCallRecord) -> dict[str, str]:
    """A failed call's error as a question shows it."""
    err = record.error or {}
    return {"error_type": str(err.get("type", "Error")), "error_message": str(err.get("message", ""))}


def answer_message(
    call_id: str, name: str | None, answer: Any, record: ToolCallRecord | None = None
) -> tuple[Any, str]:
    """The ToolMessage a person's ``"skip"`` or ``{"result": ...}`` gives the model for
    a call (``record``: its lifecycle, which says whether it failed), and the resolution
    to journal (``"skip"``, ``"result"``)."""
    if answer == "skip":
        text = SKIPPED_TEXT
        if record is not None and record.open_state == FAILED:
            failed = failure_of(record)
            text = FAILED_SKIPPED_TEXT.format(error=f"{failed['error_type']}: {failed['error_message']}")
        return ToolMessage(text, tool_call_id=call_id, name=name, status="error"), "skip"
    result = answer["result"]
    if isinstance(result, ToolMessage):
        return result, "result"
    from langgraph.prebuilt.tool_node import msg_content_output

    # ToolNode's own conversion of a tool's output: a dict as JSON, not its repr
    content = cast("str | list[str | dict[Any, Any]]", msg_content_output(result))
    return ToolMessage(content, tool_call_id=call_id, name=name), "result"


def answered_action(answer: Any) -> str:
    """What a person's answer about an uncertain call does: ``RUN``, ``SKIP``, ``SUPPLY``
    (``HOLD`` while there is none)."""
    if answer is None:
        return HOLD
    if answer == "retry":
        return RUN
    return SKIP if answer == "skip" else SUPPLY


def answer_problems(answer: Any, call_ids: Iterable[str], thread_id: str | None = None) -> str | None:
    """Why a resume value does not answer every uncertain call, or ``None`` if it does.

    The reason names the thread (if given), says it is about the last answer given
    (LangGraph hands a plain ``Command(resume=...)`` value to the next question again
    on a later ``invoke(None)``), the calls without a valid answer and what they got,
    and keys of the answer that are not among ``call_ids`` (a typo'd id).
    Keys for other calls do not make an answer invalid: ``resume_command`` gives every
    task the answers for all of them.
    """
    ids = list(call_ids)
    where = f"thread {thread_id!r}: " if thread_id is not None else ""
    where += "the last answer given was not taken: "
    if not isinstance(answer, dict):
        return (
            f"{where}{_shown(answer)} is not a mapping; resume with a mapping from "
            f"tool call id to 'retry', 'skip' or {{'result': ...}}, covering: {', '.join(ids)}"
        )
    bad = [
        i
        for i in ids
        if not (
            answer.get(i) in ("retry", "skip")
            or (isinstance(answer.get(i), dict) and "result" in answer[i])
        )
    ]
    if bad:
        got = [f"{i} (got {_shown(answer[i])})" if i in answer else f"{i} (none given)" for i in bad]
        others = [str(k) for k in answer if k not in ids]
        text = (
            f"{where}no valid answer for tool call(s) {', '.join(got)}: each needs 'retry', "
            "'skip' or {'result': ...}"
        )
        if others:
            text += (
                f"; the answer's key(s) {', '.join(others)} are not tool calls held here "
                f"(held: {', '.join(ids)})"
            )
        return text
    wrong = [
        f"{i} (its tool_call_id is {answer[i]['result'].tool_call_id!r})"
        for i in ids
        if isinstance(answer[i], dict)
        and isinstance(answer[i]["result"], ToolMessage)
        and answer[i]["result"].tool_call_id != i
    ]
    if wrong:
        return (
            f"{where}the ToolMessage given as the result of tool call(s) {', '.join(wrong)} "
            "answers another call: give it the call's id as tool_call_id, or give the "
            "content itself as {'result': ...}"
        )
    return None


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def for_call(result: Any, call_id: str) -> Any:
    """A recorded result as the answer to ``call_id``: a ToolMessage recorded with
    another call's id (a person's answer before those were refused) gets ``call_id``, so
    the call is answered and no message answers a call that does not exist."""
    if isinstance(result, ToolMessage) and result.tool_call_id != call_id:
        return result.model_copy(update={"tool_call_id": call_id})
    return result


