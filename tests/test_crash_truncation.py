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

import pytest

from langgraph_jsonl_checkpoint import ForeignFileError, JsonlSaver
from tests.harness.checkpoints import config, make_checkpoint
from tests.harness.raw_log import (
    ThreadFiles,
    committed_batches,
    read_quarantine,
    record_spans,
    sidecar_in_use,
)
from tests.harness.reference_log import ReferenceLog, build_reference_log
from tests.harness.scratch import fast_dir
from tests.harness.truncation import AFTER_CUT_ID, check_cut, run_truncation


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> ReferenceLog:
    return build_reference_log(tmp_path_factory.mktemp("ref") / "store")


def test_reference_log_has_the_shapes_the_battery_needs(ref: ReferenceLog) -> None:
    records = record_spans(ref.data)
    kinds = [r[2]["t"] for r in records]
    batches = committed_batches(ref.data)
    assert 45 <= len(records) <= 55
    assert kinds.count("snapshot") >= 3
    assert kinds.count("writes") >= 10
    assert max(len(b.records) for b in batches) >= 6
    assert sum(1 for b in batches if len(b.records) == 2) >= 3
    # every acknowledged size is a batch end, and every batch end was acknowledged
    assert [size for size, _ in ref.acked] == [b.end for b in batches[1:]]


def test_truncation_at_every_byte(ref: ReferenceLog, tmp_path: Path) -> None:
    scratch = fast_dir(tmp_path)
    try:
        cuts = range(ref.header_end, len(ref.data) + 1)
        checked, problems = run_truncation(ref, cuts, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert not problems, f"{len(problems)} problems, first ones:\n" + "\n".join(problems[:10])
    assert checked == len(cuts)


def test_cut_at_batch_ends_and_next_to_them_in_process(ref: ReferenceLog, tmp_path: Path) -> None:
    """The same check in this process (no fork), around every batch end: a fast signal,
    and a readable traceback if the helper itself breaks."""
    store = str(tmp_path / "s")
    JsonlSaver(store)
    cuts = sorted({c for b in committed_batches(ref.data)[1:] for c in (b.end - 1, b.end, b.end + 1)
                   if ref.header_end <= c <= len(ref.data)})
    problems = [p for c in cuts for p in check_cut(store, ref, c)]
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("where", ["empty", "inside"])
def test_cut_inside_the_header_reads_as_a_new_thread(
    ref: ReferenceLog, tmp_path: Path, where: str
) -> None:
    """A log cut inside its header line holds no committed record: it reads as an absent
    thread (read-only too), and the next put sets the bytes aside in the quarantine
    file and starts the log afresh. (The header is created atomically, so only outside
    damage makes one.)"""
    store = str(tmp_path / "s")
    JsonlSaver(store)
    files = ThreadFiles.of(store, ref.thread_id)
    cuts = [0] if where == "empty" else list(range(1, ref.header_end))
    for cut in cuts:
        for p in (files.log, files.quarantine, files.idx):
            if os.path.exists(p):
                os.unlink(p)
        with open(files.log, "wb") as f:
            f.write(ref.data[:cut])
        assert JsonlSaver(store).get_tuple(config(ref.thread_id)) is None, cut
        assert JsonlSaver(store, read_only=True).get_tuple(config(ref.thread_id)) is None
        with open(files.log, "rb") as f:
            assert f.read() == ref.data[:cut]  # reading changes nothing
        saver = JsonlSaver(store)
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config(ref.thread_id), make_checkpoint(AFTER_CUT_ID, {"m": [1]}, v), {}, v)
        fresh = JsonlSaver(store).get_tuple(config(ref.thread_id))
        assert fresh.checkpoint["id"] == AFTER_CUT_ID and fresh.checkpoint["channel_values"] == {"m": [1]}
        assert [raw for _, raw in read_quarantine(files.quarantine)] == [ref.data[:cut]], cut


def test_a_header_cut_below_its_index_fails_loudly(ref: ReferenceLog, tmp_path: Path) -> None:
    """If the sidecar says records were durable, a log cut inside its header lost data:
    refused (CorruptLogError naming the file and the repair command), not served empty."""
    from langgraph_jsonl_checkpoint import CorruptLogError

    store = str(tmp_path / "s")
    JsonlSaver(store)
    files = ThreadFiles.of(store, ref.thread_id)
    with open(files.log, "wb") as f:
        f.write(ref.data)
    saver = JsonlSaver(store)
    assert saver.get_tuple(config(ref.thread_id)) is not None
    saver.close()  # writes the sidecar
    assert sidecar_in_use(store, ref.thread_id)
    with open(files.log, "r+b") as f:
        f.truncate(ref.header_end // 2)
    with pytest.raises(CorruptLogError) as info:
        JsonlSaver(store).get_tuple(config(ref.thread_id))
    assert files.log in str(info.value) and "repair" in str(info.value)


def test_a_foreign_file_in_place_of_a_log_is_refused_and_left_alone(
    ref: ReferenceLog, tmp_path: Path
) -> None:
    """Bytes that are not a cut of this thread's header are someone else's file."""
    store = str(tmp_path / "s")
    JsonlSaver(store)
    files = ThreadFiles.of(store, ref.thread_id)
    other = ref.data[: ref.header_end - 1].replace(ref.thread_id.encode(), b"someone-else", 1)
    for junk in (b"hello", b'{"t":"header","seq":0,"format":1,"thread":"x"', other[:60], b"\x00" * 10):
        with open(files.log, "wb") as f:
            f.write(junk)
        with pytest.raises(ForeignFileError) as info:
            JsonlSaver(store).get_tuple(config(ref.thread_id))
        assert files.log in str(info.value)
        saver = JsonlSaver(store)
        v = {"m": saver.get_next_version(None, None)}
        with pytest.raises(ForeignFileError):  # the writer refuses it as the reader did
            saver.put(config(ref.thread_id), make_checkpoint(AFTER_CUT_ID, {"m": [1]}, v), {}, v)
        with open(files.log, "rb") as f:
            assert f.read() == junk
