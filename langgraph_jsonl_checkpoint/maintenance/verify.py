"""Checking and repairing logs: ``verify`` finds problems, ``repair`` fixes them.

Both work thread by thread on a store directory. ``verify`` only reads: it scans every
committed record, checks checksums and sequence numbers, checks that every delta can be
rebuilt from its base, and compares each snapshot's state hash with the state rebuilt
from deltas. ``repair`` first copies the log into ``<store>/archive/`` (fsynced), then
writes a new generation holding every record that can still be read: each line has its
own checksum, so damage costs the records it touches (and checkpoints built on them),
not everything after it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..disk import framing
from ..disk.header import FORMAT_VERSION
from ..disk.index import ThreadIndex
from ..disk.summary import ValueKind, summarize, version_key
from ..disk.view import IndexRebuilt
from ..errors import ConfigError, FormatVersionError, JsonlCheckpointError
from ..values.cells import list_items
from ..values.fingerprint import state_hash
from ..values.reader import ValueReader


@dataclass
class Finding:
    """One problem ``verify`` found.

    Attributes:
        thread_id: The thread (``None`` for a file whose header cannot be read).
        path: The file.
        offset: Byte offset, where it applies.
        problem: What is wrong, in words.
    """

    thread_id: str | None
    path: str
    offset: int | None
    problem: str


@dataclass
class VerifyReport:
    """What ``verify`` checked and found."""

    threads: int = 0
    records: int = 0
    snapshots_checked: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No findings."""
        return not self.findings


