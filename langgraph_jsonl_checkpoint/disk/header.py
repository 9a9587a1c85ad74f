"""A log's first record: what it holds, how it is checked, how a cut one is told.

The header names the format version, the thread and the generation (+1 on each
rewrite). It is written with the file (temp file, fsync, rename), so this package never
tears it; only outside damage (a copy or restore cut short, a file system losing an
unsynced rename's data) leaves a header line cut short. Pure: values in, values out.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import orjson

from ..errors import CorruptLogError, ForeignFileError, FormatVersionError
from . import framing

#: The log format this release writes and reads (see ``docs/format.md``).
FORMAT_VERSION = 1


def new_header(thread_id: str, gen: int) -> dict[str, Any]:
    """The header record of a new generation of a thread's log."""
    return {
        "t": "header",
        "seq": 0,
        "format": FORMAT_VERSION,
        "thread": thread_id,
        "gen": gen,
        "created": datetime.now(UTC).isoformat(),
    }


def check_header(header: dict[str, Any] | None, thread_id: str, path: str) -> dict[str, Any]:
    """The parsed header line of ``path``, checked to be this package's, of a format
    this release reads, for this thread.

    Raises:
        ForeignFileError: Not a header of this package, or of another thread.
        FormatVersionError: A format this release does not read.
    """
    if header is None:
        raise ForeignFileError(
            f"thread {thread_id!r}: {path} does not start with a "
            "langgraph-jsonl-checkpoint header record. It is not a log this package "
            "wrote; move it out of the store directory."
        )
    if header.get("t") != "header":
        raise ForeignFileError(f"thread {thread_id!r}: first record of {path} is not a header.")
    fmt = header.get("format")
    if fmt != FORMAT_VERSION:
        raise FormatVersionError(
            f"thread {thread_id!r}: log {path} has format version {fmt!r}; this version "
            f"of langgraph-jsonl-checkpoint reads format {FORMAT_VERSION}. Upgrade the "
            "package to read it."
        )
    if header.get("thread") != thread_id:
        raise another_thread_s_log(thread_id, path, header.get("thread"))
    return header


def another_thread_s_log(thread_id: str, path: str, holder: object) -> ForeignFileError:
    """The error for a log whose header names another thread than the one it is named
    for (a file renamed, or another thread's log copied over it, by hand): not damage,
    which ``repair`` could mend, and what to do instead."""
    return ForeignFileError(
        f"thread {thread_id!r}: log {path} holds thread {holder!r}, not this one (its "
        "header says so: a file renamed, or another thread's log copied over it, by hand). "
        "Nothing was changed; repair cannot mend it. Move it out of the store (thread "
        f"{thread_id!r} then starts empty) or put this thread's own log back; to copy a "
        "thread, use `langgraph-jsonl copy` or copy_thread()."
    )


def is_torn_header(head: bytes, thread_id: str) -> bool:
    """Whether ``head`` (no newline in it) is this thread's header line, cut short.

    It counts as torn only if its bytes are what this package writes for this thread: an
    empty file, or a prefix of the header's fixed part, or that fixed part followed by
    the generation and creation time, cut anywhere.
    """
    fixed = orjson.dumps(
        {"t": "header", "seq": 0, "format": FORMAT_VERSION, "thread": thread_id}
    )[:-1] + b',"gen":'  # as new_header() is framed, up to the generation
    if len(head) <= len(fixed):
        return fixed.startswith(head)
    return head.startswith(fixed) and _is_cut_header_rest(head[len(fixed):])


def _is_cut_header_rest(rest: bytes) -> bool:
    """Whether ``rest`` is ``<gen>,"created":"<time>","c":"<crc>"}`` cut anywhere."""
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    if not 1 <= digits <= 12:
        return False
    rest = rest[digits:]
    for literal, allowed in ((b',"created":"', b"0123456789T:.+-"), (b'","c":"', b"0123456789abcdef")):
        if len(rest) <= len(literal):
            return literal.startswith(rest)
        if not rest.startswith(literal):
            return False
        rest = rest[len(literal):]
        field = len(rest) - len(rest.lstrip(allowed))
        if field > 40:
            return False
        rest = rest[field:]
    return b'"}'.startswith(rest)


def is_damaged_header(head: bytes) -> bool:
    """Whether ``head`` (a log's first bytes) is a log of this package whose header line
    is damaged (flipped bytes): the line fails its checksum, but it starts as a header
    does or the next line is a checksummed record. Such a log is damage for ``repair``,
    not a foreign file to move out. Pure."""
    nl = head.find(b"\n")
    if nl <= 0 or framing.parse_line(head[:nl]) is not None:
        return False
    return head.startswith(b'{"t":"header"') or record_follows_header(head)


def record_follows_header(head: bytes) -> bool:
    """Whether the line after ``head``'s first one is a checksummed record. Pure."""
    nl = head.find(b"\n")
    nxt = head.find(b"\n", nl + 1) if nl > 0 else -1
    return nxt > 0 and framing.parse_line(head[nl + 1 : nxt]) is not None


def thread_named_by(line: bytes) -> str | None:
    """The thread id a header line that fails its checksum still shows whole, if any
    (what a message can name for ``repair``). Pure."""
    shown = _THREAD_FIELD.search(line)
    if shown is None:
        return None
    try:
        tid = orjson.loads(shown.group(1))
    except orjson.JSONDecodeError:
        return None
    return tid if isinstance(tid, str) and tid else None


_THREAD_FIELD = re.compile(rb'"thread":("(?:[^"\\]|\\.)*")')


def refuse_repairable_header(head: bytes, thread_id: str, path: str, hint: str) -> None:
    """Refuse a log whose header line does not check but which ``repair`` mends (CRLF
    line endings; a damaged header line before intact records), saying so and how
    (``hint``); return for any other file (:func:`check_header` then names it).

    Raises:
        CorruptLogError: The log is one of these.
    """
    nl = head.find(b"\n")
    if nl > 0 and framing.parse_crlf_line(head[:nl]) is not None:
        raise CorruptLogError(
            f"thread {thread_id!r}: log {path} has CRLF line endings (an editor, git's "
            "autocrlf or a text-mode copy turned its LF endings into CRLF): its records are "
            f"intact, but not readable as they are. Nothing was changed. {hint}",
            path=path, offset=0)
    if is_damaged_header(head):
        raise CorruptLogError(
            f"thread {thread_id!r}: log {path} has a damaged header line (byte 0); the "
            f"records after it look intact. Nothing was changed. {hint}", path=path, offset=0)
