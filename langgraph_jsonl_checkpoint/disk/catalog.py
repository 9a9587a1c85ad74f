"""The store's catalog of thread logs (``CATALOG.idx``): which thread each log holds.

A log's file name is a hash of its thread id (:mod:`.paths`), so listing a store's
threads meant opening every log to read the id from its header: 10,000 opens for
``list(None)`` or ``langgraph-jsonl threads``. The catalog keeps, per log file name,
the file's inode number (from the directory listing itself: no ``stat``, no open) and
the thread id its header held. It is derived data, like the sidecar: never fsynced,
replaced whole (temp file + rename), and never trusted blindly. An entry is used only
for a file of that name and inode, and only if the id it names hashes to that name (so
it is that file's thread: names are hashes of ids); any other file's header is read, as
before. (A file replaced by another keeping its inode is not noticed by a listing; a
read of the thread checks the header.) A missing, damaged, stale or older-format
catalog is rebuilt by the next writable store that lists its threads (and on close); a
read-only one uses what matches and writes nothing.

Format: one checksummed line (:func:`~.framing.frame`),
``{"t": "catalog", "v": 1, "names": [...], "ino": [...], "ids": [...]}``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import ForeignFileError, JsonlCheckpointError
from . import files, framing
from .header import is_damaged_header, is_torn_header, record_follows_header, thread_named_by
from .paths import thread_digest, thread_file_stem, thread_option

#: The catalog file, in the store's directory.
CATALOG = "CATALOG.idx"
CATALOG_VERSION = 1


class Catalog:
    """What a catalog file says: log file name -> ``(inode, thread id)``.

    Held as a name -> position map and two parallel lists: strings and integers, which
    the cyclic collector does not track. A tuple per entry (10,000 of them for a store
    of 10,000 threads) pushed a fresh process's listing into a full collection of
    everything its imports had built, which cost more than the listing itself.
    """

    __slots__ = ("_at", "inodes", "ids")

    def __init__(self, names: list[str] | None = None, inodes: list[int] | None = None,
                 ids: list[str] | None = None) -> None:
        names = names or []
        self._at = dict(zip(names, range(len(names)), strict=True))
        self.inodes = inodes or []
        self.ids = ids or []

    def __len__(self) -> int:
        return len(self._at)

    def get(self, name: str) -> tuple[int, str] | None:
        """``(inode, thread id)`` of the log file ``name``, if the catalog has it."""
        i = self._at.get(name)
        return None if i is None else (self.inodes[i], self.ids[i])


def load(path: str) -> Catalog:
    """The catalog at ``path`` (empty if it is missing, damaged or of another version)."""
    try:
        data = files.read_whole(path)
    except OSError:
        return Catalog()
    rec = framing.parse_line(data[:-1]) if data.endswith(b"\n") else None
    if not rec or rec.get("t") != "catalog" or rec.get("v") != CATALOG_VERSION:
        return Catalog()
    names, inos, ids = rec.get("names"), rec.get("ino"), rec.get("ids")
    if not (type(names) is list and type(inos) is list and type(ids) is list
            and len(names) == len(inos) == len(ids)):
        return Catalog()
    if not all(type(x) is str for x in names) or not all(type(x) is str for x in ids):
        return Catalog()
    if not all(type(x) is int for x in inos):
        return Catalog()
    return Catalog(names, inos, ids)


@dataclass
class Listing:
    """Every log of a store's ``threads/`` folder, sorted by file name, with its thread
    id (parallel lists, untracked by the collector: see :class:`Catalog`).

    Attributes:
        folder: The ``threads/`` folder.
        names: The log file names, sorted.
        ids: The thread id of each, ``None`` where its header could not be read.
        inodes: The inode number of each.
        errors: Why, by position in ``names``, for each ``None`` in ``ids``.
        changed: Whether the catalog it was listed with did not describe it exactly
            (it should be saved again).
    """

    folder: str
    names: list[str] = field(default_factory=list)
    ids: list[str | None] = field(default_factory=list)
    inodes: list[int] = field(default_factory=list)
    errors: dict[int, JsonlCheckpointError] = field(default_factory=dict)
    changed: bool = False

    def entries(self) -> Iterator[tuple[str, str | None, JsonlCheckpointError | None]]:
        """``(path, thread id, None)`` or ``(path, None, why not)`` per log."""
        prefix = os.path.join(self.folder, "")
        for i, name in enumerate(self.names):
            yield prefix + name, self.ids[i], self.errors.get(i)


def save(path: str, temp_path: str, listing: Listing) -> None:
    """Replace the catalog with what ``listing`` found (the logs whose header could be
    read). Not fsynced: it is rebuilt whenever it is lost or wrong."""
    keep = [i for i in range(len(listing.names)) if i not in listing.errors]
    line = framing.frame({
        "t": "catalog", "v": CATALOG_VERSION,
        "names": [listing.names[i] for i in keep],
        "ino": [listing.inodes[i] for i in keep],
        "ids": [listing.ids[i] for i in keep],
    })
    files.replace_derived(path, temp_path, line)


def _names_thread(name: str, thread_id: str) -> bool:
    """Whether ``name`` is the log file name of ``thread_id``: its hash part is that of
    the id (see :func:`~.paths.thread_file_stem`; the slug before it follows from the id)."""
    try:
        return name.endswith("-" + thread_digest(thread_id) + ".jsonl")
    except UnicodeEncodeError:
        return False


def list_logs(
    threads_path: str,
    known: Catalog,
    read_thread_id: Callable[[str, str], str],
) -> Listing:
    """Every log in ``threads_path``, sorted by file name, with its thread id: from
    ``known`` (a catalog) where the name, the inode and the id's hash agree, else read
    from the log's header. A log removed after the folder was read is left out."""
    inode_of: dict[str, int] = {}  # str -> int: untracked, unlike (name, inode) pairs
    with os.scandir(threads_path) as it:
        for e in it:
            if e.name.endswith(".jsonl"):
                inode_of[e.name] = e.inode()
    out = Listing(threads_path)
    hits = 0
    prefix = os.path.join(threads_path, "")
    for name in sorted(inode_of):
        ino = inode_of[name]
        hit = known.get(name)
        if hit is not None and hit[0] == ino and _names_thread(name, hit[1]):
            tid: str | None = hit[1]
            hits += 1
        else:
            try:
                tid = read_thread_id(prefix + name, name)
                out.changed = True  # a log the catalog does not describe
            except FileNotFoundError:
                continue  # deleted, swept or archived since the directory was read
            except JsonlCheckpointError as exc:
                out.errors[len(out.names)] = exc  # not cataloged: read again next time
                tid = None
        out.names.append(name)
        out.ids.append(tid)
        out.inodes.append(ino)
    if hits != len(known):
        out.changed = True  # the catalog names logs that are gone
    return out


