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


def _whole_head(paths: LogPaths, thread_id: str) -> dict[str, Any] | None:
    """The head file's record if it is whole, of this release's version and this thread
    (whatever log bytes it names)."""
    try:
        line = files.read_whole(paths.head)
    except OSError:
        return None
    head = framing.parse_line(line.rstrip(b"\n"))
    if (
        head is None or head.get("t") != "head" or head.get("v") != HEAD_VERSION
        or head.get("thread") != thread_id or not isinstance(head.get("size"), int)
    ):
        return None
    return head


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
        data = files.os.pread(fd, size, 0)
    except OSError:
        return None
    finally:
        files.os.close(fd)
    return log_crc(data) if len(data) == size else None


def head_names(paths: LogPaths, thread_id: str, size: int, crc: str) -> bool:
    """Whether the head file on disk is whole and was made from log bytes of this size
    and CRC (then writing it again would change nothing)."""
    head = _whole_head(paths, thread_id)
    return head is not None and head["size"] == size and head.get("crc") == crc


def write_head(paths: LogPaths, thread_id: str, size: int, crc: str, body: dict[str, Any]) -> None:
    """Replace the head file with ``body``, naming log bytes of ``size`` and ``crc``
    (written over the one before, in place, not fsynced: a head lost or torn by a crash
    or read while it is written is ignored, and the reader indexes the log).

    Raises:
        OSError: It could not be written (what it left is ignored, as a torn head is).
    """
    record = {"t": "head", "v": HEAD_VERSION, "seq": 0, "thread": thread_id, "size": size, "crc": crc}
    record.update(body)
    data = framing.frame(record)
    files.overwrite_derived(paths.head, paths.temp("head"), data)

