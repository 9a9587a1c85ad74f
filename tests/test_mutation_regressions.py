"""Regression tests for mutants that once survived the whole suite (see
``stress/mutation.py`` and its reports in ``stress/results/``): each test names the
behaviour the mutant changed.
"""

from __future__ import annotations

import time
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import AFTER_DELETE, ThreadFiles


def _put(saver, thread: str, i: int) -> dict:
    v = {"m": saver.get_next_version(None, None)}
    return saver.put(config(thread), make_checkpoint(cp_id(i), {"m": [f"v{i}"]}, v), {}, v)


def _with_quarantined_tail(tmp_path: Path) -> tuple[JsonlSaver, ThreadFiles]:
    """A saver whose thread ``t`` has a torn tail (holding "secret") cut into its
    ``.quarantine`` file by the next append."""
    saver = JsonlSaver(tmp_path / "s")
    _put(saver, "t", 1)
    files = ThreadFiles.of(tmp_path / "s", "t")
    with open(files.log, "ab") as f:
        f.write(b'{"t":"checkpoint","ns":"","id":"torn, with a secret","pa')
    _put(saver, "t", 2)  # the next append cuts the torn tail into the quarantine file
    assert ".quarantine" in files.left_on_disk()
    return saver, files


def test_delete_thread_removes_the_quarantined_torn_tail(tmp_path: Path) -> None:
    """Mutant: ``delete_thread`` left the ``.quarantine`` file behind, keeping a deleted
    thread's torn bytes on disk (privacy: delete means every checkpoint and write)."""
    saver, files = _with_quarantined_tail(tmp_path)
    saver.delete_thread("t")
    left = files.left_on_disk()
    assert left <= AFTER_DELETE and ".quarantine" not in left, left
    assert not any(b"secret" in p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file())
    saver.close()


def test_archiving_removes_the_quarantined_torn_tail(tmp_path: Path) -> None:
    """Hand-made bug (issue 27): archiving (``Tombstone.move_log``) left the
    ``.quarantine`` file behind in ``threads/``: an archived thread's torn bytes stayed
    beside the store's live threads. They go into the archive with the log, and a
    restore brings them back as they were."""
    saver, files = _with_quarantined_tail(tmp_path)
    quarantined = Path(files.quarantine).read_bytes()
    report = saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + 3600)
    assert report.swept == [("t", "archive")] and [e.thread_id for e in saver.archived()] == ["t"]
    left = files.left_on_disk()
    assert left <= AFTER_DELETE and ".quarantine" not in left, left
    threads = tmp_path / "s" / "threads"
    assert not any(b"secret" in p.read_bytes() for p in threads.iterdir() if p.is_file())
    saver.restore("t")
    assert Path(files.quarantine).read_bytes() == quarantined
    saver.close()


def test_compact_keeps_a_writes_record_that_is_only_partly_superseded(tmp_path: Path) -> None:
    """Mutant: ``compact`` dropped a writes record once any of its entries was superseded,
    losing the regular write that shared the record with a replaced interrupt."""
    saver, mem = JsonlSaver(tmp_path / "s"), InMemorySaver()
    for s in (saver, mem):
        out = _put(s, "t", 1)
        s.put_writes(out, [("m", "regular"), ("__interrupt__", "first")], "task")
        s.put_writes(out, [("__interrupt__", "second")], "task")
    want = mem.get_tuple(config("t")).pending_writes
    assert saver.get_tuple(config("t")).pending_writes == want
    saver.compact("t")
    assert saver.get_tuple(config("t")).pending_writes == want
    assert sorted(want) == [("task", "__interrupt__", "second"), ("task", "m", "regular")]
    saver.close()
    assert JsonlSaver(tmp_path / "s", read_only=True).get_tuple(config("t")).pending_writes == want
