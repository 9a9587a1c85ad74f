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

import hashlib
import os
from collections.abc import Callable
from typing import TypeAlias

from ..errors import JsonlCheckpointError
from . import files, framing

#: The catalog file, in the store's directory.
CATALOG = "CATALOG.idx"
CATALOG_VERSION = 1

#: A log of the store: ``(path, thread id, None)``, or ``(path, None, why not)``.
Listed: TypeAlias = tuple[str, str | None, JsonlCheckpointError | None]


def load(path: str) -> dict[str, tuple[int, str]]:
    """File name -> ``(inode, thread id)`` as the catalog at ``path`` says (empty if it
    is missing, damaged or of another version)."""
    try:
        data = files.read_whole(path)
    except OSError:
        return {}
    rec = framing.parse_line(data[:-1]) if data.endswith(b"\n") else None
    if not rec or rec.get("t") != "catalog" or rec.get("v") != CATALOG_VERSION:
        return {}
    names, inos, ids = rec.get("names"), rec.get("ino"), rec.get("ids")
    if not (type(names) is list and type(inos) is list and type(ids) is list
            and len(names) == len(inos) == len(ids)):
        return {}
    if not all(type(x) is str for x in names) or not all(type(x) is str for x in ids):
        return {}
    if not all(type(x) is int for x in inos):
        return {}
    return {name: (ino, tid) for name, ino, tid in zip(names, inos, ids)}


def save(path: str, temp_path: str, entries: dict[str, tuple[int, str]]) -> None:
    """Replace the catalog (not fsynced: it is rebuilt whenever it is lost or wrong)."""
    names = sorted(entries)
    line = framing.frame({
        "t": "catalog", "v": CATALOG_VERSION, "names": names,
        "ino": [entries[n][0] for n in names], "ids": [entries[n][1] for n in names],
    })
    files.replace_derived(path, temp_path, line)


def _names_thread(name: str, thread_id: str) -> bool:
    """Whether ``name`` is the log file name of ``thread_id``: its hash part is that of
    the id (see :func:`~.paths.thread_file_stem`; the slug before it follows from the id)."""
    try:
        digest = hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:32]
    except UnicodeEncodeError:
        return False
    return name.endswith("-" + digest + ".jsonl")


def list_logs(
    threads_path: str,
    known: dict[str, tuple[int, str]],
    read_thread_id: Callable[[str, str], str],
) -> tuple[list[Listed], dict[str, tuple[int, str]]]:
    """Every log in ``threads_path``, sorted by file name, with its thread id: from
    ``known`` (a catalog) where the name, the inode and the id's hash agree, else read
    from the log's header.

    Returns:
        The logs, and the catalog entries that describe them now.
    """
    with os.scandir(threads_path) as it:
        found = sorted((e.name, e.inode()) for e in it if e.name.endswith(".jsonl"))
    out: list[Listed] = []
    now: dict[str, tuple[int, str]] = {}
    prefix = os.path.join(threads_path, "")
    for name, ino in found:
        path = prefix + name
        hit = known.get(name)
        if hit is not None and hit[0] == ino and _names_thread(name, hit[1]):
            tid = hit[1]
        else:
            try:
                tid = read_thread_id(path, name)
            except FileNotFoundError:
                continue  # deleted, swept or archived since the directory was read
            except JsonlCheckpointError as exc:
                out.append((path, None, exc))
                continue
        now[name] = (ino, tid)
        out.append((path, tid, None))
    return out, now
