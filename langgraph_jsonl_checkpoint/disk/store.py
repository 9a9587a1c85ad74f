"""A store: its directory (opened by :mod:`.store_dir`), the thread catalog, open logs.

Layout (see ``docs/format.md``)::

    <path>/                       0700
        STORE.json                marker: {"store": "langgraph-jsonl-checkpoint", "format": 1}
        threads/                  0700, one log per thread (names: :mod:`.paths`)
        tmp/                      0700, temp files of atomic rewrites
        archive/                  copies made by repair before it changed a log

A store of a format this release does not know is refused. A directory writable by
other users, or a symbolic link in place of one of its folders, is refused. The catalog
reads each thread's real id from its log's header.

The store keeps a bounded number of :class:`~.log.ThreadLog` objects (and so of open
file descriptors); an evicted one is reopened, index and all, on next use. Idle logs are
kept up to ``max_open_threads`` while threads come back to them, one while none does
(:mod:`.idle_bound`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import ConfigError, JsonlCheckpointError
from . import catalog, files
from .catalog import Listing
from .entries import bulk_allocation
from .files import fsync_dir
from .forks import renew_in_child
from .idle_bound import IdleBound
from .log import ThreadLog
from .parked import Parked
from .paths import LogPaths, thread_file_stem
from .runlock import RunLock
from .store_dir import ARCHIVE_DIR as ARCHIVE_DIR
from .store_dir import MARKER as MARKER
from .store_dir import MARKER_TEMP as MARKER_TEMP
from .store_dir import STORE_FORMAT as STORE_FORMAT
from .store_dir import TEMP_DIR as TEMP_DIR
from .store_dir import THREADS_DIR as THREADS_DIR
from .store_dir import open_directory, store_path
from .view import LogView

#: Thread logs kept open at once besides those a live run holds (which stay open while
#: it runs, however many); each holds up to three descriptors, and a fourth while its
#: sidecar is loaded lazily (:mod:`.lazy_blocks`: until its older lines are decoded).
#: A log let go of is opened again on its next use (a short log is scanned, a long one
#: loads its sidecar, which it wrote as it was let go). 16 idle logs keep the objects
#: the cyclic collector walks because of them in the low thousands (about 180 each for
#: a 10-turn agent thread once its run ended); more made a server of many short
#: threads pay for full collections over their indexes (issue 28). While no idle log
#: is used again the store keeps one (:mod:`.idle_bound`).
DEFAULT_MAX_OPEN_THREADS = 16


#: Logs let go of that the store remembers (see :class:`~.parked.Parked`): 33 bytes packed
#: each, about 200 with the thread id and the mapping's entry (10 MB at most); the least
#: recently let go are forgotten first.
MAX_PARKED = 50_000

#: Items (messages, list entries) the value caches of all logs may hold together. A
#: message counts twice (the object a witness holds, its stored form); measured on an
#: agent conversation, 1.1 KB per item: about 110 MB at most.
WARM_ITEMS = 100_000


@dataclass(frozen=True)
class ThreadFile:
    """One log file of a store (see :meth:`Store.catalog`).

    Attributes:
        path: The file.
        thread_id: The thread it holds (``None`` if its header cannot be read).
        error: Why it cannot be read, if so.
    """

    path: str
    thread_id: str | None
    error: JsonlCheckpointError | None


class Store:
    """A store directory and the thread logs opened from it.

    Args:
        path: The directory (created ``0700`` if missing).
        read_only: Open existing data without creating, repairing or writing anything.
        max_open_threads: How many idle thread logs to keep open at once (at most:
            one while none is used again, see :mod:`.idle_bound`).

    Raises:
        ConfigError: ``path`` exists and is not a directory.
        StoreError: The directory is not a store of this package, or is unsafe.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        max_open_threads: int = DEFAULT_MAX_OPEN_THREADS,
    ) -> None:
        self.path = store_path(path)
        self.read_only = read_only
        self.threads_path = os.path.join(self.path, THREADS_DIR)
        self.temp_path = os.path.join(self.path, TEMP_DIR)
        #: How many idle logs are kept open now (``max_open_threads``, or one while
        #: none is used again: :mod:`.idle_bound`).
        self.idle = IdleBound(max_open_threads)
        self._logs: OrderedDict[str, ThreadLog] = OrderedDict()
        # Logs whose value caches (list witnesses, the newest lists in stored form) are
        # kept, with the items they hold: a conversation's objects, so their total is
        # bounded and the least recently used logs drop theirs first.
        self._warm: OrderedDict[str, tuple[LogView, int]] = OrderedDict()
        self._warm_items = 0
        #: Threads a live run holds (the runs holding each): their logs are never let go.
        self._pinned: dict[str, list[object]] = {}
        #: What the store remembers of logs it let go of (by thread id, oldest first).
        self._parked: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        #: Called with each thread log as it is opened (a layer above attaches the
        #: observers it keeps derived data with, see ``ThreadLog.observers``).
        self.on_open: list[Callable[[ThreadLog], None]] = []
        #: Why the store can no longer be used (its directory was removed: a ``":memory:"``
        #: store closed), said by every use after; ``None`` while it can be.
        self.removed: str | None = None
        open_directory(self.path, read_only=read_only)
        renew_in_child(self)  # a forked child starts afresh (see _after_fork)

    def _after_fork(self) -> None:
        """In a forked child: a thread of the parent may have been using an open log (its
        lock held, its index half changed); that thread does not exist here. Forget the
        open logs (their copied descriptors close, which never lets a lock of the parent
        go); each opens again from its files on first use."""
        for log in [*self._logs.values(), *(view for view, _ in self._warm.values())]:
            log.mutex = threading.RLock()  # (closing it must not wait for the parent's thread)
        self._lock = threading.Lock()
        self._logs = OrderedDict()
        self._warm = OrderedDict()
        self._warm_items = 0
        self._pinned = {}
        self._parked = OrderedDict()
        self.idle = IdleBound(self.idle.bound)

    def _usable(self) -> None:
        """Raise :class:`~..errors.ConfigError` saying why, if the store was removed."""
        if self.removed is not None:
            raise ConfigError(self.removed)

    # -- thread logs ---------------------------------------------------------

    def thread_log(self, thread_id: str) -> ThreadLog:
        """The :class:`ThreadLog` of a thread (opened on first use, cached).

        Raises:
            ConfigError: The id cannot be stored (not valid Unicode text).
        """
        if self.removed is not None:  # (inline: every put and read comes through here)
            raise ConfigError(self.removed)
        try:
            thread_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError(
                f"thread id {thread_id!r} is not valid Unicode text (it holds a lone "
                "surrogate) and cannot be stored; use a str that encodes as UTF-8."
            ) from exc
        with self._lock:
            log = self._logs.get(thread_id)
            if log is not None:
                self._found_open(thread_id)
                self._logs.move_to_end(thread_id)
                return log
            self.idle.opened(thread_id)
            packed = self._parked.pop(thread_id, None)
            log = ThreadLog(
                self.log_paths(thread_id), thread_id, read_only=self.read_only,
                parked=Parked.unpack(packed) if packed is not None else None,
            )
            self._logs[thread_id] = log
            for attach in self.on_open:
                attach(log)
            dropped = self._over_bound()
        self._let_go(dropped)
        return log

    def _found_open(self, thread_id: str) -> None:
        """A thread is used whose log is open (under the lock): if idle and not the one
        used last (kept either way), keeping idle logs paid off."""
        if thread_id not in self._pinned and next(reversed(self._logs)) != thread_id:
            self.idle.reused()

    def _over_bound(self) -> list[ThreadLog]:
        """Take the least recently used logs that no live run holds out of the open set
        while more than :attr:`idle` keeps are open (under the lock)."""
        idle = len(self._logs) - len(self._pinned)
        if idle <= self.idle.keep:
            return []
        dropped = []
        for old_id in list(self._logs):
            if idle <= self.idle.keep:  # (a let-go may lower it)
                break
            if old_id in self._pinned:
                continue
            dropped.append(self._logs.pop(old_id))
            self._cool(old_id)
            self.idle.let_go(old_id)
            idle -= 1
        return dropped

    def _let_go(self, dropped: list[ThreadLog]) -> None:
        # Not closed here: another thread may be using it; its descriptors close when
        # the last reference goes. What it and its observers keep in memory is written
        # down (its sidecar, the session memory file), outside the store's lock, so that
        # the next open continues from it instead of reading the whole log again.
        for old in dropped:
            for observer in old.observers:
                observer.closing(old)
            parked = old.let_go()
            if parked is not None:
                self._park(old.thread_id, parked)

    def pin(self, thread_id: str, holder: object) -> None:
        """A live run (``holder``) holds the thread (see ``saver/liveness.py``): its log
        stays open, whatever the bound, until :meth:`unpin` with the same holder."""
        with self._lock:
            if thread_id in self._logs:
                self._found_open(thread_id)
            holders = self._pinned.setdefault(thread_id, [])
            if not any(h is holder for h in holders):
                holders.append(holder)

    def unpin(self, thread_id: str, holder: object) -> None:
        """The run ``holder`` that held the thread ended: what only a run uses is dropped
        from its log's caches, and the log counts against ``max_open_threads`` again once
        no run holds it. A holder not holding it (unpinned already): nothing to do, so an
        unpin cut short by a Ctrl-C can be made again."""
        with self._lock:
            holders = self._pinned.get(thread_id, [])
            for k, h in enumerate(holders):
                if h is holder:
                    del holders[k]
                    break
            else:
                return
            if holders:
                return
            del self._pinned[thread_id]
            log = self._logs.get(thread_id)
            dropped = self._over_bound()
        if log is not None:
            log.idle()
            if log.derived is not None:
                log.derived.run_ended()
                self.keep_warm(log)  # counted again, without what was dropped
        self._let_go(dropped)

    def _park(self, thread_id: str, parked: Parked) -> None:
        """Remember what a log let go of left (unless it was opened again meanwhile)."""
        with self._lock:
            if thread_id in self._logs:
                return
            self._parked[thread_id] = parked.pack()
            self._parked.move_to_end(thread_id)
            while len(self._parked) > MAX_PARKED:
                self._parked.popitem(last=False)

    def log_paths(self, thread_id: str) -> LogPaths:
        """The paths of a thread's files in this store (nothing is opened or created)."""
        return LogPaths(self.threads_path, thread_file_stem(thread_id), self.temp_path)

    def run_lock(self, thread_id: str) -> RunLock:
        """A new attempt at a thread's live-run lock (see :mod:`.runlock`)."""
        self._usable()
        return RunLock(self.log_paths(thread_id), thread_id)

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds a log for this thread (creates nothing)."""
        self._usable()
        return os.path.lexists(self.log_paths(thread_id).log)

    def has_files(self, thread_id: str) -> bool:
        """Whether anything of this thread's data is on disk: its log, its index, bytes
        set aside from a torn write, its session memory or debug traces (creates nothing)."""
        self._usable()
        paths = self.log_paths(thread_id)
        return any(os.path.lexists(p) for p in (paths.log, *paths.derived_files(), *paths.companion_files()))

    def keep_warm(self, log: LogView) -> None:
        """Note that ``log``'s value caches were just used or filled. While the items
        they hold, summed over logs, exceed :data:`WARM_ITEMS`, the least recently used
        log's caches are dropped (they are only caches: its next put takes the slow
        path, comparing encodings). A log no longer open (let go while a put or read
        held it) is not counted."""
        items = log.derived.held() if log.derived is not None else 0
        with self._lock:
            if self._logs.get(log.thread_id) is not log:
                return  # let go by the open-log bound meanwhile: its caches go with it
            self._cool(log.thread_id)
            self._warm[log.thread_id] = (log, items)
            self._warm_items += items
            while self._warm_items > WARM_ITEMS and len(self._warm) > 1:
                cold = self._cool(next(iter(self._warm)))
                if cold is not None and cold.derived is not None:
                    cold.derived.clear()

    def _cool(self, thread_id: str) -> LogView | None:
        """Stop counting a log's caches (under the lock); the log, if it was counted."""
        entry = self._warm.pop(thread_id, None)
        if entry is None:
            return None
        self._warm_items -= entry[1]
        return entry[0]

    def forget(self, thread_id: str) -> None:
        """Drop a thread log from the cache (after it was deleted)."""
        with self._lock:
            self._logs.pop(thread_id, None)
            self._parked.pop(thread_id, None)
            self._cool(thread_id)

    def log_names(self) -> list[str]:
        """The file names of the store's logs (``<stem>.jsonl``), sorted; one directory
        listing, no file opened (how many threads a listing will visit)."""
        self._usable()
        if not os.path.isdir(self.threads_path):
            return []
        return sorted(e for e in files.os.listdir(self.threads_path) if e.endswith(".jsonl"))

    def catalog(self) -> Iterator[ThreadFile]:
        """Every log file of the store, with its thread id or why it cannot be read; one
        bad file does not hide the others (a CLI reports it and goes on)."""
        for path, tid, error in self._listed().entries():
            yield ThreadFile(path, tid, error)

    def thread_ids(self) -> Iterator[str]:
        """Ids of every thread with a log in the store (from the store's catalog, else
        read from the log headers: see :mod:`.catalog`).

        Raises:
            ForeignFileError: A ``.jsonl`` file in the store is not one of ours.
        """
        listing = self._listed()
        for i, tid in enumerate(listing.ids):
            if tid is None:
                raise listing.errors[i]
            yield tid

    def _listed(self) -> Listing:
        """Every log, sorted by file name, with its thread id; the catalog brought up to
        date if the store is writable and it was not."""
        self._usable()
        if not os.path.isdir(self.threads_path):
            return Listing(self.threads_path)
        path = os.path.join(self.path, catalog.CATALOG)
        with bulk_allocation():  # no collector pass over the heap for the many strings
            known = catalog.load(path)
            listing = catalog.list_logs(self.threads_path, known, self._read_thread_id)
        if listing.changed and not self.read_only:
            try:
                temp = os.path.join(self.temp_path, f"{catalog.CATALOG}.{files.owner()}")
                catalog.save(path, temp, listing)
            except OSError:
                pass  # derived data: listed from the headers next time
        return listing

    def log_activity(self) -> Iterator[tuple[str, float]]:
        """Every log file of the store with its modification time (epoch seconds): when
        it was last appended to or rewritten. One ``stat`` per file, no file opened; a
        log removed meanwhile is left out."""
        if not os.path.isdir(self.threads_path):
            return
        for entry in sorted(files.os.listdir(self.threads_path)):
            if entry.endswith(".jsonl"):
                path = os.path.join(self.threads_path, entry)
                try:
                    yield path, files.os.stat(path, follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    continue

    def thread_id_at(self, path: str) -> str:
        """The thread id in the header of the log file at ``path`` (one of
        :meth:`log_activity`'s).

        Raises:
            FileNotFoundError: The log is gone (another process swept or deleted it).
            ForeignFileError: The file is not one of this store's logs.
        """
        return self._read_thread_id(path, os.path.basename(path))

    def _read_thread_id(self, path: str, entry: str) -> str:
        """The id in a log's header (:func:`.catalog.read_thread_id`)."""
        return catalog.read_thread_id(path, entry, self.path)

    def archive(self, log: ThreadLog) -> str:
        """Copy a thread's log into ``archive/`` (fsynced, with the folder's entry)
        before something changes it; the copy's path."""
        folder = os.path.join(self.path, ARCHIVE_DIR)
        if not os.path.isdir(folder):
            files.os.makedirs(folder, mode=0o700, exist_ok=True)
            fsync_dir(self.path)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        copy = os.path.join(folder, f"{log.name}.{stamp}.jsonl")
        data = files.read_whole(log.path)
        fd = files.open_file(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            try:
                files.write_all(fd, data)
                files.os.fsync(fd)
            finally:
                files.os.close(fd)
            fsync_dir(folder)
        except BaseException:  # a full disk, Ctrl-C: no half copy is left for a whole one
            self.drop_archive_copy(copy)
            raise
        return copy

    def drop_archive_copy(self, copy: str) -> None:
        """Take back a copy :meth:`archive` made, when the change it was made for did not
        happen (the log is as it was): each rerun would leave one more (best effort)."""
        try:
            files.os.unlink(copy)
            fsync_dir(os.path.dirname(copy))
        except OSError:
            pass

    def close(self) -> None:
        """Write fresh sidecar indexes and close every open file."""
        with self._lock:
            logs = list(self._logs.values())
            self._logs.clear()
            self._parked.clear()
            self._warm.clear()
            self._warm_items = 0
        for log in logs:
            with log.mutex:
                for observer in log.observers:
                    observer.closing(log)
                if log.exists() and not self.read_only and log.sidecar_lag() > 0:
                    try:
                        with log.writer():
                            log.write_sidecar(compact=True)
                    except (OSError, JsonlCheckpointError):
                        pass  # the sidecar is only a cache; the next open scans the log
                log.close()
        if not self.read_only and logs:
            try:
                self._listed()  # the catalog of thread logs, for the next listing
            except (OSError, JsonlCheckpointError):
                pass

