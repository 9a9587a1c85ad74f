"""New input while tool calls are pending: ``ReplayAdapter`` answers every dangling call
from the journal before the model sees the history again.

The main scenario really kills a child (SIGKILL) in the middle of a parallel batch:
``e1`` (send_email) finished, ``ch1`` (charge) took effect and never finished (uncertain),
``e2`` (send_email) never started. A new process then sends a new human message instead
of resuming, in the three plug-ins, sync and async; and again after the thread stopped on
the ``uncertain_tool_calls`` interrupt, which the new message answers instead of a person.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.replay.lifecycle import (
    FINISHED,
    REQUESTED,
    STARTED,
    ToolCallKey,
    ToolCallRecord,
)
from langgraph_jsonl_checkpoint.replay.pending import Dangling, answered_history, dangling_calls, message_for
from langgraph_jsonl_checkpoint.replay.plan import HOLD, NOT_RUN_TEXT, RUN, SUPERSEDED_TEXT, plan_call
from tests.harness.bounded import within
from tests.harness.busy import transcript_problems
from tests.harness.replay_crashes import run_crash, run_resume, spec
from tests.harness.replay_tools import (
    IDEMPOTENT_BY_NAME,
    build_graph,
    call,
    config,
    effects,
    make_tools,
)

BATCH = [[[
    call("send_email", "e1", to="ann"), call("charge", "ch1", amount=5), call("send_email", "e2", to="bob")
]]]
NEW_INPUT = "never mind that, what is my balance?"
#: e1 finished, ch1 took effect and hangs (uncertain once killed), e2 dies before it starts.
KILL_MID_BATCH = {"call": "e2", "point": "before_started", "how": "kill", "settle": ["e1"],
                  "effects_of": ["ch1"], "hold": ["ch1"]}


def _messages(summaries: list[dict]) -> list:
    """Message objects back from a report's summaries (for the transcript check)."""
    out: list = []
    for i, m in enumerate(summaries):
        if m["type"] == "human":
            out.append(HumanMessage(m["content"], id=f"h{i}"))
        elif m["type"] == "ai":
            calls = [{"name": "t", "args": {}, "id": c} for c in m["tool_calls"]]
            out.append(AIMessage(m["content"], tool_calls=calls, id=f"a{i}"))
        else:
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"], status=m["status"]))
    return out


