"""Repairing a damaged log: archive it, then keep every record that can still be read.

Every line carries its own checksum, so damage costs only what it touches. Kept: every
record whose line is intact, in order, except

- damaged lines (a checksum that does not match: torn, zeroed or flipped bytes);
- a torn tail (a last line without its newline: a write that never finished);
- records out of sequence (a stale copy of an earlier line, as a power cut leaves);
- an unfinished batch at the end (a write that was never acknowledged);
- checkpoints whose values cannot be rebuilt: a version they name was in a damaged
  line, or extends, by deltas, a value that was, and no snapshot record holds it in
  full (:mod:`.salvage`, which also keeps what a dropped checkpoint record held for
  others): the checkpoint is gone, its pending writes stay.

A log cut right after a record reads as whole; its sidecar tells the records it lost
(every read refuses a log holding fewer records than its sidecar says were durable).
Repair reports them lost and installs what is left as a new generation, which the old
sidecar no longer names.

The original is first copied into ``<store>/archive/`` (fsynced); the new log is a new
generation, installed atomically (:mod:`~..disk.generations`).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..disk import files, framing
from ..disk.generations import generation_size
from ..disk.header import FORMAT_VERSION, another_thread_s_log
from ..disk.log import ThreadLog
from ..disk.sidecar_file import LogIdentity
from ..errors import ConfigError, FormatVersionError
from .access import StoreAccess
from .salvage import settle


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
        dry_run: Nothing was changed: the figures are what a repair would do
            (``kept_bytes`` within the width of the new header's time).
    """

    thread_id: str
    archived_to: str | None
    kept_bytes: int
    dropped_bytes: int
    kept_records: int = 0
    dropped: list[str] = field(default_factory=list)
    dry_run: bool = False


class RepairInterrupted(KeyboardInterrupt):
    """Ctrl-C once the repaired log was in its place (renamed over the damaged one), as
    the repair indexed it: the repair is done (``result`` says what it dropped and where
    the original went); run again, it would find nothing to repair and say so. A
    ``KeyboardInterrupt``, so code that lets Ctrl-C end the program still does.

    Attributes:
        result: What the repair did.
    """

    def __init__(self, result: RepairResult) -> None:
        super().__init__(f"thread {result.thread_id!r} was repaired; the original is in {result.archived_to}")
        self.result = result


def repair(saver: StoreAccess, thread_id: str, *, dry_run: bool = False) -> RepairResult:
    """Rewrite a damaged log with every record that can still be read, after archiving
    it (see the module docstring for what is dropped).

    Args:
        saver: A writable ``JsonlSaver`` on the store (any, for a dry run).
        thread_id: The thread to repair.
        dry_run: Only say what a repair would drop and keep; change nothing (no lock
            is taken: a writer may append meanwhile).

    Returns:
        A :class:`RepairResult` (``archived_to`` is ``None`` when nothing was wrong).

    Raises:
        ConfigError: The store has no log for this thread.
        FormatVersionError: The log is of a format this package cannot read.
        ForeignFileError: The log holds another thread (a file copied or renamed by hand).
        RepairInterrupted: Ctrl-C once the repaired log was in place (see there).
    """
    log = saver.store.thread_log(thread_id)
    if not saver.store.has_thread(thread_id):
        raise ConfigError(
            f"store {saver.store.path} has no thread {thread_id!r} (no file {log.path}); "
            f"`langgraph-jsonl threads {shlex.quote(saver.store.path)}` lists the threads it has."
        )
    if dry_run:
        size, salvage, dropped = _plan(log, thread_id)
        if not dropped:
            return RepairResult(thread_id, None, size, 0, len(salvage.records), dry_run=True)
        kept = generation_size(salvage.records, thread_id, salvage.gen + 1)
        return RepairResult(thread_id, None, kept, max(0, size - kept), len(salvage.records),
                            dropped, dry_run=True)
    with log.locked():
        size, salvage, dropped = _plan(log, thread_id)
        if not dropped:
            return RepairResult(thread_id, None, size, 0, len(salvage.records))
        damaged = os.stat(log.path).st_ino
        archived: str | None = None
        try:
            archived = saver.store.archive(log)
            log.rewrite(salvage.records, gen=salvage.gen + 1)
            saver.store.forget(thread_id)
        except KeyboardInterrupt:
            if os.stat(log.path).st_ino == damaged:  # the damaged log is still in place
                if archived is not None:
                    saver.store.drop_archive_copy(archived)
                raise
            assert archived is not None
            saver.store.forget(thread_id)
            raise RepairInterrupted(_repaired(log, thread_id, archived, size, salvage, dropped)) from None
    return _repaired(log, thread_id, archived, size, salvage, dropped)


def _repaired(
    log: ThreadLog, thread_id: str, archived: str, size: int, salvage: Salvage, dropped: list[str]
) -> RepairResult:
    """What a repair did, once the repaired log is in place."""
    kept = os.path.getsize(log.path)
    return RepairResult(thread_id, archived, kept, max(0, size - kept), len(salvage.records), dropped)


def _plan(log: ThreadLog, thread_id: str) -> tuple[int, Salvage, list[str]]:
    """The log's size, what of it can be kept, and every line a repair would list as
    dropped (damage in the bytes, and records a cut lost)."""
    with open(log.path, "rb") as f:
        data = f.read()
    salvage = salvage_records(data, thread_id, log.path)
    return len(data), salvage, _with_cut_records(log, data, salvage)


