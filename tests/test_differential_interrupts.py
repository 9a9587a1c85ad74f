"""Differential tests: ``interrupt()`` and ``Command(resume=...)``, parallel and repeated
interrupts, nested subgraphs and an interrupt inside one, a subgraph with its own
checkpointer, time travel through nested subgraphs, errors and retries inside them.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

from langgraph.types import Command, StateSnapshot

from tests.harness.differential import DURABILITIES, MODES, SQLITE_DIFFERS, differential
from tests.harness.differential_ops import GetState, History, Invoke, Stream, UpdateState
from tests.harness.feature_graphs import (
    build_failing_nested_subgraph,
    build_persistent_subgraph,
    build_send_to_subgraph,
)
from tests.harness.flow_graphs import (
    build_nested_subgraph_graph,
    build_parallel_interrupt_graph,
    build_review_graph,
)

# ---------------------------------------------------------------------------
# 2. interrupt() + Command(resume=...)
# ---------------------------------------------------------------------------


def review_scenario(cfg):
    yield Invoke({"topic": "cats"}, cfg)
    yield GetState(cfg)
    yield Invoke(Command(resume="make it longer"), cfg)
    yield GetState(cfg)
    yield Invoke(Command(resume="yes"), cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_interrupt_resume(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_review_graph, review_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 2},
    )
    interrupted = out.test_transcript[1][1]
    assert interrupted.next == ("review",)
    assert interrupted.tasks[0].interrupts[0].value["question"] == "approve?"
    assert out.test_dump["t1"]["state"].values["draft"] == "DRAFT V1 ABOUT CATS"


def parallel_interrupt_scenario(cfg):
    yield Invoke({"answers": []}, cfg)
    state = yield GetState(cfg)
    answers = {"name?": "Ann", "age?": "42"}
    resume = {
        i.id: answers.get(i.value, "red") if isinstance(i.value, str) else "red"
        for i in state.interrupts
    }
    yield Invoke(Command(resume=resume), cfg)
    state = yield GetState(cfg)
    yield Invoke(Command(resume={i.id: answers[i.value] for i in state.interrupts}), cfg)
    yield GetState(cfg)
    yield History(cfg)


@SQLITE_DIFFERS(
    "SqliteSaver.put_writes uses INSERT OR IGNORE for a batch mixing special and "
    "regular channels, so the second __resume__ write of a task is dropped; "
    "InMemorySaver always overwrites special (negative idx) writes"
)
@MODES
def test_parallel_and_repeated_interrupts(jsonl_saver_factory, tmp_path, mode):
    out = differential(
        build_parallel_interrupt_graph, parallel_interrupt_scenario,
        jsonl_saver_factory, tmp_path, mode=mode,
    )
    assert out.test_dump["t1"]["state"].values["summary"] == "age=42;color=red;name=Ann"


# ---------------------------------------------------------------------------
# 4. nested subgraphs, get_state(subgraphs=True), subgraph interrupt
# ---------------------------------------------------------------------------


def nested_scenario(cfg):
    yield Invoke({"trail": ["start"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield Stream({"trail": ["again"]}, cfg, {"subgraphs": True})
    yield History(cfg)


@MODES
def test_nested_subgraphs(jsonl_saver_factory, tmp_path, mode):
    out = differential(
        build_nested_subgraph_graph, nested_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": 3},
    )
    assert len(out.test_dump["t1"]["namespaces"]) > 1  # subgraph namespaces exist


def subgraph_interrupt_scenario(cfg):
    yield Invoke({"trail": ["start"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield GetState(cfg)
    yield Invoke(Command(resume="leafy"), cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)


@DURABILITIES
@MODES
def test_subgraph_interrupt(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        lambda: build_nested_subgraph_graph(with_interrupt=True),
        subgraph_interrupt_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 2},
    )
    paused = out.test_transcript[1][1]
    assert paused.next == ("mid",)
    inner = paused.tasks[0].state
    assert isinstance(inner, StateSnapshot) and inner.next == ("leaf",)
    assert inner.tasks[0].state.next == ("l_ask",)
    assert "leaf-answer=leafy" in out.test_dump["t1"]["state"].values["trail"]


# ---------------------------------------------------------------------------
# a subgraph with its own checkpointer (checkpointer=True), interrupted and resumed
# ---------------------------------------------------------------------------


def persistent_subgraph_scenario(cfg):
    yield Invoke({"log": ["start"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume="one"), cfg)
    yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume="two"), cfg)
    yield GetState(cfg, subgraphs=True)
    # a second run: the subgraphs' own state carries over
    yield Invoke({"log": ["again"]}, cfg)
    yield Invoke(Command(resume="three"), cfg)
    yield Invoke(Command(resume="four"), cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)
    yield History(cfg, limit=2)


@DURABILITIES
@MODES
def test_subgraph_with_own_checkpointer(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_persistent_subgraph, persistent_subgraph_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 2},
    )
    assert "child-ans=three" in out.test_dump["t1"]["state"].values["log"]


# ---------------------------------------------------------------------------
# time travel through nested subgraphs: their own configs, histories, update_state
# ---------------------------------------------------------------------------


def _checkpoint_config(config: dict) -> dict:
    keep = ("thread_id", "checkpoint_ns", "checkpoint_id")
    return {"configurable": {k: v for k, v in config["configurable"].items() if k in keep}}


def nested_time_travel_scenario(cfg):
    yield Invoke({"trail": ["start"]}, cfg)
    paused = yield GetState(cfg, subgraphs=True)
    mid = _checkpoint_config(paused.tasks[0].state.config)
    leaf = _checkpoint_config(paused.tasks[0].state.tasks[0].state.config)
    yield GetState(mid, subgraphs=True)
    yield GetState(leaf)
    yield History(leaf)
    yield History(mid)
    yield UpdateState(leaf, {"trail": ["patched-leaf"]})
    yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume="r1"), cfg)
    hist = yield History(cfg)
    # replay from the checkpoint where the leaf was waiting
    old = [h for h in hist if h.next == ("mid",)][-1]
    yield GetState(old.config, subgraphs=True)
    yield Invoke(None, old.config)
    yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume="r2"), cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_nested_subgraph_time_travel(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        lambda: build_nested_subgraph_graph(with_interrupt=True), nested_time_travel_scenario,
        jsonl_saver_factory, tmp_path, mode=mode, durability=durability,
        saver_kwargs={"snapshot_every": 2},
    )
    assert "leaf-answer=r2" in out.test_dump["t1"]["state"].values["trail"]


# ---------------------------------------------------------------------------
# a failing node, a retried node and an interrupt two subgraphs down
# ---------------------------------------------------------------------------


def failing_subgraph_scenario(cfg):
    yield Invoke({"log": ["s"]}, cfg, expect_error=True)
    yield GetState(cfg, subgraphs=True)  # the error is a pending write of the leaf
    yield Invoke(None, cfg)
    yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume="yes"), cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)


@DURABILITIES
@MODES
def test_errors_and_interrupt_in_a_nested_subgraph(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_failing_nested_subgraph, failing_subgraph_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert "ans=yes" in out.test_dump["t1"]["state"].values["log"]


# ---------------------------------------------------------------------------
# Send to a subgraph node: parallel subgraph runs, each interrupted, resumed one by one
# ---------------------------------------------------------------------------


def send_to_subgraph_scenario(cfg):
    yield Invoke({"log": []}, cfg)
    paused = yield GetState(cfg, subgraphs=True)
    waiting = sorted(paused.interrupts, key=lambda i: i.value["idx"])
    yield Invoke(Command(resume={waiting[1].id: "B"}), cfg)  # one branch only
    paused = yield GetState(cfg, subgraphs=True)
    yield Invoke(Command(resume={i.id: f"v{i.value['idx']}" for i in paused.interrupts}), cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)


@DURABILITIES
@MODES
def test_send_to_a_subgraph_with_interrupts(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_send_to_subgraph, send_to_subgraph_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert len(out.test_dump["t1"]["namespaces"]) == 4  # the root and three branches
    assert "branch1=B" in out.test_dump["t1"]["state"].values["log"]
