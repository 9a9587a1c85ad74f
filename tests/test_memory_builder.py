"""The builder's rules on what the log says: non-append edits of the messages (a value
stored in full), interrupts answered or left behind by new input, the signs that a turn
was disturbed; each checked against a rebuild and, where it applies, the graph's state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.memory import MemoryBuilder, SessionMemory
from tests.harness.bounded import within


def _rebuild(saver: JsonlSaver, thread_id: str) -> SessionMemory:
    builder = MemoryBuilder(thread_id, saver.codec.decode)
    for rec in saver.store.thread_log(thread_id).iter_records():
        builder.feed(rec)
    return builder.memory()


def test_non_append_edits_count_each_human_message_once(tmp_path: Path) -> None:
    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        n = len(state["messages"])
        if last.content == "forget the first":
            first = state["messages"][0]
            return {"messages": [RemoveMessage(id=first.id), AIMessage("forgotten", id=f"ai-{n}")]}
        return {"messages": [AIMessage(f"ok {n}", id=f"ai-{n}")]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_edge(START, "agent")
    cfg = {"configurable": {"thread_id": "edit"}}
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        graph = b.compile(checkpointer=saver)
        for text in ("one", "two", "forget the first", "three", "four"):
            graph.invoke({"messages": [HumanMessage(text, id=f"h-{text}")]}, cfg)
        full_values = [r for r in saver.store.thread_log("edit").iter_records()
                       if r["t"] == "checkpoint" and "val" in r.get("values", {}).get("messages", {})]
        assert len(full_values) >= 2  # the first put and the edit store the list in full
        memory = saver.session_memory("edit", budget=None)
        assert (memory.goal, memory.turns) == ("four", 5)
        assert memory == _rebuild(saver, "edit")
        assert not memory.open_items and not memory.resumed


def test_interrupt_answered_or_left_behind_by_new_input(tmp_path: Path) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": f"approve {state['messages'][-1].content}?"})
        return {"messages": [AIMessage(f"answer: {answer}", id=f"ai-{len(state['messages'])}")]}

    b = StateGraph(MessagesState)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    cfg = {"configurable": {"thread_id": "ask"}}
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        graph = b.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("refund", id="h0")]}, cfg)
        waiting = saver.session_memory("ask")
        assert [i.text for i in waiting.open_items] == [
            'waiting for an answer (node ask): {"question": "approve refund?"}']
        graph.invoke(Command(resume="yes"), cfg)
        assert not saver.session_memory("ask").open_items
        graph.invoke({"messages": [HumanMessage("cancel", id="h1")]}, cfg)
        assert len(saver.session_memory("ask").open_items) == 1
        # new input instead of an answer: the old question is no longer waiting
        graph.invoke({"messages": [HumanMessage("never mind", id="h2")]}, cfg)
        texts = [i.text for i in saver.session_memory("ask").open_items]
        assert texts == ['waiting for an answer (node ask): {"question": "approve never mind?"}']
        assert graph.get_state(cfg).interrupts[0].value == {"question": "approve never mind?"}
        assert saver.session_memory("ask", budget=None) == _rebuild(saver, "ask")


def test_signs_of_a_disturbed_turn() -> None:
    b = MemoryBuilder("t", lambda cell: None)
    go = {"type": "human", "content": "go", "id": "h"}
    human = {"t": "checkpoint", "ns": "", "id": "c1", "parent": None, "cv": {}, "seq": 1,
             "values": {"messages": {"ver": 1, "val": {"msgs": [go]}}}}
    b.feed(human)
    assert not b.memory().resumed
    key = {"ns": "tools:x", "cp": "c1", "call": "k1"}
    b.feed({"t": "tool", "ev": "requested", **key, "name": "search", "args": {"json": {"q": "a"}}, "seq": 2})
    b.feed({"t": "tool", "ev": "started", **key, "at": "T1", "seq": 3})
    assert not b.memory().resumed
    assert b.memory().open_items[0].text.startswith("uncertain: search(q=a) started at T1")
    b.feed({"t": "tool", "ev": "started", **key, "at": "T2", "seq": 4})  # its first run died
    assert b.memory().resumed
    nxt = {"type": "human", "content": "next", "id": "h2"}
    b.feed({**human, "id": "c2", "seq": 5,
            "values": {"messages": {"ver": 2, "base": 1, "keep": 1, "tail": {"msgs": [nxt]}}}})
    assert not b.memory().resumed  # a new turn starts undisturbed
    b.feed({"t": "writes", "ns": "", "cp": "c2", "task": "t1", "path": "~__pregel_pull, agent",
            "w": [[-1, "__error__", {"json": "boom"}]], "seq": 6})
    memory = b.memory()
    assert memory.resumed and memory.failed[-1].text == "step agent stopped the run with an error: boom"
    state = b.state()
    assert MemoryBuilder("t", lambda cell: None, state).memory() == memory
