"""The builder's rules on what the log says: non-append edits of the messages (a value
stored in full), interrupts answered or left behind by new input, the signs that a turn
was disturbed; each checked against a rebuild and, where it applies, the graph's state."""

from __future__ import annotations

import threading
import time
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
        # the thread holds four questions ("one" was removed): turns count what it holds
        humans = [m for m in graph.get_state(cfg).values["messages"] if m.type == "human"]
        assert (memory.goal, memory.turns) == ("four", len(humans)) == ("four", 4)
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


def _email_graph(saver: JsonlSaver, adapter: Any) -> Any:
    from langchain_core.tools import tool
    from langgraph.prebuilt import tools_condition

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if last.type == "human" and last.content == "email ada":
            return {"messages": [AIMessage("", tool_calls=[
                {"name": "send_email", "args": {"to": "ada"}, "id": "call-1"}])]}
        return {"messages": [AIMessage("ok")]}

    b = StateGraph(MessagesState)
    b.add_node("answer_pending", adapter.pending_calls_node())
    b.add_node("agent", agent)
    b.add_node("tools", adapter.tool_node([send_email]))
    b.add_edge(START, "answer_pending")
    b.add_edge("answer_pending", "agent")
    b.add_conditional_edges("agent", tools_condition)
    b.add_edge("tools", "agent")
    return b


def test_a_call_answered_by_new_input_is_no_longer_open(tmp_path: Path) -> None:
    """New input while a tool call waits: the adapter answers the call with a ToolMessage
    put before the new human message, and journals it superseded. The memory kept it
    under "no result yet: resolve these first" on every later turn (it read only the
    messages after the last one it had seen)."""
    from langgraph_jsonl_checkpoint import ReplayAdapter

    cfg = {"configurable": {"thread_id": "t"}}
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        builder = _email_graph(saver, ReplayAdapter(saver))
        graph = builder.compile(checkpointer=saver, interrupt_before=["tools"])
        graph.invoke({"messages": [HumanMessage("email ada")]}, cfg, durability="sync")
        assert "no result yet: send_email(to=ada)" in [i.text for i in saver.session_memory("t").open_items]
        graph.invoke({"messages": [HumanMessage("never mind, just say hi")]}, cfg, durability="sync")
        messages = graph.get_state(cfg).values["messages"]
        assert [m.type for m in messages] == ["human", "ai", "tool", "human", "ai"]
        assert [(r.name, r.effective_state) for r in saver.tool_calls("t")] == [("send_email", "superseded")]
        memory = saver.session_memory("t", budget=None)
        assert not memory.open_items, memory.open_items
        assert (memory.goal, memory.turns) == ("never mind, just say hi", 2)
        assert memory == _rebuild(saver, "t")


def test_a_call_finished_in_the_journal_is_work_completed_before_its_checkpoint(tmp_path: Path) -> None:
    """A crash after a call's ``finished`` event and before the checkpoint holding its
    ToolMessage: the journal has the result, the replay adapter will not run the call
    again. The memory said "no result yet" and left it out of the work completed: what
    a resuming model would be told contradicted the journal."""
    import signal

    import pytest

    from langgraph_jsonl_checkpoint import ReplayAdapter

    cfg = {"configurable": {"thread_id": "t"}}
    recorded = JsonlSaver.record_tool_events

    class Killed(BaseException):
        pass

    def killed_after_finished(self: JsonlSaver, thread_id: str, events: Any) -> Any:
        out = recorded(self, thread_id, events)
        if any(e["ev"] == "finished" for e in events):
            raise Killed(signal.SIGKILL)  # nothing after this line reaches the log
        return out

    saver = JsonlSaver(tmp_path / "s")
    graph = _email_graph(saver, ReplayAdapter(saver)).compile(checkpointer=saver)
    JsonlSaver.record_tool_events = killed_after_finished  # type: ignore[method-assign]
    try:
        with pytest.raises(Killed), within(60):
            graph.invoke({"messages": [HumanMessage("email ada")]}, cfg, durability="sync")
    finally:
        JsonlSaver.record_tool_events = recorded  # type: ignore[method-assign]
    saver.close()
    with JsonlSaver(tmp_path / "s") as fresh:
        assert [(r.name, r.effective_state) for r in fresh.tool_calls("t")] == [("send_email", "finished")]
        memory = fresh.session_memory("t", budget=None)
        assert [i.text for i in memory.completed] == ["send_email(to=ada) -> sent to ada"], memory
        # open: the tools step (the run stopped in it), not the call (its result is known)
        assert [i.text.split(":")[0] for i in memory.open_items] == ["step not finished"], memory
        assert memory == _rebuild(fresh, "t")
        # the resumed run returns the recorded result; the ToolMessage is not told twice
        resumed = _email_graph(fresh, ReplayAdapter(fresh)).compile(checkpointer=fresh)
        resumed.invoke(None, cfg, durability="sync")
        memory = fresh.session_memory("t", budget=None)
        assert [i.text for i in memory.completed] == ["send_email(to=ada) -> sent to ada"], memory
        assert not memory.open_items and memory == _rebuild(fresh, "t")


