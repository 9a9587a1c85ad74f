"""ReplayAdapter behaviour, in one process, on both journals.

- ``jsonl``: ``JsonlSaver`` + ``ReplayAdapter(saver)``; a "restart" opens a new saver
  and adapter on the same directory.
- ``store``: ``InMemorySaver`` + ``ReplayAdapter(store=InMemoryStore())``. Those keep
  nothing across processes, so the crash is simulated in-process: a ``BaseException``
  (``SimulatedCrash``) escapes the graph at the crash point, past every ``except
  Exception``, leaving ``started`` without ``finished`` just as a dead process would; the
  "restart" is a new adapter on the same saver and store objects.

Real process deaths (SIGKILL, ``os._exit``) on the JSONL journal are in
``test_replay_crash.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from langgraph_jsonl_checkpoint import (
    ConfigError,
    JsonlSaver,
    ReplayAdapter,
    ToolCallRecord,
)
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.replay.lifecycle import ANSWER, ASK, ASKS_CALL_ID, ToolCallKey
from langgraph_jsonl_checkpoint.replay.plan import SKIPPED_TEXT
from tests.harness.replay_crashes import CrashAt, install_crash
from tests.harness.replay_tools import (
    IDEMPOTENT_BY_NAME,
    HookMap,
    Hooks,
    Plan,
    State,
    ToolBoom,
    all_of,
    assert_transcript_complete,
    await_until,
    build_graph,
    call,
    config,
    effects,
    effects_present,
    make_tools,
    settled,
    tool_messages,
    wait_until,
)

BATCH = [
    [
        [
            call("lookup_order", "c1", order_id="42"),
            call("send_email", "c2", to="bob"),
            call("charge", "c3", amount=5),
        ]
    ]
]
THREAD = "t1"


class SimulatedCrash(BaseException):
    """Stands in for a process death: not an ``Exception``, so nothing handles it."""


def crash() -> None:
    raise SimulatedCrash("the power went out")


class Env:
    """A checkpointer and a journal, restartable; runs graphs sync or async."""

    def __init__(self, backend: str, mode: str, tmp: Path) -> None:
        self.backend, self.mode, self.tmp = backend, mode, tmp
        self.effects_path = tmp / "effects.log"
        if backend == "jsonl":
            self.saver: Any = JsonlSaver(tmp / "store")
        else:
            self.saver = InMemorySaver()
            self.store = InMemoryStore()
        self.adapter = self._adapter()

    def _adapter(self) -> ReplayAdapter:
        if self.backend == "jsonl":
            return ReplayAdapter(self.saver, idempotent=IDEMPOTENT_BY_NAME)
        return ReplayAdapter(store=self.store, idempotent=IDEMPOTENT_BY_NAME)

    def restart(self) -> None:
        """As after a restart: nothing in memory survives but the durable storage."""
        if self.backend == "jsonl":
            self.saver.close()
            self.saver = JsonlSaver(self.tmp / "store")
        self.adapter = self._adapter()

    def close(self) -> None:
        if self.backend == "jsonl":
            self.saver.close()

    def graph(
        self, plan: Plan, *, plug: str = "tool_node", hooks: Hooks | None = None, **kwargs: Any
    ) -> Any:
        tools = make_tools(self.effects_path, asynchronous=self.mode == "async", hooks=hooks)
        return build_graph(
            plug, tools=tools, plan=plan, checkpointer=self.saver, adapter=self.adapter, **kwargs
        )

    async def run(self, graph: Any, inp: Any, thread: str = THREAD) -> Any:
        if self.mode == "async":
            return await graph.ainvoke(inp, config(thread), durability="sync")
        return graph.invoke(inp, config(thread), durability="sync")

    async def start(self, graph: Any, user: str = "go", thread: str = THREAD, n: int = 0) -> Any:
        return await self.run(graph, {"messages": [HumanMessage(user, id=f"human-{n}")]}, thread)

    def records(self, thread: str = THREAD) -> list[ToolCallRecord]:
        if self.backend == "jsonl":
            return self.saver.tool_calls(thread)  # the saver's own API
        return self.adapter.tool_calls(thread)

    async def arecords(self, thread: str = THREAD) -> list[ToolCallRecord]:
        if self.backend == "jsonl":
            return await self.saver.atool_calls(thread)
        return await self.adapter.atool_calls(thread)

    def by_id(self) -> dict[str, ToolCallRecord]:
        recs = self.records()
        out = {r.key.call_id: r for r in recs}
        assert len(out) == len(recs)
        return out

    def effects(self) -> dict[str, int]:
        return dict(effects(self.effects_path))

    async def crash_run(self, plan: Plan, *, point: str, call_id: str, settle: tuple[str, ...] = (),
                        plug: str = "tool_node", **kwargs: Any) -> None:
        """Run ``plan`` from a new user message; "die" at ``point`` of ``call_id``."""
        ready = settled(self.records, settle)
        hooks = install_crash(self.adapter, point=point, call_id=call_id, ready=ready, crash=crash)
        graph = self.graph(plan, plug=plug, hooks=hooks, **kwargs)
        with pytest.raises(SimulatedCrash):
            await self.start(graph)
        self.restart()


@pytest.fixture(params=["jsonl", "store"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def env(backend: str, mode: str, tmp_path: Path):
    e = Env(backend, mode, tmp_path)
    yield e
    e.close()


def wait_for(env: Env, predicate: Any, then: Any = None) -> Any:
    """A tool hook's action: wait (bounded) for ``predicate``, then call ``then``; a
    coroutine for async tools, so the event loop keeps running the others."""
    if env.mode == "async":

        async def awaiting() -> None:
            await await_until(predicate)
            if then is not None:
                then()

        return awaiting()
    wait_until(predicate)
    if then is not None:
        then()
    return None


def single_interrupt(graph: Any) -> dict:
    interrupts = graph.get_state(config(THREAD)).interrupts
    assert len(interrupts) == 1, interrupts
    return interrupts[0].value


def only(messages: list, call_id: str) -> ToolMessage:
    found = tool_messages(messages).get(call_id, [])
    assert len(found) == 1, f"expected one ToolMessage for {call_id}, got {found}"
    return found[0]


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------
def test_public_api(tmp_path: Path) -> None:
    from langchain.agents.middleware import AgentMiddleware

    import langgraph_jsonl_checkpoint as pkg

    assert pkg.ReplayAdapter is ReplayAdapter
    with pytest.raises(ConfigError):
        ReplayAdapter()
    with JsonlSaver(tmp_path / "s") as saver:
        with pytest.raises(ConfigError):
            ReplayAdapter(saver, store=InMemoryStore())
        adapter = ReplayAdapter(saver, idempotent=["lookup_order"])
        node = adapter.tool_node(make_tools(tmp_path / "e"), name="my_tools", handle_tool_errors=True)
        assert isinstance(node, ToolNode) and node.name == "my_tools"
        assert isinstance(adapter.middleware(), AgentMiddleware)
        assert adapter.tool_calls("nobody") == [] and saver.tool_calls("nobody") == []


def test_one_idempotent_tool_named_as_a_string_is_that_tool(tmp_path: Path) -> None:
    """`idempotent="lookup_order"` made the set of its letters (lookup_order stayed
    side-effecting, silently); it is the one name."""
    with JsonlSaver(tmp_path / "s") as saver:
        assert ReplayAdapter(saver, idempotent="lookup_order").idempotent == {"lookup_order"}


def test_another_checkpointer_as_the_saver_is_refused_saying_to_pass_store() -> None:
    """`ReplayAdapter(InMemorySaver())` was taken and failed at the first tool call with
    AttributeError: 'InMemorySaver' object has no attribute 'tool_call_records'."""
    with pytest.raises(ConfigError, match=r"InMemorySaver.*store=") as refused:
        ReplayAdapter(InMemorySaver())
    assert "JsonlSaver" in str(refused.value)


async def test_missing_thread_id_is_a_config_error(tmp_path: Path) -> None:
    adapter = ReplayAdapter(store=InMemoryStore())
    builder = StateGraph(State)
    builder.add_node("tools", adapter.tool_node(make_tools(tmp_path / "e")))
    builder.add_edge(START, "tools")
    graph = builder.compile()  # no checkpointer, no thread
    from langchain_core.messages import AIMessage

    msg = AIMessage("", tool_calls=[{**call("send_email", "c1", to="x"), "type": "tool_call"}])
    with pytest.raises(ConfigError, match="thread_id"):
        graph.invoke({"messages": [msg]})
    assert effects(tmp_path / "e") == {}


# --------------------------------------------------------------------------
# no crash: what gets journaled
# --------------------------------------------------------------------------
@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
async def test_normal_run_journals_each_call(env: Env, plug: str) -> None:
    graph = env.graph(BATCH, plug=plug)
    out = await env.start(graph)
    assert_transcript_complete(out["messages"])
    assert out["messages"][-1].content == "done: c1=order 42: shipped | c2=sent to bob | c3=charged 5"
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}

    recs = env.by_id()
    assert set(recs) == {"c1", "c2", "c3"}
    for cid, name, args, content in [
        ("c1", "lookup_order", {"order_id": "42"}, "order 42: shipped"),
        ("c2", "send_email", {"to": "bob"}, "sent to bob"),
        ("c3", "charge", {"amount": 5}, "charged 5"),
    ]:
        r = recs[cid]
        assert (r.state, r.effective_state, r.name, r.args) == ("finished", "finished", name, args)
        assert r.events == ["requested", "started", "finished"]
        assert (
            isinstance(r.result, ToolMessage) and r.result.content == content and r.result.tool_call_id == cid
        )
        assert r.requested_at <= r.started_at <= r.finished_at
        assert r.key.ns.startswith("tools:") and r.key.checkpoint_id
        assert r.error is None and r.resolution is None
    assert [(r.key, r.state) for r in await env.arecords()] == [(r.key, r.state) for r in env.records()]
    if env.backend == "jsonl":
        assert [r.key for r in env.adapter.tool_calls(THREAD)] == [r.key for r in env.records()]


# --------------------------------------------------------------------------
# crash at each lifecycle point, resume (the same table as test_replay_crash.py)
# --------------------------------------------------------------------------
CONFIRMED = "sent to bob (confirmed by hand)"
MATRIX = {  # point -> (c2's state after the crash, answer, c2's content, resolution)
    "before_started": ("requested", None, "sent to bob", None),
    "before_effect": ("started", "retry", "sent to bob", None),
    "after_effect": ("started", "skip", SKIPPED_TEXT, "skip"),
    "before_finished": ("started", {"result": CONFIRMED}, CONFIRMED, "result"),
    "after_finished": ("finished", None, "sent to bob", None),
}


@pytest.mark.parametrize("point", list(MATRIX))
async def test_crash_then_resume(env: Env, point: str) -> None:
    state, answer, content, resolution = MATRIX[point]
    await env.crash_run(BATCH, point=point, call_id="c2", settle=("c1", "c3"))
    recs = env.by_id()
    assert {k: r.state for k, r in recs.items()} == {"c1": "finished", "c2": state, "c3": "finished"}
    if state == "started":
        # the "dead" process is this one, still alive: started, not uncertain
        assert recs["c2"].effective_state == "started" and recs["c2"].process["pid"] > 0

    graph = env.graph(BATCH)
    out = await env.run(graph, None)
    if answer is not None:
        value = single_interrupt(graph)
        assert value["type"] == "uncertain_tool_calls" and "error" not in value
        assert [(c["id"], c["name"], c["args"]) for c in value["calls"]] == [
            ("c2", "send_email", {"to": "bob"})
        ]
        assert value["calls"][0]["started_at"] == recs["c2"].started_at
        out = await env.run(graph, Command(resume={"c2": answer}))
    assert graph.get_state(config(THREAD)).next == ()
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    assert only(out["messages"], "c2").content == content
    assert only(out["messages"], "c1").content == "order 42: shipped"
    recs = env.by_id()
    assert {k: r.state for k, r in recs.items()} == {"c1": "finished", "c2": "finished", "c3": "finished"}
    assert recs["c2"].resolution == resolution


IDEMPOTENT = [
    [
        [
            call("lookup_order", "c1", order_id="42"),
            call("search", "c2", query="x"),
            call("charge", "c3", amount=5),
        ]
    ]
]


@pytest.mark.parametrize("plug", ["tool_node", "agent"])
@pytest.mark.parametrize("target", ["c1", "c2"], ids=["by-name", "by-metadata"])
async def test_idempotent_started_call_runs_again(env: Env, plug: str, target: str) -> None:
    others = tuple(c for c in ("c1", "c2", "c3") if c != target)
    await env.crash_run(IDEMPOTENT, point="after_effect", call_id=target, settle=others, plug=plug)
    assert env.by_id()[target].state == "started"
    graph = env.graph(IDEMPOTENT, plug=plug)
    out = await env.run(graph, None)
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1, target: 2}
    assert all(r.state == "finished" for r in env.records())


@pytest.mark.parametrize(("answer", "effects_c2", "content", "resolution"), [
    ("retry", 2, "sent to bob", None),
    ("skip", 1, SKIPPED_TEXT, "skip"),
    ({"result": "bounced"}, 1, "bounced", "result"),
    ({"result": 42}, 1, "42", "result"),
])
async def test_answers_to_an_uncertain_call(
    env: Env, answer: Any, effects_c2: int, content: str, resolution: str | None
) -> None:
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    graph = env.graph(BATCH)
    await env.run(graph, None)
    await env.run(graph, None)  # asking again does not run anything either
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    single_interrupt(graph)
    out = await env.run(graph, Command(resume={"c2": answer}))
    assert_transcript_complete(out["messages"])
    msg = only(out["messages"], "c2")
    assert msg.content == content
    assert msg.status == ("error" if answer == "skip" else "success")
    assert msg.name == "send_email"  # the answer names the tool, as the tool's own result would
    assert env.effects() == {"c1": 1, "c2": effects_c2, "c3": 1}  # "retry": exactly once more
    assert env.by_id()["c2"].resolution == resolution
    # the thread is done: running it again changes nothing
    await env.run(graph, None)
    assert env.effects() == {"c1": 1, "c2": effects_c2, "c3": 1}


async def test_crash_during_retry_asks_again(env: Env) -> None:
    """A "retry" whose run dies too leaves a new uncertainty: ask again, do not reuse
    the earlier answer."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, None)
    single_interrupt(graph)
    hooks = install_crash(env.adapter, point="after_effect", call_id="c2", crash=crash)
    with pytest.raises(SimulatedCrash):
        await env.run(env.graph(BATCH, hooks=hooks), Command(resume={"c2": "retry"}))
    env.restart()
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}
    rec = env.by_id()["c2"]
    assert rec.state == "started" and rec.events == ["requested", "started", "started"]

    graph = env.graph(BATCH)
    await env.run(graph, None)
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c2"] and value["calls"][0]["started_at"] == rec.started_at
    # the first answer is journaled once: replaying its slot does not record it again
    asks = ToolCallKey(rec.key.ns, rec.key.checkpoint_id, ASKS_CALL_ID)
    entries = env.adapter.journal.load(THREAD, [asks])[asks].asks
    assert [(e[0], e[1]) for e in entries] == [(ASK, 0), (ANSWER, 0), (ASK, 1)]
    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}


