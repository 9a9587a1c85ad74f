"""Differential tests: the tool-calling agent (with a second interleaved thread),
fan-out / fan-in and ``Send``, a task that fails and is retried.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

from tests.harness.differential import DURABILITIES, MODES, cfg_of, differential
from tests.harness.differential_ops import GetState, History, Invoke, Stream
from tests.harness.flow_graphs import build_agent_graph, build_fanout_graph, build_flaky_graph
from tests.harness.state_graphs import human

# ---------------------------------------------------------------------------
# 1. tool-calling agent (+ a second interleaved thread)
# ---------------------------------------------------------------------------


def agent_scenario(cfg):
    other = cfg_of("t2")
    yield Invoke({"messages": [human("add 2 3", "h1")]}, cfg)
    yield GetState(cfg)
    yield Invoke({"messages": [human("mul 3 4", "o1")]}, other)
    yield Stream({"messages": [human("both 4 5", "h2")]}, cfg)
    yield Invoke({"messages": [human("hello there", "h3")]}, cfg)
    yield Invoke({"messages": [human("hi", "o2")]}, other)
    yield Invoke({"messages": [human("mul 6 7", "h4")]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_agent(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_agent_graph, agent_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, thread_ids=("t1", "t2"),
        saver_kwargs={"snapshot_every": 3},
    )
    final = out.test_dump["t1"]["state"].values["messages"]
    assert [m.content for m in final][-1] == "result: multiply=42"


# ---------------------------------------------------------------------------
# 3. fan-out / fan-in and Send (map-reduce)
# ---------------------------------------------------------------------------


def fanout_scenario(cfg):
    yield Invoke({"items": ["a", "b", "c"]}, cfg)
    yield Stream({"items": ["x", "y"]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_fanout_and_send(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        lambda: build_fanout_graph(barrier=durability != "async"),
        fanout_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert out.test_dump["t1"]["state"].values["results"] == [
        "0:A", "1:B", "2:C", "0:X", "1:Y",
    ]


# ---------------------------------------------------------------------------
# extra: task error stored as pending write, then retry
# ---------------------------------------------------------------------------


def flaky_scenario(cfg):
    yield Invoke({"log": ["go"]}, cfg, expect_error=True)
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_error_then_retry(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_flaky_graph, flaky_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert out.test_transcript[0][1][0] == "raised"
