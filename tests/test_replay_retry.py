"""ReplayAdapter under the tool node's ``RetryPolicy``.

The oracle is the same graph with a plain ``ToolNode`` on ``InMemorySaver``: with the
adapter, a node that LangGraph retries after a transient error must end with the same
messages after the same number of tool executions, sync and async, for idempotent and
side-effecting tools, on both journals (``JsonlSaver``, and ``InMemorySaver`` with
``ReplayAdapter(store=InMemoryStore())``). Where the adapter deliberately differs (a
finished sibling is not run again by a retry; a side-effecting call that failed before
the run was resumed is run again only when a person answers ``"retry"``) the tests say
so.

Each tool execution is one line in the effects file (the failing ones too), so
"executions" are counted exactly.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, RetryPolicy

from langgraph_jsonl_checkpoint import JsonlSaver, RecordedToolError, ReplayAdapter
from tests.harness.bounded import within
from tests.harness.replay_tools import (
    ToolBoom,
    assert_transcript_complete,
    build_graph,
    call,
    config,
    effects,
    make_tools,
    note_effect,
)

THREAD = "t1"
LIMIT = 60  # seconds for one test's runs (a retry loop that never ends fails instead)


def fetch_rate_tool(effects_path: Path, *, failures: int, asynchronous: bool, idempotent: bool) -> BaseTool:
    """``fetch_rate``: each execution takes effect (a line in the effects file), the
    first ``failures`` executions then raise ``ConnectionError``."""
    runs = {"n": 0}

    def body(currency: str, call_id: str) -> str:
        note_effect(effects_path, "fetch_rate", call_id)
        runs["n"] += 1
        if runs["n"] <= failures:
            raise ConnectionError(f"transient {runs['n']}")
        return f"rate for {currency}"

    if asynchronous:

        @tool
        async def fetch_rate(currency: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Fetch an exchange rate from a flaky service."""
            await asyncio.sleep(0)
            return body(currency, tool_call_id)

    else:

        @tool
        def fetch_rate(currency: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Fetch an exchange rate from a flaky service."""
            return body(currency, tool_call_id)

    fetch_rate.metadata = {"idempotent": idempotent}
    return fetch_rate


def policy(max_attempts: int = 5, retry_on: Any = ConnectionError) -> RetryPolicy:
    return RetryPolicy(max_attempts=max_attempts, initial_interval=0.001, jitter=False, retry_on=retry_on)


class Setup:
    """One side of a comparison: the oracle (``plain``) or the adapter on a journal."""

    def __init__(self, tmp: Path, *, backend: str, mode: str) -> None:
        self.tmp, self.backend, self.mode = tmp, backend, mode
        tmp.mkdir(parents=True, exist_ok=True)
        self.effects_path = tmp / "effects.log"
        self.store = InMemoryStore()
        if backend == "jsonl":
            self.saver: Any = JsonlSaver(tmp / "store")
        else:  # "plain" and "store" keep the state in memory
            self.saver = InMemorySaver()
        self.adapter = self._adapter()

    def _adapter(self) -> ReplayAdapter | None:
        if self.backend == "plain":
            return None
        if self.backend == "jsonl":
            return ReplayAdapter(self.saver)
        return ReplayAdapter(store=self.store)

    def restart(self) -> None:
        """A new adapter (and saver, on disk) over the same durable state."""
        if self.backend == "jsonl":
            self.saver.close()
            self.saver = JsonlSaver(self.tmp / "store")
        self.adapter = self._adapter()

    def close(self) -> None:
        if self.backend == "jsonl":
            self.saver.close()

    def graph(self, plan: list, tools: list[BaseTool], retry_policy: RetryPolicy | None,
              agent: bool = False, **kwargs: Any) -> Any:
        plug = "agent" if agent else "tool_node"
        plug = f"plain_{plug}".replace("_tool_node", "") if self.backend == "plain" else plug
        return build_graph(plug, tools=tools, plan=plan, checkpointer=self.saver, adapter=self.adapter,
                           retry_policy=retry_policy, **kwargs)

    def run(self, graph: Any, inp: Any) -> Any:
        with within(LIMIT, "a tool node under a RetryPolicy"):
            if self.mode == "async":
                return asyncio.run(graph.ainvoke(inp, config(THREAD)))
            return graph.invoke(inp, config(THREAD))

    def start(self, graph: Any) -> Any:
        return self.run(graph, {"messages": [HumanMessage("go", id="human-0")]})

    def effects(self) -> dict[str, int]:
        return dict(effects(self.effects_path))


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["jsonl", "store"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def sides(tmp_path: Path, backend: str, mode: str):
    oracle = Setup(tmp_path / "oracle", backend="plain", mode=mode)
    adapted = Setup(tmp_path / "adapter", backend=backend, mode=mode)
    yield oracle, adapted
    oracle.close()
    adapted.close()


def transcript(out: dict) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in out["messages"]]


ONE_CALL = [[[call("fetch_rate", "c1", currency="EUR")]]]


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "side_effecting"])
def test_a_retry_policy_retries_through_the_adapter_as_without_it(sides, idempotent: bool) -> None:
    """The tool raises ConnectionError twice, then succeeds: LangGraph retries the node,
    and the adapter runs the failed call again in each attempt (its outcome is known:
    it raised), exactly as a plain ToolNode does."""
    results = []
    for side in sides:
        tools = [fetch_rate_tool(side.effects_path, failures=2, asynchronous=side.mode == "async",
                                 idempotent=idempotent)]
        out = side.start(side.graph(ONE_CALL, tools, policy()))
        assert_transcript_complete(out["messages"])
        results.append((transcript(out), side.effects()))
    assert results[0] == results[1]
    assert results[1][1] == {"c1": 3}
    assert results[1][0][-1][1] == "done: c1=rate for EUR"
    adapted = sides[1]
    (rec,) = adapted.adapter.tool_calls(THREAD)
    assert rec.state == "finished"
    assert rec.events == ["requested", "started", "failed", "started", "failed", "started", "finished"]


BATCH = [[[call("send_email", "c1", to="bob"), call("fetch_rate", "c2", currency="EUR")]]]


def test_a_retry_does_not_run_a_finished_sibling_again(sides) -> None:
    """A retry re-runs the whole node: a plain ToolNode sends the email again in every
    attempt; the adapter replays its recorded result. The messages are the same."""
    results = []
    for side in sides:
        tools = make_tools(side.effects_path, asynchronous=side.mode == "async")
        tools.append(fetch_rate_tool(side.effects_path, failures=2, asynchronous=side.mode == "async",
                                     idempotent=False))
        out = side.start(side.graph(BATCH, tools, policy()))
        assert_transcript_complete(out["messages"])
        results.append((transcript(out), side.effects()))
    assert results[0][0] == results[1][0]
    assert results[0][1] == {"c1": 3, "c2": 3}
    assert results[1][1] == {"c1": 1, "c2": 3}


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "side_effecting"])
def test_retries_exhausted_raise_the_tools_own_error_then_resume_runs_it_again(
    sides, idempotent: bool
) -> None:
    """Every attempt fails: both raise the tool's ConnectionError after ``max_attempts``
    executions. ``invoke(None)`` then runs a plain ToolNode again with a fresh budget.
    The adapter does the same for an idempotent tool; a side-effecting one's outcome is
    in doubt (it may have taken effect before it raised), so a person is asked first,
    and their ``"retry"`` runs it with the same fresh budget."""
    oracle, adapted = sides
    for side in sides:
        tools = [fetch_rate_tool(side.effects_path, failures=100, asynchronous=side.mode == "async",
                                 idempotent=idempotent)]
        graph = side.graph(ONE_CALL, tools, policy(max_attempts=3))
        with pytest.raises(ConnectionError, match="transient 3"):
            side.start(graph)
        assert side.effects() == {"c1": 3}
        side.restart()
        graph = side.graph(ONE_CALL, tools, policy(max_attempts=3))
        if side is adapted and not idempotent:
            out = side.run(graph, None)
            (question,) = [i.value for i in out["__interrupt__"]]
            assert question["type"] == "uncertain_tool_calls"
            (asked,) = question["calls"]
            assert (asked["id"], asked["name"], asked["args"]) == ("c1", "fetch_rate", {"currency": "EUR"})
            assert asked["failed"] == {"error_type": "ConnectionError", "error_message": "transient 3"}
            assert asked["started_at"]
            assert side.effects() == {"c1": 3}
            with pytest.raises(ConnectionError, match="transient 6"):
                side.run(graph, Command(resume={"c1": "retry"}))
            # that "retry" was about the failure asked about, not the ones it led to
            out = side.run(graph, None)
            (question,) = [i.value for i in out["__interrupt__"]]
            (again,) = question["calls"]
            assert again["failed"] == {"error_type": "ConnectionError", "error_message": "transient 6"}
            assert again["started_at"] > asked["started_at"]
        else:
            with pytest.raises(ConnectionError, match="transient 6"):
                side.run(graph, None)
        assert side.effects() == {"c1": 6}


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "side_effecting"])
def test_a_transient_failure_runs_again_on_resume(sides, idempotent: bool) -> None:
    """The run gave up after the call failed (the policy's attempts ran out); the
    transient error is gone by the resumed run. An idempotent call runs again, as with a
    plain ToolNode; a side-effecting one runs again once a person answers ``"retry"``.
    Either way the run ends as the oracle's does, after the same executions."""
    results = []
    for side in sides:
        tools = [fetch_rate_tool(side.effects_path, failures=2, asynchronous=side.mode == "async",
                                 idempotent=idempotent)]
        with pytest.raises(ConnectionError, match="transient 2"):
            side.start(side.graph(ONE_CALL, tools, policy(max_attempts=2)))
        side.restart()
        graph = side.graph(ONE_CALL, tools, policy(max_attempts=2))
        out = side.run(graph, None)
        if side.adapter is not None and not idempotent:
            (question,) = [i.value for i in out["__interrupt__"]]
            assert [c["id"] for c in question["calls"]] == ["c1"]
            assert side.effects() == {"c1": 2}
            out = side.run(graph, Command(resume={"c1": "retry"}))
        assert_transcript_complete(out["messages"])
        results.append((transcript(out), side.effects()))
    assert results[0] == results[1]
    assert results[1] == (results[1][0], {"c1": 3})
    assert results[1][0][-1][1] == "done: c1=rate for EUR"


FAILING = [[[call("explode", "c1", reason="disk full")]]]


def test_a_failed_side_effecting_call_is_asked_about_not_replayed_as_an_error(
    tmp_path: Path, backend: str, mode: str
) -> None:
    """``RetryPolicy()`` does not retry ValueError (``ToolBoom``): the run ends with it.
    ``explode`` took effect before it raised, so the resumed run does not run it again on
    its own: it asks, every time until answered (never a RecordedToolError), and
    ``"skip"`` gives the model the failure, not the crash text."""
    side = Setup(tmp_path, backend=backend, mode=mode)
    try:
        tools = make_tools(side.effects_path, asynchronous=mode == "async")
        retrying = RetryPolicy(initial_interval=0.001, jitter=False)
        with pytest.raises(ToolBoom):
            side.start(side.graph(FAILING, tools, retrying))
        side.restart()
        graph = side.graph(FAILING, tools, retrying)
        for _ in range(2):
            out = side.run(graph, None)
            (question,) = [i.value for i in out["__interrupt__"]]
            (asked,) = question["calls"]
            assert asked["failed"] == {"error_type": "ToolBoom", "error_message": "boom: disk full"}
        out = side.run(graph, Command(resume={"c1": "skip"}))
        assert_transcript_complete(out["messages"])
        (msg,) = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c1"]
        assert msg.status == "error"
        assert "ToolBoom: boom: disk full" in msg.content and "not run again" in msg.content
        assert "crash" not in msg.content
        assert side.effects() == {"c1": 1}
        (rec,) = side.adapter.tool_calls(THREAD)
        assert (rec.state, rec.resolution) == ("finished", "skip")
    finally:
        side.close()


def test_recorded_tool_error_is_still_importable() -> None:
    """A public name: code that catches it keeps importing; nothing raises it now."""
    import langgraph_jsonl_checkpoint as pkg

    assert pkg.RecordedToolError is RecordedToolError
    assert issubclass(RecordedToolError, RuntimeError)


def _create_agent_failed_once(side: Any, *, idempotent: bool) -> Any:
    """A ``create_agent`` graph whose one call failed once (a ConnectionError ended the
    run) on ``side``, restarted: the graph to resume."""
    tools = [fetch_rate_tool(side.effects_path, failures=1, asynchronous=side.mode == "async",
                             idempotent=idempotent)]
    graph = side.graph(ONE_CALL, tools, None, agent=True)
    with pytest.raises(ConnectionError, match="transient 1"):
        side.start(graph)
    side.restart()
    return side.graph(ONE_CALL, tools, None, agent=True)


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "side_effecting"])
def test_create_agent_runs_a_transiently_failed_idempotent_call_again_on_resume(
    sides, idempotent: bool
) -> None:
    """``create_agent``'s tool node takes no RetryPolicy: the first ConnectionError ends
    the run, and ``invoke(None)`` runs a plain agent's call again, which now succeeds.
    With the adapter the same happens for an idempotent tool; a side-effecting one is
    asked about first, and ``"retry"`` runs it once more. Never a wedge."""
    results = []
    for side in sides:
        graph = _create_agent_failed_once(side, idempotent=idempotent)
        out = side.run(graph, None)
        if side.adapter is not None and not idempotent:
            interrupts = graph.get_state(config(THREAD)).interrupts
            ((asked,),) = [i.value["calls"] for i in interrupts]
            assert asked["failed"] == {"error_type": "ConnectionError", "error_message": "transient 1"}
            assert side.effects() == {"c1": 1}
            out = side.run(graph, ReplayAdapter.resume_command(interrupts, {"c1": "retry"}))
        assert graph.get_state(config(THREAD)).next == ()
        assert_transcript_complete(out["messages"])
        results.append((transcript(out), side.effects()))
    assert results[0] == results[1]
    assert results[1][1] == {"c1": 2}
    assert results[1][0][-1][1] == "done: c1=rate for EUR"


def test_create_agent_skip_gives_the_model_the_failure(tmp_path: Path, backend: str, mode: str) -> None:
    """The side-effecting call failed with a timeout (it may have taken effect); the
    person answers ``"skip"``: the run finishes, the model is told the call failed with
    that error and was not run again, and it is not run again."""
    side = Setup(tmp_path, backend=backend, mode=mode)
    try:
        graph = _create_agent_failed_once(side, idempotent=False)
        for _ in range(2):  # asked again until answered: the thread is never wedged
            side.run(graph, None)
            interrupts = graph.get_state(config(THREAD)).interrupts
            assert [c["id"] for i in interrupts for c in i.value["calls"]] == ["c1"]
        out = side.run(graph, ReplayAdapter.resume_command(interrupts, {"c1": "skip"}))
        assert graph.get_state(config(THREAD)).next == ()
        assert_transcript_complete(out["messages"])
        (msg,) = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c1"]
        assert msg.status == "error"
        assert "ConnectionError: transient 1" in msg.content and "not run again" in msg.content
        assert side.effects() == {"c1": 1}
    finally:
        side.close()
