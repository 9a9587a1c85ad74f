"""Differential tests: ``DeltaChannel``, a long thread with non-append edits of the message
list, nodes that mutate state in place.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from tests.harness.differential import DURABILITIES, MODES, SQLITE_DIFFERS, differential
from tests.harness.differential_ops import GetState, History, Invoke, UpdateState
from tests.harness.state_graphs import build_delta_graph, build_long_chat_graph, build_mutating_graph, human

# ---------------------------------------------------------------------------
# 7. DeltaChannel
# ---------------------------------------------------------------------------


def delta_scenario(cfg):
    yield Invoke({"target": 8}, cfg)
    yield GetState(cfg)
    yield Invoke({"target": 20}, cfg)
    yield UpdateState(cfg, {"items": ["manual"], "msgs": [AIMessage("manual", id="m-1")]})
    yield Invoke({"target": 26}, cfg)
    hist = yield History(cfg)
    old = hist[len(hist) // 2]
    fork = yield UpdateState(old.config, {"items": ["forked"]})
    yield Invoke(None, fork)
    yield GetState(fork)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_delta_channel(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_delta_graph, delta_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 3},
        delta_channels=("items", "msgs"),
    )
    # the reference run really exercised several delta snapshots
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    snaps = [
        t for t in out.ref_dump["t1"]["namespaces"][""]["list"]
        if isinstance(t.checkpoint["channel_values"].get("items"), _DeltaSnapshot)
    ]
    assert len(snaps) >= 3


# ---------------------------------------------------------------------------
# 8. long thread, non-append edits, small snapshot interval
# ---------------------------------------------------------------------------


LONG_TURNS = 150


def _long_op(i: int) -> str:
    if i % 25 == 24:
        return "summarise"
    return {3: "replace", 6: "remove"}.get(i % 10, "append")


def long_thread_scenario(cfg, turns: int = LONG_TURNS):
    for i in range(turns):
        yield Invoke({"messages": [human(f"msg {i}", f"h{i}")], "op": _long_op(i)}, cfg)
        yield GetState(cfg)
    # (the full history is compared by the dump, live and after reload)


@pytest.mark.parametrize(("mode", "turns"), [("sync", LONG_TURNS), ("async", 80)])
def test_long_thread(jsonl_saver_factory, tmp_path, mode, turns):
    out = differential(
        build_long_chat_graph, lambda cfg: long_thread_scenario(cfg, turns),
        jsonl_saver_factory, tmp_path, mode=mode, saver_kwargs={"snapshot_every": 5},
    )
    assert len(out.ref_dump["t1"]["namespaces"][""]["list"]) >= 3 * turns


@pytest.mark.parametrize("durability", ["async", "exit"])
def test_long_thread_other_durabilities(jsonl_saver_factory, tmp_path, durability):
    def scenario(cfg):
        for i in range(60):
            yield Invoke({"messages": [human(f"msg {i}", f"h{i}")], "op": _long_op(i)}, cfg)

    differential(
        build_long_chat_graph, scenario, jsonl_saver_factory, tmp_path,
        mode="async", durability=durability, saver_kwargs={"snapshot_every": 5},
    )


# ---------------------------------------------------------------------------
# 9. nodes mutating state in place
# ---------------------------------------------------------------------------


def mutation_scenario(cfg):
    for i in range(6):
        yield Invoke({"messages": [human(f"in {i}", f"mh{i}")]}, cfg)
        yield GetState(cfg)
    yield History(cfg)


@SQLITE_DIFFERS(
    "SqliteSaver stores every checkpoint's full channel_values, so a value "
    "mutated in place without being returned is persisted; InMemorySaver only "
    "stores blobs for channels in new_versions"
)
@MODES
@pytest.mark.parametrize("snapshot_every", [1, 4])
def test_in_place_mutation(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_mutating_graph, mutation_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
        # the nodes mutate values they already wrote: when LangGraph's background
        # put_writes encodes them decides what the writes hold (seen on Python 3.13)
        racy_writes=("log", "meta", "messages"),
    )
