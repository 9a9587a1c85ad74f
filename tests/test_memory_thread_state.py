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


def _answering_graph(saver: JsonlSaver) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer to: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


def _rebuilt(saver: JsonlSaver, thread_id: str) -> SessionMemory:
    builder = MemoryBuilder(thread_id, saver.codec.decode)
    for rec in saver.store.thread_log(thread_id).iter_records():
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
