"""A write that continues a checkpoint of a thread a sweep archived (a config kept from
before the sweep, a run the sweep did not wait for: ``concurrent_runs="allow"`` or
``"unchecked"``) is refused as for a deleted thread, but the error says the thread was
archived, where, and how to bring it back: told "it was deleted, start anew", a user
would start a new thread on the id, and ``restore`` then refuses until it is removed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

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