def _check_new_turn(report: dict, *, e2_ran: bool = False) -> None:
    """What the model saw, and what the thread holds, after the new human message
    (``e2_ran``: it ran when the thread was resumed before the new message came)."""
    seen = report["model_input"]
    assert seen is not None, "the model was never called"
    assert transcript_problems(_messages(seen), turns_answered=False) == []
    assert transcript_problems(_messages(report["messages"]), turns_answered=False) == []
    # the answers sit right after the AI message, in the order of its tool calls
    kinds = [(m["type"], m["tool_call_id"]) for m in seen]
    assert kinds == [
        ("human", None), ("ai", None), ("tool", "e1"), ("tool", "ch1"), ("tool", "e2"), ("human", None)
    ], kinds
    tools = {m["tool_call_id"]: m for m in seen if m["type"] == "tool"}
    # e1: the recorded result
    assert (tools["e1"]["content"], tools["e1"]["status"]) == ("sent to ann", "success")
    assert (tools["ch1"]["content"], tools["ch1"]["status"]) == (SUPERSEDED_TEXT, "error")
    e2 = ("sent to bob", "success") if e2_ran else (NOT_RUN_TEXT, "error")
    assert (tools["e2"]["content"], tools["e2"]["status"]) == e2
    assert seen[-1]["content"] == NEW_INPUT
    # side effects are exact: nothing ran again, e2 ran at most once
    assert report["effects"] == {"e1": 1, "ch1": 1, **({"e2": 1} if e2_ran else {})}
    assert report["next"] == [] and report["pending_interrupts"] == []
    assert report["messages"][-1]["type"] == "ai" and report["messages"][-1]["content"].startswith("done")
    calls = report["tool_calls"]
    assert (calls["e1"]["state"], calls["ch1"]["state"], calls["e2"]["state"]) == (
        "finished", "superseded", "finished" if e2_ran else "superseded"
    ), calls
    assert calls["ch1"]["superseded_from"] == "started"
    assert calls["e2"]["superseded_from"] == (None if e2_ran else "requested")
    assert calls["ch1"]["events"][-1] == "superseded"


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_new_message_after_a_kill_mid_batch(tmp_path: Path, plug: str, mode: str) -> None:
    s = spec(tmp_path / "store", plan=BATCH, plug=plug, mode=mode, answer_pending=True,
             crash=KILL_MID_BATCH, new_input=NEW_INPUT)
    c = run_crash(s)
    assert c.died, f"child did not die at its crash point: {c.exitcode}\n{c.error}"
    assert effects(s["effects"]) == {"e1": 1, "ch1": 1}
    report = run_resume(s)
    assert report["before"] == {
        "e1": ["finished", "finished"], "ch1": ["started", "uncertain"], "e2": ["requested", "requested"]
    }
    _check_new_turn(report)


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
def test_new_message_instead_of_an_answer_to_the_interrupt(tmp_path: Path, plug: str) -> None:
    s = spec(tmp_path / "store", plan=BATCH, plug=plug, answer_pending=True,
             crash=KILL_MID_BATCH, new_input=NEW_INPUT, resume_first=True)
    assert run_crash(s).died
    report = run_resume(s)
    asked = [c["id"] for i in report["interrupts"] for c in i["calls"]]
    assert asked == ["ch1"] and report["interrupts"][0]["type"] == "uncertain_tool_calls"
    # create_agent runs each call as its own task: e2 ran while ch1's task asked
    _check_new_turn(report, e2_ran=plug == "agent")


def test_a_failed_call_is_answered_with_its_recorded_error(tmp_path: Path) -> None:
    plan = [[[call("explode", "x1", reason="disk full"), call("charge", "ch1", amount=5)]]]
    s = spec(tmp_path / "store", plan=plan, answer_pending=True, new_input=NEW_INPUT,
             crash={"call": "ch1", "point": "after_effect", "how": "kill", "settle": ["x1"]})
    assert run_crash(s).died
    report = run_resume(s)
    tools = {m["tool_call_id"]: m for m in report["model_input"] if m["type"] == "tool"}
    assert tools["x1"]["content"] == "Error: ToolBoom: boom: disk full\n Please fix your mistakes."
    assert tools["x1"]["status"] == "error" and tools["ch1"]["content"] == SUPERSEDED_TEXT
    assert report["effects"] == {"x1": 1, "ch1": 1}
    assert report["tool_calls"]["x1"]["state"] == "failed"
    assert transcript_problems(_messages(report["messages"]), turns_answered=False) == []