def _with_cut_records(log: ThreadLog, data: bytes, salvage: Salvage) -> list[str]:
    """``salvage.dropped`` and the records the log's sidecar says were durable past the
    last one the log holds: what a cut (at a record boundary, inside a record, or inside
    the header line: an emptied log) lost. The bytes left of a record cut inside it are
    its remains, one line with it, not a write that was never acknowledged."""
    dropped = list(salvage.dropped)
    cut = _cut_records(log, data, salvage)
    if cut is None:
        return dropped
    span, claimed, where = cut
    durable = f"its index said records up to {claimed} were durable"
    if salvage.tail is not None and 0 < salvage.committed_end == salvage.tail[1]:
        at, start = salvage.tail
        they = "it" if span.startswith("record ") else "they"
        dropped[at] = (f"bytes {start}-{len(data)}: {span}, cut inside it: {where}, but {durable} "
                       f"(the file lost its end); {they} cannot be recovered from this log")
        return dropped
    return [*dropped, f"{span}: missing: {where} but {durable} (the file was cut); they cannot "
                      "be recovered from this log"]


def _cut_records(log: ThreadLog, data: bytes, salvage: Salvage) -> tuple[str, int, str] | None:
    """The records the log's sidecar says were durable past the last one the log holds
    (``record N`` or ``records N-M``), the last of them, and where the log ends;
    ``None`` if none."""
    nl = data.find(b"\n")
    ino = files.os.stat(log.path).st_ino
    if nl < 0:  # no header line left to name the log by: the sidecar of this very file
        claimed = log.sidecar.claimed_last_seq(ino) or 0
        where = "the log was cut inside its header line"
    elif nl < 10:
        return None
    else:
        identity = LogIdentity(salvage.gen, ino, framing.checksum_digits(data[:nl]))
        claimed = log.sidecar.durable_claim(identity, nl + 1)
        where = f"the log ends after record {salvage.last_seq}"
    if claimed <= salvage.last_seq:
        return None
    first = salvage.last_seq + 1
    return (f"record {first}" if first == claimed else f"records {first}-{claimed}"), claimed, where


@dataclass
class Salvage:
    """The records of a damaged log that can still be read, and what could not."""

    records: list[dict[str, Any]]
    dropped: list[str]
    gen: int
    #: The last committed record the log holds, readable or not (0: none).
    last_seq: int = 0
    #: Where the committed records end (the byte after the last whole line).
    committed_end: int = 0
    #: A never-finished write at the end (a torn tail, an unfinished batch): the index
    #: of its line in ``dropped`` and the byte it starts at.
    tail: tuple[int, int] | None = None


def salvage_records(data: bytes, thread_id: str, path: str = "") -> Salvage:
    """Every readable record of a log's bytes (see :func:`repair`). Pure.

    Args:
        data: The log's bytes.
        thread_id: The thread the log is named for.
        path: The log's file, for errors.

    Raises:
        FormatVersionError: The header names a format this package cannot read.
        ForeignFileError: The header names another thread.
    """
    dropped: list[str] = []
    damage: list[tuple[int, int]] = []
    lines: list[tuple[dict[str, Any], int, int]] = []
    batch: list[tuple[dict[str, Any], int, int]] = []
    tail: tuple[int, int] | None = None
    last_seq = 0
    gen = 0
    pos = 0
    crlf = 0  # lines whose LF ending had become CRLF: kept, with LF again
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        rec = framing.parse_line(data[pos:nl]) if nl >= 0 else None
        if rec is None and nl >= 0:
            rec = framing.parse_crlf_line(data[pos:nl])
            crlf += rec is not None
        if nl < 0:  # the last line has no newline: its write never finished
            tail = len(dropped), pos
            dropped.append(f"bytes {pos}-{end}: torn tail (a write that never finished; never acknowledged)")
        elif rec is None or type(rec.get("seq")) is not int:
            dropped.append(f"bytes {pos}-{end}: damaged line (checksum does not match)")
            damage.append((pos, end))
        elif rec["seq"] == 0 and rec.get("t") == "header":
            if rec.get("format") != FORMAT_VERSION:
                raise FormatVersionError(
                    f"thread {thread_id!r}: the log has format version {rec.get('format')!r}; "
                    f"this version of the package reads format {FORMAT_VERSION}. Upgrade "
                    "langgraph-jsonl-checkpoint to repair it."
                )
            if rec.get("thread") != thread_id:
                raise another_thread_s_log(thread_id, path, rec.get("thread"))
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
        tail = len(dropped), batch[0][1]
        dropped.append(
            f"bytes {batch[0][1]}-{len(data)}: an unfinished batch at the end (never acknowledged)"
        )
    last_committed = lines[-1][0]["seq"] if lines else 0
    committed_end = lines[-1][1] + lines[-1][2] if lines else data.find(b"\n") + 1
    kept, unservable = settle(lines, damage, damaged=bool(dropped))
    if crlf:
        dropped.insert(0, f"{crlf} CR byte(s): the log's LF line endings had been turned into "
                          "CRLF (an editor, git's autocrlf, a text-mode copy); their records are kept")
        tail = (tail[0] + 1, tail[1]) if tail is not None else None
    records = [rec for rec, _, _ in kept]
    return Salvage(records, dropped + unservable, gen, last_committed, committed_end, tail)