APPROVE = [[[call("approve", "c1", action="refund")]]]


async def test_a_supplied_tool_message_for_another_call_is_refused(env: Env) -> None:
    """``{"result": ToolMessage(..., tool_call_id="oops")}`` for c2 would leave c2 without
    an answer in the history (chat APIs reject it) and put in an answer to no call: it is
    refused, re-asked with an error naming the call and the wrong id. A ToolMessage with
    c2's id is taken as it is."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, None)
    wrong = ToolMessage("sent (checked by hand)", tool_call_id="oops")
    await env.run(graph, Command(resume={"c2": {"result": wrong}}))
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c2"]
    assert "c2" in value["error"] and "'oops'" in value["error"]
    assert env.by_id()["c2"].state == "started"
    right = ToolMessage("sent (checked by hand)", tool_call_id="c2", artifact={"checked": True})
    out = await env.run(graph, Command(resume={"c2": {"result": right}}))
    assert_transcript_complete(out["messages"])
    msg = only(out["messages"], "c2")
    assert (msg.content, msg.artifact) == ("sent (checked by hand)", {"checked": True})
    assert not [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "oops"]
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}


@pytest.mark.parametrize("plug", ["tool_node", "agent"])
async def test_an_answer_given_before_the_question_is_taken(env: Env, plug: str) -> None:
    """The operator saw ``uncertain`` (``langgraph-jsonl tools``) and answered at once,
    ``Command(resume={"c2": "skip"})``, before the resumed run asked: LangGraph hands that
    value to the adapter's first ``interrupt()``. It answers the held call, so it is
    taken (journaled like any answer), and the run finishes without asking."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"), plug=plug)
    graph = env.graph(BATCH, plug=plug)
    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert_transcript_complete(out["messages"])
    assert only(out["messages"], "c2").content == SKIPPED_TEXT
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    assert (env.by_id()["c2"].state, env.by_id()["c2"].resolution) == ("finished", "skip")


