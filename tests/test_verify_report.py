"""``verify``'s report, finding by finding: thread, file, offset and words for each kind
of problem, the counts of records and snapshots checked, and every thread checked even
after a damaged one.

Written for mutants of ``maintenance/verify.py`` that survived the suite
(stress/mutation.py): the tests looked at whether a report was ok, not at what it said.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.maintenance.verify import Finding, verify
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _fill(saver: JsonlSaver, thread: str) -> None:
    parent = config(thread)
    items: list[str] = []
    for i in range(1, 7):
        items = items + [f"{thread} item {i}"]
        v = {"m": f"{i:032}.{0:016}"}
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items}, v), {}, v)


def _lines(path: str) -> list[bytes]:
    return Path(path).read_bytes().splitlines(keepends=True)


def _offset_of(lines: list[bytes], i: int) -> int:
    return len(b"".join(lines[:i]))


def _store(tmp_path: Path) -> tuple[Path, dict[str, ThreadFiles]]:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=2, snapshot_ratio=0.0)
    for t in ("a-good", "b-torn", "c-mid", "d-hash", "e-good"):
        _fill(saver, t)
    saver.close()
    return store, {t: ThreadFiles.of(store, t) for t in ("a-good", "b-torn", "c-mid", "d-hash", "e-good")}


def test_verify_reports_each_problem_with_thread_file_offset_and_words(tmp_path: Path) -> None:
    store, files = _store(tmp_path)
    clean = verify(JsonlSaver(store, read_only=True))
    assert clean.ok and clean.findings == [] and clean.threads == 5
    per_log = [len(_lines(f.log)) for f in files.values()]
    assert clean.records == sum(per_log)
    snapshots = sum(b'"t":"snapshot"' in line for f in files.values() for line in _lines(f.log))
    assert snapshots >= 5 and clean.snapshots_checked == snapshots

    with open(files["b-torn"].log, "ab") as f:
        f.write(b'{"t":"checkpoint","seq":99')
    torn_at = _offset_of(_lines(files["b-torn"].log), len(_lines(files["b-torn"].log)) - 1)
    mid = _lines(files["c-mid"].log)
    mid_snapshots = sum(b'"t":"snapshot"' in line for line in mid)
    mid[3] = mid[3][:5] + b"#" + mid[3][6:]
    Path(files["c-mid"].log).write_bytes(b"".join(mid))
    hashed = _lines(files["d-hash"].log)
    k = next(i for i, line in enumerate(hashed) if b'"t":"snapshot"' in line)
    rec = orjson.loads(hashed[k])
    del rec["c"]
    rec["h"] = "0" * len(rec["h"])
    hashed[k] = framing.frame(rec)
    Path(files["d-hash"].log).write_bytes(b"".join(hashed))

    report = verify(JsonlSaver(store, read_only=True))
    assert not report.ok and report.threads == 5
    assert report.findings == [
        Finding("b-torn", files["b-torn"].log, torn_at, "26 bytes of torn tail (cut on the next append)"),
        Finding("c-mid", files["c-mid"].log, _offset_of(mid, 3), "damaged record followed by valid records"),
        Finding("d-hash", files["d-hash"].log, _offset_of(hashed, k),
                "snapshot state hash does not match the state rebuilt from deltas"),
    ]
    # The damaged log's committed records before the damage are counted; the others' all.
    assert report.records == clean.records - len(mid) + len(framing.scan(b"".join(mid[:3])).records)
    # None of the damaged log's snapshots is checked; the one with a wrong hash is.
    assert report.snapshots_checked == snapshots - mid_snapshots


def test_verify_names_a_missing_log_a_foreign_header_and_a_log_without_header(tmp_path: Path) -> None:
    store, files = _store(tmp_path)
    saver = JsonlSaver(store, read_only=True)
    shutil.copy(files["a-good"].log, ThreadFiles.of(store, "x-copy").log)
    report = verify(saver, ["nope", "x-copy"])
    assert report.findings == [
        Finding("nope", ThreadFiles.of(store, "nope").log, None, "no log for this thread"),
        Finding("x-copy", ThreadFiles.of(store, "x-copy").log, 0,
                "the header names another thread ('a-good')"),
    ]
    assert report.threads == 2
    headless = _lines(files["e-good"].log)[1:]  # valid records, but the header is gone
    Path(files["e-good"].log).write_bytes(b"".join(headless))
    seen: list[list[str]] = []

    def track(ids: list[str]) -> list[str]:
        seen.append(list(ids))
        return ids

    report = verify(JsonlSaver(store, read_only=True), ["e-good", "a-good"], track=track)
    assert seen == [["e-good", "a-good"]]
    assert report.findings == [Finding("e-good", files["e-good"].log, 0, "no header record")]


def test_verify_names_a_checkpoint_whose_delta_base_is_missing(tmp_path: Path) -> None:
    store, files = _store(tmp_path)
    lines = _lines(files["a-good"].log)
    k = max(i for i, line in enumerate(lines) if b'"base"' in line and b'"t":"checkpoint"' in line)
    rec = orjson.loads(lines[k])
    del rec["c"]
    rec["values"]["m"]["base"] = f"{99:032}.{0:016}"  # a version no record stores
    lines[k] = framing.frame(rec)
    Path(files["a-good"].log).write_bytes(b"".join(lines))
    report = verify(JsonlSaver(store, read_only=True), ["a-good", "e-good"])
    assert report.threads == 2
    assert [(f.thread_id, f.path, f.offset) for f in report.findings][:1] == [
        ("a-good", files["a-good"].log, _offset_of(lines, k))]
    assert all(f.thread_id == "a-good" and f.problem for f in report.findings)


def _snapshots(files: ThreadFiles) -> int:
    return sum(b'"t":"snapshot"' in line for line in _lines(files.log))


def _cut_short(tmp_path: Path) -> tuple[Path, ThreadFiles, int]:
    """A store whose "a-good" log lost its last two records at a record boundary (a
    file cut back, or restored from an older copy) while its index says they were durable."""
    store, files = _store(tmp_path)
    lines = _lines(files["a-good"].log)
    Path(files["a-good"].log).write_bytes(b"".join(lines[:-2]))
    return store, files["a-good"], _offset_of(lines, len(lines) - 2)


def test_verify_names_a_log_cut_short_of_what_its_index_says_was_durable(tmp_path: Path) -> None:
    """The framing scan finds nothing wrong (whole records, no torn tail); the log's
    index (a writable saver's refresh refuses the log) says what is missing."""
    store, log, cut = _cut_short(tmp_path)
    report = verify(JsonlSaver(store), ["a-good", "e-good"])
    assert report.threads == 2
    assert report.snapshots_checked == _snapshots(ThreadFiles.of(store, "e-good"))  # none of the cut log's
    assert [(f.thread_id, f.path, f.offset) for f in report.findings] == [("a-good", log.log, cut)]
    assert "holds committed records up to sequence 7, but its index says records up to 9 were durable" in (
        report.findings[0].problem
    )


def test_verify_names_a_durable_record_cut_inside_once_not_as_a_torn_tail(tmp_path: Path) -> None:
    """The file lost its end inside record 8, which its index says was durable. verify
    reported "torn tail (cut on the next append)" as well: untrue (the next append is
    refused, the record was acknowledged) and the same loss twice."""
    store, files = _store(tmp_path)
    lines = _lines(files["a-good"].log)
    cut = _offset_of(lines, len(lines) - 2)
    Path(files["a-good"].log).write_bytes(b"".join(lines[:-2]) + lines[-2][:25])
    for saver in (JsonlSaver(store), JsonlSaver(store, read_only=True)):
        report = verify(saver, ["a-good"])
        assert [(f.thread_id, f.offset) for f in report.findings] == [("a-good", cut)], report.findings
        problem = report.findings[0].problem
        assert "records up to 9 were durable" in problem and "torn tail" not in problem, problem
        saver.close()


def test_verify_read_only_names_a_log_cut_short_too(tmp_path: Path) -> None:
    """``langgraph-jsonl verify`` opens the store read-only, where the log's refresh
    serves the records it has instead of refusing: verify must still report the loss."""
    store, log, cut = _cut_short(tmp_path)
    report = verify(JsonlSaver(store, read_only=True), ["a-good", "e-good"])
    assert not report.ok
    assert report.snapshots_checked == _snapshots(ThreadFiles.of(store, "e-good"))  # none of the cut log's
    assert [(f.thread_id, f.path, f.offset) for f in report.findings] == [("a-good", log.log, cut)]
    assert "up to sequence 7" in report.findings[0].problem and "up to 9" in report.findings[0].problem


def test_verify_names_a_snapshot_whose_values_cannot_be_rebuilt(tmp_path: Path) -> None:
    """A delta whose items are in a cell no codec reads: the snapshot after it cannot be
    rebuilt, and the finding names the thread, the file and the snapshot's offset."""
    store, files = _store(tmp_path)
    lines = _lines(files["a-good"].log)
    k = next(i for i, line in enumerate(lines) if b'"tail"' in line and b'"t":"checkpoint"' in line)
    rec = orjson.loads(lines[k])
    del rec["c"]
    rec["values"]["m"]["tail"] = {"nope": ["x"]}
    lines[k] = framing.frame(rec)
    Path(files["a-good"].log).write_bytes(b"".join(lines))
    snapshot = next(i for i in range(k, len(lines)) if b'"t":"snapshot"' in lines[i])
    report = verify(JsonlSaver(store, read_only=True), ["a-good", "e-good"])
    assert report.findings == [
        Finding("a-good", files["a-good"].log, _offset_of(lines, snapshot),
                "snapshot values cannot be rebuilt from deltas: unknown value cell with keys ['nope']"),
    ]


def test_verify_reports_what_a_derived_check_finds_with_thread_and_file(tmp_path: Path) -> None:
    """A check of a derived file (the CLI passes the session memory's) runs on each log
    found whole; each problem it names becomes a finding of that thread and file."""
    store, files = _store(tmp_path)
    seen: list[str] = []

    def check(log: object) -> list[tuple[str, str]]:
        tid = log.thread_id  # type: ignore[attr-defined]
        seen.append(tid)
        return [(f"{tid}.mem", "stale")] if tid == "e-good" else []

    report = verify(JsonlSaver(store, read_only=True), ["a-good", "e-good"], derived=[check])
    assert seen == ["a-good", "e-good"]
    assert report.findings == [Finding("e-good", "e-good.mem", None, "stale")]
