"""Restoring an archived thread: its newest archive back into ``threads/``, its debug
trace and quarantine file into their places, or, dry, what that would do; and the
archives listed with what a restore would refuse of each (:func:`listed_archives`).

One function decides, for both (:func:`_decide`): which archive, where its files go,
and every refusal, worded the same (no archive, a log again, a file in the way, a run
working on it, a damaged archive). The real restore decides under the thread's locks,
after settling what a crash left half done, once the dry run's look found nothing to
refuse (so a refusal changes nothing on disk); the dry run takes no lock and writes
nothing (it looks through a read-only store of the same directory), and decides on
the files as that settling would leave them.
"""

from __future__ import annotations

import os
import shlex
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime

from ..disk import archive_damage
from ..disk.archive import COMPRESSED, ArchivedThread, ThreadArchive, archived_when
from ..disk.log import ThreadLog
from ..disk.paths import thread_option
from ..disk.runlock import MAINTENANCE
from ..disk.store import Store
from ..errors import ConfigError, CorruptLogError, RestoreError
from .access import StoreReading


@dataclass(frozen=True)
class Restoration:
    """What a restore did (or, dry, would do).

    Attributes:
        archive: The archive the thread comes from (its newest); gone once restored.
        log: The thread's log, where the archived log goes back.
        companions: The files archived with it (debug trace, quarantine file) that go
            back into their places.
        dry_run: Nothing was changed.
    """

    archive: ArchivedThread
    log: str
    companions: tuple[str, ...]
    dry_run: bool


class RestoreInterrupted(KeyboardInterrupt):
    """Ctrl-C once the thread's log was back in its place (the one step that restores
    it), as the restore tidied up (syncing directories, removing the archived companions
    file): the thread is restored. What the Ctrl-C left (a companions file) is settled by
    the thread's next restore or archiving. A ``KeyboardInterrupt``, so code that lets
    Ctrl-C end the program still does.

    Attributes:
        restoration: What the restore did.
    """

    def __init__(self, restoration: Restoration) -> None:
        super().__init__(f"thread {restoration.archive.thread_id!r} was restored from "
                         f"{restoration.archive.path}")
        self.restoration = restoration


@dataclass(frozen=True)
class ListedArchive:
    """An archive as ``langgraph-jsonl archived`` lists it, read whole as a restore reads it.

    Attributes:
        thread_id: Its thread (``None``: damaged where its header is, and no tombstone
            names it; listed with ``thread_id``, it is under that thread).
        path: The archived log.
        archived_at: When it was archived (from its name).
        size: Bytes on disk: the archived log and its companions file (if any).
        problem: Why a restore of it is refused, in the restore's words (the thread,
            the file, what to do); ``None``: it reads whole.
    """

    thread_id: str | None
    path: str
    archived_at: datetime
    size: int
    problem: str | None


def listed_archives(access: StoreReading, thread_id: str | None = None) -> list[ListedArchive]:
    """Every archive (of one thread, if given), oldest first, each read whole: a damaged
    one (a log or companions file that does not decompress whole, or one damaged where
    its header is, whose thread cannot be told) is listed with the refusal a restore of
    it gives, and the others are listed all the same. Changes nothing.

    Raises:
        ForeignFileError: A file in ``archive/`` is not an archived log of this store.
    """
    shelf = ThreadArchive(access.store)
    unnamed: list[CorruptLogError] = []
    out = [ListedArchive(e.thread_id, e.path, e.archived_at, e.size, _refusal(shelf, e))
           for e in shelf.entries(thread_id, unnamed=unnamed)]
    for exc in unnamed:
        st = os.stat(exc.path)
        when = archived_when(exc.path) or datetime.fromtimestamp(st.st_mtime, UTC)
        out.append(ListedArchive(None, exc.path, when, st.st_size, str(exc)))
    return sorted(out, key=lambda e: e.archived_at)


def _refusal(shelf: ThreadArchive, entry: ArchivedThread) -> str | None:
    """What a restore of ``entry`` says of its damage (``None``: it reads whole)."""
    if entry.path.endswith(COMPRESSED):
        said = archive_damage.damage(entry.path)
        if said is not None:
            return str(archive_damage.damaged(entry.thread_id, entry.path, said))
    try:
        shelf.companions(entry)
    except CorruptLogError as exc:
        return str(exc)
    return None


