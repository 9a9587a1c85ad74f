"""ReplayAdapter under the tool node's ``RetryPolicy``.

The oracle is the same graph with a plain ``ToolNode`` on ``InMemorySaver``: with the
adapter, a node that LangGraph retries after a transient error must end with the same
messages after the same number of tool executions, sync and async, for idempotent and
side-effecting tools, on both journals (``JsonlSaver``, and ``InMemorySaver`` with
``ReplayAdapter(store=InMemoryStore())``). Where the adapter deliberately differs (a
finished sibling is not run again by a retry; a failure recorded before the run was
resumed is retried only when the policy retries ``RecordedToolError``) the tests say so.

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
from langgraph.types import RetryPolicy

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
              **kwargs: Any) -> Any:
        plug = "plain" if self.backend == "plain" else "tool_node"
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


def test_retries_exhausted_raise_the_tools_own_error_then_resume_replays_it(sides) -> None:
    """Every attempt fails: both raise the tool's ConnectionError after ``max_attempts``
    executions. ``invoke(None)`` then runs a plain ToolNode again with a fresh budget;
    the adapter raises the recorded failure as ``RecordedToolError`` without running the
    tool, since this policy retries ConnectionError only (see the next test)."""
    oracle, adapted = sides
    for side in sides:
        tools = [fetch_rate_tool(side.effects_path, failures=100, asynchronous=side.mode == "async",
                                 idempotent=False)]
        graph = side.graph(ONE_CALL, tools, policy(max_attempts=3))
        with pytest.raises(ConnectionError, match="transient 3"):
            side.start(graph)
        assert side.effects() == {"c1": 3}
        side.restart()
        graph = side.graph(ONE_CALL, tools, policy(max_attempts=3))
        if side is oracle:
            with pytest.raises(ConnectionError, match="transient 6"):
                side.run(graph, None)
            assert side.effects() == {"c1": 6}
        else:
            with pytest.raises(RecordedToolError, match="ConnectionError: transient 3") as caught:
                side.run(graph, None)
            assert (caught.value.call_id, caught.value.error_type) == ("c1", "ConnectionError")
            assert side.effects() == {"c1": 3}


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "side_effecting"])
def test_a_policy_that_retries_recorded_errors_runs_a_failed_call_again_on_resume(
    tmp_path: Path, backend: str, mode: str, idempotent: bool
) -> None:
    """The run died (here: gave up) after the call failed; the resumed run's first
    attempt raises the recorded failure, the policy retries ``RecordedToolError``, and
    the next attempt runs the call again."""
    side = Setup(tmp_path, backend=backend, mode=mode)
    try:
        tools = [fetch_rate_tool(side.effects_path, failures=2, asynchronous=mode == "async",
                                 idempotent=idempotent)]
        retrying = policy(max_attempts=2, retry_on=(ConnectionError, RecordedToolError))
        with pytest.raises(ConnectionError, match="transient 2"):
            side.start(side.graph(ONE_CALL, tools, retrying))
        side.restart()
        out = side.run(side.graph(ONE_CALL, tools, retrying), None)
        assert_transcript_complete(out["messages"])
        assert out["messages"][-1].content == "done: c1=rate for EUR"
        assert side.effects() == {"c1": 3}
    finally:
        side.close()


FAILING = [[[call("explode", "c1", reason="disk full")]]]


def test_the_default_policy_does_not_run_a_failed_call_again(tmp_path: Path, backend: str, mode: str) -> None:
    """``RetryPolicy()`` does not retry ValueError (``ToolBoom``), so it must not retry
    that failure when it comes back as ``RecordedToolError`` after a resume either: the
    tool took effect before it raised, and it is not run again."""
    side = Setup(tmp_path, backend=backend, mode=mode)
    try:
        tools = make_tools(side.effects_path, asynchronous=mode == "async")
        retrying = RetryPolicy(initial_interval=0.001, jitter=False)
        with pytest.raises(ToolBoom):
            side.start(side.graph(FAILING, tools, retrying))
        side.restart()
        with pytest.raises(RecordedToolError, match="ToolBoom: boom: disk full"):
            side.run(side.graph(FAILING, tools, retrying), None)
        assert side.effects() == {"c1": 1}
    finally:
        side.close()
