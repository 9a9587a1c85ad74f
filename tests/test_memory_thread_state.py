"""The session memory follows the thread as LangGraph serves it (get_state on the same
thread is the reference): a question edited or removed in place is the goal as it now
stands, in this process, after a rebuild, and in a fresh process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.memory import MemoryBuilder, SessionMemory
from langgraph_jsonl_checkpoint.memory.keeper import messages_resolver


def _answering_graph(saver: JsonlSaver) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer to: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


def _rebuilt(saver: JsonlSaver, thread_id: str) -> SessionMemory:
    log = saver.store.thread_log(thread_id)
    builder = MemoryBuilder(thread_id, saver.codec.decode, resolve=messages_resolver(log, saver.codec))
    for rec in log.iter_records():
        builder.feed(rec)
    return builder.memory()


def _humans(graph: Any, config: Any) -> list[str]:
    return [m.content for m in graph.get_state(config).values["messages"] if m.type == "human"]


@pytest.mark.parametrize("how", ["edit", "remove"])
def test_goal_is_the_latest_question_as_it_now_stands(tmp_path: Path, how: str) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    with JsonlSaver(tmp_path) as saver:
        graph = _answering_graph(saver)
        graph.invoke({"messages": [HumanMessage("Pay Bob 100 EUR.")]}, config)
        assert saver.session_memory("t").goal == "Pay Bob 100 EUR."  # followed from here on
        graph.invoke({"messages": [HumanMessage("And Carol 50 EUR.")]}, config)
        assert saver.session_memory("t").goal == "And Carol 50 EUR."
        last = [m for m in graph.get_state(config).values["messages"] if m.type == "human"][-1]
        if how == "edit":  # LangGraph's way to edit a message: the same id, new content
            graph.update_state(config, {"messages": [HumanMessage("Do not pay anyone.", id=last.id)]},
                               as_node="__start__")
            graph.invoke(None, config)
        else:
            graph.update_state(config, {"messages": [RemoveMessage(id=last.id)]}, as_node="agent")
        humans = _humans(graph, config)
        expected = humans[-1]
        assert expected == ("Do not pay anyone." if how == "edit" else "Pay Bob 100 EUR.")
        kept = saver.session_memory("t")
        assert kept.goal == expected
        assert _rebuilt(saver, "t") == kept
        assert kept.to_text().splitlines()[1] == f"Current goal: {expected}"
    with JsonlSaver(tmp_path) as fresh:
        assert fresh.session_memory("t").goal == expected


def _tool_graph(saver: JsonlSaver) -> Any:
    """Each question: one tool call (its id unique in the thread), then an answer."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if last.type == "human":
            n = len(state["messages"])
            return {"messages": [AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": last.content},
                                                            "id": f"c{n}-{last.content[-2:]}"}])]}
        return {"messages": [AIMessage(f"done: {last.content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def _expected(graph: Any, config: Any) -> tuple[int, int, str]:
    """Turns, tool calls and goal of the thread as get_state serves it."""
    messages = graph.get_state(config).values["messages"]
    humans = [m.content for m in messages if m.type == "human"]
    calls = sum(len(getattr(m, "tool_calls", None) or []) for m in messages if m.type == "ai")
    return len(humans), calls, humans[-1]


@pytest.mark.parametrize("fork", ["new question", "run again"])
@pytest.mark.parametrize("tools", [False, True])
def test_counts_and_goal_follow_the_current_branch_whatever_the_layout(
    tmp_path: Path, fork: str, tools: bool
) -> None:
    config: Any = {"configurable": {"thread_id": "c0"}}
    with JsonlSaver(tmp_path, snapshot_every=8) as saver:
        graph = _tool_graph(saver) if tools else _answering_graph(saver)
        saver.session_memory("c0")  # kept from the first append on
        for i in range(14):
            graph.invoke({"messages": [HumanMessage(f"turn {i:02d}")]}, config)
        history = list(graph.get_state_history(config))
        if fork == "new question":  # time travel: go on from an earlier checkpoint
            graph.invoke({"messages": [HumanMessage("from the past")]}, history[len(history) // 2].config)
        else:  # run an earlier step again: no new question on the current branch
            earlier = next(h for h in history[len(history) // 2:] if h.next == ("agent",)
                           and h.values["messages"][-1].type == "human")
            graph.invoke(None, earlier.config)
        turns, calls, goal = _expected(graph, config)
        kept = saver.session_memory("c0")
        assert (kept.turns, kept.tool_calls, kept.goal) == (turns, calls, goal)
        assert _rebuilt(saver, "c0").to_text() == kept.to_text()
        text = kept.to_text()
        states = [s.values for s in graph.get_state_history(config)]
        saver.compact("c0")
        assert [s.values for s in graph.get_state_history(config)] == states
        assert saver.session_memory("c0").to_text() == text
    with JsonlSaver(tmp_path) as fresh:
        assert fresh.session_memory("c0").to_text() == text
        fresh.prune(["c0"])
        pruned = fresh.session_memory("c0")
        assert (pruned.turns, pruned.tool_calls, pruned.goal) == (turns, calls, goal)


def test_an_interrupt_on_a_branch_left_by_time_travel_is_no_longer_open(tmp_path: Path) -> None:
    """A run from an earlier checkpoint leaves the branch where a tool waited at its
    own ``interrupt()``: get_state shows no question waiting, but the memory still
    listed "waiting for an answer (node tools): ..." as an open item to resolve first,
    in this process, a fresh one and after ``compact`` (its tool call was dropped, the
    interrupt was not)."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import interrupt

    @tool
    def approve(what: str) -> str:
        """Ask a person."""
        return f"approved {what}: {interrupt({'approve': what})}"

    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if last.content.startswith("chat"):
            return {"messages": [AIMessage("hello")]}
        call = {"name": "approve", "args": {"what": last.content}, "id": f"c{len(state['messages'])}"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([approve]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    config: Any = {"configurable": {"thread_id": "f"}}
    with JsonlSaver(tmp_path) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("chat 1")]}, config)
        fork_at = graph.get_state(config).config
        graph.invoke({"messages": [HumanMessage("pay 5")]}, config)
        assert [i.value for i in graph.get_state(config).interrupts] == [{"approve": "pay 5"}]
        assert any("waiting for an answer" in i.text for i in saver.session_memory("f").open_items)
        graph.invoke({"messages": [HumanMessage("chat 2")]}, fork_at)
        assert graph.get_state(config).interrupts == ()
        assert saver.session_memory("f").open_items == ()
        assert _rebuilt(saver, "f").open_items == ()
        text = saver.session_memory("f").to_text()
    with JsonlSaver(tmp_path) as fresh:
        assert fresh.session_memory("f").to_text() == text


def test_a_copy_onto_a_thread_with_newer_checkpoints_leaves_its_memory_at_its_latest(tmp_path: Path) -> None:
    """``copy_thread(a, b)`` onto a thread whose own checkpoints are newer appends a's
    older ones: get_state of b still serves b's latest (the newest id), but the memory
    took the last one appended for the thread's head (a's goal and counts)."""
    with JsonlSaver(tmp_path) as saver:
        graph = _answering_graph(saver)
        a: Any = {"configurable": {"thread_id": "a"}}
        for i in range(3):
            graph.invoke({"messages": [HumanMessage(f"a question {i}")]}, a)
        b: Any = {"configurable": {"thread_id": "b"}}
        for i in range(2):
            graph.invoke({"messages": [HumanMessage(f"b question {i}")]}, b)
        saver.session_memory("b")
        saver.copy_thread("a", "b")
        assert _humans(graph, b) == ["b question 0", "b question 1"]
        kept = saver.session_memory("b")
        assert (kept.turns, kept.goal) == (2, "b question 1")
        assert _rebuilt(saver, "b").to_text() == kept.to_text()