def restore(access: StoreReading, thread_id: str, *, dry_run: bool = False) -> Restoration:
    """Bring a thread's newest archive back into ``threads/``, its debug trace and
    quarantine file into their places; the thread then reads exactly as it did when it
    was archived.

    The restore is decided, as its dry run decides it, before any lock is taken (taking
    one creates the thread's lock files, and the run lock writes its holder into the
    ``.run`` file: a refused restore changes nothing, not a file's time), and again
    under the locks (another process may have restored or settled it meanwhile).

    Args:
        access: The saver (its store).
        thread_id: The thread.
        dry_run: Say what a restore would do, or raise what it would raise, and change
            nothing (no lock is taken: a run that starts meanwhile is not seen). The
            archive is read whole, so a damaged one is refused as a restore refuses it.

    Returns:
        What was restored (or would be).

    Raises:
        ConfigError: The store was opened read-only and this is not a dry run.
        RestoreError: No archive of this thread, the thread has a log again (or a
            trace file where the archived one would go back), or a run is working on it.
        CorruptLogError: The archive is damaged (it is kept).
        RestoreInterrupted: Ctrl-C after the thread was restored (see there).
    """
    store = access.store
    if dry_run and not store.read_only:
        with closing(Store(store.path, read_only=True)) as twin:  # opened logs write nothing
            return _look(twin, thread_id)
    if dry_run:
        return _look(store, thread_id)
    if store.read_only:
        raise ConfigError(f"store {store.path} was opened read-only: restoring thread {thread_id!r} "
                          "needs a writable saver")
    shelf = ThreadArchive(store)
    if not shelf.entries(thread_id):  # a log a crash left half moved is listed too
        raise _no_archive(store, thread_id)
    # Refused before a lock is taken (the run lock writes its holder into the `.run`
    # file): a refused restore changes nothing, not a file's time. Decided again under
    # the locks, as things may change meanwhile.
    with closing(Store(store.path, read_only=True)) as twin:
        _look(twin, thread_id, busy=False)
    run_lock = store.run_lock(thread_id)
    if not run_lock.try_acquire(MAINTENANCE):
        raise _busy(thread_id)
    try:
        log = store.thread_log(thread_id)
        with log.locked():
            for moved in shelf.unsettled():
                if os.path.basename(moved).startswith(log.name + "."):
                    shelf.settle(log, moved)
            done = _decide(store, shelf, log, thread_id, dry_run=False)
            try:
                shelf.restore(log, done.archive)
            except KeyboardInterrupt:
                if not os.path.exists(log.path):
                    raise
                raise RestoreInterrupted(done) from None
            log.refresh()
        return done
    finally:
        run_lock.release()
        store.forget(thread_id)


def _look(store: Store, thread_id: str, *, busy: bool = True) -> Restoration:
    """A dry run's restore of one thread on a read-only store: the real one's checks, in
    its order, with nothing taken or written (the real restore's look before it locks
    leaves out whether a run seems to hold the thread: taking the lock tells)."""
    shelf = ThreadArchive(store)
    if not shelf.entries(thread_id):
        raise _no_archive(store, thread_id)
    if busy and store.run_lock(thread_id).seems_held():
        raise _busy(thread_id)
    log = store.thread_log(thread_id)
    removed = shelf.settling_removes(log.paths)
    plan = _decide(store, shelf, log, thread_id, dry_run=True, removed_first=removed)
    shelf.read(plan.archive)  # a damaged archive: refused as the restore refuses it
    return plan


def _decide(
    store: Store, shelf: ThreadArchive, log: ThreadLog, thread_id: str, *, dry_run: bool,
    removed_first: frozenset[str] = frozenset(),
) -> Restoration:
    """What restoring the thread does, or the refusal (raised): the restore's decisions,
    made on the archive as it is now (the real restore: under the locks, settled)."""
    entries = shelf.entries(thread_id)
    if not entries:
        raise _no_archive(store, thread_id)
    log.refresh()
    if log.exists():
        raise RestoreError(
            f"thread {thread_id!r} has a log again ({log.path}): a run started it "
            f"anew after it was archived into {entries[-1].path}. Keep the new thread "
            f"elsewhere if it matters (`langgraph-jsonl copy {shlex.quote(store.path)} OTHER_STORE "
            f"{thread_option(thread_id, '--threads')}`), delete it "
            f"(JsonlSaver({store.path!r}).delete_thread({thread_id!r})), then restore."
        )
    own = shelf.returning(log.paths, entries[-1], removed_first=removed_first)
    return Restoration(entries[-1], log.path, tuple(own), dry_run)


def _busy(thread_id: str) -> RestoreError:
    return RestoreError(f"thread {thread_id!r}: a run is working on it; restore it once the run is done.")


def _no_archive(store: Store, thread_id: str) -> RestoreError:
    if store.has_thread(thread_id):  # restored already, or never archived
        return RestoreError(
            f"thread {thread_id!r} is in the store (its log is {store.log_paths(thread_id).log}): it has "
            "no archive left to restore (restored already?); "
            f"`langgraph-jsonl archived {shlex.quote(store.path)}` lists the archived threads."
        )
    return RestoreError(
        f"store {store.path} has no archive of thread {thread_id!r}; "
        f"`langgraph-jsonl archived {shlex.quote(store.path)}` lists the archived threads."
    )
