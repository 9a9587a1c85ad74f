"""Differential tests: what a *new Python process* reads from a store.

``differential`` already reopens the store with a fresh saver in the same process; here a
separate interpreter opens it, builds the same graph and dumps every thread (``list``,
``get_tuple``, ``get_state_history`` per namespace, ``get_state(subgraphs=True)``), and
the dump must equal what ``InMemorySaver`` served in the first process: nothing a reader
relies on may live only in the writing process's memory.
"""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.harness.differential import MODES, SAVER_UNDER_TEST, differential
from tests.harness.differential_normalise import assert_same, normalise
from tests.test_differential_flow import failed_branch_scenario, functional_scenario
from tests.test_differential_history import update_state_scenario
from tests.test_differential_interrupts import (
    failing_subgraph_scenario,
    nested_time_travel_scenario,
    parallel_interrupt_scenario,
    persistent_subgraph_scenario,
    send_to_subgraph_scenario,
)
from tests.test_differential_serde import values_scenario

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    SAVER_UNDER_TEST != "jsonl", reason="the new process opens the store with JsonlSaver"
)

#: (builder as "module:function", its keyword arguments, scenario)
CASES: dict[str, tuple[str, dict[str, Any], Any]] = {
    "own_checkpointer": (
        "tests.harness.feature_graphs:build_persistent_subgraph", {}, persistent_subgraph_scenario,
    ),
    "nested_time_travel": (
        "tests.harness.flow_graphs:build_nested_subgraph_graph", {"with_interrupt": True},
        nested_time_travel_scenario,
    ),
    "failing_subgraph": (
        "tests.harness.feature_graphs:build_failing_nested_subgraph", {}, failing_subgraph_scenario,
    ),
    "send_to_subgraph": (
        "tests.harness.feature_graphs:build_send_to_subgraph", {}, send_to_subgraph_scenario,
    ),
    "parallel_interrupts": (
        "tests.harness.flow_graphs:build_parallel_interrupt_graph", {}, parallel_interrupt_scenario,
    ),
    "failed_branch": (
        "tests.harness.feature_graphs:build_command_send", {"hard_fail": True},
        failed_branch_scenario,
    ),
    "functional": ("tests.harness.feature_graphs:build_functional", {}, functional_scenario),
    "update_state": ("tests.harness.state_graphs:build_counter_graph", {}, update_state_scenario),
    "values": ("tests.harness.feature_graphs:build_values_graph", {}, values_scenario),
}


def _builder(name: str, kwargs: dict[str, Any]) -> Any:
    module, function = name.split(":")
    return lambda: getattr(importlib.import_module(module), function)(**kwargs)


def _dump_in_new_process(store: Path, name: str, kwargs: dict[str, Any], mode: str) -> dict:
    code = textwrap.dedent(f"""
        import asyncio, pickle, sys
        from langgraph_jsonl_checkpoint import JsonlSaver
        from tests.harness.differential import _dump_async, _dump_sync
        from tests.test_differential_fresh_process import _builder

        with JsonlSaver({str(store)!r}) as saver:
            graph = _builder({name!r}, {kwargs!r})().compile(checkpointer=saver)
            if {mode!r} == "sync":
                dump = _dump_sync(graph, ["t1"], ())
            else:
                dump = asyncio.run(_dump_async(graph, ["t1"], ()))
        sys.stdout.buffer.write(pickle.dumps(dump))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


@pytest.mark.parametrize("durability", ["sync", "exit"])
@MODES
@pytest.mark.parametrize("case", sorted(CASES))
def test_new_process_reads_what_in_memory_saver_served(
    jsonl_saver_factory, tmp_path, case, mode, durability
):
    name, kwargs, scenario = CASES[case]
    out = differential(
        _builder(name, kwargs), scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    fresh = _dump_in_new_process(tmp_path / "store", name, kwargs, mode)
    assert_same({"dump": normalise(out.ref_dump)["dump"]}, normalise(fresh), "new process")
