"""Line framing of the log: one JSON object per line, a checksum at its end, batches.

A framed record is the record's JSON with one more field appended last::

    {"t":"checkpoint","seq":7,...,"c":"1a2b3c4d"}\\n

``c`` is the CRC-32 (hex, always 8 digits) of every byte of the line before ``,"c":"``.
The field has a fixed width, so a reader finds it at a fixed distance from the end of the
line, and the line stays an ordinary JSON object for ``jq``.

A *batch* is the records one acknowledged call wrote (a checkpoint and its snapshot, say).
Every record of a batch but the last carries ``"more":1``; the batch is committed only
once its last record is whole. A crash in the middle of a batch therefore leaves a tail
that the scanner reports as uncommitted, never as a half-applied batch.

Every record of a *sync unit* but the first carries ``"b"``: the ``seq`` of the unit's
first record. A unit is what one ``fdatasync`` makes durable: one batch, or several
batches of a group commit (``ThreadLog.group_commit``), written one after another and
synced together. After a power loss the unit's sectors may have reached the disk in any
order: a damaged line can be followed by intact lines *of the same unit*. Those lines
say so with a ``b`` no greater than the damaged line's ``seq``; any other valid line
after damage (no ``b``, or a ``b`` past the damage: a later unit) proves the damaged
unit was synced (a writer syncs a unit before it starts the next), so that damage is
mid-log corruption.

Everything here is pure: bytes in, records out. The file I/O lives in ``log.py``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

_CHECKSUM_PREFIX = b',"c":"'
# ,"c":"XXXXXXXX"}  -> 6 + 8 + 2 bytes
_TRAILER_LEN = len(_CHECKSUM_PREFIX) + 8 + 2


def frame(record: dict[str, Any]) -> bytes:
    """Encode one record as a checksummed JSON line.

    Args:
        record: A JSON-able dict. It must not contain the key ``"c"``.

    Returns:
        The line, ending in ``\\n``.
    """
    body = orjson.dumps(record)
    head = body[:-1]  # drop the closing brace
    return b"%s,\"c\":\"%08x\"}\n" % (head, zlib.crc32(head))


def frame_batch_lines(records: list[dict[str, Any]], unit: int | None = None) -> list[bytes]:
    """Frame the records of one batch, one line each.

    Every record but the last is marked ``"more":1``; every record but the first of its
    sync unit gets ``"b"``, the ``seq`` of that first record (records must carry
    ``seq``). ``unit`` is that ``seq`` when the batch is not the first of its unit (a
    later batch of a group commit); by default the batch is a unit of its own.
    """
    last = len(records) - 1
    first = records[0]["seq"] if unit is None else unit
    lines = []
    for i, rec in enumerate(records):
        marks: dict[str, Any] = {}
        if i < last:
            marks["more"] = 1
        if rec["seq"] != first:
            marks["b"] = first
        lines.append(frame({**rec, **marks} if marks else rec))
    return lines


def frame_batch(records: list[dict[str, Any]]) -> bytes:
    """Frame several records as one batch (see :func:`frame_batch_lines`)."""
    return b"".join(frame_batch_lines(records))


def strip_batch_marks(record: dict[str, Any]) -> bool:
    """Remove the batch fields from a parsed record; whether it was marked ``more``."""
    record.pop("b", None)
    return bool(record.pop("more", None))


def checksum_digits(line: bytes) -> str:
    """The 8 hex digits of the checksum a framed line (without its newline) ends with;
    what names one header, so one file (see :class:`~.sidecar_file.LogIdentity`)."""
    return line[-10:-2].decode("ascii", "replace")


def check_line(line: bytes) -> bool:
    """Tell whether ``line`` (without its newline) carries a matching checksum."""
    if len(line) < _TRAILER_LEN + 2 or line[-1:] != b"}":
        return False
    head = line[:-_TRAILER_LEN]
    trailer = line[-_TRAILER_LEN:]
    if not trailer.startswith(_CHECKSUM_PREFIX) or trailer[-2:-1] != b'"':
        return False
    # Compare the exact digits (lower-case hex), so no byte of the field is slack.
    return trailer[len(_CHECKSUM_PREFIX) : -2] == b"%08x" % zlib.crc32(head)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """Decode a checksummed line (without its newline); ``None`` if it is damaged."""
    if not check_line(line):
        return None
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rec, dict):
        return None
    rec.pop("c", None)
    return rec


def parse_crlf_line(line: bytes) -> dict[str, Any] | None:
    """A line (without its newline) whose LF ending was turned into CRLF (an editor,
    git's autocrlf, a text-mode copy), decoded without the CR; ``None`` for any other
    line, whole or damaged."""
    return parse_line(line[:-1]) if line.endswith(b"\r") else None


@dataclass
class ScannedRecord:
    """A committed record found by :func:`scan`, with where it lies in the file."""

    offset: int
    length: int
    record: dict[str, Any]


@dataclass
class ScanResult:
    """What :func:`scan` found in a stretch of log bytes.

    Attributes:
        records: Committed records, in file order.
        committed_end: File offset just past the last committed batch.
        tail_bytes: Bytes after ``committed_end`` that are not a committed batch: a batch
            still being written, or one torn by a crash.
        corrupt_offset: Offset of a damaged record that is followed by valid records
            (damage in the middle, not a torn tail), else ``None``.
    """

    records: list[ScannedRecord] = field(default_factory=list)
    committed_end: int = 0
    tail_bytes: int = 0
    corrupt_offset: int | None = None


def scan(data: bytes, base_offset: int = 0, *, expect_seq: int | None = None) -> ScanResult:
    """Find the committed records in ``data``, which starts at file offset ``base_offset``.

    A damaged or unterminated line is the end of the log when nothing valid follows it
    but lines of its own batch (a torn tail); when any other valid record follows, it is
    mid-log corruption and ``corrupt_offset`` is set. Sequence numbers must rise by one from record to record
    (starting at ``expect_seq`` when given); a break counts as damage.

    Args:
        data: Raw bytes read from the log.
        base_offset: File offset of ``data[0]``.
        expect_seq: The ``seq`` the first record must carry, if known.

    Returns:
        A :class:`ScanResult`.
    """
    result = ScanResult(committed_end=base_offset)
    pending: list[ScannedRecord] = []
    pos = 0
    size = len(data)
    next_seq = expect_seq
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # unterminated line: torn tail
        line = data[pos:nl]
        rec = parse_line(line)
        if rec is None or not isinstance(rec.get("seq"), int) or (
            next_seq is not None and rec["seq"] != next_seq
        ):
            # Damage followed by a newer record of another batch is mid-log corruption.
            # Newer lines of the damaged batch itself, and valid lines with old sequence
            # numbers (stale blocks), are what a power loss leaves: a tail.
            after = next_seq - 1 if next_seq is not None else -1
            batch = pending[0].record["seq"] if pending else next_seq
            if _newer_record_follows(data, pos if rec is not None else nl + 1, after, batch):
                result.corrupt_offset = base_offset + pos
            break
        next_seq = rec["seq"] + 1
        pending.append(ScannedRecord(base_offset + pos, nl + 1 - pos, rec))
        pos = nl + 1
        if not strip_batch_marks(rec):
            result.records.extend(pending)
            pending = []
            result.committed_end = base_offset + pos
    result.tail_bytes = base_offset + size - result.committed_end
    return result


def scan_committed(data: bytes, base_offset: int, skip: tuple[str, ...]) -> ScanResult:
    """The records of ``data``: whole, committed lines (up to a committed end read
    before), each checked; lines of the kinds in ``skip`` are not parsed but stand as
    ``{"t": kind, "seq": n}`` (a snapshot of a long conversation is megabytes of values
    a reader of new records may not need). A damaged line ends the result with
    ``corrupt_offset`` set.
    """
    result = ScanResult(committed_end=base_offset)
    prefixes = tuple((b'{"t":"%s",' % kind.encode(), kind) for kind in skip)
    pos = 0
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            result.corrupt_offset = base_offset + pos
            break
        line = data[pos:nl]
        rec: dict[str, Any] | None = None
        for prefix, kind in prefixes:
            if line.startswith(prefix) and check_line(line):
                at = line.rfind(b'"seq":')
                digits = re.match(rb"\d+", line[at + 6 :]) if at >= 0 else None
                rec = {"t": kind, "seq": int(digits.group())} if digits else None
                break
        else:
            rec = parse_line(line)
        if rec is None or not isinstance(rec.get("seq"), int):
            result.corrupt_offset = base_offset + pos
            break
        result.records.append(ScannedRecord(base_offset + pos, nl + 1 - pos, rec))
        pos = nl + 1
        result.committed_end = base_offset + pos
    return result


def _newer_record_follows(data: bytes, start: int, after_seq: int, batch: int | None) -> bool:
    """Whether a checksum-valid line with ``seq > after_seq`` starts at/after ``start``
    that is not a later record of the sync unit holding ``batch`` (the first ``seq`` of
    the damaged batch): a line whose unit began at or before it says it is one."""
    pos = start
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return False
        rec = parse_line(data[pos:nl])
        if rec is not None and isinstance(rec.get("seq"), int) and rec["seq"] > after_seq and (
            batch is None or not isinstance(rec.get("b"), int) or rec["b"] > batch
        ):
            return True
        pos = nl + 1
    return False


def iter_records(
    data: bytes, base_offset: int = 0, *, expect_seq: int | None = None, result: ScanResult
) -> Iterator[tuple[dict[str, Any], int, int]]:
    """:func:`scan` as a stream: yields each committed record (batch marks removed) with
    its file offset and length, and fills ``result`` (its ``records`` stay empty) once
    exhausted. Records can be dropped as soon as they are used.

    Lines are checked and parsed in one tight loop while all is well; from the first
    line that is damaged, out of sequence or unterminated, the rest (from the start of
    its batch) goes through :func:`scan`, so damage is judged exactly as there.
    """
    view = memoryview(data)
    find, loads, crc32 = data.find, orjson.loads, zlib.crc32
    prefix = _CHECKSUM_PREFIX
    pending: list[tuple[dict[str, Any], int, int]] = []
    pos = committed_pos = 0
    size = len(data)
    next_seq = expect_seq
    last_seq = None
    while pos < size:
        nl = find(b"\n", pos)
        if nl - pos < _TRAILER_LEN + 2 or data[nl - 2 : nl] != b'"}' or data[nl - 16 : nl - 10] != prefix:
            break  # also nl < 0: an unterminated line
        if data[nl - 10 : nl - 2] != b"%08x" % crc32(view[pos : nl - _TRAILER_LEN]):
            break
        try:
            rec = loads(view[pos:nl])
        except orjson.JSONDecodeError:
            break
        if type(rec) is not dict:
            break
        seq = rec.get("seq")
        if not isinstance(seq, int) or (next_seq is not None and seq != next_seq):
            break
        next_seq = seq + 1
        del rec["c"]
        rec.pop("b", None)
        if rec.pop("more", None):
            pending.append((rec, base_offset + pos, nl + 1 - pos))
            pos = nl + 1
            continue
        if pending:
            yield from pending
            pending = []
        yield rec, base_offset + pos, nl + 1 - pos
        pos = committed_pos = nl + 1
        last_seq = seq
    if pos >= size:
        result.committed_end = base_offset + committed_pos
        result.tail_bytes = size - committed_pos
        return
    rest = scan(data[committed_pos:], base_offset + committed_pos,
                expect_seq=last_seq + 1 if last_seq is not None else expect_seq)
    for r in rest.records:
        yield r.record, r.offset, r.length
    result.committed_end = rest.committed_end
    result.tail_bytes = rest.tail_bytes
    result.corrupt_offset = rest.corrupt_offset


def kept_by_offset(
    records: Iterator[tuple[dict[str, Any], int, int]], into: dict[int, dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], int, int]]:
    """The records of :func:`iter_records`, each also put in ``into`` by offset."""
    for item in records:
        into[item[1]] = item[0]
        yield item
