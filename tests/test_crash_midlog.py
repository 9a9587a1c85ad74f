"""Crash battery 4: damage in the middle of a log (4 KiB zeroed).

Zeroed sectors followed by valid records are not a torn tail: opening and reading must
raise ``CorruptLogError`` naming the file and the offset of the first damaged record,
and a writer must refuse without touching the file (cutting there would throw away
every acknowledged record after the damage).

Also: a read-only open serves the valid prefix, the error names the repair command, and
`langgraph-jsonl repair` archives the original before keeping every record that can
still be read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import CorruptLogError, JsonlSaver
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles, copy_store, record_spans, sidecar_in_use, write_in_place
from tests.harness.reference_log import ReferenceLog, build_reference_log
from tests.harness.truncation import AFTER_CUT_ID

ZEROED = 4096


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReferenceLog, Path]:
    store = tmp_path_factory.mktemp("ref") / "store"
    reflog = build_reference_log(store)
    assert len(reflog.data) > 3 * ZEROED
    return reflog, store


def _damage(
    reflog: ReferenceLog, src: Path, dst: Path, *, keep_index: bool
) -> tuple[ThreadFiles, int, bytes]:
    """Copy the store and zero 4 KiB in the middle of the log.

    Returns the files, the offset of the first damaged record, and the damaged bytes.
    """
    copy_store(src, dst, index=keep_index)
    files = ThreadFiles.of(dst, reflog.thread_id)
    start = len(reflog.data) // 2 - ZEROED // 2
    damaged = reflog.data[:start] + b"\0" * ZEROED + reflog.data[start + ZEROED :]
    write_in_place(files.log, damaged)
    assert sidecar_in_use(dst, reflog.thread_id) == keep_index
    first = max(off for off, _, _ in record_spans(reflog.data) if off <= start)
    return files, first, damaged


def _valid_prefix_state(reflog: ReferenceLog, first_damaged: int) -> dict:
    state = {"list": {}, "latest": {}}
    for size, ans in reflog.acked:
        if size <= first_damaged:
            state = ans
    return state


@pytest.mark.parametrize("index", ["no-index", "with-index"])
def test_reading_raises_corrupt_log_error_naming_file_and_offset(
    ref: tuple[ReferenceLog, Path], tmp_path: Path, index: str
) -> None:
    reflog, src = ref
    files, first, _ = _damage(reflog, src, tmp_path / "store", keep_index=index == "with-index")
    saver = JsonlSaver(tmp_path / "store")
    with pytest.raises(CorruptLogError) as info:
        list(saver.list(config(reflog.thread_id)))
    err = info.value
    assert err.path == files.log
    # Without an index the scan finds the first damaged record. With one, a read finds
    # whichever damaged record it needed; it must lie in the damaged stretch.
    if index == "no-index":
        assert err.offset == first
    else:
        assert first <= err.offset < len(reflog.data) // 2 + ZEROED // 2
    assert files.log in str(err) and str(err.offset) in str(err)
    if index == "no-index":
        with pytest.raises(CorruptLogError):
            JsonlSaver(tmp_path / "store").get_tuple(config(reflog.thread_id))


@pytest.mark.parametrize("index", ["no-index", "with-index"])
def test_a_writer_refuses_and_changes_nothing(
    ref: tuple[ReferenceLog, Path], tmp_path: Path, index: str
) -> None:
    reflog, src = ref
    files, _, damaged = _damage(reflog, src, tmp_path / "store", keep_index=index == "with-index")
    saver = JsonlSaver(tmp_path / "store")
    v = {"m": saver.get_next_version(None, None)}
    with pytest.raises(CorruptLogError):
        saver.put(config(reflog.thread_id), make_checkpoint(AFTER_CUT_ID, {"m": [1]}, v), {}, v)
    with pytest.raises(CorruptLogError):
        saver.put_writes(config(reflog.thread_id, "", cp_id(3)), [("m", 1)], "late-task")
    with open(files.log, "rb") as f:
        assert f.read() == damaged, "a writer changed a log with mid-log damage"
    assert not os.path.exists(files.quarantine)


def test_read_only_open_serves_the_valid_prefix(ref: tuple[ReferenceLog, Path], tmp_path: Path) -> None:
    reflog, src = ref
    _, first, _ = _damage(reflog, src, tmp_path / "store", keep_index=False)
    saver = JsonlSaver(tmp_path / "store", read_only=True)
    want = _valid_prefix_state(reflog, first)
    got = answers(saver, reflog.thread_id)
    assert not diff_answers(got, want), diff_answers(got, want)


def test_error_names_the_repair_command(ref: tuple[ReferenceLog, Path], tmp_path: Path) -> None:
    reflog, src = ref
    _damage(reflog, src, tmp_path / "store", keep_index=False)
    with pytest.raises(CorruptLogError, match="langgraph-jsonl repair"):
        JsonlSaver(tmp_path / "store").get_tuple(config(reflog.thread_id))


def test_repair_archives_the_original_then_keeps_every_readable_record(
    ref: tuple[ReferenceLog, Path], tmp_path: Path
) -> None:
    reflog, src = ref
    store = tmp_path / "store"
    files, first, damaged = _damage(reflog, src, store, keep_index=False)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "langgraph_jsonl_checkpoint",
            "repair",
            str(store),
            "--thread",
            reflog.thread_id,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    archived = [
        os.path.join(root, f) for root, _, fs in os.walk(store) for f in fs
        if Path(root, f).read_bytes() == damaged
    ]
    assert archived, "repair did not keep a copy of the damaged log"
    saver = JsonlSaver(store)
    got = answers(saver, reflog.thread_id)
    prefix = _valid_prefix_state(reflog, first)["list"]
    # nothing before the damage is lost, and nothing served is wrong
    assert set(prefix) <= set(got["list"])
    _served_as_acknowledged(got, reflog)
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config(reflog.thread_id), make_checkpoint(AFTER_CUT_ID, {"m": [1]}, v), {}, v)
    assert JsonlSaver(store).get_tuple(config(reflog.thread_id)).checkpoint["id"] == AFTER_CUT_ID


def _served_as_acknowledged(got: dict, reflog: ReferenceLog) -> None:
    final = reflog.acked[-1][1]["list"]
    for key, tup in got["list"].items():
        want = final[key]
        assert (tup.checkpoint, tup.metadata, tup.parent_config) == (
            want.checkpoint, want.metadata, want.parent_config
        ), key
        assert all(w in want.pending_writes for w in tup.pending_writes), key


def test_repair_after_one_flipped_byte_loses_only_that_record(
    ref: tuple[ReferenceLog, Path], tmp_path: Path
) -> None:
    """Every line has its own checksum: a byte flipped in a writes record in the middle
    costs that record's writes, not the records after it."""
    reflog, src = ref
    store = tmp_path / "store"
    copy_store(src, store, index=False)
    files = ThreadFiles.of(store, reflog.thread_id)
    spans = record_spans(reflog.data)
    offset, length, rec = next(s for s in spans if s[0] > len(reflog.data) // 2 and s[2]["t"] == "writes")
    data = bytearray(reflog.data)
    data[offset + length // 2] ^= 0x20
    write_in_place(files.log, bytes(data))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "langgraph_jsonl_checkpoint",
            "repair",
            str(store),
            "--thread",
            reflog.thread_id,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "dropped bytes" in run.stdout and "dropped checkpoint" not in run.stdout
    got = answers(JsonlSaver(store), reflog.thread_id)
    assert set(got["list"]) == set(reflog.acked[-1][1]["list"])  # every checkpoint
    _served_as_acknowledged(got, reflog)
    lost = [w for key, t in reflog.acked[-1][1]["list"].items() for w in t.pending_writes
            if w not in got["list"][key].pending_writes]
    assert lost and {w[0] for w in lost} == {rec["task"]}