@pytest.mark.parametrize("plug", ["tool_node", "agent"])
async def test_resume_command_before_the_question_gives_the_answer_early(env: Env, plug: str) -> None:
    """The operator saw ``uncertain`` and answered with the documented helper,
    ``ReplayAdapter.resume_command(state.interrupts, answers)``, before any resumed run
    asked: nothing is pending, so the helper gives the early answer (a plain
    ``Command(resume=answers)``), not an empty ``Command()`` that drops it and asks."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"), plug=plug)
    graph = env.graph(BATCH, plug=plug)
    interrupts = graph.get_state(config(THREAD)).interrupts
    assert interrupts == ()
    command = ReplayAdapter.resume_command(interrupts, {"c2": "skip"})
    assert command.resume == {"c2": "skip"}
    out = await env.run(graph, command)
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert only(out["messages"], "c2").content == SKIPPED_TEXT
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    assert (env.by_id()["c2"].state, env.by_id()["c2"].resolution) == ("finished", "skip")


async def _a_retry_died(env: Env) -> None:
    """c2 died after its effect, was asked about, answered ``"retry"`` (a plain
    ``Command(resume=...)``), and the retry died after its effect too."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, None)
    hooks = install_crash(env.adapter, point="after_effect", call_id="c2", crash=crash)
    with pytest.raises(SimulatedCrash):
        await env.run(env.graph(BATCH, hooks=hooks), Command(resume={"c2": "retry"}))
    env.restart()
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}


