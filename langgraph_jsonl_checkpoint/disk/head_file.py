"""A thread's head file: its latest checkpoint whole, beside a short log, for fresh reads.

``<stem>.head`` holds one checksummed line (:func:`~.framing.frame`)::

    {"t":"head","v":1,"seq":0,"thread":..,"size":<log bytes>,"crc":"<CRC-32 of them>",
     ...what the layer above keeps: the checkpoint, its values whole, its pending writes}

It is derived data, like the sidecar: written (not fsynced) by the process that had the
log indexed, as the log leaves its open set or the store closes, and only for a log of
at most :data:`HEAD_LOG_BYTES`. It counts only for the very bytes it was made from: a
reader reads the whole log, and uses the head only if the log has exactly the size and
the CRC-32 the head names. Any append, cut, rewrite, repair, bit flip or other
generation of the log makes it stale, and a stale, damaged or missing head is ignored
(the log is indexed as before). So a process's first read of a short thread is one read
of each file instead of a scan of the log and a rebuild of its values from delta
records (see ``docs/design.md``, "Head files").
"""

from __future__ import annotations

import os
import stat
import zlib
from typing import Any

from . import files, framing
from .paths import LogPaths
from .sidecar import Block, merge_owned
from .sidecar_file import head_blocks
from .summary import summarize

#: The version of the head file's contents this release writes and reads.
HEAD_VERSION = 1

#: Logs longer than this get no head file (their sidecar index loads in about the time
#: a head is checked, and checking a head reads the whole log).
HEAD_LOG_BYTES = 1024 * 1024


def log_crc(data: bytes) -> str:
    """The CRC-32 a head file names for these log bytes, as 8 hex digits."""
    return f"{zlib.crc32(data):08x}"


def read_head(paths: LogPaths, thread_id: str) -> dict[str, Any] | None:
    """The head file's record if it is whole, of this release's version and this thread,
    and names the log's current bytes exactly (one read of each file); else ``None``
    (missing, damaged, stale: the caller indexes the log)."""
    head = _whole_head(paths, thread_id)
    if head is None or current_log_crc(paths.log, head["size"]) != head.get("crc"):
        return None
    return head


def read_head_index(paths: LogPaths, thread_id: str) -> tuple[dict[str, Any], bytes] | None:
    """The head file's record if it is whole, of this release's version and this thread
    (whatever log bytes it names), with the index lines that follow it (``b""``: none)."""
    try:
        data = files.read_whole(paths.head)
    except OSError:
        return None
    line, _, rest = data.partition(b"\n")
    head = _checked_head(framing.parse_line(line), thread_id)
    return (head, rest) if head is not None else None


def _whole_head(paths: LogPaths, thread_id: str) -> dict[str, Any] | None:
    """The head file's record if it is whole, of this release's version and this thread
    (whatever log bytes it names)."""
    found = read_head_index(paths, thread_id)
    return found[0] if found is not None else None


def _checked_head(head: dict[str, Any] | None, thread_id: str) -> dict[str, Any] | None:
    if (
        head is None or head.get("t") != "head" or head.get("v") != HEAD_VERSION
        or head.get("thread") != thread_id or not isinstance(head.get("size"), int)
    ):
        return None
    return head


def head_index(
    paths: LogPaths, thread_id: str, fd: int, size: int, header_end: int, known: int | None = None
) -> tuple[dict[str, Any], list[Block], int] | None:
    """The head record, its index of the log (merged into one block) and the CRC-32 of
    the index lines, if the head file holds index lines that cover the log's records
    whole (from the first after its header line, which ends at ``header_end``, to its
    last) and names exactly its bytes: ``size`` bytes (the log is open as ``fd``) with
    the head's CRC-32. Else ``None``: the caller scans the log.

    The index lines are a sidecar's block lines (:mod:`.sidecar`), checked as a
    sidecar's are (:func:`~.sidecar_file.head_blocks`), unless their CRC-32 is
    ``known``: lines this process wrote or checked itself."""
    found = read_head_index(paths, thread_id)
    if found is None or not found[1] or found[0]["size"] != size or _fd_crc(fd, size) != found[0].get("crc"):
        return None
    lines_crc = zlib.crc32(found[1])
    block = _covering(found[1], header_end, size, known=lines_crc == known)
    return (found[0], [block], lines_crc) if block is not None else None


def _covering(lines: bytes, header_end: int, end: int, *, known: bool = False) -> Block | None:
    """The index lines' blocks merged into one, if they cover a log's records whole:
    from the first after its header line (which ends at ``header_end``) to ``end``."""
    blocks = head_blocks(lines, header_end, known=known) if lines else []
    return merge_owned(blocks) if blocks and blocks[-1].end == end else None


def _fd_crc(fd: int, size: int) -> str | None:
    """The CRC-32 of the first ``size`` bytes of the file open as ``fd`` (``None``: it
    holds fewer)."""
    data = files.os.pread(fd, size, 0)
    return log_crc(data) if len(data) == size else None


def index_disagrees(paths: LogPaths, thread_id: str, records: list[framing.ScannedRecord]) -> bool:
    """Whether the head file holds index lines a reader would use for a log holding
    ``records`` (header first: they cover it whole; the caller checked that the head
    names its bytes) yet summarizing another record than the log's own, anywhere. For
    ``verify``: a reader that loads them checks no record against them."""
    found = read_head_index(paths, thread_id)
    if found is None or len(records) < 2:
        return False
    header, last = records[0], records[-1]
    block = _covering(found[1], header.offset + header.length, last.offset + last.length)
    if block is None:
        return False  # not used: the log is scanned
    for r in records[1:]:
        rec = {k: v for k, v in r.record.items() if k not in ("b", "more")}
        if block.summary(rec["seq"]) != summarize(rec, r.offset, r.length):
            return True
    return False


def current_log_crc(path: str, size: int) -> str | None:
    """The CRC-32 of the log's bytes if the log is a regular file of exactly ``size``
    bytes (at most :data:`HEAD_LOG_BYTES`); else ``None``."""
    if not 0 < size <= HEAD_LOG_BYTES:
        return None
    try:
        fd = files.open_file(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        st = files.os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        return _fd_crc(fd, size)
    except OSError:
        return None
    finally:
        files.os.close(fd)


def head_names(paths: LogPaths, thread_id: str, size: int, crc: str) -> bool:
    """Whether the head file on disk is whole and was made from log bytes of this size
    and CRC (then writing it again would change nothing)."""
    head = _whole_head(paths, thread_id)
    return head is not None and head["size"] == size and head.get("crc") == crc


def write_head(
    paths: LogPaths, thread_id: str, size: int, crc: str, body: dict[str, Any], index: bytes = b""
) -> None:
    """Replace the head file with ``body``, naming log bytes of ``size`` and ``crc``
    (written over the one before, in place, not fsynced: a head lost or torn by a crash
    or read while it is written is ignored, and the reader indexes the log).

    Raises:
        OSError: It could not be written (what it left is ignored, as a torn head is).
    """
    record = {"t": "head", "v": HEAD_VERSION, "seq": 0, "thread": thread_id, "size": size, "crc": crc}
    record.update(body)
    data = framing.frame(record) + index
    files.overwrite_derived(paths.head, paths.temp("head"), data)

