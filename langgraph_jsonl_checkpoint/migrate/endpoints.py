"""The two ends of a copy: a checkpointer, what it can tell beyond LangGraph's API, its journal.

LangGraph's ``BaseCheckpointSaver`` API says almost everything a copy needs, but not
all: ``list()`` hands out pending writes as ``(task_id, channel, value)``, without the
``task_path`` and ``idx`` they were stored with, and there is no call that lists a
store's threads without decoding every checkpoint. An :class:`Endpoint` wraps a saver
with those answers where its storage can give them (the store's index, a SQL query),
and falls back to what the API allows for any other saver (``task_path`` then is
``""``, which only changes the order of parallel tasks' writes on the target).

It also carries the replay adapter's journal of that end (:class:`JournalEnd`): the
thread logs of a ``JsonlSaver``, or a LangGraph ``BaseStore`` (``PostgresStore`` in the
same database, ``SqliteStore`` in the same file).

:func:`~.urls.open_endpoint` turns a URL into one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from ..errors import ConfigError
from ..saver.jsonl_saver import JsonlSaver
from .journal import EmptyJournal, JournalEnd, LogJournal


@dataclass(frozen=True)
class Place:
    """Where an endpoint's data lives: two spellings of one storage (``./x`` and ``x``, a
    symlinked directory, ``postgres://`` and ``postgresql://``) have equal places.

    Attributes:
        what: What it is, for messages (``"store"``, ``"SQLite file"``, ...).
        key: What identifies it: a path's device and inode, a database on its server,
            an object's id.
        shown: How a message names it (not compared).
    """

    what: str
    key: tuple[Any, ...]
    shown: str = field(default="", compare=False)


def place_of_path(path: str) -> Place | None:
    """The place of a store directory or SQLite file (``None``: nothing there yet)."""
    try:
        st = os.stat(path)  # follows symlinks: a link and its target are one place
    except (OSError, ValueError):  # ValueError: a NUL in it (opening it says so)
        return None
    what = "store" if os.path.isdir(path) else "SQLite file"
    return Place(what, ("path", st.st_dev, st.st_ino), os.path.realpath(path))


def cannot_create(path: str, *, parents: bool) -> str | None:
    """Why a target not there yet cannot be made at ``path``, as far as is cheaply known
    without making anything (a dry run's promise; ``None``: nothing against it): its
    directory is missing (with ``parents``, the nearest directory that exists is the
    one looked at: a store's missing parents are made too), not a directory, or not
    writable."""
    parent = os.path.dirname(os.path.normpath(path)) or "."
    if parents:
        while not os.path.exists(parent) and os.path.dirname(parent) not in ("", parent):
            parent = os.path.dirname(parent)
    if not os.path.exists(parent):
        return f"its directory {parent} does not exist"
    if not os.path.isdir(parent):
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return None


#: Checkpoints a copy reads (and holds with their values) at once, per thread and end:
#: a long conversation's checkpoints each hold its whole message list, so a thread read
#: whole costs memory quadratic in its length (:meth:`Endpoint.read_checkpoints`).
CHUNK = 8

#: A checkpoint's place in a thread: its namespace and id.
Key = tuple[str, str]


class StoredCheckpoint(NamedTuple):
    """A checkpoint as its storage lists it, without its values (:meth:`Endpoint.stored_checkpoints`)."""

    parent_id: str | None
    writes: int


class Chunk(list[Key]):
    """A few checkpoint keys, oldest first, and for each of their namespaces the id of
    the checkpoint of that namespace that follows them (``following``; none for the
    newest): what a listing of the namespace ``before`` it returns first."""

    following: dict[str, str]

    def __init__(self, keys: Iterable[Key] = (), following: dict[str, str] | None = None) -> None:
        super().__init__(keys)
        self.following = following or {}


class WriteSlot(NamedTuple):
    """Where a pending write was stored: its task, the task's path, its index, channel."""

    task_id: str
    task_path: str
    idx: int
    channel: str


@dataclass
class Endpoint:
    """A checkpointer to copy from or to.

    Attributes:
        saver: The checkpointer.
        name: What messages and reports call it (a URL without its password).
        kind: ``"jsonl"``, ``"sqlite"``, ``"postgres"`` or ``"saver"`` (any other object).
        journal: Its replay journal, if it has one.
    """

    saver: BaseCheckpointSaver[Any]
    name: str
    kind: str = "saver"
    journal: JournalEnd | None = None
    #: What a copy into it makes that is not there yet, besides threads and the tables
    #: of :meth:`missing_tables` (a new store directory, an SQLite file), for people.
    creates: list[str] = field(default_factory=list)

    def thread_ids(self) -> list[str]:
        """Every thread id, sorted (here: found through ``list(None)``, which decodes
        every checkpoint; the endpoints of known storage ask it directly)."""
        return sorted({str(t.config["configurable"]["thread_id"]) for t in self.saver.list(None)})

    def cannot_hold(self, thread_id: str) -> str | None:
        """Why a thread of this id cannot be copied into it, and what to do (None: it can)."""
        if thread_id != "" or self.kind != "jsonl":
            return None
        return ("a store cannot hold a thread whose id is empty (''), as SqliteSaver and PostgresSaver "
                "can, so it was left out. To bring it along, give it an id in the source first "
                "(UPDATE checkpoints SET thread_id = 'NEW-ID' WHERE thread_id = ''; the same for its "
                "writes table: writes in SQLite, checkpoint_writes and checkpoint_blobs in PostgreSQL), "
                "then run the same command again")

    def stored_checkpoints(self, thread_id: str) -> dict[Key, StoredCheckpoint]:
        """Every checkpoint of a thread (all namespaces) with its parent and its number of
        pending writes, by ``(namespace, id)``: no values (here: from ``list()``, which
        decodes each checkpoint and drops it; the endpoints of known storage ask it
        directly)."""
        out = {}
        for tup in self.saver.list({"configurable": {"thread_id": thread_id}}):
            out[checkpoint_key(tup)] = StoredCheckpoint(parent_of(tup), len(tup.pending_writes or []))
        return out

    def read_checkpoints(self, thread_id: str, keys: Chunk) -> list[CheckpointTuple | None]:
        """The tuples of ``keys`` (a few, oldest first: :func:`chunks`), in that order;
        ``None`` for one not there.

        One ``list(before=..., limit=...)`` call per namespace of the chunk answers it
        (a namespace's checkpoints listed newest first, ``before`` the one that follows
        the chunk); ``get_tuple`` fetches what those calls did not return (a saver that
        lists otherwise, a checkpoint added since).
        """
        wanted = set(keys)
        found: dict[Key, CheckpointTuple] = {}
        # With its namespace, the SQL savers' query walks their primary key (without one,
        # SQLite sorted every older row of the thread, values and all, for each chunk).
        for ns in dict.fromkeys(k[0] for k in keys):
            config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
            following = keys.following.get(ns)
            before: Any = {"configurable": {"checkpoint_id": following}} if following else None
            limit = sum(1 for k in keys if k[0] == ns)
            for listed in self.saver.list(config, before=before, limit=limit):
                if checkpoint_key(listed) in wanted:
                    found[checkpoint_key(listed)] = listed
        out: list[CheckpointTuple | None] = []
        for ns, checkpoint_id in keys:
            tup: CheckpointTuple | None = found.pop((ns, checkpoint_id), None)
            if tup is None:
                one: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                             "checkpoint_id": checkpoint_id}}
                tup = self.saver.get_tuple(one)
            out.append(tup)
        return out

    def write_slots(self, thread_id: str, ns: str, checkpoint_id: str) -> list[WriteSlot] | None:
        """The slots of a checkpoint's pending writes in ``writes_sort_key`` order, as
        ``list()`` returns the writes; ``None`` when the storage cannot say."""
        return None

    def thread_write_slots(self, thread_id: str) -> dict[tuple[str, str], list[WriteSlot]] | None:
        """Every checkpoint's write slots of a thread at once, by ``(namespace, checkpoint
        id)`` (``None``: ask :meth:`write_slots` per checkpoint)."""
        return None

    def tells_task_paths(self) -> bool:
        """Whether :meth:`write_slots` gives each write's ``task_path``. Without them the
        target orders a step's parallel tasks' writes by task id, not as the source did
        (each task's own writes keep their order), so verification compares them so."""
        return False

    def damage(self, thread_id: str) -> str | None:
        """Why a thread just read was read only in part (``None``: it was read whole).

        A store opened read-only serves a log damaged in the middle up to the damage;
        a copy of that part would pass for the whole thread.
        """
        return None

    def size(self) -> int | None:
        """Bytes the storage takes now (``None``: unknown)."""
        return None

    def missing_tables(self, *, journal: bool = True) -> list[str]:
        """Tables that only :meth:`setup` creates (``--setup``) and are not there yet: the
        saver's and (with ``journal``) its journal store's, in the order setup creates them."""
        return []

    def unmigrated(self) -> str | None:
        """Which of its saver's migrations its tables lack (an older version's), that only
        :meth:`setup` runs (``None``: none, or none to tell)."""
        return None

    def unmigrated_journal(self) -> str | None:
        """Why its journal store cannot be written to as it is and what to run, for an
        error (an older release's table, without columns ``put`` sets); ``None``: it can,
        or there is none to tell."""
        return None

    def readable(self) -> bool:
        """Whether the saver can be read now (a database without its tables cannot: a dry
        run then reads it as empty, what it would be once set up)."""
        return True

    def setup(self, *, journal: bool = True) -> None:
        """Create what the saver and (with ``journal``) its journal need (``setup()``)."""
        setup = getattr(self.saver, "setup", None)
        if callable(setup):
            setup()
        if journal and self.journal is not None:
            self.journal.setup()

    def place(self) -> Place | None:
        """Where its data lives (here: the saver object itself), to refuse a copy onto
        itself; ``None``: cannot tell."""
        return Place("checkpointer", ("object", id(self.saver)), type(self.saver).__name__)

    def close(self) -> None:
        """Release what :func:`open_endpoint` opened (nothing for an object given)."""


