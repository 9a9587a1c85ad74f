"""A compressed archive (``archive/<stem>.<stamp>.jsonl.zst``) whose head does not read as
a log of this store: damaged, or not ours.

Listing reads an archive's first 64 KiB only (its header names the thread); a frame
damaged there (a byte flipped, the file cut short) reads as nothing, or as garbage. Such
a file is ours, damaged, if it is a Zstandard frame (it starts with the frame magic)
that does not decompress whole (checksum, cut short); a file that is not Zstandard at
all, or a whole frame that holds no log of this store, is not ours. A damaged archive
names its thread by its file name: the thread asked for, or the one the thread's
tombstone in ``threads/`` names (archiving leaves it).
"""

from __future__ import annotations

import os
import shlex

from ..errors import CorruptLogError
from . import files, framing
from .paths import thread_file_stem
from .store import Store

try:  # optional, as in :mod:`.archive` (Any to mypy: pyproject.toml)
    import zstandard
except ImportError:  # pragma: no cover - exercised only without the extra
    zstandard = None

#: The first bytes of a Zstandard frame.
FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1024 * 1024


def damage(path: str) -> str | None:
    """What Zstandard says of ``path`` read whole: why it is damaged, or ``None`` if it
    is not a Zstandard frame at all, or a whole one (then it is not ours)."""
    with open(path, "rb") as fh:
        if fh.read(len(FRAME_MAGIC)) != FRAME_MAGIC:
            return None
        fh.seek(0)
        frame = zstandard.ZstdDecompressor().decompressobj()
        try:
            while not frame.eof and (chunk := fh.read(_CHUNK)):
                frame.decompress(chunk)  # the content is not kept: only whether it reads
        except zstandard.ZstdError as exc:
            return str(exc)
    return None if frame.eof else "the file ends before its frame does: it was cut short"


def thread_named(store: Store, stem: str, asked: str | None) -> str | None:
    """The thread whose files are named ``stem``: ``asked`` if it is that one, else the
    one its tombstone names (``None``: neither tells)."""
    if asked is not None and thread_file_stem(asked) == stem:
        return asked
    try:
        raw = files.read_whole(os.path.join(store.threads_path, stem + ".deleted"))
    except OSError:
        return None
    rec = framing.parse_line(raw.rstrip(b"\n"))
    thread_id = rec.get("thread") if rec else None
    return thread_id if isinstance(thread_id, str) and thread_file_stem(thread_id) == stem else None


def damaged(thread_id: str | None, path: str, said: str) -> CorruptLogError:
    """The error for a damaged archive of ``thread_id`` (``None``: the file does not tell
    which thread)."""
    whose = f"thread {thread_id!r}: archive" if thread_id is not None else "archive"
    store = shlex.quote(os.path.dirname(os.path.dirname(path)))
    ask = "" if thread_id is not None else (
        f"; `langgraph-jsonl archived {store} --thread THREAD` lists it under its thread")
    return CorruptLogError(
        f"{whose} {path} is damaged ({said}): nothing was changed, the file is kept as it is, "
        f"and the thread cannot be restored from it. Restore the file from a backup{ask}.",
        path=path,
        offset=0,
    )


def companions_damaged(thread_id: str | None, path: str, said: str) -> CorruptLogError:
    """The error for a companions file (``<stem>.<stamp>.companions.zst``, the trace and
    quarantine file archived with a log) of ``thread_id`` that is damaged or not its."""
    whose = f"thread {thread_id!r}: companions file" if thread_id is not None else "companions file"
    return CorruptLogError(
        f"{whose} {path} is damaged or not this thread's ({said}); it was kept as it is. "
        "Restore it from a backup, or move it out of the archive to restore the thread "
        "without its debug trace and quarantine file.",
        path=path,
        offset=0,
    )
