"""The companions of an archived log: a thread's files that are not derived from its log
(the debug trace and the quarantine file), packed into one file that goes into
``archive/`` with the log and comes back with it.

Derived files (sidecar index, session memory, head file) are dropped by archiving and
rebuilt after a restore; these cannot be rebuilt, so they travel. The content (which
:mod:`.archive` compresses as one Zstandard frame) is a header line naming the thread,
then per file a line naming it (its path relative to the store) and its size, followed
by its bytes and a newline, as in a quarantine file::

    {"t":"companions","seq":0,"thread":<id>,"c":"…"}
    {"t":"file","seq":1,"name":"traces/<stem>.jsonl","bytes":<n>,"c":"…"}
    <the n bytes>

The trade-off: one file written whole (temp file, fsync, rename) before the log moves,
so moving the thread stays one ``rename``; the files are copied, not moved, and their
originals are removed only once the log is in the archive. Everything here is pure:
bytes in, bytes out; the file I/O lives in :mod:`.archive`.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import framing


def pack(thread_id: str, files: Mapping[str, bytes]) -> bytes:
    """A companions file holding ``files`` (path relative to the store -> bytes)."""
    out = [framing.frame({"t": "companions", "seq": 0, "thread": thread_id})]
    for seq, (name, data) in enumerate(sorted(files.items()), start=1):
        out += [framing.frame({"t": "file", "seq": seq, "name": name, "bytes": len(data)}), data, b"\n"]
    return b"".join(out)


def thread_in(head: bytes) -> str | None:
    """The thread a companions file names, from its first bytes (``None``: not one)."""
    nl = head.find(b"\n")
    header = framing.parse_line(head[:nl]) if nl > 0 else None
    if not header or header.get("t") != "companions" or not isinstance(header.get("thread"), str):
        return None
    return str(header["thread"])


def unpack(data: bytes) -> tuple[str, dict[str, bytes]]:
    """The thread and the files (path relative to the store -> bytes) a companions
    file holds.

    Raises:
        ValueError: ``data`` is not a whole companions file (the message says where).
    """
    thread_id = thread_in(data)
    if thread_id is None:
        raise ValueError("no companions header at offset 0")
    files: dict[str, bytes] = {}
    pos = data.find(b"\n") + 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        note = framing.parse_line(data[pos:nl]) if nl > pos else None
        if (
            not note or note.get("t") != "file" or note.get("seq") != len(files) + 1
            or not isinstance(note.get("name"), str) or not isinstance(note.get("bytes"), int)
            or note["bytes"] < 0
        ):
            raise ValueError(f"no file entry at offset {pos}")
        start, end = nl + 1, nl + 1 + note["bytes"]
        if data[end:end + 1] != b"\n":
            raise ValueError(f"file {note['name']!r} at offset {pos} is cut short")
        files[note["name"]] = data[start:end]
        pos = end + 1
    return thread_id, files
