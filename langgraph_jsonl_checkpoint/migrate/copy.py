"""Copy threads between any two LangGraph checkpointers, completely and idempotently.

A thread is copied as LangGraph itself would have written it: every checkpoint of
every namespace (subgraphs too), oldest first, through the target's ``put`` with the
same id, parent link, metadata and channel versions (widened to the target's width:
:mod:`.versions`); ``new_versions`` are the channels
whose version differs from the parent's (what the graph passed when it ran), so a
target that stores changes only (ours, ``PostgresSaver``'s blobs) stores what it
would have. Then each checkpoint's pending writes through ``put_writes``, one call per
task with its ``task_path``, regular writes in their order (so they get their
``idx``) and each special write (error, interrupt, resume...) on its own (its slot is
fixed). A ``DeltaChannel``'s snapshots and the writes between them go along, so the
target rebuilds the same values.

Idempotent and resumable: a checkpoint the target already has is not put again, and
its writes are put again only if the target holds fewer of them (``put_writes`` never
duplicates a slot); so a copy killed half-way and run again ends with the same target
as one run through. A thread that cannot be read is reported and the others copied.

A thread is read a chunk of a few checkpoints at a time (:data:`~.endpoints.CHUNK`),
oldest first: what each end stores is listed first without values (ids, parents,
write counts), then each chunk is read, put and compared, and dropped. A long
conversation's checkpoints each hold its whole message list, so a thread read whole
costs memory quadratic in its length; a chunk costs a few checkpoints' worth, and a
stop acts between two chunks.

Verification (:mod:`.verify`) re-reads each chunk copied from the target and compares
every checkpoint, decoded, with the source's. A target the app went on with since an
earlier copy is *ahead* (the source's history unchanged on it, and continued): that is
reported, not a difference, and left as it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from .db_errors import reason
from .report import CopyInterrupted, CopyReport, ThreadCopy
from .versions import widen_checkpoint, widen_versions, widest, width_of

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.store.base import BaseStore

    from .endpoints import Chunk, Endpoint, Key, Track, WriteSlot

    Spec = str | BaseCheckpointSaver[Any] | Endpoint

# The endpoints, URLs, journal and verification import LangGraph and the saver; they are
# imported where a copy runs, so that importing this module (as `langgraph-jsonl` does
# for every command) does not.


def copy_threads(
    source: Spec,
    target: Spec,
    *,
    threads: Sequence[str] | None = None,
    dry_run: bool = False,
    verify: bool = True,
    journal: bool = True,
    setup: bool = False,
    track: Track | None = None,
    workers: int = 4,
    stop: threading.Event | None = None,
    source_store: BaseStore | None = None,
    target_store: BaseStore | None = None,
    serde: SerializerProtocol | None = None,
) -> CopyReport:
    """Copy threads from ``source`` to ``target``.

    Args:
        source: Where from: a store directory, ``sqlite:///path.db``,
            ``postgresql://...``, a checkpointer or an :class:`Endpoint`.
        target: Where to (the same kinds; a new directory becomes a store). A target
            named by path or URL is opened with the source saver's serializer
            (``source.serde``: an encrypted store's copy is encrypted with the same key,
            and read back with it); a checkpointer object keeps its own.
        threads: Thread ids or shell globs (``"user-*"``) to copy; all when ``None``. One
            that matches no thread of the source is named in the report's ``unmatched``
            (and the report is not ``ok``).
        dry_run: Read everything, write nothing and create nothing (no store directory,
            file or table); the report says what would be copied and created.
        verify: After copying a thread, compare its whole history on both ends.
        journal: Carry the replay adapter's journal too. A thread whose journal has
            records and whose target has no journal store (a checkpointer object
            without ``target_store``) is reported as a problem: pass ``target_store``,
            or ``journal=False`` to leave the journal behind (then the target's journal
            store needs no tables, and ``setup`` makes none for it).
        setup: Run the target saver's and store's ``setup()`` first: their tables, and the
            migrations not run yet (a setup cut short is finished).
        track: Wraps the iteration over thread ids (a progress bar).
        workers: Threads copied at once (each put is durable on its own, so copying
            several threads overlaps their syncs; a ``SqliteSaver`` target still
            writes one at a time, under its lock).
        stop: Set it (from a signal handler, another thread) to stop the copy as Ctrl-C
            does: each thread's copy stops at its next step, then ``CopyInterrupted``.
        source_store: The ``BaseStore`` the source's ``ReplayAdapter(store=...)`` keeps
            its journal in, for a source given as a checkpointer object (``PostgresSaver``,
            ...), which has none otherwise. A store directory's journal is in its logs,
            a URL's in the ``PostgresStore``/``SqliteStore`` of its database; a store
            named here is read instead.
        target_store: The ``BaseStore`` the target's ``ReplayAdapter(store=...)`` will
            read (``PostgresStore`` beside a ``PostgresSaver`` object), where the journal
            goes; as ``source_store``, it replaces the target's own.
        serde: The serializer of both ends where the copy opens them from a path or URL
            (an ``EncryptedSerializer``: the source is read and the target written with
            it); by default LangGraph's for the source, and the source's for the target.

    Returns:
        What was done; ``report.ok`` is false when a thread could not be read or copied
        or differs after the copy.

    Raises:
        CopyInterrupted: A ``KeyboardInterrupt`` (Ctrl-C) while threads were being copied,
            or ``stop`` set: each copy under way stopped at its next step; what was
            copied is durable, and the same call again continues. Its ``report`` holds
            the threads done.
        MigrationError: An endpoint cannot be opened, the target lacks its tables
            and ``setup`` was not asked for, or source and target are one place (a
            store, SQLite file or database named twice, in any spelling), or a
            ``source_store``/``target_store`` given with an :class:`Endpoint`.
    """
    from .endpoints import matching
    from .urls import open_endpoint, place_of, refuse_same_place

    started = time.perf_counter()
    names = (_spec_name(source), _spec_name(target))
    refuse_same_place(place_of(source), place_of(target), names)  # before anything is opened
    src = open_endpoint(source, role="source", workers=workers, store=source_store, serde=serde)
    try:
        listed = src.thread_ids()  # once: a database source lists with a query
        if threads is not None and not setup and not matching(listed, threads)[0]:
            # Typo'd patterns copy nothing: the target is not even made (a new store, an
            # SQLite file; --setup's tables are still made, as asked); the report names them.
            report = CopyReport(src.name, names[1], dry_run=dry_run,
                                unreadable=list(getattr(src, "unreadable", [])),
                                unmatched=matching([], threads)[1])
            report.seconds = time.perf_counter() - started
            if src is not source:
                src.close()
            return report
        dst = open_endpoint(target, role="target", workers=workers, dry_run=dry_run, store=target_store,
                            serde=serde if serde is not None else src.saver.serde)
    except BaseException:
        if src is not source:
            src.close()
        raise
    try:
        refuse_same_place(src.place(), dst.place(), (src.name, dst.name))  # databases
        return _copy(src, dst, listed, threads, dry_run, verify, journal, setup, track, started,
                     workers, stop if stop is not None else threading.Event())
    finally:
        for end, spec in ((dst, target), (src, source)):
            if end is not spec:
                end.close()


def _copy(
    src: Endpoint, dst: Endpoint, listed: Sequence[str], threads: Sequence[str] | None, dry_run: bool,
    verify: bool,
    journal: bool, setup: bool, track: Track | None, started: float, workers: int, stop: threading.Event,
) -> CopyReport:
    from .endpoints import NewTarget, matching
    from .preflight import prepare_target

    ids, unmatched = matching(listed, threads)
    missing = prepare_target(src, dst, ids, journal=journal, setup=setup, dry_run=dry_run)
    report = CopyReport(src.name, dst.name, dry_run=dry_run, verified=verify and not dry_run)
    report.creates = list(dst.creates)
    if missing and setup:
        report.creates.append(f"the tables {', '.join(missing)} (--setup)")
    elif missing:  # a dry run: the real one would stop here
        report.needs_setup = missing
    if dry_run and not dst.readable():  # read it as it would be once set up: empty
        dst = NewTarget(dst.name, dst.kind, journal=dst.journal is not None)
    report.unmatched = unmatched
    report.unreadable = list(getattr(src, "unreadable", []))
    size_before = None if dry_run else dst.size()

    def one(thread_id: str) -> ThreadCopy:
        return copy_thread(src, dst, thread_id, dry_run=dry_run, verify=verify, journal=journal, stop=stop)

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="copy")
    futures = [pool.submit(one, thread_id) for thread_id in ids]
    walk = iter(track(ids) if track else ids)
    try:
        for i, _ in enumerate(walk):
            report.threads.append(futures[i].result())  # in order, whatever order they finish in
    except (KeyboardInterrupt, _Stopped):  # Ctrl-C, or stop set: every copy stops at its next step
        stop.set()
        for future in futures:
            future.cancel()
        _settle(futures)
        report.threads = [f.result() for f in futures if _finished(f)]
        report.seconds = time.perf_counter() - started
        raise CopyInterrupted(report, len(ids), _part_way(futures)) from None
    finally:
        close = getattr(walk, "close", None)
        if close is not None:  # a progress bar's generator: its bar goes now
            close()
        pool.shutdown(wait=True, cancel_futures=True)
    if size_before is not None:
        size_after = dst.size()
        report.bytes = None if size_after is None else size_after - size_before
    report.seconds = time.perf_counter() - started
    return report


class _Stopped(BaseException):
    """A thread's copy told to stop (not an ``Exception``: no handler of one may take it
    for a problem of the thread). What it put is durable; a rerun completes the thread.
    ``done``: what it put until then (set as it leaves :func:`copy_thread`)."""

    done: ThreadCopy | None = None


def _settle(futures: list[Future[ThreadCopy]]) -> None:
    """Wait until every copy under way has stopped: each checks between two steps (a put
    and its writes, a chunk's read), so this is short. Another Ctrl-C does not cut it short:
    the worker threads would be waited for at exit all the same."""
    while True:
        try:
            wait(futures)
            return
        except KeyboardInterrupt:
            continue


def _finished(future: Future[ThreadCopy]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _part_way(futures: list[Future[ThreadCopy]]) -> list[ThreadCopy]:
    """The threads whose copy stopped after putting checkpoints (after :func:`_settle`)."""
    out = []
    for f in futures:
        stopped = None if not f.done() or f.cancelled() else f.exception()
        if isinstance(stopped, _Stopped) and stopped.done is not None and stopped.done.checkpoints:
            out.append(stopped.done)
    return out


def _go_on(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise _Stopped


def copy_thread(
    src: Endpoint, dst: Endpoint, thread_id: str, *, dry_run: bool = False, verify: bool = True,
    journal: bool = True, stop: threading.Event | None = None,
) -> ThreadCopy:
    """Copy one thread (see the module docstring); problems go into the result.

    The thread is read, put and verified a chunk of :data:`~.endpoints.CHUNK`
    checkpoints at a time: at most a chunk of each end's checkpoints is held with its
    values. ``stop``, once set, ends the copy between two steps (a chunk read, a put
    and its writes; raising an exception of its own, a ``BaseException``): what was put
    stays, and a rerun completes the thread.
    """
    done = ThreadCopy(thread_id)
    try:
        return _copy_thread(src, dst, done, dry_run, verify, journal, stop)
    except _Stopped as stopped:  # what it put until then, for the message saying how far it got
        stopped.done = done
        raise


def _copy_thread(
    src: Endpoint, dst: Endpoint, done: ThreadCopy, dry_run: bool, verify: bool, journal: bool,
    stop: threading.Event | None,
) -> ThreadCopy:
    from .endpoints import chunks
    from .journal import carry, events_count
    from .verify import HistoryCheck, histories_diverged

    thread_id = done.thread_id
    left_behind = None  # why the journal was not copied, if it was not
    _go_on(stop)
    done.problem = dst.cannot_hold(thread_id)
    if done.problem is not None:
        return done
    try:
        stored = src.stored_checkpoints(thread_id)
        damage = src.damage(thread_id)
    except Exception as exc:  # a damaged thread: reported, the others still copied
        done.problem = f"cannot read the thread from {src.name}: {reason(exc, src)}"
        return done
    if damage is not None:  # read in part: not copied, as a thread that cannot be read
        done.problem = f"cannot read the whole thread from {src.name}: {damage}"
        return done
    try:
        have = {key: c.writes for key, c in dst.stored_checkpoints(thread_id).items()}
        diverged = histories_diverged(stored, have, src.name, dst.name)
        if diverged is not None:  # before anything is put: the target's history is its own
            done.mismatches.append(diverged)
            done.refused = True
            return done
        width = _held_width(dst.saver, thread_id, next(iter(have))) if have else width_of(dst.saver)
        check = None
        if verify and not dry_run:
            check = HistoryCheck(stored, width=width, task_order=src.tells_task_paths())
        unverified = None  # why the copy could not be read back, if it could not
        versions: dict[Key, Any] = {}  # each checkpoint's channel versions, for its children's put
        slots: dict[Key, list[WriteSlot]] | None = None
        for chunk in chunks(stored):
            _go_on(stop)
            tuples = _read_source(src, thread_id, chunk)
            for tup in tuples:
                _go_on(stop)
                where = _where(tup)
                versions[where] = tup.checkpoint["channel_versions"]
                wanted = len(tup.pending_writes or [])
                if where in have:
                    done.present += 1
                else:  # counted once the target took it (it may refuse: a locked file)
                    if not dry_run:
                        _put(dst.saver, tup, versions, width, narrow=bool(have))
                    done.checkpoints += 1
                if have.get(where, 0) < wanted:
                    if not dry_run:
                        if slots is None:
                            slots = src.thread_write_slots(thread_id) or {}
                        _put_writes(src, dst.saver, thread_id, tup, slots.get(where))
                    done.writes += wanted - have.get(where, 0)
            if check is not None and tuples:  # the chunk read back and compared, then dropped
                _go_on(stop)
                try:
                    copies = dict(zip(chunk, dst.read_checkpoints(thread_id, chunk)))
                    for tup in tuples:
                        check.compare(tup, copies.get(_where(tup)))
                except Exception as exc:
                    unverified, check = reason(exc), None
            del tuples
        _go_on(stop)
        if journal and src.journal is not None and dst.journal is not None:
            carried = carry(src.journal, dst.journal, thread_id, dry_run=dry_run)
            done.journal_records = carried.added
            done.mismatches += carried.conflicts
            done.ahead_journal_records = carried.ahead
        elif journal and src.journal is not None:  # records with nowhere to go: never dropped in silence
            left = events_count(src.journal.events(thread_id))
            if left:
                left_behind = (
                    f"its {left} tool-call journal record(s) were not copied: {dst.name} has no "
                    "journal store, so a ReplayAdapter there would run finished tool calls again. "
                    "Name the store the adapter will use (copy_threads(..., target_store=store)), "
                    "or leave the journal behind on purpose (journal=False, --no-journal)"
                )
    except _Unreadable as exc:  # a record that cannot be decoded: what came before it is put
        done.problem = f"cannot read the thread from {src.name}: {exc}"
        return done
    except Exception as exc:
        done.problem = f"copy to {dst.name} stopped: {reason(exc, src)}"
        return done
    _go_on(stop)
    if check is not None:
        try:
            found = check.finish(dst.stored_checkpoints(thread_id))
            done.mismatches += found.differences
            done.ahead_checkpoints, done.ahead_writes = found.ahead_checkpoints, found.ahead_writes
        except Exception as exc:
            unverified = reason(exc)
    if unverified is not None:
        unverified = f"cannot verify the copy on {dst.name}: {unverified}"
    problems = [p for p in (left_behind, unverified) if p is not None]
    if problems:
        done.problem = "; ".join(problems)
    return done


class _Unreadable(Exception):
    """The source's checkpoints could not be read (the reason, as a report says it)."""


def _read_source(src: Endpoint, thread_id: str, chunk: Chunk) -> list[CheckpointTuple]:
    """A chunk of the source's checkpoints, oldest first (those removed since they were
    listed left out)."""
    try:
        return [t for t in src.read_checkpoints(thread_id, chunk) if t is not None]
    except Exception as exc:
        why = reason(exc)
        if isinstance(exc, NotImplementedError) and "serialization type" in why:
            # LangGraph's serde meeting values another one wrote (an EncryptedSerializer's)
            why += (". It was written with another serializer: name it with --serde module:attr "
                    "(or copy_threads(..., serde=...)), as the app opens it")
        raise _Unreadable(why) from exc


def _spec_name(spec: Spec) -> str:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from .db_errors import redacted
    from .endpoints import Endpoint

    if isinstance(spec, Endpoint):
        return spec.name
    if isinstance(spec, BaseCheckpointSaver):
        return type(spec).__name__
    return redacted(str(spec))


def _where(tup: CheckpointTuple) -> tuple[str, str]:
    c = tup.config["configurable"]
    return c.get("checkpoint_ns", ""), c["checkpoint_id"]


def _held_width(saver: BaseCheckpointSaver[Any], thread_id: str, key: Key) -> int:
    """The width of the versions of a thread the target holds (else the target's own)."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": key[0], "checkpoint_id": key[1]}}
    tup = saver.get_tuple(config)
    return (widest(tup.checkpoint) if tup is not None else 0) or width_of(saver)


def _put(
    saver: BaseCheckpointSaver[Any], tup: CheckpointTuple, versions: dict[Key, Any], width: int,
    *, narrow: bool = False,
) -> None:
    ns, checkpoint_id = _where(tup)
    thread_id = tup.config["configurable"]["thread_id"]
    config: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    parent_id = tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None
    mine = dict(tup.checkpoint["channel_versions"])
    before = versions.get((ns, parent_id)) if parent_id else None
    if parent_id:
        config["checkpoint_id"] = parent_id
    if before is not None:
        new_versions = {ch: v for ch, v in mine.items() if before.get(ch) != v}
    else:  # the first, or its parent is not in the source (pruned): everything is new
        new_versions = mine
    checkpoint = widen_checkpoint(tup.checkpoint, width, narrow=narrow)
    new_versions = widen_versions(new_versions, width, narrow=narrow)
    saver.put({"configurable": config}, checkpoint, tup.metadata, new_versions)  # type: ignore[arg-type]


def _put_writes(
    src: Endpoint, saver: BaseCheckpointSaver[Any], thread_id: str, tup: CheckpointTuple,
    slots: list[WriteSlot] | None,
) -> None:
    ns, checkpoint_id = _where(tup)
    writes = tup.pending_writes or []
    if slots is None:
        slots = src.write_slots(thread_id, ns, checkpoint_id)
    if slots is None or not _fits(slots, writes):
        from .endpoints import WriteSlot

        # Unknown storage: positions in the task for idx, no task_path.
        slots = [WriteSlot(task, "", i, channel) for i, (task, channel, _) in enumerate(writes)]
    tasks: dict[str, list[tuple[WriteSlot, Any]]] = {}
    for slot, (_, _channel, value) in zip(slots, writes):
        tasks.setdefault(slot.task_id, []).append((slot, value))
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}
    for task_id, items in tasks.items():
        for call in _calls(items):
            saver.put_writes(config, call, task_id, items[0][0].task_path)  # type: ignore[arg-type]


def _calls(items: list[tuple[WriteSlot, Any]]) -> list[list[tuple[str, Any]]]:
    """A task's writes as ``put_writes`` calls that give each its stored ``idx``.

    ``put_writes`` numbers a regular write by its position in the call and gives a
    special channel (error, interrupt, resume...) its fixed slot. Regular writes stored
    at 0..k-1 are one call; gaps (a resume run's call: the ``__resume__`` write at
    position 0, then the node's writes at 1, 2...) are filled with the task's special
    writes, as the original call had them. Each special write left is a call of its own.
    """
    from langgraph.checkpoint.base import WRITES_IDX_MAP

    regular = sorted((s.idx, s.channel, v) for s, v in items if s.channel not in WRITES_IDX_MAP)
    special = [(s.channel, v) for s, v in items if s.channel in WRITES_IDX_MAP]
    calls: list[list[tuple[str, Any]]] = []
    if regular:
        top = max(i for i, _, _ in regular)
        gaps = sorted(set(range(top + 1)) - {i for i, _, _ in regular})
        if len(gaps) + len(regular) == top + 1 and len(gaps) <= len(special):
            call: list[tuple[str, Any] | None] = [None] * (top + 1)
            for i, ch, v in regular:
                call[i] = (ch, v)
            for gap in gaps:
                call[gap] = special.pop(0)
            calls.append([w for w in call if w is not None])
        else:  # stored otherwise (or unknown): the order is kept, the numbers may not be
            calls.append([(ch, v) for _, ch, v in regular])
    calls += [[w] for w in special]
    return calls


def _fits(slots: list[WriteSlot], writes: list[Any]) -> bool:
    return len(slots) == len(writes) and all(
        s.task_id == w[0] and s.channel == w[1] for s, w in zip(slots, writes)
    )


__all__ = ["copy_thread", "copy_threads"]