def verify(saver: Any, thread_ids: list[str] | None = None) -> VerifyReport:
    """Check threads of a store; never changes anything.

    Each problem is reported once: damage in the middle of a log (a record that fails
    its checksum or breaks the sequence, followed by valid records), or else a torn
    tail; a header of another thread or format; a stored value that cannot be rebuilt
    (a delta whose base was not stored before it, or holds another number of items);
    a snapshot whose state hash does not match the state rebuilt from deltas.

    Args:
        saver: A ``JsonlSaver`` on the store (``read_only=True`` is enough).
        thread_ids: Threads to check (default: all).

    Returns:
        A :class:`VerifyReport`.
    """
    report = VerifyReport()
    if thread_ids is None:
        thread_ids = []
        for entry in saver.store.catalog():
            if entry.thread_id is None:
                report.findings.append(Finding(None, entry.path, 0, str(entry.error)))
            else:
                thread_ids.append(entry.thread_id)
    for tid in thread_ids:
        report.threads += 1
        log = saver.store.thread_log(tid)
        try:
            with open(log.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            report.findings.append(Finding(tid, log.path, None, "no log for this thread"))
            continue
        result = framing.scan(data, 0)
        report.records += len(result.records)
        header = _header_problem(tid, result)
        if header is not None:
            report.findings.append(Finding(tid, log.path, 0, header))
            continue
        if result.corrupt_offset is not None:
            report.findings.append(
                Finding(tid, log.path, result.corrupt_offset, "damaged record followed by valid records")
            )
            continue
        if result.tail_bytes:
            report.findings.append(
                Finding(tid, log.path, result.committed_end, f"{result.tail_bytes} bytes of torn tail (cut on the next append)")
            )
        unreadable = value_problems([(r.record, r.offset, r.length) for r in result.records])
        report.findings.extend(Finding(tid, log.path, offset, problem) for offset, problem in unreadable)
        if not unreadable:
            report.snapshots_checked += _check_snapshots(saver, tid, result, report)
    return report


def _header_problem(tid: str, result: framing.ScanResult) -> str | None:
    """What is wrong with a log's header record, if anything."""
    header = result.records[0].record if result.records else None
    if header is None or header.get("t") != "header":
        return None if not result.records and not result.corrupt_offset else "no header record"
    if header.get("format") != FORMAT_VERSION:
        return (
            f"log format version {header.get('format')!r}; this version of the package "
            f"reads format {FORMAT_VERSION}: upgrade langgraph-jsonl-checkpoint"
        )
    if header.get("thread") != tid:
        return f"the header names another thread ({header.get('thread')!r})"
    return None


#: The item count of a stored value that is not a readable list (a typed value).
_UNKNOWN = -1


def value_problems(records: list[tuple[dict[str, Any], int, int]]) -> list[tuple[int, str]]:
    """Checkpoint records whose values cannot be rebuilt, with their byte offsets.

    Walks the records in log order as the index does (a delta's base is the value its
    version had when the delta was written) and checks each delta against its base:
    the base must have been stored before it, as a value, holding the number of items
    the delta keeps. A record that fails is left out of what later records may build
    on, as it is unreadable. Pure: parsed records (with offsets and lengths) in.

    Returns:
        ``(offset, problem)`` for each failing checkpoint record, in log order.
    """
    idx = ThreadIndex()
    items: dict[tuple[int, str], int] = {}  # (record seq, channel) -> items it holds
    problems = []
    for rec, offset, length in records:
        t = rec.get("t")
        if t == "checkpoint":
            wrong = _delta_problems(idx, items, rec)
            if wrong:
                problems.append((offset, "; ".join(wrong)))
                continue
        if t in ("checkpoint", "snapshot"):
            for ch, entry in rec.get("values", {}).items():
                items[(rec["seq"], ch)] = _item_count(idx, items, rec["ns"], ch, entry)
        idx.apply(summarize(rec, offset, length))
    return problems


def _delta_problems(idx: ThreadIndex, items: dict[tuple[int, str], int], rec: dict[str, Any]) -> list[str]:
    wrong = []
    for ch, entry in rec.get("values", {}).items():
        if "base" not in entry:
            continue
        prev = idx.blob(rec["ns"], ch, entry["base"])
        if prev is None or prev.kind == ValueKind.EMPTY:
            wrong.append(
                f"channel {ch!r}: a delta (version {entry['ver']!r}) on version "
                f"{entry['base']!r}, which holds no value before it"
            )
            continue
        held = items.get((prev.ref.seq, ch), _UNKNOWN)
        if held != _UNKNOWN and held != entry.get("keep"):
            wrong.append(
                f"channel {ch!r}: a delta (version {entry['ver']!r}) keeps "
                f"{entry.get('keep')!r} items of version {entry['base']!r}, which holds {held}"
            )
    return wrong


def _item_count(idx: ThreadIndex, items: dict[tuple[int, str], int], ns: str, ch: str, entry: dict[str, Any]) -> int:
    if "val" in entry:
        found = list_items(entry["val"])
        return len(found[1]) if found is not None else _UNKNOWN
    if "base" in entry:
        tail = list_items(entry["tail"])
        keep = entry.get("keep")
        return keep + len(tail[1]) if tail is not None and type(keep) is int else _UNKNOWN
    return _UNKNOWN


def _check_snapshots(saver: Any, tid: str, result: framing.ScanResult, report: VerifyReport) -> int:
    """Rebuild each snapshot's values from the records before it and compare the state
    hash it carries (deltas on the values the log held until then)."""
    log = saver.store.thread_log(tid)
    checked = 0
    with log.mutex:
        try:
            log.refresh()
        except JsonlCheckpointError as exc:
            report.findings.append(Finding(tid, log.path, getattr(exc, "offset", None), str(exc)))
            return 0
        # From the records alone, never from the values a put or read kept in memory.
        reader = ValueReader(log, saver.codec, kept=False)
        before = ThreadIndex()  # the records before the snapshot being checked
        for r in result.records:
            rec = r.record
            if rec.get("t") == "snapshot" and all(
                # (after a repair a snapshot may be the only record left of a version)
                before.blob(rec["ns"], ch, entry["ver"]) for ch, entry in rec["values"].items()
            ):
                values = {}
                try:
                    for ch, entry in rec["values"].items():
                        values[ch] = (entry["ver"], reader.value(before, rec["ns"], ch, entry["ver"]))
                except (JsonlCheckpointError, ValueError, KeyError, IndexRebuilt) as exc:
                    report.findings.append(Finding(tid, log.path, r.offset, f"snapshot values cannot be rebuilt from deltas: {exc}"))
                else:
                    if state_hash(values) != rec.get("h"):
                        report.findings.append(Finding(tid, log.path, r.offset, "snapshot state hash does not match the state rebuilt from deltas"))
                    checked += 1
            before.apply(summarize(rec, r.offset, r.length))
    return checked


@dataclass
class RepairResult:
    """What ``repair`` did to one thread.

    Attributes:
        thread_id: The thread.
        archived_to: Where the original log was copied first (``None``: nothing was
            wrong, nothing changed).
        kept_bytes: Size of the repaired log.
        dropped_bytes: Bytes of the original that are no longer in the log.
        kept_records: Records (after the header) in the repaired log.
        dropped: What was left out and why, one line per record or stretch of bytes.
    """

    thread_id: str
    archived_to: str | None
    kept_bytes: int
    dropped_bytes: int
    kept_records: int = 0
    dropped: list[str] = field(default_factory=list)


def repair(saver: Any, thread_id: str) -> RepairResult:
    """Rewrite a damaged log with every record that can still be read, after archiving it.

    Every line carries its own checksum, so damage costs only what it touches. Kept:
    every record whose line is intact, in order, except

    - damaged lines (a checksum that does not match: torn, zeroed or flipped bytes);
    - records out of sequence (a stale copy of an earlier line, as a power cut leaves);
    - an unfinished batch at the end (a write that was never acknowledged);
    - checkpoint records whose values cannot be rebuilt because they extend a value
      that was in a dropped record (the checkpoint is gone; its pending writes stay).

    The original is first copied into ``<store>/archive/`` (fsynced); the new log is a
    new generation, installed atomically.

    Args:
        saver: A writable ``JsonlSaver`` on the store.
        thread_id: The thread to repair.

    Returns:
        A :class:`RepairResult` (``archived_to`` is ``None`` when nothing was wrong).

    Raises:
        ConfigError: The store has no log for this thread.
        FormatVersionError: The log is of a format this package cannot read.
    """
    log = saver.store.thread_log(thread_id)
    if not saver.store.has_thread(thread_id):
        raise ConfigError(
            f"store {saver.store.path} has no thread {thread_id!r} (no file {log.path}); "
            "`langgraph-jsonl threads` lists the threads it has."
        )
    with log.locked():
        with open(log.path, "rb") as f:
            data = f.read()
        salvage = salvage_records(data, thread_id)
        if not salvage.dropped:
            return RepairResult(thread_id, None, len(data), 0, len(salvage.records))
        archived = saver.store.archive(log)
        log.rewrite(salvage.records, gen=salvage.gen + 1)
        saver.store.forget(thread_id)
    kept = os.path.getsize(log.path)
    return RepairResult(
        thread_id, archived, kept, max(0, len(data) - kept), len(salvage.records), salvage.dropped
    )


@dataclass
class Salvage:
    """The records of a damaged log that can still be read, and what could not."""

    records: list[dict[str, Any]]
    dropped: list[str]
    gen: int


def salvage_records(data: bytes, thread_id: str) -> Salvage:
    """Every readable record of a log's bytes (see :func:`repair`). Pure.

    Raises:
        FormatVersionError: The header names a format this package cannot read.
    """
    dropped: list[str] = []
    lines: list[tuple[dict[str, Any], int, int]] = []
    batch: list[tuple[dict[str, Any], int, int]] = []
    last_seq = 0
    gen = 0
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        rec = framing.parse_line(data[pos:nl]) if nl >= 0 else None
        if rec is None or type(rec.get("seq")) is not int:
            dropped.append(f"bytes {pos}-{end}: damaged line (checksum does not match)")
        elif rec["seq"] == 0 and rec.get("t") == "header":
            if rec.get("format") != FORMAT_VERSION:
                raise FormatVersionError(
                    f"thread {thread_id!r}: the log has format version {rec.get('format')!r}; "
                    f"this version of the package reads format {FORMAT_VERSION}. Upgrade "
                    "langgraph-jsonl-checkpoint to repair it."
                )
            gen = rec.get("gen", 1) if type(rec.get("gen")) is int else 1
        elif rec["seq"] <= last_seq:
            dropped.append(f"bytes {pos}-{end}: record {rec['seq']} out of sequence (a stale copy)")
        else:
            last_seq = rec["seq"]
            batch.append((rec, pos, end - pos))
            if not framing.strip_batch_marks(rec):
                lines.extend(batch)
                batch = []
        pos = end
    if batch:
        dropped.append(
            f"bytes {batch[0][1]}-{len(data)}: an unfinished batch at the end (never acknowledged)"
        )
    damaged = bool(dropped)
    while True:  # dropping a checkpoint may leave others without the values they need
        unreadable = dict(value_problems(lines))
        if damaged:
            unreadable.update(_lost_versions(lines, unreadable))
        if not unreadable:
            break
        for rec, offset, _ in lines:
            if offset in unreadable:
                dropped.append(f"checkpoint {rec.get('id')} at byte {offset}: {unreadable[offset]}")
        lines = [line for line in lines if line[1] not in unreadable]
    return Salvage([rec for rec, _, _ in lines], dropped, gen)


def _lost_versions(
    lines: list[tuple[dict[str, Any], int, int]], unreadable: dict[int, str]
) -> dict[int, str]:
    """Checkpoints naming a channel version that no kept record stores: after damage,
    that value may have been in the bytes lost (served without it, the checkpoint
    would be wrong)."""
    stored = {
        (rec["ns"], ch, version_key(entry["ver"]))
        for rec, offset, _ in lines
        if rec.get("t") in ("checkpoint", "snapshot") and offset not in unreadable
        for ch, entry in rec.get("values", {}).items()
    }
    lost = {}
    for rec, offset, _ in lines:
        if rec.get("t") != "checkpoint" or offset in unreadable:
            continue
        missing = [ch for ch, ver in rec["cv"].items() if (rec["ns"], ch, version_key(ver)) not in stored]
        if missing:
            lost[offset] = f"the values of {missing} were in a damaged record"
    return lost
