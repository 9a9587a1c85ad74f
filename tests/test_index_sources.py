"""An index loaded from the sidecar answers, and steers the next writes, exactly as one
built by scanning the log.

Written for mutants of ``disk/index.py``, ``disk/columns.py`` and ``disk/sidecar.py``
that survived the suite (stress/mutation.py): the sidecar's bulk path was checked on
reads of plain checkpoints, not on tool events, versions stored twice, or the snapshot
counters that decide when the next snapshot is written.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles

AT = cp_id(1)


def _events(call: str, *evs: str) -> list[dict]:
    fields = {"requested": {"name": "lookup", "args": {"json": {"q": call}}}, "started": {},
              "finished": {"result": {"json": f"found {call}"}}}
    return [{"ev": ev, "ns": "", "cp": AT, "call": call, "at": f"2026-01-01T00:00:0{i}+00:00", **fields[ev]}
            for i, ev in enumerate(evs)]


def _grow(saver: JsonlSaver, thread: str, start: int, stop: int, parent: dict | None) -> dict | None:
    """Checkpoints ``start..stop-1`` of a growing list, each with writes; every third one
    stores an old version of ``n`` again (a version stored twice)."""
    for i in range(start, stop):
        prev = saver.get_tuple(config(thread)) if parent else None
        old = prev.checkpoint["channel_versions"] if prev else {}
        items = list(prev.checkpoint["channel_values"].get("m", [])) if prev else []
        again = i % 3 == 0 and "n" in old
        versions = {"m": f"{i:032}.{7:016}", "n": old["n"] if again else f"{i:032}.{8:016}"}
        values = {"m": items + [f"message {i} " + "x" * 40], "n": {"i": i}}
        parent = saver.put(parent or config(thread), make_checkpoint(cp_id(i), values, versions),
                           {"step": i}, versions)
        saver.put_writes(parent, [("m", f"w{i}"), ("__interrupt__", {"i": i})], f"task-{i}", f"~{i}")
        if i % 4 == 0:
            saver.put_writes(parent, [("__interrupt__", {"again": i})], f"task-{i}", f"~{i}")
    return parent


def _answers(saver: JsonlSaver, thread: str) -> tuple:
    listed = [(t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes)
              for t in saver.list(config(thread))]
    tools = sorted(((r.key.call_id, r.key), tuple(r.events)) for r in saver.tool_calls(thread))
    return listed, tools


def _log_records(store: Path, thread: str) -> list[bytes]:
    with open(ThreadFiles.of(store, thread).log, "rb") as f:
        return f.read().splitlines()


def test_sidecar_and_scan_give_the_same_answers_and_the_same_next_records(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=3, snapshot_ratio=0.5)
    parent = _grow(saver, "t", 1, 12, None)
    saver.record_tool_events("t", _events("c1", "requested", "started", "finished"))
    saver.record_tool_events("t", _events("c2", "requested", "started"))
    parent = _grow(saver, "t", 12, 15, parent)
    saver.close()
    files = ThreadFiles.of(store, "t")
    assert os.path.exists(files.idx)
    scanned = tmp_path / "scanned"
    shutil.copytree(store, scanned)
    os.unlink(ThreadFiles.of(scanned, "t").idx)

    results = []
    for path in (store, scanned):
        fresh = JsonlSaver(path, snapshot_every=3, snapshot_ratio=0.5)
        before = _answers(fresh, "t")
        _grow(fresh, "t", 15, 24, fresh.get_tuple(config("t")).config)
        fresh.record_tool_events("t", _events("c3", "requested"))
        after = _answers(fresh, "t")
        fresh.close()
        grown = _log_records(path, "t")
        again = JsonlSaver(path, snapshot_every=3, snapshot_ratio=0.5)
        again.compact("t")  # maintenance walks every stored value (the index's ``blobs``)
        assert _answers(again, "t") == after
        again.close()
        results.append((before, after, grown))
    assert results[0] == results[1]
    (before, after, grown) = results[0]
    assert len(before[0]) == 14 and len(after[0]) == 23
    assert [k[0] for k, _ in after[1]] == ["c1", "c2", "c3"]
    # The same records after the header (which holds the rewrite's wall-clock time).
    assert _log_records(store, "t")[1:] == _log_records(scanned, "t")[1:]
    assert any(b'"t":"snapshot"' in line for line in grown[-20:])  # written after the reload
