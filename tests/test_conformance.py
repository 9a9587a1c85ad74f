"""LangGraph's checkpointer conformance suite: all 8 capabilities must be detected and pass."""

from __future__ import annotations

import tempfile

from langgraph.checkpoint.conformance import checkpointer_test, validate

from langgraph_jsonl_checkpoint import JsonlSaver

ALL_CAPABILITIES = {
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "delete_for_runs",
    "copy_thread",
    "prune",
}


def _registered(**saver_kwargs):
    @checkpointer_test(name=f"JsonlSaver{saver_kwargs or ''}")
    async def factory():
        with tempfile.TemporaryDirectory() as d:
            saver = JsonlSaver(d + "/store", **saver_kwargs)
            yield saver
            saver.close()

    return factory


def _assert_all_pass(report) -> None:
    failures = {
        cap: (result.passed, result.failures)
        for cap, result in report.results.items()
        if not result.passed
    }
    assert set(report.results) == ALL_CAPABILITIES
    assert not failures, failures
    for cap in ALL_CAPABILITIES:
        assert report.results[cap].detected, cap
        assert report.results[cap].tests_passed > 0, cap


async def test_conformance_default_options() -> None:
    _assert_all_pass(await validate(_registered()))


async def test_conformance_snapshot_every_record() -> None:
    # Snapshot records after every checkpoint exercise the snapshot path everywhere.
    _assert_all_pass(await validate(_registered(snapshot_every=1)))
