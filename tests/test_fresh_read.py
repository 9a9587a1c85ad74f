"""A fresh process's first read of a log that has no usable sidecar.

Such a read indexes the whole log by a scan, which parses every record; the records the
latest checkpoint needs (its own, each delta of a growing list back to a full value, its
writes) are then taken from that scan instead of being read and parsed a second time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import view
from langgraph_jsonl_checkpoint.disk.entries import RecordRef
from langgraph_jsonl_checkpoint.disk.view import LogView
from langgraph_jsonl_checkpoint.errors import CorruptLogError
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _fill(store: Path, thread: str = "t", n: int = 12) -> None:
    """``n`` checkpoints of a growing list (stored as a chain of deltas), with writes."""
    saver = JsonlSaver(store)
    parent = config(thread)
    items: list[str] = []
    for i in range(1, n + 1):
        items = items + [f"message {i} " + "x" * 30]
        versions = {"m": f"{i:032}.{7:016}", "n": f"{i:032}.{8:016}"}
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items, "n": {"i": i}}, versions),
                           {"step": i}, versions)
        saver.put_writes(parent, [("m", f"w{i}"), ("n", {"w": i})], f"task-{i}", f"~{i}")
    saver.close()


def _expected(store: Path, thread: str = "t") -> tuple:
    """The latest tuple as a saver that reads every record from the file gives it (the
    head file set aside; the saver's close writes it again)."""
    _without_head(store, thread)
    saver = JsonlSaver(store)
    tup = saver.get_tuple(config(thread))
    saver.close()
    assert tup is not None
    return tup


def _without_sidecar(store: Path, thread: str = "t") -> None:
    os.unlink(ThreadFiles.of(store, thread).idx)


def _without_head(store: Path, thread: str = "t") -> None:
    """No head file: the next fresh read indexes the log (the path these tests are
    about; a current head would serve the read instead, see test_head_file.py)."""
    os.unlink(ThreadFiles.of(store, thread).head)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many records the views read from their files after indexing (one count per call)."""
    reads: list[int] = []
    original_many, original_one = LogView.read_records, LogView.read_record

    def read_records(self, refs):  # noqa: ANN001, ANN202
        reads.append(len(refs))
        return original_many(self, refs)

    def read_record(self, ref):  # noqa: ANN001, ANN202
        reads.append(1)
        return original_one(self, ref)

    monkeypatch.setattr(LogView, "read_records", read_records)
    monkeypatch.setattr(LogView, "read_record", read_record)
    return reads


def test_the_first_get_tuple_of_an_unindexed_log_parses_each_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s"
    _fill(store)
    _without_sidecar(store)
    expected = _expected(store)  # (its close wrote the sidecar again)
    _without_sidecar(store)

    _without_head(store)
    reads = _count_reads(monkeypatch)
    saver = JsonlSaver(store)
    got = saver.get_tuple(config("t"))
    assert got == expected
    assert sum(reads) == 0  # every record it needed came from the scan
    # The tuple owns its objects: changing it changes no later read.
    assert got is not None
    got.checkpoint["channel_values"]["m"].append("changed")
    got.checkpoint["channel_values"]["n"]["i"] = -1
    again = saver.get_tuple(config("t"))
    assert again == expected
    saver.close()


def test_an_indexed_log_reads_what_it_needs_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s"
    _fill(store)
    expected = _expected(store)
    monkeypatch.setattr(view, "LOADED_RECORDS_BYTES", 0)  # a long log: its sidecar is loaded
    _without_head(store)
    reads = _count_reads(monkeypatch)
    saver = JsonlSaver(store)  # a sidecar: nothing scanned, so nothing handed over
    assert saver.get_tuple(config("t")) == expected
    assert saver.store.thread_log("t").sidecar.trusted
    assert sum(reads) > 0
    saver.close()


def test_a_short_log_with_a_sidecar_is_scanned_and_keeps_its_watermark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short log is scanned even when its sidecar is current (faster than loading the
    entries and checking each record read against them); the sidecar still says how
    many records were durable, so a log cut at a record boundary is refused, and an
    unchanged sidecar is not written again on close."""
    store = tmp_path / "s"
    _fill(store)
    expected = _expected(store)  # closed: the sidecar is current
    files = ThreadFiles.of(store, "t")
    written = os.stat(files.idx)
    _without_head(store)
    reads = _count_reads(monkeypatch)
    saver = JsonlSaver(store)
    assert saver.get_tuple(config("t")) == expected
    log = saver.store.thread_log("t")
    assert not log.sidecar.trusted and sum(reads) == 0  # scanned: the scan's records served
    assert log.sidecar.durable_seq == log.index.last_seq > 0
    saver.close()
    assert os.stat(files.idx).st_mtime_ns == written.st_mtime_ns  # not rewritten
    assert os.stat(files.idx).st_ino == written.st_ino
    # Cut after a whole record: the log alone looks complete; the watermark says not.
    data = Path(files.log).read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    Path(files.log).write_bytes(data[:last])
    with pytest.raises(CorruptLogError, match="were durable"):
        JsonlSaver(store).get_tuple(config("t"))


def test_a_log_over_the_bound_is_read_again_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s"
    _fill(store)
    _without_sidecar(store)
    expected = _expected(store)
    _without_sidecar(store)
    monkeypatch.setattr(view, "LOADED_RECORDS_BYTES", os.path.getsize(ThreadFiles.of(store, "t").log) - 1)
    _without_head(store)
    reads = _count_reads(monkeypatch)
    saver = JsonlSaver(store)
    assert saver.get_tuple(config("t")) == expected
    assert sum(reads) > 0
    saver.close()


def test_refresh_hands_over_each_record_as_a_read_gives_it(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store, n=5)
    _without_sidecar(store)
    _without_head(store)  # (else the index comes from it, and nothing is scanned)
    saver = JsonlSaver(store)
    log = saver.store.thread_log("t")
    records: dict = {}
    idx = log.refresh(records)
    # Every committed record after the header, each exactly as a read gives it.
    scanned = log.scanned_records()[1:]
    assert len(records) == len(scanned) == idx.last_seq
    for r in scanned:
        assert records[r.offset] == r.record
        assert log.read_record(RecordRef(r.offset, r.length, r.record["seq"])) == r.record
    # Indexed already: a later refresh hands over nothing.
    later: dict = {}
    log.refresh(later)
    assert later == {}
    saver.close()
