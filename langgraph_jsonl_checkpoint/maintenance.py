"""Checking and repairing logs: ``verify`` finds problems, ``repair`` fixes them.

Both work thread by thread on a store directory. ``verify`` only reads: it scans every
committed record, checks checksums and sequence numbers, rebuilds every value from its
deltas and compares each snapshot's state hash. ``repair`` first copies the log into
``<store>/archive/`` (fsynced), then keeps its valid prefix: the records before the first
damaged one. Records after the damage are only in the archive copy.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import framing
from .codec import state_hash
from .errors import JsonlCheckpointError
from .log import fsync_dir

ARCHIVE_DIR = "archive"


@dataclass
class Finding:
    """One problem ``verify`` found.

    Attributes:
        thread_id: The thread.
        path: The file.
        offset: Byte offset, where it applies.
        problem: What is wrong, in words.
    """

    thread_id: str
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

    Args:
        saver: A ``JsonlSaver`` on the store (``read_only=True`` is enough).
        thread_ids: Threads to check (default: all).

    Returns:
        A :class:`VerifyReport`.
    """
    report = VerifyReport()
    for tid in thread_ids if thread_ids is not None else list(saver.store.thread_ids()):
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
        if result.corrupt_offset is not None:
            report.findings.append(
                Finding(tid, log.path, result.corrupt_offset, "damaged record followed by valid records")
            )
        if result.tail_bytes:
            report.findings.append(
                Finding(tid, log.path, result.committed_end, f"{result.tail_bytes} bytes of torn tail (cut on the next append)")
            )
        if result.corrupt_offset is None:
            report.snapshots_checked += _check_snapshots(saver, tid, result, report)
    return report


def _check_snapshots(saver: Any, tid: str, result: framing.ScanResult, report: VerifyReport) -> int:
    """Rebuild each snapshot's values from deltas alone and compare the state hash."""
    from .index import ThreadIndex, summarize
    from .reader import ValueReader

    log = saver.store.thread_log(tid)
    checked = 0
    with log.mutex:
        log.refresh()
        # From the records alone, never from the values a put or read kept in memory.
        reader = ValueReader(log, saver.codec, kept=False)
        # An index without snapshot records: values must come from deltas alone.
        deltas_only = ThreadIndex()
        for r in result.records:
            if r.record.get("t") != "snapshot":
                deltas_only.apply(summarize(r.record, r.offset, r.length))
        for r in result.records:
            rec = r.record
            if rec.get("t") != "snapshot":
                continue
            values = {}
            try:
                for ch, entry in rec["values"].items():
                    values[ch] = (entry["ver"], reader.value(deltas_only, rec["ns"], ch, entry["ver"]))
            except (JsonlCheckpointError, ValueError, KeyError) as exc:
                report.findings.append(Finding(tid, log.path, r.offset, f"snapshot values cannot be rebuilt from deltas: {exc}"))
                continue
            if state_hash(values) != rec.get("h"):
                report.findings.append(Finding(tid, log.path, r.offset, "snapshot state hash does not match the state rebuilt from deltas"))
            checked += 1
    return checked


@dataclass
class RepairResult:
    """What ``repair`` did to one thread."""

    thread_id: str
    archived_to: str | None
    kept_bytes: int
    dropped_bytes: int


def repair(saver: Any, thread_id: str) -> RepairResult:
    """Keep the valid prefix of a thread's log, after archiving the original.

    Args:
        saver: A writable ``JsonlSaver`` on the store.
        thread_id: The thread to repair.

    Returns:
        A :class:`RepairResult` (``archived_to`` is ``None`` when nothing was wrong).
    """
    log = saver.store.thread_log(thread_id)
    with log.locked():
        with open(log.path, "rb") as f:
            data = f.read()
        result = framing.scan(data, 0)
        keep = result.committed_end
        if keep == len(data):
            return RepairResult(thread_id, None, keep, 0)
        archive_dir = os.path.join(saver.store.path, ARCHIVE_DIR)
        os.makedirs(archive_dir, mode=0o700, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        archived = os.path.join(archive_dir, f"{log.name}.{stamp}.jsonl")
        with open(log.path, "rb") as src, open(os.open(archived, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as dst:
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.fsync(dst.fileno())
        fsync_dir(archive_dir)
        fd = os.open(log.path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        for stale in (log.index_path,):
            try:
                os.unlink(stale)  # its watermark names the records just dropped
            except FileNotFoundError:
                pass
        fsync_dir(log.directory)
        log._ino = None  # reload on next use
        saver.store.forget(thread_id)
    return RepairResult(thread_id, archived, keep, len(data) - keep)