class JsonlEndpoint(Endpoint):
    """A ``JsonlSaver`` store: threads from its catalog, write slots from its index."""

    saver: JsonlSaver

    def __init__(self, saver: JsonlSaver, name: str, *, owned: bool, creates: Sequence[str] = ()) -> None:
        super().__init__(saver, name, "jsonl", LogJournal(saver), list(creates))
        self._owned = owned
        #: Log files whose thread could not be read (``path: why``), after :meth:`thread_ids`.
        self.unreadable: list[str] = []

    def thread_ids(self) -> list[str]:
        ids = []
        self.unreadable = []
        for entry in self.saver.store.catalog():
            if entry.thread_id is None:
                self.unreadable.append(f"{entry.path}: {str(entry.error).splitlines()[0]}")
            else:
                ids.append(entry.thread_id)
        return sorted(ids)

    def stored_checkpoints(self, thread_id: str) -> dict[Key, StoredCheckpoint]:
        log = self.saver.store.thread_log(thread_id)
        with log.mutex:
            idx = log.refresh()
            return {
                (ns, cid): StoredCheckpoint(entry.parent, len(idx.sorted_writes(ns, cid)))
                for ns, entries in idx.checkpoints.items() for cid, entry in entries.items()
            }

    def write_slots(self, thread_id: str, ns: str, checkpoint_id: str) -> list[WriteSlot] | None:
        log = self.saver.store.thread_log(thread_id)
        with log.mutex:
            idx = log.refresh()
            writes = idx.sorted_writes(ns, checkpoint_id)
        return [WriteSlot(task, w.task_path, i, w.channel) for task, i, w in writes]

    def tells_task_paths(self) -> bool:
        return True

    def damage(self, thread_id: str) -> str | None:
        log = self.saver.store.thread_log(thread_id)
        with log.mutex:
            log.refresh()  # the same answer if the log was closed since the read
            if log.damaged_at is None:
                return None
            return (f"its log {log.path} is damaged at byte offset {log.damaged_at} (only the "
                    f"records before it can be read). {log.repair_hint()}")

    def size(self) -> int | None:
        return _tree_size(str(self.saver.store.path))

    def place(self) -> Place | None:
        return place_of_path(str(self.saver.store.path))

    def close(self) -> None:
        if self._owned:
            self.saver.close()