def test_a_tool_task_sent_by_create_agent_is_named_by_its_node_and_call(tmp_path: Path) -> None:
    # create_agent runs each tool call as a task sent to "tools" (a Send): LangGraph names
    # such a task by its place in the queue ("~__pregel_push, 0000000000, ..."), which
    # means nothing to a model or a person reading the memory. An interrupt in a tool and
    # an error that stops the run name the node and the call instead.
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from tests.harness.replay_tools import ScriptedChatModel, call

    @tool
    def wire(amount: int) -> str:
        """Wire money."""
        return "wired" if interrupt({"question": f"wire {amount}?"}) == "yes" else "cancelled"

    @tool
    def refund(order_id: str) -> str:
        """Refund an order."""
        raise ValueError("payment system down")

    plan = [[[call("wire", "w1", amount=5)]], [[call("refund", "r1", order_id="42")]]]
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        for tid, turn in (("asks", plan[0]), ("fails", plan[1])):
            agent = create_agent(ScriptedChatModel(plan=[turn]), [wire, refund], checkpointer=saver)
            cfg = {"configurable": {"thread_id": tid}}
            try:
                agent.invoke({"messages": [HumanMessage("go", id=f"{tid}-h")]}, cfg)
            except ValueError:
                assert tid == "fails"
            text = saver.session_memory(tid).to_text()
            assert "__pregel" not in text and "0000000000" not in text, text
            assert saver.session_memory(tid) == _rebuild(saver, tid)
        asks, fails = saver.session_memory("asks").to_text(), saver.session_memory("fails").to_text()
        assert "waiting for an answer (node tools, wire(amount=5))" in asks, asks
        assert "step tools, refund(order_id=42) stopped the run with an error" in fails, fails


def _two_calls_the_second_raises(saver: JsonlSaver, thread_id: str, durability: str) -> None:
    """A create_agent turn asking two tool calls at once: lookup finishes, refund raises
    (the run stops; lookup's result stays a pending write a resume reuses)."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from tests.harness.replay_tools import ScriptedChatModel, call

    # The two calls run at once. Were refund to raise before lookup finished, LangGraph may
    # stop the step without lookup's write (InMemorySaver: 4 runs of 1,000 under "exit"), so
    # refund raises only once lookup has its result, and a moment after, for its commit.
    looked = threading.Event()

    @tool
    def lookup(order_id: int) -> str:
        """Look an order up."""
        looked.set()
        return f"order {order_id}: shipped"

    @tool
    def refund(order_id: int) -> str:
        """Refund an order."""
        looked.wait(10)
        time.sleep(0.05)
        raise ValueError("payment system down")

    turn = [[call("lookup", "l1", order_id=0), call("refund", "r1", order_id=0)]]
    agent = create_agent(ScriptedChatModel(plan=[turn]), [lookup, refund], checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": thread_id}}
    try:
        agent.invoke({"messages": [HumanMessage("go", id=f"{thread_id}-h")]}, cfg, durability=durability)
    except ValueError:
        pass
    else:
        raise AssertionError("refund should have stopped the run")
    writes = saver.get_tuple(cfg).pending_writes  # type: ignore[union-attr]
    assert any(ch == "messages" for _, ch, _ in writes), writes


def _finished_lookup_is_told(memory: SessionMemory) -> None:
    text = memory.to_text()
    assert "no result yet: lookup" not in text, text
    assert [i.text for i in memory.completed] == ["lookup(order_id=0) -> order 0: shipped"], text
    assert "refund(order_id=0) stopped the run with an error" in text, text


def test_a_finished_call_of_a_turn_another_call_stopped_is_completed(tmp_path: Path) -> None:
    # Two parallel tool calls; the second raises. The first finished, and its result is
    # stored as a pending write of the checkpoint that asked for both (a resume reuses it):
    # the memory must not tell it as waiting for a result. Under async durability that
    # write may be logged before the checkpoint holding the AI message that asked for it.
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        for durability in ("sync", "async", "exit"):
            _two_calls_the_second_raises(saver, durability, durability)
            _finished_lookup_is_told(saver.session_memory(durability, budget=None))
            assert saver.session_memory(durability, budget=None) == _rebuild(saver, durability)
        # Both orders, whatever the run happened to log: the write before its checkpoint too.
        records = list(saver.store.thread_log("sync").iter_records())
        asked = max(i for i, r in enumerate(records) if r.get("t") == "checkpoint" and r.get("ns", "") == "")
        written = [r for r in records if r.get("t") == "writes" and r.get("cp") == records[asked].get("id")]
        assert written, records
        reordered = [r for r in records[:asked] if r not in written] + written + [
            r for r in records[asked:] if r not in written]
        for order in (records, reordered):
            builder = MemoryBuilder("sync", saver.codec.decode)
            for rec in order:
                builder.feed(rec)
            _finished_lookup_is_told(builder.memory())
