"""Differential tests: time travel (replays and forks) and ``update_state``, with and
without ``as_node``.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

import pytest
from langgraph.graph import END

from tests.harness.differential import MODES, differential
from tests.harness.differential_ops import GetState, History, Invoke, UpdateState
from tests.harness.flow_graphs import build_review_graph
from tests.harness.state_graphs import build_counter_graph

# ---------------------------------------------------------------------------
# 5. time travel: replay and forks
# ---------------------------------------------------------------------------


def time_travel_scenario(cfg):
    yield Invoke({"n": 1}, cfg)
    yield Invoke({"n": 10}, cfg)
    hist = yield History(cfg)
    before_double = [h for h in hist if h.next == ("double",)][-1]  # oldest one
    before_report = [h for h in hist if h.next == ("report",)][-1]
    yield GetState(before_double.config)
    # replay from an old checkpoint
    yield Invoke(None, before_double.config)
    # fork: update an old checkpoint, then continue from the fork
    fork = yield UpdateState(before_double.config, {"n": 100})
    yield GetState(fork)
    yield Invoke(None, fork)
    # fork as a specific node
    fork2 = yield UpdateState(before_report.config, {"trail": ["patched"]}, as_node="double")
    yield Invoke(None, fork2)
    # continue the thread head with new input
    yield Invoke({"n": 5}, cfg)
    hist = yield History(cfg)
    # list() arguments as used by get_state_history
    yield History(cfg, limit=3)
    yield History(cfg, before=hist[4].config)
    yield History(cfg, before=hist[4].config, limit=2)
    yield History(cfg, filter={"source": "update"})
    yield History(cfg, filter={"source": "loop", "step": 2})


@MODES
@pytest.mark.parametrize("snapshot_every", [1, 3, 64])
def test_time_travel_and_forks(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_counter_graph, time_travel_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
    )


# ---------------------------------------------------------------------------
# 6. update_state, with and without as_node
# ---------------------------------------------------------------------------


def update_state_scenario(cfg):
    yield Invoke({"n": 2}, cfg, {"interrupt_before": ["double"]})
    yield UpdateState(cfg, {"n": 50})  # as_node inferred ("inc")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield UpdateState(cfg, {"trail": ["after-end"]}, as_node="report")
    yield UpdateState(cfg, {"n": 7}, as_node="inc")  # schedules "double"
    yield GetState(cfg)
    yield Invoke(None, cfg, {"interrupt_after": ["double"]})
    yield UpdateState(cfg, {"n": 1}, as_node="__input__")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield UpdateState(cfg, None, as_node="__copy__")
    yield UpdateState(cfg, None, as_node=END)  # clear pending tasks
    yield GetState(cfg)
    yield History(cfg)


def review_update_scenario(cfg):
    # bypass a pending interrupt by answering as the interrupted node
    yield Invoke({"topic": "dogs"}, cfg)
    yield UpdateState(cfg, {"approved": True}, as_node="review")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield History(cfg)


@MODES
@pytest.mark.parametrize("snapshot_every", [2, 64])
def test_update_state_as_node(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_counter_graph, update_state_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
    )


def test_update_state_over_interrupt(jsonl_saver_factory, tmp_path):
    out = differential(
        build_review_graph, review_update_scenario, jsonl_saver_factory, tmp_path
    )
    assert out.test_dump["t1"]["state"].values["draft"] == "DRAFT V0 ABOUT DOGS"