async def test_a_retry_that_dies_again_is_asked_about_again_not_answered_by_the_old_answer(
    env: Env,
) -> None:
    """``"retry"`` was given as a plain ``Command(resume=...)``, which LangGraph hands to
    the task again on a later ``invoke(None)``; the retry died after its effect. That
    old answer is not taken for the new run (nor as an early answer): asked again."""
    await _a_retry_died(env)
    graph = env.graph(BATCH)
    await env.run(graph, None)
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c2"] and "error" not in value
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}


async def test_a_new_answer_after_a_retry_that_died_is_taken_before_the_question(env: Env) -> None:
    """``"retry"`` was answered and the retry died after its effect; ``tools`` shows the
    call ``uncertain`` again, and the person answers at once, ``Command(resume={"c2":
    "skip"})``, before a resumed run asked (the documented early answer). LangGraph hands
    that value to the task's first slot, the one the old question and its "retry" hold in
    the journal: it is taken as the new answer, not passed by as the old one's replay."""
    await _a_retry_died(env)
    graph = env.graph(BATCH)
    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert only(out["messages"], "c2").content == SKIPPED_TEXT
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}
    assert (env.by_id()["c2"].state, env.by_id()["c2"].resolution) == ("finished", "skip")


async def test_an_early_answer_that_does_not_fit_is_said_to_be_ignored(env: Env) -> None:
    """An answer given before the question that does not answer the held call is not
    taken, and the question says so (not a silent no-op); answering it then works."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, Command(resume={"c2": "later"}))
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c2"]
    assert "before this question was asked" in value["error"] and "'later'" in value["error"]
    out = await env.run(graph, Command(resume={"c2": {"result": "bounced"}}))
    assert only(out["messages"], "c2").content == "bounced"
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}


async def test_a_tools_own_answer_is_not_taken_for_the_adapters_question(env: Env) -> None:
    """The tool's ``interrupt()`` was answered "yes" and the run died inside the tool:
    LangGraph still holds "yes" for the task's slot 0, so the adapter asks at slot 1,
    with no ``error`` about an answer nobody gave it. After "retry" the tool asks again
    (slot 2); a second death there puts the next question after that answer (slot 3)."""
    graph = env.graph(APPROVE)
    await env.start(graph)
    assert single_interrupt(graph) == {"approve": "refund"}
    for round_, (tool_answer, slot) in enumerate([("yes", 1), ("yes again", 3)]):
        hooks = install_crash(env.adapter, point="after_effect", call_id="c1", crash=crash)
        with pytest.raises(SimulatedCrash):
            await env.run(env.graph(APPROVE, hooks=hooks), Command(resume=tool_answer))
        env.restart()
        assert env.effects() == {"c1": round_ + 1}
        graph = env.graph(APPROVE)
        await env.run(graph, None)
        value = single_interrupt(graph)
        assert "error" not in value, value
        assert [c["id"] for c in value["calls"]] == ["c1"]
        rec = env.by_id()["c1"]
        asks = ToolCallKey(rec.key.ns, rec.key.checkpoint_id, ASKS_CALL_ID)
        entries = env.adapter.journal.load(THREAD, [asks])[asks].asks
        assert [(e[0], e[1]) for e in entries if e[0] == ASK][-1] == (ASK, slot)
        if round_ == 0:  # "retry": the tool runs again from its start, and asks again
            await env.run(graph, Command(resume={"c1": "retry"}))
            assert single_interrupt(graph) == {"approve": "refund"}
    out = await env.run(graph, Command(resume={"c1": "skip"}))
    assert_transcript_complete(out["messages"])
    assert only(out["messages"], "c1").content == SKIPPED_TEXT
    assert env.effects() == {"c1": 2}


@pytest.mark.parametrize("mode", ["sync"])
@pytest.mark.parametrize("by_id", [False, True], ids=["plain-resume", "resume-by-interrupt-id"])
async def test_a_refused_answer_names_the_thread_and_the_keys_that_are_not_held_calls(
    env: Env, by_id: bool
) -> None:
    """A typo'd call id is named as not held (with the held ones); the error names the
    thread; a value that is not an answer is shown. A later plain ``invoke(None)`` does
    not present an old refusal as news: it asks afresh, or (a plain
    ``Command(resume=...)``, whose value LangGraph hands to the next question again)
    says the error is about the last answer given."""
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, None)

    def answer(value: Any) -> Command:
        if not by_id:
            return Command(resume=value)
        (pending,) = graph.get_state(config(THREAD)).interrupts
        return Command(resume={pending.id: value})

    await env.run(graph, answer({"c2x": "skip"}))
    error = single_interrupt(graph)["error"]
    assert f"thread {THREAD!r}" in error and "last answer" in error
    assert "c2x" in error and "not" in error.split("c2x", 1)[1]
    await env.run(graph, answer({"c2": "retyr"}))
    error = single_interrupt(graph)["error"]
    assert "'retyr'" in error and f"thread {THREAD!r}" in error and "c2x" not in error
    for _ in range(2):
        await env.run(graph, None)
        value = single_interrupt(graph)
        assert [c["id"] for c in value["calls"]] == ["c2"]
        if by_id:
            assert "error" not in value, value
        else:
            assert "last answer" in value["error"] and "'retyr'" in value["error"]
    out = await env.run(graph, answer({"c2": "skip"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}


# (Command(resume=None) is not a resume value for LangGraph itself, so it is not tried.)
MALFORMED = {"bare-string": "retry", "list": ["retry"], "empty": {}, "other-id": {"c3": "retry"},
             "unknown-word": {"c2": "maybe"}, "no-result-key": {"c2": {"value": "x"}}, "null": {"c2": None}}
# every case sync; the async path shares the validation, so two cases there
MALFORMED_CASES = [("sync", k) for k in MALFORMED] + [("async", "bare-string"), ("async", "unknown-word")]


@pytest.mark.parametrize(("mode", "case"), MALFORMED_CASES, ids=[f"{m}-{k}" for m, k in MALFORMED_CASES])
async def test_malformed_resume_reraises_with_error(env: Env, case: str) -> None:
    bad = MALFORMED[case]
    await env.crash_run(BATCH, point="after_effect", call_id="c2", settle=("c1", "c3"))
    graph = env.graph(BATCH)
    await env.run(graph, None)
    first = single_interrupt(graph)
    await env.run(graph, Command(resume=bad))
    value = single_interrupt(graph)
    assert value["type"] == "uncertain_tool_calls"
    assert value["calls"] == first["calls"]
    if bad == {}:
        # LangGraph reads an empty dict as an (empty) map of interrupt ids: the value
        # never reaches the node, which asks again as it first did
        assert value == first
    else:
        assert isinstance(value.get("error"), str) and value["error"]
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    assert env.by_id()["c2"].state == "started"
    assert "c2" not in tool_messages(graph.get_state(config(THREAD)).values["messages"])
    # a second bad answer: still asking; then a good one goes through, "retry" once
    await env.run(graph, Command(resume={"c2": "later"}))
    assert "error" in single_interrupt(graph)
    out = await env.run(graph, Command(resume={"c2": "retry"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 2, "c3": 1}


class _BothDie(Hooks):
    """c2 and c3 both "die" after their effect, each once both effects happened."""

    def __init__(self, env: Env) -> None:
        # c1 (no hook) must have settled too, or the crash can cut it short.
        self.ready = all_of(
            effects_present(env.effects_path, ["c2", "c3"]), settled(env.records, ["c1"])
        )

    def at(self, point: str, call_id: str) -> None:
        if point == "after_effect" and call_id in ("c2", "c3"):
            wait_until(self.ready)
            crash()

    async def aat(self, point: str, call_id: str) -> None:
        if point == "after_effect" and call_id in ("c2", "c3"):
            await await_until(self.ready)
            crash()


async def test_two_uncertain_calls_one_interrupt_per_tool_node(env: Env) -> None:
    graph = env.graph(BATCH, hooks=_BothDie(env))
    with pytest.raises(SimulatedCrash):
        await env.start(graph)
    env.restart()
    assert {k: r.state for k, r in env.by_id().items()} == {
        "c1": "finished",
        "c2": "started",
        "c3": "started",
    }
    graph = env.graph(BATCH)
    await env.run(graph, None)
    value = single_interrupt(graph)
    assert sorted(c["id"] for c in value["calls"]) == ["c2", "c3"]
    await env.run(graph, Command(resume={"c2": "skip"}))  # c3 not answered
    value = single_interrupt(graph)
    assert "c3" in value["error"] and sorted(c["id"] for c in value["calls"]) == ["c2", "c3"]
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
    out = await env.run(graph, Command(resume={"c2": "skip", "c3": "retry"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 2}
    assert only(out["messages"], "c2").content == SKIPPED_TEXT
    assert {k: (r.state, r.resolution) for k, r in env.by_id().items()} == {
        "c1": ("finished", None), "c2": ("finished", "skip"), "c3": ("finished", None)}


async def test_two_uncertain_calls_create_agent_resume_command(env: Env) -> None:
    graph = env.graph(BATCH, plug="agent", hooks=_BothDie(env))
    with pytest.raises(SimulatedCrash):
        await env.start(graph)
    env.restart()
    graph = env.graph(BATCH, plug="agent")
    await env.run(graph, None)
    interrupts = graph.get_state(config(THREAD)).interrupts
    assert sorted(c["id"] for i in interrupts for c in i.value["calls"]) == ["c2", "c3"]
    assert all(len(i.value["calls"]) == 1 for i in interrupts)
    # answering only c2: c2's task goes through, c3's asks again with an error
    await env.run(graph, ReplayAdapter.resume_command(interrupts, {"c2": "skip"}))
    interrupts = graph.get_state(config(THREAD)).interrupts
    assert len(interrupts) == 1 and [c["id"] for c in interrupts[0].value["calls"]] == ["c3"]
    assert "c3" in interrupts[0].value["error"]
    out = await env.run(graph, ReplayAdapter.resume_command(interrupts, {"c2": "skip", "c3": "retry"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 2}
    assert graph.get_state(config(THREAD)).next == ()


# --------------------------------------------------------------------------
# interrupt() inside one of several parallel tool calls
# --------------------------------------------------------------------------
APPROVAL = [
    [
        [
            call("lookup_order", "c1", order_id="42"),
            call("send_email", "c2", to="bob"),
            call("approve", "c3", action="refund"),
        ]
    ]
]


@pytest.mark.parametrize("plug", ["tool_node", "plain"])
async def test_interrupt_in_parallel_call_does_not_rerun_finished_siblings(env: Env, plug: str) -> None:
    # approve interrupts only once its siblings have finished (journaled, or, without
    # the adapter, taken effect), so both graphs see the same history
    ready = (
        settled(env.records, ["c1", "c2"])
        if plug == "tool_node"
        else effects_present(env.effects_path, ["c1", "c2"])
    )
    waits = CrashAt("before_interrupt", "c3", ready, lambda: None)
    graph = env.graph(APPROVAL, plug=plug, hooks=waits)
    await env.start(graph)
    assert single_interrupt(graph) == {"approve": "refund"}
    assert env.effects() == {"c1": 1, "c2": 1}
    if plug == "tool_node":
        recs = env.by_id()
        assert {k: r.state for k, r in recs.items()} == {
            "c1": "finished",
            "c2": "finished",
            "c3": "requested",
        }
        assert recs["c3"].events == ["requested", "started", "released"]

    out = await env.run(graph, Command(resume="yes"))
    assert_transcript_complete(out["messages"])
    assert only(out["messages"], "c3").content == "refund: yes"
    if plug == "tool_node":
        assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}
        assert {k: r.state for k, r in env.by_id().items()} == {
            "c1": "finished",
            "c2": "finished",
            "c3": "finished",
        }
    else:  # plain ToolNode re-runs the whole batch: the email goes out twice
        assert env.effects() == {"c1": 2, "c2": 2, "c3": 1}


# --------------------------------------------------------------------------
# tools that raise, tools that return Command
# --------------------------------------------------------------------------
FAILING = [[[call("lookup_order", "c1", order_id="42"), call("explode", "c2", reason="disk full")]]]


async def test_failed_side_effecting_call_is_asked_about_and_not_called_again(env: Env) -> None:
    """``explode`` took effect, then raised: the run ends with its error. A resumed run
    neither runs it again on its own nor wedges on the recorded error: it asks (the
    question says how the call failed), again on each ``invoke(None)`` until answered;
    ``"skip"`` gives the model the failure. The finished sibling is not run again."""
    graph = env.graph(FAILING)
    with pytest.raises(ToolBoom, match="boom: disk full"):
        await env.start(graph)
    recs = env.by_id()
    assert (recs["c2"].state, recs["c2"].effective_state) == ("failed", "failed")
    assert recs["c2"].error == {"type": "ToolBoom", "message": "boom: disk full"}
    assert recs["c2"].events == ["requested", "started", "failed"]
    assert recs["c1"].state == "finished"
    assert env.effects() == {"c1": 1, "c2": 1}

    env.restart()
    graph = env.graph(FAILING)
    for _ in range(2):
        await env.run(graph, None)
        question = single_interrupt(graph)
        (asked,) = question["calls"]
        assert (asked["id"], asked["name"], asked["args"]) == ("c2", "explode", {"reason": "disk full"})
        assert asked["failed"] == {"error_type": "ToolBoom", "error_message": "boom: disk full"}
        assert asked["started_at"] == recs["c2"].started_at
    assert env.effects() == {"c1": 1, "c2": 1}
    assert env.by_id()["c2"].state == "failed"

    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert_transcript_complete(out["messages"])
    msg = only(out["messages"], "c2")
    assert msg.status == "error"
    assert "ToolBoom: boom: disk full" in msg.content and "not run again" in msg.content
    assert msg.content != SKIPPED_TEXT
    assert only(out["messages"], "c1").content == "order 42: shipped"
    assert env.effects() == {"c1": 1, "c2": 1}


async def test_a_new_answer_after_a_retry_that_failed_again_is_taken(env: Env) -> None:
    """The person answered ``"retry"`` and the call raised again; ``threads``/``show``
    say the thread waits for an answer, and the person gives a new one as the docs and
    ``show`` spell it, ``Command(resume={"c2": "skip"})``. That answer is taken at once:
    not passed by as LangGraph's leftover of the earlier "retry", with the question
    asked again as if nothing had been said."""
    graph = env.graph(FAILING)
    with pytest.raises(ToolBoom):
        await env.start(graph)
    env.restart()
    graph = env.graph(FAILING)
    await env.run(graph, None)
    assert [c["id"] for c in single_interrupt(graph)["calls"]] == ["c2"]
    with pytest.raises(ToolBoom):
        await env.run(graph, Command(resume={"c2": "retry"}))
    assert env.effects() == {"c1": 1, "c2": 2}

    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert_transcript_complete(out["messages"])
    msg = only(out["messages"], "c2")
    assert msg.status == "error" and "not run again" in msg.content
    assert env.effects() == {"c1": 1, "c2": 2}
    assert (env.by_id()["c2"].state, env.by_id()["c2"].resolution) == ("finished", "skip")
    assert (env.by_id()["c2"].state, env.by_id()["c2"].resolution) == ("finished", "skip")


@pytest.mark.parametrize("plug", ["tool_node", "agent"])
async def test_failed_call_is_asked_about_with_an_uncertain_sibling(env: Env, plug: str) -> None:
    """``explode`` failed and ``send_email`` died after its effect, in one batch (with
    ``create_agent`` each is its own task): the resumed run asks about both, the failure
    never hides the other question. ``"skip"`` gives the model the failure,
    ``{"result": ...}`` answers the other; the idempotent sibling is not run again."""
    plan = [[[call("explode", "c1", reason="disk full"), call("send_email", "c2", to="bob"),
              call("lookup_order", "c3", order_id="42")]]]
    # explode raises once the others have run; send_email "dies" once explode failed
    others_ran = all_of(effects_present(env.effects_path, ["c2"]), settled(env.records, ["c3"]))
    hooks = HookMap({
        ("before_effect", "c1"): lambda: wait_for(env, others_ran),
        ("after_effect", "c2"): lambda: wait_for(env, settled(env.records, ["c1"]), then=crash),
    })
    with pytest.raises((SimulatedCrash, ToolBoom)):  # whichever the tool node raises first
        await env.start(env.graph(plan, plug=plug, hooks=hooks))
    env.restart()
    states = {r.key.call_id: r.state for r in env.records()}
    assert states == {"c1": "failed", "c2": "started", "c3": "finished"}
    graph = env.graph(plan, plug=plug)
    await env.run(graph, None)
    interrupts = graph.get_state(config(THREAD)).interrupts
    asked = {c["id"]: c for i in interrupts for c in i.value["calls"]}
    assert set(asked) == {"c1", "c2"}
    assert asked["c1"]["failed"] == {"error_type": "ToolBoom", "error_message": "boom: disk full"}
    assert "failed" not in asked["c2"]
    answers = {"c1": "skip", "c2": {"result": "sent (checked)"}}
    out = await env.run(graph, ReplayAdapter.resume_command(interrupts, answers))
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert_transcript_complete(out["messages"])
    assert "ToolBoom: boom: disk full" in only(out["messages"], "c1").content
    assert only(out["messages"], "c2").content == "sent (checked)"
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}


# JsonlSaver only: ``ReplayAdapter(store=...)`` has no checkpointer to read the
# thread's messages from, so it cannot see a state edit's answer (docs/tool-calls.md).
@pytest.mark.parametrize("backend", ["jsonl"])
@pytest.mark.parametrize("plug", ["tool_node", "agent"])
async def test_a_held_failed_call_answered_with_update_state_shows_answered(
    env: Env, plug: str, capsys: Any
) -> None:
    """``explode`` took effect, then raised: the resumed run holds it and asks. A person
    answers it LangGraph's way, a ToolMessage written with ``update_state(...,
    as_node="tools")`` (docs/tool-calls.md), and the thread ends. ``tool_calls()`` said
    ``failed`` and ``tools`` ``failed ... asked`` (waiting for an answer) although the
    thread's messages answer it; now ``answered`` by a ``state edit``, as for a held
    started call. The journal still says ``failed``."""
    plan = [[[call("explode", "c1", reason="disk full")]]]
    with pytest.raises(ToolBoom, match="boom: disk full"):
        await env.start(env.graph(plan, plug=plug))
    env.restart()
    graph = env.graph(plan, plug=plug)
    await env.run(graph, None)
    assert [c["id"] for c in single_interrupt(graph)["calls"]] == ["c1"]
    assert (env.by_id()["c1"].state, env.by_id()["c1"].effective_state) == ("failed", "failed")
    store = str(env.tmp / "store")
    assert main(["tools", store, THREAD, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["state"], row["decision"]) == ("failed", "asked")  # not answered yet

    graph.update_state(config(THREAD), {"messages": [
        ToolMessage("cleaned up by hand", tool_call_id="c1", name="explode")]}, as_node="tools")
    out = await env.run(graph, None)
    assert graph.get_state(config(THREAD)).interrupts == ()
    assert only(out["messages"], "c1").content == "cleaned up by hand"
    assert env.effects() == {"c1": 1}
    rec = env.by_id()["c1"]
    assert (rec.state, rec.effective_state) == ("failed", "answered")
    assert rec.answered_with.content == "cleaned up by hand"
    assert rec.error == {"type": "ToolBoom", "message": "boom: disk full"}
    assert main(["tools", store, THREAD, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["state"], row["decision"], row["decided_by"], row["outcome"]) == (
        "answered", "answered", "state edit", "cleaned up by hand")
    assert main(["tools", store, THREAD]) == 0
    table = capsys.readouterr().out
    assert "state edit" in table and "asked" not in table


async def test_error_handled_by_tool_node_is_a_finished_result(env: Env) -> None:
    """With ``handle_tool_errors=True`` the error becomes a ToolMessage inside the tool
    node: the call is ``finished`` with that message, and replayed as such."""
    await env.crash_run(
        FAILING, point="after_finished", call_id="c1", settle=("c2",), handle_tool_errors=True
    )
    recs = env.by_id()
    assert recs["c2"].state == "finished" and recs["c2"].result.status == "error"
    graph = env.graph(FAILING, handle_tool_errors=True)
    out = await env.run(graph, None)
    assert_transcript_complete(out["messages"])
    assert "boom: disk full" in only(out["messages"], "c2").content
    assert env.effects() == {"c1": 1, "c2": 1}


COMMANDS = [[[call("set_status", "c1", status="shipped"), call("send_email", "c2", to="bob")]]]


async def test_command_result_is_journaled_and_replayed(env: Env) -> None:
    await env.crash_run(COMMANDS, point="after_finished", call_id="c1", settle=("c2",))
    rec = env.by_id()["c1"]
    assert rec.state == "finished" and isinstance(rec.result, Command)
    assert rec.result.update["status"] == "shipped"
    assert isinstance(rec.result.update["messages"][0], ToolMessage)

    graph = env.graph(COMMANDS)
    out = await env.run(graph, None)
    assert_transcript_complete(out["messages"])
    assert out["status"] == "shipped"
    assert only(out["messages"], "c1").content == "status is now shipped"
    assert env.effects() == {"c1": 1, "c2": 1}


async def test_command_tool_uncertain_then_retry(env: Env) -> None:
    await env.crash_run(COMMANDS, point="before_effect", call_id="c1", settle=("c2",))
    graph = env.graph(COMMANDS)
    await env.run(graph, None)
    assert [c["id"] for c in single_interrupt(graph)["calls"]] == ["c1"]
    out = await env.run(graph, Command(resume={"c1": "retry"}))
    assert_transcript_complete(out["messages"])
    assert out["status"] == "shipped"
    assert env.effects() == {"c1": 1, "c2": 1}


# --------------------------------------------------------------------------
# keys: a later turn reusing a call id is a different call
# --------------------------------------------------------------------------
@pytest.mark.parametrize("plug", ["tool_node", "agent"])
async def test_later_turn_reusing_call_id_gets_its_own_record(env: Env, plug: str) -> None:
    plan = [[[call("send_email", "c1", to="bob")]], [[call("send_email", "c1", to="bob")]]]
    graph = env.graph(plan, plug=plug)
    await env.start(graph)
    assert env.effects() == {"c1": 1}
    # second turn, same call id; it dies after the email went out
    hooks = install_crash(env.adapter, point="after_effect", call_id="c1", crash=crash)
    graph = env.graph(plan, plug=plug, hooks=hooks)
    with pytest.raises(SimulatedCrash):
        await env.start(graph, user="again", n=1)
    env.restart()
    recs = env.records()
    assert [r.state for r in recs] == ["finished", "started"]
    assert recs[0].key != recs[1].key and recs[0].key.checkpoint_id != recs[1].key.checkpoint_id

    graph = env.graph(plan, plug=plug)
    await env.run(graph, None)
    # not the first turn's "finished": the second call is uncertain
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c1"]
    out = await env.run(
        graph, ReplayAdapter.resume_command(graph.get_state(config(THREAD)).interrupts, {"c1": "skip"})
    )
    assert_transcript_complete(out["messages"])
    assert [m.content for m in tool_messages(out["messages"])["c1"]] == ["sent to bob", SKIPPED_TEXT]
    assert env.effects() == {"c1": 2}
    assert [(r.state, r.resolution) for r in env.records()] == [("finished", None), ("finished", "skip")]


# --------------------------------------------------------------------------
# a tool node inside a subgraph
# --------------------------------------------------------------------------
async def test_tool_node_in_subgraph(env: Env) -> None:
    def outer(plan: Plan, hooks: Hooks | None = None) -> Any:
        inner = build_graph(
            "tool_node",
            tools=make_tools(env.effects_path, asynchronous=env.mode == "async", hooks=hooks),
            plan=plan,
            checkpointer=None,
            adapter=env.adapter,
        )
        builder = StateGraph(State)
        builder.add_node("inner", inner)
        builder.add_edge(START, "inner")
        return builder.compile(checkpointer=env.saver)

    hooks = install_crash(
        env.adapter,
        point="after_effect",
        call_id="c2",
        ready=settled(env.records, ["c1", "c3"]),
        crash=crash,
    )
    with pytest.raises(SimulatedCrash):
        await env.start(outer(BATCH, hooks))
    env.restart()
    recs = env.by_id()
    assert {k: r.state for k, r in recs.items()} == {"c1": "finished", "c2": "started", "c3": "finished"}
    assert "|" in recs["c2"].key.ns  # inner:<id>|tools:<id>

    graph = outer(BATCH)
    await env.run(graph, None)
    value = single_interrupt(graph)
    assert [c["id"] for c in value["calls"]] == ["c2"]
    out = await env.run(graph, Command(resume={"c2": "skip"}))
    assert_transcript_complete(out["messages"])
    assert env.effects() == {"c1": 1, "c2": 1, "c3": 1}


# --------------------------------------------------------------------------
# threads are separate
# --------------------------------------------------------------------------
async def test_threads_do_not_share_records(env: Env) -> None:
    graph = env.graph(BATCH)
    await env.start(graph, thread="a")
    hooks = install_crash(
        env.adapter,
        point="after_effect",
        call_id="c2",
        ready=settled(lambda: env.records("b"), ["c1", "c3"]),
        crash=crash,
    )
    with pytest.raises(SimulatedCrash):
        await env.start(env.graph(BATCH, hooks=hooks), thread="b")
    env.restart()
    assert [r.state for r in env.records("a")] == ["finished"] * 3
    assert {r.key.call_id: r.state for r in env.records("b")} == {
        "c1": "finished",
        "c2": "started",
        "c3": "finished",
    }
    assert env.records("c") == []
    graph = env.graph(BATCH)
    await env.run(graph, None, thread="a")  # thread a is done: nothing to do
    await env.run(graph, None, thread="b")
    assert len(graph.get_state(config("b")).interrupts) == 1
    assert env.effects() == {"c1": 2, "c2": 2, "c3": 2}


def test_started_is_synced_to_disk_before_the_tool_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    syncs: list[int] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, _real=real: (syncs.append(fd), _real(fd))[1])
    order: list[tuple[str, Any]] = []
    with JsonlSaver(tmp_path / "store") as saver:
        adapter = ReplayAdapter(saver)
        original = adapter.journal.record

        def record(thread_id: str, events: list[dict]) -> None:
            before = len(syncs)
            original(thread_id, events)
            order.append(("record", [e["ev"] for e in events], len(syncs) - before))

        adapter.journal.record = record  # type: ignore[method-assign]
        hooks = HookMap({("before_effect", "c1"): lambda: order.append(("tool body", None))})
        graph = build_graph(
            "tool_node",
            tools=make_tools(tmp_path / "e", hooks=hooks),
            plan=[[[call("send_email", "c1", to="bob")]]],
            checkpointer=saver,
            adapter=adapter,
        )
        graph.invoke({"messages": [HumanMessage("go")]}, config(THREAD))
    assert [o[:2] for o in order] == [("record", ["requested"]), ("record", ["started"]), ("tool body", None),
                                      ("record", ["finished"])]
    assert all(o[2] >= 1 for o in order if o[0] == "record"), order  # each batch reached the disk