def test_a_held_failed_call_overtaken_by_new_input_is_not_a_state_edit(tmp_path: Path, capsys: Any) -> None:
    """x1 failed and is asked about; new input comes instead of an answer, and the model
    is told x1's recorded error. That error ToolMessage is the adapter's, not a person's
    answer: ``tools`` does not call it ``answered (state edit)``, and ``tool_calls()``
    keeps it ``failed`` (as a held failed call answered with ``update_state`` is not).
    Nor is it ``asked`` any more: no question waits (the thread is done), the new input
    decided it, as it decided ch1 (``superseded``), and ``tool_calls()`` holds the error
    message the model got (``overtaken_with``)."""
    plan = [[[call("explode", "x1", reason="disk full"), call("charge", "ch1", amount=5)]]]
    s = spec(tmp_path / "store", plan=plan, answer_pending=True, new_input=NEW_INPUT, resume_first=True,
             crash={"call": "ch1", "point": "after_effect", "how": "kill", "settle": ["x1"]})
    assert run_crash(s).died
    report = run_resume(s)
    assert sorted(c["id"] for i in report["interrupts"] for c in i["calls"]) == ["ch1", "x1"]
    tools = {m["tool_call_id"]: m for m in report["model_input"] if m["type"] == "tool"}
    assert tools["x1"]["content"] == "Error: ToolBoom: boom: disk full\n Please fix your mistakes."
    with JsonlSaver(s["store"], read_only=True) as saver, within(60):
        rec = {r.key.call_id: r for r in saver.tool_calls("t1")}["x1"]
        assert (rec.state, rec.effective_state, rec.answered_with) == ("failed", "failed", None)
        assert rec.overtaken_with.content == tools["x1"]["content"]
        assert main(["threads", s["store"], "--json"]) == 0
        assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["done"]  # nothing waits
    assert main(["tools", s["store"], "t1", "--json"]) == 0
    rows = {r["call_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["x1"]["state"] == "failed" and rows["x1"]["decided_by"] != "state edit"
    assert (rows["x1"]["decision"], rows["x1"]["decided_by"]) == ("superseded", "new input")
    assert rows["x1"]["outcome"] == "ToolBoom: boom: disk full"
    assert main(["tools", s["store"], "t1"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("x1 "))
    assert "superseded (new input)" in line and "asked" not in line

def test_a_question_the_thread_went_on_from_without_the_pending_node_is_not_asked(
    tmp_path: Path, capsys: Any
) -> None:
    """Without the adapter's pending-calls node, new input instead of an answer leaves
    the journal as it was (ch1 started, asked about, no answer), but no question waits:
    the thread is done and went on from the checkpoint that asked. ``tools`` says ch1 is
    still uncertain and was never answered, not ``asked`` (waiting for an answer)."""
    s = spec(tmp_path / "store", plan=BATCH, answer_pending=False, crash=KILL_MID_BATCH,
             new_input=NEW_INPUT, resume_first=True)
    assert run_crash(s).died
    report = run_resume(s)
    assert [c["id"] for i in report["interrupts"] for c in i["calls"]] == ["ch1"]
    assert report["next"] == [] and report["pending_interrupts"] == []  # LangGraph: nothing waits
    with within(60):
        assert main(["tools", s["store"], "t1", "--json"]) == 0
    rows = {r["call_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["ch1"]["state"], rows["ch1"]["decision"]) == ("uncertain", "unanswered (thread went on)")
    assert rows["e1"]["state"] == "finished" and rows["e1"]["decision"] is None


# ---------------------------------------------------------------------------
# in one process: calls the journal never saw, another journal, nothing pending
# ---------------------------------------------------------------------------

PENDING_AI = AIMessage("", id="ai-x", tool_calls=[
    {"name": "send_email", "args": {"to": "cy"}, "id": "n1", "type": "tool_call"},
    {"name": "charge", "args": {"amount": 7}, "id": "n2", "type": "tool_call"},
])


def _graph_with_pending_calls(tmp_path: Path, saver, adapter):
    """A thread whose last AI message asks for tools that never ran (state edited, as an
    app restoring a conversation might), then a new human message."""
    graph = build_graph("tool_node", tools=make_tools(tmp_path / "effects.log"), plan=[[], []],
                        checkpointer=saver, adapter=adapter, answer_pending=True)
    cfg = config("t1")
    graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, cfg)
    graph.update_state(cfg, {"messages": [PENDING_AI]}, as_node="agent")
    assert graph.get_state(cfg).next == ("tools",)
    return graph, cfg


@pytest.mark.parametrize("journal", ["saver", "store"])
def test_calls_the_journal_never_saw_are_answered_as_not_run(tmp_path: Path, journal: str) -> None:
    if journal == "saver":
        saver = JsonlSaver(tmp_path / "s")
        adapter = ReplayAdapter(saver, idempotent=IDEMPOTENT_BY_NAME)
    else:  # another checkpointer, the journal in a BaseStore
        saver, adapter = InMemorySaver(), ReplayAdapter(store=InMemoryStore())
    graph, cfg = _graph_with_pending_calls(tmp_path, saver, adapter)
    with within(30):
        graph.invoke({"messages": [HumanMessage("forget it", id="h1")]}, cfg)
    messages = graph.get_state(cfg).values["messages"]
    assert transcript_problems(messages, turns_answered=False) == []
    assert [(m.type, getattr(m, "tool_call_id", None)) for m in messages[:6]] == [
        ("human", None), ("ai", None), ("ai", None), ("tool", "n1"), ("tool", "n2"), ("human", None)
    ]
    assert all(m.content == NOT_RUN_TEXT for m in messages[3:5])
    assert effects(tmp_path / "effects.log") == {}
    records = {r.key.call_id: r for r in adapter.tool_calls("t1")}
    assert {k: (r.state, r.name, r.args) for k, r in records.items()} == {
        "n1": ("superseded", "send_email", {"to": "cy"}),
        "n2": ("superseded", "charge", {"amount": 7}),
    }
    assert records["n1"].key.ns.startswith("answer_pending:")


async def test_async_graph_answers_pending_calls(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    adapter = ReplayAdapter(saver)
    graph = build_graph("tool_node", tools=make_tools(tmp_path / "effects.log", asynchronous=True),
                        plan=[[], []], checkpointer=saver, adapter=adapter, answer_pending=True)
    cfg = config("t1")
    await graph.ainvoke({"messages": [HumanMessage("hi", id="h0")]}, cfg)
    await graph.aupdate_state(cfg, {"messages": [PENDING_AI]}, as_node="agent")
    await asyncio.wait_for(graph.ainvoke({"messages": [HumanMessage("forget it", id="h1")]}, cfg), 30)
    messages = (await graph.aget_state(cfg)).values["messages"]
    assert transcript_problems(messages, turns_answered=False) == []
    assert [r.state for r in await adapter.atool_calls("t1")] == ["superseded", "superseded"]
    saver.close()


def test_answering_twice_says_the_same_and_journals_once(tmp_path: Path) -> None:
    """A crash after the journal write and before the checkpoint re-runs the node."""
    saver = JsonlSaver(tmp_path / "s")
    adapter = ReplayAdapter(saver)
    state = {"messages": [HumanMessage("hi", id="h0"), PENDING_AI, HumanMessage("forget it", id="h1")]}
    cfg = {"configurable": {"thread_id": "t1", "checkpoint_ns": "answer_pending:1", "checkpoint_id": "cp-1"}}
    first = adapter.answer_pending_calls(state, cfg)
    events = [r.events for r in adapter.tool_calls("t1")]
    second = adapter.answer_pending_calls(state, cfg)
    assert [r.events for r in adapter.tool_calls("t1")] == events == [["requested", "superseded"]] * 2
    assert first["messages"][0].id == "__remove_all__"

    def strip(update: dict) -> list:
        return [(type(m).__name__, m.content, getattr(m, "tool_call_id", None))
                for m in update["messages"][1:]]

    assert strip(first) == strip(second)
    saver.close()


def test_nothing_pending_changes_nothing_and_reads_nothing(tmp_path: Path) -> None:
    class NoJournal:
        def encode(self, value):
            return {"v": value}

        def __getattr__(self, name):  # all, record, aall, arecord, load...
            raise AssertionError(f"the journal was used ({name}) with nothing pending")

    adapter = ReplayAdapter(store=InMemoryStore())
    adapter.journal = NoJournal()  # type: ignore[assignment]
    done = [HumanMessage("hi", id="h0"), PENDING_AI,
            ToolMessage("a", tool_call_id="n1", id="t1"), ToolMessage("b", tool_call_id="n2", id="t2"),
            AIMessage("ok", id="a2")]
    assert adapter.answer_pending_calls({"messages": done}, config("t1")) == {}



def test_the_pending_calls_node_is_named_for_a_graph_that_adds_it_without_a_name() -> None:
    """``builder.add_node(adapter.pending_calls_node())`` names the node after the
    runnable: ``answer_pending_calls`` (what a person sees in the graph and its stream)."""
    from langgraph.graph import START, StateGraph

    from tests.harness.replay_tools import State

    node = ReplayAdapter(store=InMemoryStore()).pending_calls_node()
    builder = StateGraph(State)
    builder.add_node(node)
    builder.add_edge(START, "answer_pending_calls")
    assert list(builder.compile().get_graph().nodes) == ["__start__", "answer_pending_calls", "__end__"]


# ---------------------------------------------------------------------------
# the pure parts
# ---------------------------------------------------------------------------


def test_answers_go_after_the_answers_already_there_in_call_order() -> None:
    ai = AIMessage("", id="a", tool_calls=[{"name": "t", "args": {}, "id": i} for i in ("p", "q", "r")])
    have_q = ToolMessage("q done", tool_call_id="q", id="tq")
    history = [HumanMessage("x", id="h"), ai, have_q, HumanMessage("y", id="h2")]
    assert [d.call["id"] for d in dangling_calls(history)] == ["p", "r"]
    answers = {i: ToolMessage(f"{i}!", tool_call_id=i) for i in ("p", "r")}
    out = answered_history(history, answers)
    assert [getattr(m, "tool_call_id", m.id) for m in out] == ["h", "a", "q", "p", "r", "h2"]
    # an AI message last in the history gets its answers too
    assert [getattr(m, "tool_call_id", m.id) for m in answered_history([ai], answers)] == ["a", "p", "r"]


def test_a_superseded_call_is_planned_as_it_was_when_time_travel_re_runs_it() -> None:
    rec = ToolCallRecord(ToolCallKey("tools:1", "cp", "c"))
    decode = lambda cell: cell  # noqa: E731
    rec.apply({"ev": STARTED, "at": "t"}, decode)
    rec.apply({"ev": "superseded", "at": "t2", "result": "msg"}, decode)
    assert (rec.state, rec.superseded_from, rec.open_state) == ("superseded", STARTED, STARTED)
    assert plan_call(rec, idempotent=False) == HOLD and plan_call(rec, idempotent=True) == RUN
    never = ToolCallRecord(ToolCallKey("tools:1", "cp", "d"))
    never.apply({"ev": REQUESTED, "at": "t"}, decode)
    never.apply({"ev": "superseded", "at": "t2", "result": "msg"}, decode)
    assert plan_call(never, idempotent=False) == RUN
    # a settled call is never superseded
    done = ToolCallRecord(ToolCallKey("tools:1", "cp", "e"))
    done.apply({"ev": "finished", "at": "t", "result": "r"}, decode)
    done.apply({"ev": "superseded", "at": "t2", "result": "msg"}, decode)
    assert (done.state, done.result) == ("finished", "r")


def test_a_recorded_tool_message_with_another_calls_id_answers_the_call_it_was_recorded_for() -> None:
    """A journal written before such answers were refused can hold, for call c1, a
    supplied ToolMessage whose tool_call_id is another: the dangling c1 is answered with
    its content under c1's id (not the wrong id, which would leave c1 dangling and be
    inserted again on every turn)."""
    recorded = ToolMessage("sent (checked by hand)", tool_call_id="oops", name="send_email")
    record = ToolCallRecord(ToolCallKey("tools:1", "cp", "c1"), name="send_email", state=FINISHED,
                            result=recorded, resolution="result")
    msg = message_for(Dangling(0, {"id": "c1", "name": "send_email", "args": {}}), record)
    assert (msg.tool_call_id, msg.content, msg.name) == ("c1", "sent (checked by hand)", "send_email")
    history = [AIMessage("", tool_calls=[{"id": "c1", "name": "send_email", "args": {}}], id="a1")]
    assert dangling_calls(answered_history(history, {"c1": msg})) == []
