"""What the replay adapter reads from one tool call's request: its batch, checkpointer,
durability, and how many interrupt slots LangGraph holds answers for.

Written for mutants of ``replay/calls.py`` that survived the suite (stress/mutation.py):
the graph tests reach these paths, but with one call per message or no answered
siblings, and never with a task config that names the durability.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph_jsonl_checkpoint import ConfigError
from langgraph_jsonl_checkpoint.replay.calls import context_of, messages_of, slots_held, thread_of

CALLS = [{"name": "f", "args": {"q": i}, "id": f"c{i}", "type": "tool_call"} for i in range(3)]


def _request(own: int, config: dict | None, state: Any, scratchpad: Any = None) -> Any:
    if config is not None and scratchpad is not None:
        config["configurable"]["__pregel_scratchpad"] = scratchpad
    runtime = SimpleNamespace(config=config) if config is not None else None
    return SimpleNamespace(runtime=runtime, tool_call=CALLS[own], state=state)


def _config(**extra: Any) -> dict:
    return {"configurable": {"thread_id": 7, "checkpoint_ns": "tools:abc", "checkpoint_id": "cp-1",
                             **extra}, "metadata": {}}


def test_a_tool_node_task_batches_the_pending_calls_of_its_message() -> None:
    messages = [HumanMessage("hi"), AIMessage("", tool_calls=CALLS), ToolMessage("done", tool_call_id="c0")]
    saver = object()
    ctx = context_of(_request(1, _config(__pregel_checkpointer=saver, __pregel_durability="sync"),
                              {"messages": messages}))
    assert (ctx.thread_id, ctx.ns, ctx.checkpoint_id) == ("7", "tools:abc", "cp-1")
    assert [c["id"] for c in ctx.batch] == ["c1", "c2"]  # c0 is answered already
    assert [c["id"] for c in ctx.calls] == ["c0", "c1", "c2"]
    assert ctx.checkpointer is saver and ctx.durability == "sync"
    plain = context_of(_request(1, _config(), messages))
    assert plain.checkpointer is None and plain.durability == "async"


def test_messages_of_reads_lists_dicts_and_objects() -> None:
    msgs = [HumanMessage("x")]
    assert messages_of(msgs) is msgs
    assert messages_of({"messages": msgs}) == msgs and messages_of({}) == []
    assert messages_of(SimpleNamespace(messages=msgs)) == msgs
    assert messages_of(SimpleNamespace(messages=None)) == [] and messages_of(object()) == []


def test_slots_held_counts_resume_values_and_a_null_resume() -> None:
    state = {"messages": []}

    def pad(resume: Any, null: Any) -> Any:
        return SimpleNamespace(resume=resume, get_null_resume=lambda consume: null)

    assert slots_held(_request(0, _config(), state, pad(["a", "b"], None))) == 2
    assert slots_held(_request(0, _config(), state, pad(["a", "b"], "n"))) == 3
    assert slots_held(_request(0, _config(), state, pad([], "n"))) == 1
    assert slots_held(_request(0, _config(), state, pad(None, None))) is None
    assert slots_held(_request(0, _config(), state, SimpleNamespace(resume=["a"]))) is None
    assert slots_held(_request(0, _config(), state)) is None
    assert slots_held(_request(0, None, state)) is None


def test_a_graph_run_without_a_thread_id_is_told_how_to_give_one() -> None:
    for config in (None, {}, {"configurable": {}}):
        with pytest.raises(ConfigError) as err:
            thread_of(config)
        assert str(err.value) == (
            "ReplayAdapter needs a thread_id: run the graph with a checkpointer and "
            "config={'configurable': {'thread_id': ...}}.")
