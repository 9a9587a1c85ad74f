"""One row per thread: its checkpoints, when it began and last changed, its size on disk
and its status (done, interrupted, waiting, damaged), for a listing of a whole store.

A store may hold tens of thousands of threads, so a summary reads what the sidecar
index already holds (checkpoint ids, write slots, which values are empty) plus two
records: the latest checkpoint of the root graph (its time, and what it schedules) and
the first one (when the thread began); a waiting question's write is read only when
there is one. No conversation is rebuilt. The trade-off: ``updated`` is the latest
checkpoint's time, not the file's (a tool event journaled after it does not count),
which stays true across a ``compact`` that rewrites the file.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..disk.paths import LogPaths, thread_file_stem
from ..disk.processes import pid_alive
from ..disk.runlock import BRIEF_HOLDS, RunLock
from ..disk.store import Store, ThreadFile
from ..disk.view import LogView
from ..errors import JsonlCheckpointError
from .status import DAMAGED, EMPTY, RUNNING, STATUSES, thread_status
from .times import parse_stored

if TYPE_CHECKING:  # imported where a log is read: a listing from its cache imports no LangGraph
    from ..maintenance.access import StoreReading
    from .checkpoints import ThreadFacts

#: What ``select_threads`` can sort by; all but ``id`` put the largest (newest) first.
SORT_KEYS = ("id", "updated", "created", "size", "checkpoints", "status")


@dataclass(frozen=True)
class ThreadSummary:
    """A thread at a glance.

    Attributes:
        thread_id: The thread id (``None`` when the log's header cannot be read).
        path: The log file.
        status: ``done``, ``running`` (a run holds the thread now: its live-run lock's
            holder is a process alive on this host), ``interrupted`` (tasks left to run
            and no run going: a crash, a failed node, a breakpoint), ``waiting`` (an
            ``interrupt()`` waits for an answer), ``damaged`` (the log cannot be read
            whole), or ``empty`` (no checkpoint).
        checkpoints: Checkpoints in every namespace.
        created_at: The time of its first checkpoint (ISO 8601).
        updated_at: The time of its latest checkpoint.
        size: Bytes on disk: the log, its index and any quarantined bytes.
        latest: The latest checkpoint id of the root graph.
        next: What the latest checkpoint schedules.
        waiting_for: The kind of each question waiting (``uncertain_tool_calls``, ...).
        problem: Why it is damaged, or the error of a task that failed.
        run: Who runs it, for a ``running`` thread (``pid``, ``host``, ``since``).
    """

    thread_id: str | None
    path: str
    status: str
    checkpoints: int = 0
    created_at: str | None = None
    updated_at: str | None = None
    size: int = 0
    latest: str | None = None
    next: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()
    problem: str | None = None
    run: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The summary as JSON-ready data (the ``threads --json`` shape)."""
        return {
            "thread_id": self.thread_id,
            "status": self.status,
            "checkpoints": self.checkpoints,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "size": self.size,
            "latest": self.latest,
            "next": list(self.next),
            "waiting_for": list(self.waiting_for),
            "problem": self.problem,
            "run": self.run,
            "path": self.path,
        }


def summarize_thread(saver: StoreReading, thread_id: str) -> ThreadSummary:
    """A thread's summary. A log that cannot be read is a ``damaged`` summary, never
    an exception.

    Args:
        saver: A saver on the store (``read_only=True`` is enough: nothing is written),
            or a :class:`~.checkpoints.StoreReader`.
        thread_id: The thread (it should exist: see ``saver.store.has_thread``).
    """
    from .checkpoints import reading

    log = saver.store.thread_log(thread_id)
    try:
        summary = reading(saver, thread_id, lambda facts: _summary(facts))
    except JsonlCheckpointError as exc:
        return ThreadSummary(thread_id, log.path, DAMAGED, size=_size(log.paths), problem=_first_line(exc))
    problem = damage_note(log)
    if problem is not None:
        summary = replace(summary, status=DAMAGED, problem=problem)
    return summary


def damage_note(log: LogView) -> str | None:
    """Where a log read read-only is damaged, that the records before it are served,
    and the repair; ``None`` while it reads whole (as of its last refresh)."""
    if log.damaged_at is None:
        return None
    return (f"the log is damaged at byte offset {log.damaged_at}; the records before it are "
            f"served. {log.repair_hint()}")


def _summary(facts: ThreadFacts) -> ThreadSummary:
    idx, log = facts.index, facts.log
    count = sum(len(ids) for ids in idx.ordered_ids.values())
    root = "" if idx.ordered_ids.get("") else next(iter(idx.namespaces()), None)
    size = _size(log.paths)
    if root is None:  # no checkpoint yet: a run may hold it (durability="exit" journals first)
        run = live_run(log.paths, log.thread_id)
        return ThreadSummary(log.thread_id, log.path, EMPTY if run is None else RUNNING, count,
                             size=size, run=run)
    ids = idx.ordered_ids[root]
    latest = facts.facts(root, ids[-1])
    first = latest if len(ids) == 1 else facts.facts(root, ids[0])
    waiting = tuple(q.type for q in latest.waiting)
    run = live_run(log.paths, log.thread_id)
    return ThreadSummary(
        thread_id=log.thread_id,
        path=log.path,
        status=thread_status(latest.next, waiting, live=run is not None),
        run=run,
        checkpoints=count,
        created_at=first.created_at,
        updated_at=latest.created_at,
        size=size,
        latest=latest.checkpoint_id,
        next=latest.next,
        waiting_for=waiting,
        problem=latest.errors[0] if latest.errors else None,
    )


def live_run(paths: LogPaths, thread_id: str) -> dict[str, Any] | None:
    """Who runs a thread now, if anyone: the holder its live-run lock file records, when
    that process is alive on this host. Read without taking the lock (a reader must
    never make a run wait); the file is emptied when a run lets the lock go, and a dead
    holder's record is told by its pid. (A pid reused since by another process would
    read as live: the listing says so until that process ends.)"""
    holder = RunLock(paths, thread_id).holder()
    if not holder or holder.get("host") != socket.gethostname():
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0 or not pid_alive(pid):
        return None
    return holder


def thread_summaries(saver: StoreReading) -> Iterator[ThreadSummary]:
    """A summary of every thread of the store, as ``langgraph-jsonl threads`` lists
    them: each log's in file name order, then each thread a live run holds that has no
    log yet (:func:`logless_runs`). A file that is not a readable log is a ``damaged``
    summary (its ``thread_id`` is ``None`` when its header cannot be read), and the
    others are still summarised.

    Args:
        saver: A saver on the store (``read_only=True`` is enough), or a
            :class:`~.checkpoints.StoreReader`.
    """
    for entry in saver.store.catalog():
        yield summary_of(saver, entry)
    yield from logless_runs(saver.store)


def logless_runs(store: Store, present: Collection[str] | None = None) -> list[ThreadSummary]:
    """The threads a live run holds that have no log yet (a run with
    ``durability="exit"`` stores its first checkpoint when it ends), each a ``running``
    row with what is known of it (its id, and who runs it since when: ``run``; no
    checkpoint, no times, the path its log will have), in file name order. Only a
    ``.run`` file with no log beside it is read (a run that ended emptied its file); a
    holder record without a ``thread_id`` (an older release's) or a sweep's cannot name
    a thread and is left out.

    Args:
        store: The store.
        present: The file names in the store's ``threads/`` folder (listed here if not
            given); a listing that knows a run file is empty leaves it out.
    """
    if present is None:
        try:
            with os.scandir(store.threads_path) as it:
                present = {entry.name for entry in it}
        except FileNotFoundError:
            present = set()
    out: list[ThreadSummary] = []
    for name in sorted(n for n in present if n.endswith(".run")):
        stem = name[: -len(".run")]
        if stem + ".jsonl" in present:
            continue
        paths = LogPaths(store.threads_path, stem, store.temp_path)
        run = live_run(paths, stem)
        tid = run.get("thread_id") if run is not None else None
        if (run is None or type(tid) is not str or run.get("run") in BRIEF_HOLDS
                or thread_file_stem(tid) != stem):
            continue
        out.append(ThreadSummary(thread_id=tid, path=paths.log, status=RUNNING, run=run))
    return out


def before_first_checkpoint(summary: ThreadSummary) -> bool:
    """Whether a summary is of a thread a live run holds before its first checkpoint is
    stored (no log yet, :func:`logless_runs`, or a log of journal events only): there is
    no transcript to read yet."""
    return summary.status == RUNNING and summary.latest is None and summary.checkpoints == 0


def summary_of(saver: StoreReading, entry: ThreadFile) -> ThreadSummary:
    """The summary of one log of the store's catalog (``damaged`` if its header could
    not be read)."""
    if entry.thread_id is None:
        problem = _first_line(entry.error) if entry.error else "unreadable"
        return ThreadSummary(None, entry.path, DAMAGED, size=_file_size(entry.path), problem=problem)
    return summarize_thread(saver, entry.thread_id)


def first_page(
    saver: StoreReading,
    *,
    status: Sequence[str] | None = None,
    since: datetime | None = None,
    sort: str = "id",
    limit: int | None = None,
) -> list[ThreadFile] | None:
    """The logs that ``select_threads`` over every thread's summary could return, in
    order, when that is known without reading them; ``None`` when every thread must be
    summarised.

    With a ``limit``, no ``status`` or ``since`` filter and ``sort`` by ``id`` or
    ``size``, the order needs no log: the ids are the store's catalog's, the sizes the
    files'. Summarising only these gives the same rows (a first page of a store of
    10,000 threads reads a handful of logs instead of all of them).
    """
    if limit is None or not reads_first_page_only(status=status, since=since, sort=sort, limit=limit):
        return None
    entries = list(saver.store.catalog())
    if sort == "id":  # select_threads' order: a catalog entry has the id and the path
        entries.sort(key=_sort_key("id"))
    else:  # the size a summary gives, largest first, ties in file order (a stable sort)
        entries.sort(key=lambda e: _entry_size(saver, e), reverse=True)
    return entries[: max(0, limit)]


def reads_first_page_only(
    *, status: Sequence[str] | None, since: datetime | None, sort: str, limit: int | None
) -> bool:
    """Whether a listing with these choices reads only the logs it shows
    (:func:`first_page`): a ``limit``, no filter, sorted by ``id`` or ``size``. Pure."""
    return limit is not None and not status and since is None and sort in ("id", "size")


def _entry_size(saver: StoreReading, entry: ThreadFile) -> int:
    """The size a summary of ``entry`` gives (see :func:`summarize_thread`)."""
    if entry.thread_id is None:
        return _file_size(entry.path)
    return _size(saver.store.log_paths(entry.thread_id))


def select_threads(
    summaries: Iterable[ThreadSummary],
    *,
    status: Sequence[str] | None = None,
    since: datetime | None = None,
    sort: str = "id",
    limit: int | None = None,
) -> list[ThreadSummary]:
    """Filter, sort and cut a listing of threads. Pure.

    Args:
        summaries: The summaries.
        status: Keep only threads in one of these statuses.
        since: Keep only threads updated at or after this time.
        sort: One of :data:`SORT_KEYS`; ``id`` ascending, the others largest or newest
            first (``status`` groups by status in :data:`~.status.STATUSES` order).
        limit: At most this many (after sorting).

    Raises:
        ValueError: An unknown sort key or status.
    """
    if sort not in SORT_KEYS:
        raise ValueError(f"cannot sort threads by {sort!r}; use one of {', '.join(SORT_KEYS)}")
    for s in status or ():
        if s not in STATUSES:
            raise ValueError(f"unknown status {s!r}; use one of {', '.join(STATUSES)}")
    rows = [
        s for s in summaries
        if (not status or s.status in status) and _updated_since(s, since)
    ]
    label = _sort_key(sort)
    rows.sort(key=label, reverse=sort not in ("id", "status"))
    return rows if limit is None else rows[: max(0, limit)]


def _sort_key(sort: str) -> Any:
    if sort == "id":
        return lambda s: (s.thread_id is None, s.thread_id or "", s.path)
    if sort == "status":
        return lambda s: (STATUSES.index(s.status), s.thread_id or "")
    if sort in ("updated", "created"):
        attr = f"{sort}_at"

        def when(s: ThreadSummary) -> float:
            at = _when(s, attr)
            return at.timestamp() if at is not None else float("-inf")  # undated last

        return when
    return lambda s: getattr(s, sort)


def _updated_since(s: ThreadSummary, since: datetime | None) -> bool:
    """Whether a thread was updated at or after ``since`` (always, without one; never,
    for a thread with no time)."""
    if since is None:
        return True
    at = _when(s, "updated_at")
    return at is not None and at >= since


def _when(s: ThreadSummary, attr: str) -> datetime | None:
    """A thread's ``updated_at`` or ``created_at``; for a thread a run holds before its
    first checkpoint (no time of its own), when that run started: it is as recent as that."""
    at = parse_stored(getattr(s, attr))
    if at is None and s.status == RUNNING and s.run is not None:
        since = s.run.get("since")
        at = parse_stored(since) if isinstance(since, str) else None
    return at


def _size(paths: Any) -> int:
    return sum(_file_size(p) for p in (paths.log, paths.index, paths.quarantine))


def _file_size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n", 1)[0]
