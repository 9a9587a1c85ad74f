"""Checking logs: ``verify`` finds problems and changes nothing (``repair`` fixes them).

Thread by thread: it scans every committed record, checks checksums and sequence
numbers, the header, that every delta can be rebuilt from its base (:mod:`.checks`),
and compares each snapshot's state hash with the state rebuilt from the records before
it; checks a layer above passes look at files derived from the log (the session
memory). Each problem is reported once, with the file and byte offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..disk import framing
from ..disk.header import FORMAT_VERSION
from ..disk.index import ThreadIndex
from ..disk.summary import summarize
from ..disk.view import IndexRebuilt, LogView
from ..errors import JsonlCheckpointError
from .access import StoreAccess
from .checks import value_problems


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


#: A check of data derived from a log and kept beside it (the session memory file):
#: given the thread's log, ``(path, problem)`` pairs.
DerivedCheck = Callable[[LogView], list[tuple[str, str]]]


def verify(
    saver: StoreAccess,
    thread_ids: list[str] | None = None,
    *,
    track: Callable[[list[str]], Iterable[str]] | None = None,
    derived: Sequence[DerivedCheck] = (),
) -> VerifyReport:
    """Check threads of a store; never changes anything.

    Each problem is reported once: damage in the middle of a log (a record that fails
    its checksum or breaks the sequence, followed by valid records), or else a torn
    tail; a header of another thread or format; a stored value that cannot be rebuilt
    (a delta whose base was not stored before it, or holds another number of items);
    a snapshot whose state hash does not match the state rebuilt from deltas.

    Args:
        saver: A ``JsonlSaver`` on the store (``read_only=True`` is enough).
        thread_ids: Threads to check (default: all).
        track: Given the threads to check, yields them as they are checked (a progress
            bar wraps them so).
        derived: Checks of files derived from a log (run on logs found whole), from a
            layer above (the CLI passes the session memory's).

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
    for tid in track(thread_ids) if track is not None else thread_ids:
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
        if not result.records and framing.parse_crlf_line(data[: data.find(b"\n")]) is not None:
            report.findings.append(Finding(
                tid, log.path, 0, "CRLF line endings (an editor, git's autocrlf or a text-mode "
                "copy turned its LF endings into CRLF): every record is intact, and `langgraph-jsonl "
                "repair` keeps them all"))
            continue
        header = _header_problem(tid, result)
        if header is not None:
            report.findings.append(Finding(tid, log.path, 0, header))
            continue
        if result.corrupt_offset is not None:
            report.findings.append(
                Finding(tid, log.path, result.corrupt_offset, "damaged record followed by valid records")
            )
            continue
        tail = None
        if result.tail_bytes:
            torn = f"{result.tail_bytes} bytes of torn tail (cut on the next append)"
            tail = Finding(tid, log.path, result.committed_end, torn)
            report.findings.append(tail)
        unreadable = value_problems([(r.record, r.offset, r.length) for r in result.records])
        report.findings.extend(Finding(tid, log.path, offset, problem) for offset, problem in unreadable)
        found = len(report.findings)
        if not unreadable:
            report.snapshots_checked += _check_snapshots(saver, tid, result, report)
        if tail is not None and log.sidecar.durable_seq > log.index.last_seq:
            # The remains of a record its index says was durable (the file lost its end),
            # not a write that never finished: the finding on the loss says so, once.
            report.findings.remove(tail)
            found -= 1
        if not unreadable and not result.tail_bytes and len(report.findings) == found:
            try:
                for check in derived:
                    report.findings.extend(Finding(tid, path, None, problem) for path, problem in check(log))
            except JsonlCheckpointError as exc:  # the log as a read sees it (its index): refused
                report.findings.append(Finding(tid, log.path, getattr(exc, "offset", None), str(exc)))
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


def _served_part(log: LogView) -> str:
    """What a read-only view found wrong while indexing a log the scan found whole."""
    durable = log.sidecar.durable_seq
    if log.index.last_seq < durable:
        return (
            f"the log holds committed records up to sequence {log.index.last_seq}, but its index "
            f"says records up to {durable} were durable: the record at byte offset "
            f"{log.damaged_at} is damaged or the file was cut"
        )
    return "damaged record followed by valid records"


def _check_snapshots(saver: StoreAccess, tid: str, result: framing.ScanResult, report: VerifyReport) -> int:
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
        if log.damaged_at is not None:
            # A read-only view serves the records before the damage instead of raising.
            report.findings.append(Finding(tid, log.path, log.damaged_at, _served_part(log)))
            return 0
        # From the records alone, never from the values a put or read kept in memory.
        from ..values.fingerprint import state_hash  # the values layer imports LangGraph: here, not
        from ..values.reader import ValueReader  # with the module (the CLI imports this module)

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
                    report.findings.append(
                        Finding(
                            tid, log.path, r.offset, f"snapshot values cannot be rebuilt from deltas: {exc}"
                        )
                    )
                else:
                    if state_hash(values) != rec.get("h"):
                        report.findings.append(
                            Finding(
                                tid,
                                log.path,
                                r.offset,
                                "snapshot state hash does not match the state rebuilt from deltas",
                            )
                        )
                    checked += 1
            before.apply(summarize(rec, r.offset, r.length))
    return checked
