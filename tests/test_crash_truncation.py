"""Crash battery 1: a log cut at every byte.

A ~50-record log is built once through the real saver (``snapshot_every=4``, so
snapshot records make two-record batches; a ``copy_thread`` makes a six-record batch;
``put_writes`` with regular and special channels; two namespaces). Every call is
mirrored into ``InMemorySaver``, so after each call we know what had been acknowledged
and where the file ended.

For every cut from the end of the header to the full length, a fresh saver must serve
exactly what the InMemorySaver served after the last call whose batch lies wholly
before the cut; a ``put`` must then succeed, a reopened saver must serve it on top of
the same prefix, and the torn bytes must be in the quarantine file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import crashkit as ck
import pytest

from langgraph_jsonl_checkpoint import ForeignFileError, JsonlCheckpointError, JsonlSaver


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> ck.ReferenceLog:
    return ck.build_reference_log(tmp_path_factory.mktemp("ref") / "store")


def test_reference_log_has_the_shapes_the_battery_needs(ref: ck.ReferenceLog) -> None:
    records = ck.record_spans(ref.data)
    kinds = [r[2]["t"] for r in records]
    batches = ck.committed_batches(ref.data)
    assert 45 <= len(records) <= 55
    assert kinds.count("snapshot") >= 3
    assert kinds.count("writes") >= 10
    assert max(len(b.records) for b in batches) >= 6
    assert sum(1 for b in batches if len(b.records) == 2) >= 3
    # every acknowledged size is a batch end, and every batch end was acknowledged
    assert [size for size, _ in ref.acked] == [b.end for b in batches[1:]]


def test_truncation_at_every_byte(ref: ck.ReferenceLog, tmp_path: Path) -> None:
    scratch = ck.fast_dir(tmp_path)
    try:
        cuts = range(ref.header_end, len(ref.data) + 1)
        checked, problems = ck.run_truncation(ref, cuts, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:10])
    assert checked == len(cuts)


def test_cut_at_batch_ends_and_next_to_them_in_process(ref: ck.ReferenceLog, tmp_path: Path) -> None:
    """The same check in this process (no fork), around every batch end: a fast signal,
    and a readable traceback if the helper itself breaks."""
    store = str(tmp_path / "s")
    JsonlSaver(store)
    cuts = sorted({c for b in ck.committed_batches(ref.data)[1:] for c in (b.end - 1, b.end, b.end + 1)
                   if ref.header_end <= c <= len(ref.data)})
    problems = [p for c in cuts for p in ck.check_cut(store, ref, c)]
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("where", ["empty", "inside"])
def test_cut_inside_the_header_is_refused_and_left_alone(ref: ck.ReferenceLog, tmp_path: Path, where: str) -> None:
    """The header is written by an atomic create (temp file + fsync + rename), so a torn
    header is never a crash state of this library: only outside damage makes one. The
    saver refuses the file with an error naming it and changes nothing (it does not
    treat it as an empty thread and write over it)."""
    store = str(tmp_path / "s")
    JsonlSaver(store)
    files = ck.ThreadFiles.of(store, ref.thread_id)
    cuts = [0] if where == "empty" else list(range(1, ref.header_end))
    for cut in cuts:
        with open(files.log, "wb") as f:
            f.write(ref.data[:cut])
        with pytest.raises(ForeignFileError) as info:
            JsonlSaver(store).get_tuple(ck.config(ref.thread_id))
        assert files.log in str(info.value)
        saver = JsonlSaver(store)  # fresh: test_crash_security checks a refusal stays refused
        v = {"m": saver.get_next_version(None, None)}
        with pytest.raises(JsonlCheckpointError):
            saver.put(ck.config(ref.thread_id), ck.make_checkpoint(ck.AFTER_CUT_ID, {"m": [1]}, v), {}, v)
        with open(files.log, "rb") as f:
            assert f.read() == ref.data[:cut]
        assert not os.path.exists(files.quarantine)
