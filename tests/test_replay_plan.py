"""The replay adapter's pure decisions: plan_call and answer_problems."""

from __future__ import annotations

import pytest

from langgraph_jsonl_checkpoint.replay.lifecycle import ToolCallKey, ToolCallRecord, fold
from langgraph_jsonl_checkpoint.replay.plan import (
    HOLD,
    REPLAY_RESULT,
    RUN,
    SKIP,
    SUPPLY,
    answer_problems,
    plan_call,
)

KEY = ToolCallKey("tools:1", "cp", "c1")


def _record(*events: str) -> ToolCallRecord:
    return fold(
        [{"ev": e, "ns": "tools:1", "cp": "cp", "call": "c1", "at": "t"} for e in events], lambda c: c
    )[KEY]


@pytest.mark.parametrize(
    ("events", "idempotent", "answer", "want"),
    [
        ((), False, None, RUN),
        (("requested",), False, None, RUN),
        (("requested", "started", "finished"), False, None, REPLAY_RESULT),
        (("requested", "started", "failed"), True, None, RUN),
        (("requested", "started", "failed"), False, None, HOLD),
        (("requested", "started", "failed"), False, "retry", RUN),
        (("requested", "started", "failed"), False, "skip", SKIP),
        (("requested", "started", "failed"), False, {"result": "x"}, SUPPLY),
        (("requested", "started", "failed", "started"), False, None, HOLD),
        (("requested", "started", "failed", "started"), True, None, RUN),
        (("requested", "started"), True, None, RUN),
        (("requested", "started"), False, None, HOLD),
        (("requested", "started"), False, "retry", RUN),
        (("requested", "started"), False, "skip", SKIP),
        (("requested", "started"), False, {"result": "x"}, SUPPLY),
        (("requested", "started", "released"), False, None, RUN),
        (("requested", "started", "finished", "started"), False, None, REPLAY_RESULT),
    ],
)
def test_plan_call(events, idempotent, answer, want) -> None:
    record = _record(*events) if events else None
    assert plan_call(record, idempotent=idempotent, answer=answer) == want


def test_a_failed_call_started_again_is_started_again() -> None:
    """A failed call run again (a RetryPolicy retry, a person's "retry") is started again:
    if that run never ends, the call is uncertain, asked about with its new start."""
    events = [
        {"ev": "requested", "ns": "tools:1", "cp": "cp", "call": "c1", "at": "t0"},
        {"ev": "started", "ns": "tools:1", "cp": "cp", "call": "c1", "at": "t1"},
        {"ev": "failed", "ns": "tools:1", "cp": "cp", "call": "c1", "at": "t2", "error": {}},
        {"ev": "started", "ns": "tools:1", "cp": "cp", "call": "c1", "at": "t3"},
    ]
    record = fold(events, lambda c: c)[KEY]
    assert (record.state, record.started_at) == ("started", "t3")
    assert fold(events[:3], lambda c: c)[KEY].state == "failed"


@pytest.mark.parametrize(
    ("events", "idempotent", "want"),
    [
        (("requested", "started", "failed"), False, RUN),
        (("requested", "started", "failed"), True, RUN),
        (("requested", "started", "finished"), False, REPLAY_RESULT),
        (("requested", "started"), False, HOLD),
        (("requested", "started"), True, RUN),
        (("requested",), False, RUN),
    ],
)
def test_plan_call_on_a_retry_of_the_node(events, idempotent, want) -> None:
    """On a RetryPolicy's retry a failed call runs again (it raised: its outcome is
    known); a finished one is still replayed and an uncertain one still held."""
    assert plan_call(_record(*events), idempotent=idempotent, retrying=True) == want


def test_answer_problems_names_the_unanswered_calls() -> None:
    assert answer_problems({"a": "skip", "b": {"result": 1}}, ["a", "b"]) is None
    assert "b" in answer_problems({"a": "skip", "b": "maybe"}, ["a", "b"])
    assert "b" in answer_problems({"a": "retry"}, ["a", "b"])
    assert "mapping" in answer_problems("skip", ["a"])
    assert "b" in answer_problems({"a": "skip", "b": {"value": 1}}, ["a", "b"])


def test_a_tool_call_without_an_id_is_refused_with_the_thread_and_tool_named() -> None:
    from langgraph_jsonl_checkpoint.errors import ConfigError
    from langgraph_jsonl_checkpoint.replay.calls import call_id_of

    assert call_id_of({"id": "call-1", "name": "send_email"}, "t1") == "call-1"
    for call in ({"name": "send_email"}, {"id": None, "name": "send_email"},
                 {"id": "", "name": "send_email"}):
        with pytest.raises(ConfigError, match=r"thread 't1'.*'send_email'.*has no id"):
            call_id_of(call, "t1")


@pytest.mark.parametrize(
    "value",
    [
        {"status": "sent", "to": "Zoë"},
        ["a", "b"],
        [{"type": "text", "text": "sent"}],
        42,
        None,
        "sent",
        {1, 2},  # not JSON: str(), as ToolNode falls back to
    ],
    ids=["dict", "list-of-str", "content-blocks", "int", "none", "str", "set"],
)
def test_a_supplied_result_becomes_what_a_tool_node_makes_of_it(value) -> None:
    """Oracle: a plain ToolNode running a tool that returns ``value``. A person's
    ``{"result": value}`` gives the model the same content (a dict as JSON, not repr)."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    from langgraph_jsonl_checkpoint.replay.plan import answer_message

    @tool
    def send_email(to: str) -> object:
        """Send an email."""
        return value

    ai = AIMessage("", tool_calls=[{"name": "send_email", "args": {"to": "x"}, "id": "c1"}])
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([send_email]))
    builder.add_edge(START, "tools")
    want = builder.compile().invoke({"messages": [ai]})["messages"][-1]
    got, resolution = answer_message("c1", "send_email", {"result": value})
    assert (got.content, got.tool_call_id, resolution) == (want.content, "c1", "result")