class NewTarget(Endpoint):
    """A target as a dry run sees it before it exists: no threads, no journal events.

    Stands in for a store directory or SQLite file not made yet, and for a database whose
    tables are not set up, so that the dry run reads (and counts) what a real copy would
    put, and creates nothing. Its saver is an empty ``InMemorySaver`` nothing writes to.
    """

    def __init__(self, name: str, kind: str, *, journal: bool, creates: Sequence[str] = ()) -> None:
        super().__init__(InMemorySaver(), name, kind, EmptyJournal() if journal else None, list(creates))

    def thread_ids(self) -> list[str]:
        return []

    def place(self) -> Place | None:
        return None


class MemoryEndpoint(Endpoint):
    """An ``InMemorySaver`` (tests, notebooks): threads and write slots from its dicts."""

    def thread_ids(self) -> list[str]:
        return sorted(str(t) for t in getattr(self.saver, "storage", {}))

    def stored_checkpoints(self, thread_id: str) -> dict[Key, StoredCheckpoint]:
        writes = getattr(self.saver, "writes", {})
        return {
            (ns, cid): StoredCheckpoint(saved[2], len(writes.get((thread_id, ns, cid), {})))
            for ns, by_id in getattr(self.saver, "storage", {}).get(thread_id, {}).items()
            for cid, saved in by_id.items()
        }

    def write_slots(self, thread_id: str, ns: str, checkpoint_id: str) -> list[WriteSlot] | None:
        stored = getattr(self.saver, "writes", {}).get((thread_id, ns, checkpoint_id), {})
        slots = [WriteSlot(task, str(w[3]), idx, w[1]) for (task, idx), w in stored.items()]
        slots.sort(key=lambda s: (s.task_path, s.task_id, s.idx))
        return slots

    def tells_task_paths(self) -> bool:
        return True


