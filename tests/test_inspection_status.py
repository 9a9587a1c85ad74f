"""Thread status, next tasks, writers and waiting questions read without the graph
(``inspection/``), compared with LangGraph's own ``get_state`` / ``get_state_history``
on real graphs: agents, interrupts (answered, unanswered, parallel, nested in
subgraphs), ``Send`` fan-out with a join barrier, a failing node, ``update_state``,
DeltaChannel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.inspection.checkpoints import reading
from langgraph_jsonl_checkpoint.inspection.history import checkpoint_history
from langgraph_jsonl_checkpoint.inspection.status import (
    PendingWrite,
    barrier_complete,
    next_tasks,
    thread_status,
    waiting_interrupts,
)
from langgraph_jsonl_checkpoint.inspection.threads import summarize_thread
from tests.harness import flow_graphs, state_graphs
from tests.harness.bounded import within


def cfg(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def _agent(g) -> None:
    g.invoke({"messages": [HumanMessage("both 2 3", id="h1")]}, cfg("t"), durability="sync")


def _review_waiting(g) -> None:
    g.invoke({"topic": "x"}, cfg("t"))


def _review_answered_no(g) -> None:
    g.invoke({"topic": "x"}, cfg("t"))
    g.invoke(Command(resume="too short"), cfg("t"))


def _review_done(g) -> None:
    g.invoke({"topic": "x"}, cfg("t"))
    g.invoke(Command(resume="yes"), cfg("t"))


def _validating_graph():
    """One node that asks for a number and, given anything else, asks again in the same
    task (LangGraph's validate-the-answer loop; the replay adapter re-asks so too)."""
    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    class Age(TypedDict, total=False):
        age: int

    def ask(state: Age) -> dict:
        answer = interrupt("your age?")
        while not str(answer).isdigit():
            answer = interrupt(f"{answer!r} is not a number: your age?")
        return {"age": int(answer)}

    g = StateGraph(Age)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    return g


def _asked_again_in_the_same_task(g) -> None:
    g.invoke({}, cfg("t"))
    g.invoke(Command(resume="forty"), cfg("t"))


def _asked_again_twice(g) -> None:
    _asked_again_in_the_same_task(g)
    g.invoke(Command(resume="forty-one"), cfg("t"))


def _parallel_one_answered(g) -> None:
    g.invoke({}, cfg("t"))
    ask_b = next(i for i in g.get_state(cfg("t")).interrupts if isinstance(i.value, dict))
    g.invoke(Command(resume={ask_b.id: "red"}), cfg("t"))


def _fan(g) -> None:
    g.invoke({"items": ["a", "b", "c"]}, cfg("t"))


def _nested(g) -> None:
    g.invoke({"trail": []}, cfg("t"))


def _flaky(g) -> None:
    with pytest.raises(ValueError):
        g.invoke({}, cfg("t"))


def _counter_update(g) -> None:
    g.invoke({"n": 1}, cfg("t"))
    g.update_state(cfg("t"), {"n": 10})
    g.invoke(None, cfg("t"))


def _delta(g) -> None:
    for i in range(3):
        g.invoke({"items": [f"x{i}"]}, cfg("t"))


CASES: dict[str, tuple[Callable, Callable]] = {
    "agent": (flow_graphs.build_agent_graph, _agent),
    "review waiting": (flow_graphs.build_review_graph, _review_waiting),
    "review answered, asks again": (flow_graphs.build_review_graph, _review_answered_no),
    "review done": (flow_graphs.build_review_graph, _review_done),
    "parallel interrupts, one answered": (flow_graphs.build_parallel_interrupt_graph, _parallel_one_answered),
    "answer refused, asked again in the same task": (_validating_graph, _asked_again_in_the_same_task),
    "answer refused twice": (_validating_graph, _asked_again_twice),
    "Send fan-out and join": (flow_graphs.build_fanout_graph, _fan),
    "interrupt in a nested subgraph": (lambda: flow_graphs.build_nested_subgraph_graph(with_interrupt=True),
                                       _nested),
    "failing node": (flow_graphs.build_flaky_graph, _flaky),
    "update_state": (state_graphs.build_counter_graph, _counter_update),
    "DeltaChannel": (state_graphs.build_delta_graph, _delta),
}


@pytest.mark.parametrize("case", list(CASES))
def test_next_writers_and_status_match_langgraph(tmp_path: Path, case: str) -> None:
    build, drive = CASES[case]
    with JsonlSaver(tmp_path / "s") as saver:
        g = build().compile(checkpointer=saver)
        drive(g)
        history = list(g.get_state_history(cfg("t")))
        live = g.get_state(cfg("t"))
    with JsonlSaver(tmp_path / "s", read_only=True) as reader, within(20):
        ours = checkpoint_history(reader, "t")
        summary = summarize_thread(reader, "t")

        def facts_of_all(facts):
            return {cid: facts.facts("", cid) for cid in facts.index.ordered_ids[""]}

        facts = reading(reader, "t", facts_of_all)
    assert [h.checkpoint_id for h in ours] == [s.config["configurable"]["checkpoint_id"] for s in history]
    for entry, snap in zip(ours, history):
        # get_state_history's next is every task of the step (finished ones included)
        assert sorted(entry.next) == sorted(snap.next), (entry.checkpoint_id, entry.next, snap.next)
        assert entry.step == snap.metadata["step"] and entry.source == snap.metadata["source"]
        assert entry.created_at == snap.created_at
    for i, snap in enumerate(history[:-1]):
        parent = history[i + 1]
        if snap.metadata["source"] == "loop":
            assert sorted(ours[i].writers) == sorted(t.name for t in parent.tasks), case
    # the thread's status against the live snapshot LangGraph gives get_state
    waiting = [q for q in facts[summary.latest].waiting]
    assert sorted(q.interrupt_id for q in waiting) == sorted(i.id for i in live.interrupts)
    assert [q.value for q in sorted(waiting, key=lambda q: q.interrupt_id)] == [
        i.value for i in sorted(live.interrupts, key=lambda i: i.id)
    ]
    expected = "waiting" if live.interrupts else "interrupted" if live.next else "done"
    assert summary.status == expected, (case, summary)
    assert summary.checkpoints >= len(history)
    assert summary.updated_at == history[0].created_at and summary.created_at == history[-1].created_at


def test_writers_of_update_state_and_the_input(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s") as saver:
        g = state_graphs.build_counter_graph().compile(checkpointer=saver)
        g.invoke({"n": 1}, cfg("t"))
        node = next(n for n in g.nodes if not n.startswith("__"))
        g.update_state(cfg("t"), {"n": 5}, as_node=node)
        snap = g.get_state(cfg("t"))
    with JsonlSaver(tmp_path / "s", read_only=True) as reader:
        entries = checkpoint_history(reader, "t")
    # LangGraph stores no as_node for update_state: the source is all there is to say
    assert entries[0].source == "update" and entries[0].writers == ("update",)
    assert entries[0].next == snap.next
    assert entries[0].checkpoint_id == snap.config["configurable"]["checkpoint_id"]
    assert entries[-1].source == "input" and entries[-1].writers == ("input",)


# -- the pure rules, each with a case that would fail if it were wrong ----------------------


def test_a_node_is_due_only_for_a_newer_version_it_has_not_seen() -> None:
    versions = {"branch:to:b": "000000000003.aa", "messages": "000000000003.bb"}
    present = {"branch:to:b": True, "messages": True}
    seen_old = {"b": {"branch:to:b": "000000000002.cc"}}
    seen_now = {"b": {"branch:to:b": "000000000003.aa"}}
    assert next_tasks(versions, seen_old, present.__getitem__, lambda ch: None) == ["b"]
    assert next_tasks(versions, seen_now, present.__getitem__, lambda ch: None) == []
    # a consumed (empty) trigger never schedules
    assert next_tasks(versions, seen_old, {"branch:to:b": False, "messages": True}.__getitem__,
                      lambda ch: None) == []


def test_a_join_barrier_schedules_only_when_complete() -> None:
    assert barrier_complete("join:left+right:join", {"left", "right"})
    assert not barrier_complete("join:left+right:join", {"left"})
    versions = {"join:left+right:join": "000000000002.aa"}
    for seen_value, expected in (({"left"}, []), ({"left", "right"}, ["join"])):
        assert next_tasks(versions, {}, lambda ch: True, lambda ch, v=seen_value: v) == expected


def test_an_answered_question_no_longer_waits() -> None:
    task = "11111111-1111-1111-1111-111111111111"
    null = "00000000-0000-0000-0000-000000000000"
    asked = [PendingWrite(task, "__interrupt__")]
    assert waiting_interrupts(asked) == asked
    # the task finished after the answer: its output write settles the question
    assert waiting_interrupts(asked + [PendingWrite(task, "messages")]) == []
    # a Command(resume=...) value is stored, the task has not run yet
    assert waiting_interrupts(asked + [PendingWrite(null, "__resume__")]) == []
    assert thread_status(["review"], asked) == "waiting"
    assert thread_status(["review"], []) == "interrupted"
    assert thread_status([], []) == "done"


def test_reserved_channel_names_are_langgraphs() -> None:
    """status.py spells LangGraph's reserved channels itself (so a listing need not import
    LangGraph); they must stay LangGraph's."""
    from langgraph.checkpoint.serde import types

    from langgraph_jsonl_checkpoint.inspection import status

    assert (status.ERROR, status.INTERRUPT, status.RESUME, status.TASKS) == (
        types.ERROR, types.INTERRUPT, types.RESUME, types.TASKS)
