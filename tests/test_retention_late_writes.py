"""A write that continues a checkpoint of a thread a sweep archived (a config kept from
before the sweep, a run the sweep did not wait for: ``concurrent_runs="allow"`` or
``"unchecked"``) is refused as for a deleted thread, but the error says the thread was
archived, where, and how to bring it back: told "it was deleted, start anew", a user
would start a new thread on the id, and ``restore`` then refuses until it is removed.
A ``Command(resume=...)`` for a thread deleted or archived while it waited at an
interrupt is refused the same way, with every save of its run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadDeletedError
from tests.harness.bounded import within
from tests.harness.flow_graphs import build_agent_graph


def _cfg(tid: str) -> dict:
    return {"configurable": {"thread_id": tid}}


def test_a_late_write_of_an_archived_thread_says_archived_and_how_to_restore(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s", ttl={"default_ttl": 60, "strategy": "archive"}) as saver, within(60):
        graph = build_agent_graph().compile(checkpointer=saver)
        for turn in range(2):
            graph.invoke({"messages": [HumanMessage(f"what is {turn} + 2?", id=f"h{turn}")]}, _cfg("t"))
        kept = [s.config for s in graph.get_state_history(_cfg("t"))][1]  # from before the sweep
        assert saver.sweep(now=time.time() + 2 * 3600).swept == [("t", "archive")]
        [entry] = saver.archived("t")
        with pytest.raises(ThreadDeletedError) as err:
            graph.update_state(kept, {"messages": [HumanMessage("edited", id="e1")]})
        message = str(err.value)
        assert "archived" in message and entry.path in message, message
        assert f"langgraph-jsonl restore {saver.store.path} --thread t" in message, message
        assert "was deleted" not in message, message
        # doing what it says works
        saver.restore("t")
        graph.update_state(kept, {"messages": [HumanMessage("edited", id="e1")]})


def test_a_late_write_of_a_deleted_thread_still_says_deleted(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        graph = build_agent_graph().compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("what is 1 + 2?", id="h0")]}, _cfg("t"))
        kept = graph.get_state(_cfg("t")).config
        saver.delete_thread("t")
        with pytest.raises(ThreadDeletedError, match="was deleted") as err:
            graph.update_state(kept, {"messages": [HumanMessage("edited", id="e1")]})
        assert "restore" not in str(err.value)


class _Asked(TypedDict, total=False):
    topic: str
    answer: str


def _asking_graph(saver: JsonlSaver, ran: list[str]) -> Any:
    """``draft`` (the input's topic, upper case), then ``ask``, stopped at ``interrupt()``."""

    def draft(state: _Asked) -> dict:
        ran.append("draft")
        return {"topic": state.get("topic", "").upper()}

    def ask(state: _Asked) -> dict:
        ran.append("ask")
        return {"answer": interrupt(f"publish {state['topic']}?")}

    g = StateGraph(_Asked)
    g.add_node("draft", draft)
    g.add_node("ask", ask)
    g.add_edge(START, "draft")
    g.add_edge("draft", "ask")
    return g.compile(checkpointer=saver)


def _resume_after_sweep(saver: Any, graph: Any, ran: list[str], durability: Any, strategy: str) -> str:
    """Thread ``t`` asked at its interrupt, then swept with ``strategy``; the message of
    the ``ThreadDeletedError`` its ``Command(resume=...)`` raises (``ran`` cleared first)."""
    assert "__interrupt__" in graph.invoke({"topic": "cats"}, _cfg("t"), durability=durability)
    assert saver.sweep(now=time.time() + 2 * 3600).swept == [("t", strategy)]
    ran.clear()
    with pytest.raises(ThreadDeletedError) as err:
        graph.invoke(Command(resume="yes"), _cfg("t"), durability=durability)
    return str(err.value)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_resuming_an_interrupted_thread_a_sweep_archived_says_restore(
    tmp_path: Path, durability: Any
) -> None:
    """A thread waiting at ``interrupt()`` that a sweep archived, resumed with
    ``Command(resume=...)``: LangGraph (as with ``InMemorySaver`` after
    ``delete_thread``) finds no checkpoint and runs the graph from its start with no
    input. The answer was dropped without a word (or a node failed on the state it
    expected: ``KeyError``), and the run's saves started a new thread on the id, which
    ``restore`` then refused. The saver knows the thread was archived: the resume and
    every save of that run are refused, naming the archive and the restore command
    (with ``durability="sync"`` before any node runs; with ``"async"`` LangGraph runs
    its nodes before it sees the refusal); resuming after the restore works."""
    ran: list[str] = []
    with JsonlSaver(tmp_path / "s", ttl={"default_ttl": 60, "strategy": "archive"}) as saver, within(60):
        graph = _asking_graph(saver, ran)
        message = _resume_after_sweep(saver, graph, ran, durability, "archive")
        assert "'t'" in message and "archived" in message and "Command(resume=...)" in message, message
        assert f"langgraph-jsonl restore {saver.store.path} --thread t" in message, message
        if durability == "sync":
            assert ran == [], "a node ran on the thread's empty state"
        assert not saver.store.has_thread("t")  # nothing of the refused run was saved
        saver.restore("t")
        assert graph.invoke(Command(resume="yes"), _cfg("t"), durability=durability) == {
            "topic": "CATS", "answer": "yes"}


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_resuming_an_interrupted_thread_a_sweep_deleted_says_it_is_gone(
    tmp_path: Path, durability: Any
) -> None:
    """The same with strategy "delete": the error says the thread was deleted while it
    waited, so the answer has nothing to resume, and how to start it anew (which
    works, as with ``InMemorySaver``)."""
    ran: list[str] = []
    with JsonlSaver(tmp_path / "s", ttl={"default_ttl": 60, "strategy": "delete"}) as saver, within(60):
        graph = _asking_graph(saver, ran)
        message = _resume_after_sweep(saver, graph, ran, durability, "delete")
        assert "'t'" in message and "was deleted" in message and "Command(resume=...)" in message, message
        assert "restore" not in message and "new input" in message, message
        assert ran == ([] if durability == "sync" else ["draft", "ask"])
        assert not saver.store.has_thread("t")
        out = graph.invoke({"topic": "dogs"}, _cfg("t"), durability=durability)  # anew
        assert out["topic"] == "DOGS" and "__interrupt__" in out
        assert graph.invoke(Command(resume="no"), _cfg("t"), durability=durability)["answer"] == "no"


def test_a_resume_of_a_thread_never_written_still_runs_as_langgraph_runs_it(tmp_path: Path) -> None:
    """No tombstone, nothing to tell: as with ``InMemorySaver``, LangGraph runs the graph
    from its start (the refusal is only for threads deleted or archived)."""
    ran: list[str] = []
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        out = _asking_graph(saver, ran).invoke(Command(resume="yes"), _cfg("never"))
        assert ran == ["draft", "ask"] and "__interrupt__" in out
