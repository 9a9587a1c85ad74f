"""The saver's tool-call journal methods: orphans of lost runs, what is remembered about
settled calls, and the async twins (with ``keys``).

Written for mutants of ``saver/tool_log.py`` that survived the suite (stress/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.replay.lifecycle import ToolCallKey
from tests.harness.checkpoints import config, cp_id, make_checkpoint

LOST = cp_id(90)  # a checkpoint never stored: the run that made it was lost


def _events(call: str, *evs: str, cp: str = LOST) -> list[dict]:
    fields = {"requested": {"name": "f", "args": {"json": {"q": call}}},
              "started": {"proc": {"host": "elsewhere", "pid": 1}},
              "finished": {"result": {"json": "done"}}}
    return [{"ev": ev, "ns": "tools:1", "cp": cp, "call": call, "at": f"2026-01-01T00:00:0{i}+00:00",
             **fields[ev]} for i, ev in enumerate(evs)]


def _saver_with_a_checkpoint(path: Path) -> JsonlSaver:
    saver = JsonlSaver(path)
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    return saver


def test_orphans_are_started_calls_of_lost_runs_marked_lost(tmp_path: Path) -> None:
    saver = _saver_with_a_checkpoint(tmp_path / "s")
    saver.record_tool_events("t", _events("lost", "requested", "started"))
    saver.record_tool_events("t", _events("done", "requested", "started", "finished"))
    saver.record_tool_events("t", _events("kept", "requested", "started", cp=cp_id(1)))
    for _ in range(2):  # the second time from what the first remembered as settled
        orphans = saver.orphaned_tool_calls("t")
        assert [(r.key.call_id, r.lost_run) for r in orphans] == [("lost", True)]
        assert orphans[0].lost_run is True
    listed = [(r.key.call_id, r.state, r.lost_run) for r in saver.tool_calls("t")]
    assert listed == [("lost", "started", True), ("done", "finished", None), ("kept", "started", False)]
    only = [r.key.call_id for r in saver.tool_calls("t", [ToolCallKey("tools:1", cp_id(1), "kept")])]
    assert only == ["kept"]
    saver.close()


async def test_the_async_twins_answer_as_the_sync_methods(tmp_path: Path) -> None:
    saver = _saver_with_a_checkpoint(tmp_path / "s")
    await saver.arecord_tool_events("t", _events("a", "requested", "started"))
    await saver.arecord_tool_events("t", _events("b", "requested", "started", "finished"))
    only_b = [ToolCallKey("tools:1", LOST, "b")]
    assert [r.key.call_id for r in await saver.atool_calls("t")] == ["a", "b"]
    assert [r.key.call_id for r in await saver.atool_calls("t", only_b)] == ["b"]
    assert list(await saver.atool_call_records("t", only_b)) == list(saver.tool_call_records("t", only_b))
    assert [k.call_id for k in await saver.atool_call_records("t", only_b)] == ["b"]
    assert [r.key.call_id for r in await saver.aorphaned_tool_calls("t")] == ["a"]
    assert [r.state for r in saver.tool_calls("t")] == ["started", "finished"]
    saver.close()
