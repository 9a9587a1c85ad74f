"""A long tool-calling conversation in one thread, for the copy's memory and Ctrl-C tests.

Each turn is a question, a tool call, the tool's answer and a reply (four checkpoints);
``burst`` adds that many more tool results per turn, so a thread gets the message lists
of a much longer one without running as many steps. Checkpoint ``k`` holds about
``k * (1 + burst / 4)`` messages: reading every checkpoint's values at once costs memory
quadratic in the thread's length, which is what a copy must not do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver


def build_long_graph(burst: int = 0) -> StateGraph:
    """An agent whose every turn calls a tool once (with ``burst`` extra results)."""

    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        n = len(state["messages"])
        if isinstance(last, HumanMessage):
            call = {"name": "lookup", "args": {"q": str(last.content)}, "id": f"call-{n}"}
            return {"messages": [AIMessage("", tool_calls=[call], id=f"ai-{n}")]}
        return {"messages": [AIMessage(f"here is what I found about turn {n}: " + "x" * 200, id=f"ai-{n}")]}

    def tools(state: MessagesState) -> dict[str, Any]:
        n = len(state["messages"])
        call_id = state["messages"][-1].tool_calls[0]["id"]  # type: ignore[attr-defined]
        found = [ToolMessage(f"result {n} " + "y" * 300, tool_call_id=call_id, id=f"tool-{n}")]
        found += [ToolMessage(f"more {n}.{i} " + "z" * 100, tool_call_id=call_id, id=f"tool-{n}-{i}")
                  for i in range(burst)]
        return {"messages": found}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g


def build_long_store(path: Path, turns: int, *, thread_id: str = "long", burst: int = 0) -> int:
    """A store with one thread of ``turns`` turns; returns its number of checkpoints."""
    with JsonlSaver(path) as saver:
        graph = build_long_graph(burst).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": thread_id}}
        for turn in range(turns):
            graph.invoke({"messages": [HumanMessage(f"question {turn}", id=f"h-{turn}")]}, config)  # type: ignore[arg-type]
        return sum(1 for _ in saver.store.thread_log(thread_id).refresh().checkpoints.get("", {}))


def build_long_sqlite(path: Path, turns: int, *, thread_id: str = "long", burst: int = 0) -> int:
    """An SQLite file ``SqliteSaver`` wrote with one such thread; returns its checkpoints."""
    import sqlite3
    from contextlib import closing

    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        graph = build_long_graph(burst).compile(checkpointer=SqliteSaver(conn))
        config = {"configurable": {"thread_id": thread_id}}
        for turn in range(turns):
            graph.invoke({"messages": [HumanMessage(f"question {turn}", id=f"h-{turn}")]}, config)  # type: ignore[arg-type]
        return int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0])
