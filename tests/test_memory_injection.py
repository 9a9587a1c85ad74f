"""The session memory reaches the model's input after the system prompt and before the
history: in a ``create_agent`` run resumed after a crash and a "skip" decision (a fake
chat model records what it is given), and in a custom graph through the helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import (
    ConfigError,
    JsonlSaver,
    ReplayAdapter,
    session_memory_middleware,
    with_session_memory,
)
from langgraph_jsonl_checkpoint.memory.inject import MEMORY_MESSAGE_NAME, awith_session_memory, insert_memory
from tests.harness.bounded import within
from tests.harness.replay_crashes import open_store, run_crash, spec
from tests.harness.replay_tools import (
    IDEMPOTENT_BY_NAME,
    MODEL_INPUTS,
    ScriptedChatModel,
    call,
    config,
    make_tools,
)

PLAN = [[[call("search", "s1", query="flights")], [call("send_email", "e1", to="bob@example.com")]]]
PROMPT = "You are a careful travel agent."


def _agent(s: dict[str, Any], saver: Any, **memory_kwargs: Any) -> Any:
    from langchain.agents import create_agent

    adapter = ReplayAdapter(saver, idempotent=IDEMPOTENT_BY_NAME)
    return create_agent(
        ScriptedChatModel(plan=s["plan"]), make_tools(s["effects"]), system_prompt=PROMPT,
        middleware=[adapter.middleware(), session_memory_middleware(saver, **memory_kwargs)],
        checkpointer=saver,
    )


def test_memory_injected_after_the_system_prompt_when_a_crashed_run_resumes(tmp_path: Path) -> None:
    s = spec(tmp_path / "store", plan=PLAN, plug="agent",
             crash={"call": "e1", "point": "after_effect", "how": "kill"}, user="book me a flight")
    assert run_crash(s).died
    saver, _ = open_store(s)
    with saver, within(120):
        graph = _agent(s, saver)
        graph.invoke(None, config("t1"))  # stops: the uncertain send_email is asked about
        interrupts = graph.get_state(config("t1")).interrupts
        assert interrupts
        MODEL_INPUTS.clear()
        out = graph.invoke(ReplayAdapter.resume_command(interrupts, {"e1": "skip"}), config("t1"))
    [given] = MODEL_INPUTS  # the one model call after the decision
    assert isinstance(given[0], SystemMessage) and given[0].content == PROMPT
    memory = given[1]
    assert isinstance(memory, SystemMessage) and memory.name == MEMORY_MESSAGE_NAME
    assert "Current goal: book me a flight" in memory.content
    assert "send_email(to=bob@example.com): skip" in memory.content
    assert "search(query=flights) -> found flights" in memory.content
    history = out["messages"][:-1]  # what the model answered from
    assert [m.id for m in given[2:]] == [m.id for m in history]
    assert not any(getattr(m, "name", None) == MEMORY_MESSAGE_NAME for m in out["messages"])


def test_no_memory_on_an_undisturbed_turn_unless_always(tmp_path: Path) -> None:
    plan = [[[call("search", "s1", query="flights")]]]
    s = spec(tmp_path / "store", plan=plan, plug="agent")
    for always, thread in ((False, "calm"), (True, "always")):
        with JsonlSaver(s["store"]) as saver, within(60):
            graph = _agent(s, saver, always=always)
            MODEL_INPUTS.clear()
            # sync: the checkpoint holding the question is saved before the model runs
            graph.invoke({"messages": [HumanMessage("find flights", id="h0")]}, config(thread),
                         durability="sync")
        names = [[getattr(m, "name", None) for m in given] for given in MODEL_INPUTS]
        assert len(names) == 2
        if always:
            # the first call: nothing to tell yet beyond the goal, which is told
            assert all(n[1] == MEMORY_MESSAGE_NAME for n in names)
        else:
            assert all(MEMORY_MESSAGE_NAME not in n for n in names)


def test_custom_graph_helper_and_a_summariser(tmp_path: Path) -> None:
    seen: list[list[Any]] = []

    with JsonlSaver(tmp_path / "store") as saver, within(60):

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            messages = with_session_memory(
                saver, [SystemMessage("be brief", id="sys"), *state["messages"]], config,
                always=True, summariser=lambda m: f"GOAL={m.goal} TURNS={m.turns}",
            )
            seen.append(messages)
            return {"messages": [AIMessage(f"ok {len(messages)}", id=f"ai-{len(state['messages'])}")]}

        b = StateGraph(MessagesState)
        b.add_node("agent", agent)
        b.add_edge(START, "agent")
        graph = b.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("first", id="h0")]}, config("c"), durability="sync")
        graph.invoke({"messages": [HumanMessage("second", id="h1")]}, config("c"), durability="sync")
    assert [m.id for m in seen[1]] == ["sys", seen[1][1].id, "h0", "ai-1", "h1"]
    assert seen[1][1].content == "GOAL=second TURNS=2"


def test_insert_memory_replaces_an_earlier_memory_message() -> None:
    old = SystemMessage("old", name=MEMORY_MESSAGE_NAME)
    new = SystemMessage("new", name=MEMORY_MESSAGE_NAME)
    h = HumanMessage("hi")
    assert insert_memory([SystemMessage("p"), old, h], new)[1:] == [new, h]
    assert insert_memory([h], new) == [new, h]


def test_the_model_is_not_told_that_its_own_step_is_unfinished(tmp_path: Path) -> None:
    # While a node runs, the head checkpoint schedules it: the memory lists it as "step
    # not finished". Told to the model that node is calling, it reads as work left
    # undone ("Open items (resolve these first)") when it is the model's own turn.
    plan = [[[call("search", "s1", query="flights")]]]
    s = spec(tmp_path / "store", plan=plan, plug="agent")
    seen: list[str] = []
    with JsonlSaver(s["store"]) as saver, within(60):

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            messages = with_session_memory(saver, [SystemMessage("be brief"), *state["messages"]], config,
                                           always=True)
            seen.append(messages[1].content)
            return {"messages": [AIMessage("ok", id=f"ai-{len(state['messages'])}")]}

        b = StateGraph(MessagesState)
        b.add_node("agent", agent)
        b.add_edge(START, "agent")
        b.compile(checkpointer=saver).invoke({"messages": [HumanMessage("first", id="h0")]}, config("c"),
                                             durability="sync")
        MODEL_INPUTS.clear()
        _agent(s, saver, always=True).invoke({"messages": [HumanMessage("find flights", id="h1")]},
                                             config("a"), durability="sync")
        given = [m.content for inputs in MODEL_INPUTS for m in inputs if m.name == MEMORY_MESSAGE_NAME]
    assert seen and len(given) == 2
    assert all("step not finished" not in text for text in seen), seen
    assert all("step not finished: model" not in text for text in given), given
    assert "Current goal: find flights" in given[0]


async def test_another_checkpointer_as_the_source_is_refused_naming_it() -> None:
    """`with_session_memory(InMemorySaver(), ...)` raised AttributeError ('InMemorySaver'
    object has no attribute 'session_memory'), and the middleware took it and failed at
    the first model call: each now raises ConfigError saying the memory needs a JsonlSaver."""
    config = {"configurable": {"thread_id": "t-1"}}
    for refused in (lambda: with_session_memory(InMemorySaver(), [], config),
                    lambda: session_memory_middleware(InMemorySaver())):
        with pytest.raises(ConfigError, match="InMemorySaver.*JsonlSaver"):
            refused()
    with pytest.raises(ConfigError, match="InMemorySaver.*JsonlSaver"):
        await awith_session_memory(InMemorySaver(), [], config)