def _tree_size(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:  # removed meanwhile
                pass
    return total


def chunks(keys: Iterable[Key], size: int = CHUNK) -> list[Chunk]:
    """``keys`` oldest first (parents before children: checkpoint ids are time-ordered),
    in :class:`Chunk` s of at most ``size``."""
    ordered = sorted(keys, key=lambda k: (k[1], k[0]))
    out: list[Chunk] = []
    after: dict[str, str] = {}  # per namespace, the oldest id after the chunk being made
    for start in reversed(range(0, len(ordered), size)):
        piece = ordered[start:start + size]
        out.append(Chunk(piece, dict(after)))
        for ns, cid in reversed(piece):
            after[ns] = cid
    out.reverse()
    return out


def checkpoint_key(tup: CheckpointTuple) -> Key:
    """A tuple's ``(namespace, checkpoint id)``."""
    c = tup.config["configurable"]
    return c.get("checkpoint_ns", ""), c["checkpoint_id"]


def parent_of(tup: CheckpointTuple) -> str | None:
    """The id of a tuple's parent checkpoint (``None``: it has none)."""
    return tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None


def matching(thread_ids: Sequence[str], patterns: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The ids that equal, or match as a shell glob, one of ``patterns`` (all: ``None``),
    and the patterns that matched none of them (in the order given; none given: none).

    Raises:
        ConfigError: ``patterns`` is one string, which would be read a character at a time.
    """
    if patterns is None:
        return list(thread_ids), []
    if isinstance(patterns, str):
        raise ConfigError(f"threads takes a list of thread ids or patterns, not the single string "
                          f"{patterns!r}: write threads=[{patterns!r}]. Nothing was copied.")
    from fnmatch import fnmatchcase

    matched: set[str] = set()
    ids = []
    for t in thread_ids:
        hits = [p for p in patterns if t == p or fnmatchcase(t, p)]
        if hits:
            ids.append(t)
            matched.update(hits)
    return ids, list(dict.fromkeys(p for p in patterns if p not in matched))


#: A function that wraps the thread ids a copy works through (a progress bar).
Track = Callable[[list[str]], Iterable[str]]
