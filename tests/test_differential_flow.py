"""Differential tests: the tool-calling agent (with a second interleaved thread),
fan-out / fan-in and ``Send``, a task that fails and is retried, ``Command(goto=...)``
with a ``Send`` fan-out (one branch retried, one failing), ``Command.PARENT``, and the
functional API.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

import pytest
from langgraph.types import Command

from tests.harness.differential import DURABILITIES, MODES, SQLITE_DIFFERS, cfg_of, differential
from tests.harness.differential_ops import GetState, History, Invoke, Stream
from tests.harness.feature_graphs import build_command_send, build_functional, build_parent_command
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


# ---------------------------------------------------------------------------
# Command(goto=...) with a Send fan-out: one branch retried, one failing, then a fork
# ---------------------------------------------------------------------------


def command_send_scenario(cfg):
    yield Invoke({"log": ["s"]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_command_goto_and_send_with_retry(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_command_send, command_send_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert "work 1 ok" in out.test_dump["t1"]["state"].values["log"]


def failed_branch_scenario(cfg):
    yield Invoke({"log": ["s"]}, cfg, expect_error=True)
    yield GetState(cfg)  # the branches that succeeded are pending writes
    yield Invoke(None, cfg)
    yield GetState(cfg)
    hist = yield History(cfg)
    # fork from the checkpoint the Send branches ran from
    yield Invoke(None, [h for h in hist if "work" in h.next][-1].config)
    yield History(cfg)


@DURABILITIES
@MODES
def test_send_branch_fails_then_resume_and_fork(jsonl_saver_factory, tmp_path, mode, durability):
    differential(
        lambda: build_command_send(hard_fail=True), failed_branch_scenario,
        jsonl_saver_factory, tmp_path, mode=mode, durability=durability,
    )


def parent_command_scenario(cfg):
    yield Invoke({"log": ["s"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)


@DURABILITIES
@MODES
def test_command_to_parent_graph(jsonl_saver_factory, tmp_path, mode, durability):
    differential(
        build_parent_command, parent_command_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )


# ---------------------------------------------------------------------------
# the functional API: @entrypoint, parallel @tasks, an interrupt, previous and final
# ---------------------------------------------------------------------------


def functional_scenario(cfg):
    yield Invoke({"n": 3}, cfg)
    yield GetState(cfg)
    yield Invoke(Command(resume="yes"), cfg)
    yield Invoke({"n": 2}, cfg)
    yield Invoke(Command(resume="again"), cfg)
    yield GetState(cfg)
    yield History(cfg)


@pytest.mark.parametrize("durability", [
    "sync", "async",
    pytest.param("exit", marks=SQLITE_DIFFERS(
        "SqliteSaver's exit checkpoint keeps the __interrupt__ key LangGraph adds in place "
        "to the previous run's returned dict; InMemorySaver's does not")),
])
@MODES
def test_functional_api(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_functional, functional_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert out.test_transcript[-3][1]["prev"] == {"last": "yes", "prev": None}