def read_thread_id(path: str, entry: str, store: str) -> str:
    """The id in the header of the log ``entry`` (its file name) at ``path``, in the
    store at ``store`` (what the error messages name).

    Raises:
        FileNotFoundError: The log is gone (deleted, swept or archived meanwhile).
        ForeignFileError: The file is not one of this store's logs.
    """
    try:
        fd = files.open_file(path, os.O_RDONLY)  # never waits: a FIFO is refused below
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ForeignFileError(
            f"cannot open {path} ({exc.strerror}); the store only holds regular files "
            "it created. Remove or fix that file."
        ) from exc
    try:
        files.refuse_special_file(fd, path)
        head = files.os.pread(fd, 64 * 1024, 0)
    finally:
        files.os.close(fd)
    nl = head.find(b"\n")
    header = framing.parse_line(head[:nl]) if nl > 0 else None
    if header is None and nl > 0:  # CRLF endings: its reads say so, and repair mends it
        header = framing.parse_crlf_line(head[:nl])
    torn = _torn_log_of(head, entry) if nl < 0 else None
    if torn is not None:
        return torn  # its thread's reads refuse it (data lost) or read it as absent
    named = thread_named_by(head[:nl]) if header is None and is_damaged_header(head) else None
    if named is not None and thread_file_stem(named) + ".jsonl" != entry:
        named = None  # not the id this file's name was made from
    records = header is None and record_follows_header(head)
    if named is not None or records:
        # Damage to a log of this package, not a foreign file (it shows the id its name
        # was made from, or checksummed records follow): repair keeps what can be read.
        follows = "the records after it look intact" if records else "no record follows it"
        if named is not None:
            shows, run = f"which still reads {named!r}", f"{thread_option(named)}`"
        else:
            shows, run = "whose thread id cannot be read", "--thread THREAD` with the thread's id"
        raise ForeignFileError(
            f"{path} has a damaged header line, {shows}; {follows}. Run `langgraph-jsonl repair "
            f"{shlex.quote(store)} {run} (it keeps what can be read, archiving the original first)."
        )
    if not header or header.get("t") != "header" or not isinstance(header.get("thread"), str):
        raise ForeignFileError(
            f"{path} is not a langgraph-jsonl-checkpoint log (no header record). "
            "Move it out of the store directory."
        )
    tid = header["thread"]
    if thread_file_stem(tid) + ".jsonl" != entry:
        raise ForeignFileError(
            f"{path} holds thread {tid!r} but is named for another thread; files in the "
            "store must not be renamed by hand. Use copy_thread() instead."
        )
    return str(tid)


def _torn_log_of(head: bytes, entry: str) -> str | None:
    """The thread whose log ``entry`` is, if its bytes are that thread's header line cut
    short (an emptied log, or a crash while it was created) and the thread id can be told
    from the file name (an id its file stem spells out: lower case, no characters the
    stem replaces); ``None`` otherwise."""
    stem = entry[: -len(".jsonl")] if entry.endswith(".jsonl") else entry
    candidate = stem.rpartition("-")[0]
    if not candidate or thread_file_stem(candidate) != stem or not is_torn_header(head, candidate):
        return None
    return candidate
