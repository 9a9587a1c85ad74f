"""Operations that replace a thread's log by a new generation: compact, prune,
delete_for_runs; and copy.

A new generation is written beside the log and renamed over it (see
``ThreadLog.rewrite``), so a crash leaves the old or the new file, never a mix. Values
are carried over by *version*: every channel version a kept checkpoint refers to is
re-emitted once, in full or as a delta against a version already emitted, so the new
file never refers to a record that is gone.

DeltaChannel safety: a checkpoint whose metadata lists ``counters_since_delta_snapshot``
rebuilds those channels from its ancestors' writes back to their last snapshot.
``prune(keep_latest)`` keeps those ancestors; ``delete_for_runs`` refuses (with
:class:`~.errors.DeltaHistoryError`) rather than cut such a history.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from ..disk.generations import generation_size
from ..disk.index import ThreadIndex
from ..disk.log import ThreadLog
from ..disk.summary import EMPTY, version_key
from ..errors import CorruptLogError, DeltaHistoryError
from .access import StoreAccess
from .checks import value_problems

if TYPE_CHECKING:
    from ..values.fingerprint import ListFingerprint

#: In a rewritten file (no snapshots), a delta chain holds at most this many times
#: ``snapshot_every`` records; then a value is stored in full.
_MAX_CHAIN = 8


def _delta_ancestors(saver: StoreAccess, idx: ThreadIndex, ns: str, checkpoint_id: str) -> list[str]:
    """Ancestors whose writes a checkpoint's DeltaChannels need (nearest first)."""
    by_id = idx.checkpoints[ns]
    entry = by_id[checkpoint_id]
    metadata = saver.codec.peek(entry.metadata)
    counters = metadata.get("counters_since_delta_snapshot") or {}
    need = set()
    for ch in counters:
        version = entry.versions.get(ch)
        blob = idx.blob(ns, ch, version) if version is not None else None
        if blob is None or blob.kind == EMPTY:
            need.add(ch)
    out: list[str] = []
    current = entry.parent
    while need and current in by_id and current not in out:  # (parent links that loop end it)
        out.append(current)
        ancestor = by_id[current]
        for ch in list(need):
            version = ancestor.versions.get(ch)
            blob = idx.blob(ns, ch, version) if version is not None else None
            if blob is not None and blob.kind != EMPTY:
                need.discard(ch)
        current = ancestor.parent
    return out


def _rebuilt_records(
    saver: StoreAccess, log: ThreadLog, idx: ThreadIndex, keep: set[tuple[str, str]],
    *, live_writes_only: bool = False,
) -> list[dict[str, Any]]:
    """Records of a new generation holding exactly the kept checkpoints and their writes.

    With ``live_writes_only``, write entries the index no longer serves (a retried
    regular slot's later copies, a special slot's replaced writes) are left out.
    """
    from ..values.reader import ValueReader  # the values layer imports LangGraph: on first use

    reader = ValueReader(log, saver.codec)
    # version -> (delta depth, delta bytes since, bytes of the full value) in the new file
    emitted: dict[tuple[str, str, Any], tuple[int, int, int]] = {}
    last: dict[tuple[str, str], tuple[Any, ListFingerprint, int]] = {}
    out: list[dict[str, Any]] = []
    scanned = log.scanned_records()
    # Deltas are copied without being rebuilt: first make sure every one can be.
    unreadable = value_problems([(r.record, r.offset, r.length) for r in scanned])
    if unreadable:
        offset, problem = unreadable[0]
        raise CorruptLogError(
            f"thread {log.thread_id!r}: log {log.path} holds a record at byte offset "
            f"{offset} whose values cannot be rebuilt ({problem}); it was not rewritten. "
            f"{log.repair_hint()}",
            path=log.path,
            offset=offset,
        )
    for rec in (r.record for r in scanned):
        t = rec.get("t")
        if t == "checkpoint" and (rec["ns"], rec["id"]) in keep:
            ns = rec["ns"]
            if idx.checkpoints[ns][rec["id"]].ref.seq != rec["seq"]:
                continue  # a superseded duplicate of this checkpoint id
            values: dict[str, Any] = {}
            for ch, version in rec["cv"].items():
                key = (ns, ch, version_key(version))
                blob = idx.blob(ns, ch, version)
                if key in emitted or blob is None:
                    continue
                if blob.kind == EMPTY:
                    emitted[key] = (0, 0, 0)
                    values[ch] = {"ver": version, "empty": 1}
                    continue
                stored = _as_stored(idx, ns, ch, version, rec["values"].get(ch))
                if stored is not None and _linked(saver, emitted, ns, ch, stored):
                    values[ch] = stored
                    continue
                value = reader.value(idx, ns, ch, version)
                entry = None
                if stored is None:  # not stored here as it is read: as a delta on the last if it can
                    entry = _entry(saver, last, ns, ch, version, value)
                if entry is None or not _linked(saver, emitted, ns, ch, entry):
                    entry = _entry(saver, last, ns, ch, version, value, full=True)  # a chain's end
                    _linked(saver, emitted, ns, ch, entry)
                values[ch] = entry
            out.append({**rec, "values": values})
        elif t == "writes" and (rec["ns"], rec["cp"]) in keep:
            if live_writes_only:
                live = _live_writes(idx, rec)
                if live is None:
                    continue
                rec = live
            out.append(rec)
        elif t == "tool":
            out.append(rec)
    return out


def _as_stored(
    idx: ThreadIndex, ns: str, ch: str, version: Any, stored: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The entry this checkpoint record stored for ``version``, to be copied as it is (a
    fork's delta extends the fork point, not the channel's newest version: re-deriving it
    from the newest would store it in full); ``None`` where the record's entry is not
    what lookups find (a version stored more than once) or is not this version's."""
    if stored is None or version_key(stored.get("ver")) != version_key(version):
        return None
    if "base" in stored:
        base = stored["base"]
        if version_key(base) == version_key(version) or idx.rewritten(ns, ch, base):
            return None
    elif "val" not in stored:
        return None
    if idx.rewritten(ns, ch, version):
        return None  # stored more than once: the values differ from what lookups find
    return stored


def _linked(
    saver: StoreAccess,
    emitted: dict[tuple[str, str, Any], tuple[int, int, int]],
    ns: str,
    ch: str,
    entry: dict[str, Any],
) -> bool:
    """Note ``entry`` as emitted into the new file; ``False`` (nothing noted) for a delta
    whose base is not there with the value it was built on, or that the snapshot policy
    ends. A rewrite has no snapshots, so a chain ends (the value is stored in full) where
    the policy would have written a snapshot: after at least ``snapshot_every`` deltas
    worth ``snapshot_ratio`` times the full value's bytes. Every entry is judged the same
    way, copied or derived, so compacting the new file again decides the same: it is
    left as it is."""
    size = len(orjson.dumps(entry))
    key = (ns, ch, version_key(entry["ver"]))
    if "base" not in entry:
        emitted[key] = (0, 0, size)
        return True
    below = emitted.get((ns, ch, version_key(entry["base"])))
    if below is None:
        return False
    depth, since, full = below
    policy = saver.snapshot_policy
    if depth + 1 >= policy.max_depth or (
        depth + 1 >= policy.every and since + size >= policy.ratio * full
    ):
        return False
    emitted[key] = (depth + 1, since + size, full)
    return True


def _live_writes(idx: ThreadIndex, rec: dict[str, Any]) -> dict[str, Any] | None:
    """``rec`` with only the write entries the index serves (``None`` if there are none)."""
    slots = idx.writes.get((rec["ns"], rec["cp"]), {})
    live = [
        w for position, w in enumerate(rec["w"])
        if (e := slots.get((rec["task"], w[0]))) is not None
        and e.ref.seq == rec["seq"] and e.position == position
    ]
    if not live:
        return None
    return rec if len(live) == len(rec["w"]) else {**rec, "w": live}


def _entry(
    saver: StoreAccess,
    last: dict[tuple[str, str], tuple[Any, ListFingerprint, int]],
    ns: str,
    ch: str,
    version: Any,
    value: Any,
    *,
    full: bool = False,
) -> dict[str, Any]:
    """Re-emit a value, as a delta on the channel's previous re-emitted list if it can
    (with ``full``, in full)."""
    from ..values.fingerprint import ListFingerprint
    from ..values.records import value_entry

    fp = ListFingerprint.of(value)
    prev = None if full else last.get((ns, ch))
    # No snapshots in a rewritten file: keep chains short instead.
    base = prev[:2] if prev is not None and prev[2] < _MAX_CHAIN * saver.snapshot_policy.every else None
    entry = value_entry(saver.codec, version, value, fp, base)
    if fp is not None:
        last[(ns, ch)] = (version, fp, prev[2] + 1 if "base" in entry and prev else 0)
    return entry


def _all_checkpoints(idx: ThreadIndex) -> set[tuple[str, str]]:
    return {(ns, cid) for ns, by_id in idx.checkpoints.items() for cid in by_id}


def checkpoint_count(idx: ThreadIndex) -> int:
    """How many checkpoints an index holds (every namespace)."""
    return sum(len(by_id) for by_id in idx.checkpoints.values())


class Compaction(NamedTuple):
    """What compacting (or pruning) one thread's log leaves, or would leave."""

    #: The log's size in bytes before.
    before: int
    #: Its size after (for a preview, what the new generation's bytes would be).
    after: int
    checkpoints_before: int
    checkpoints_after: int


class CompactInterrupted(KeyboardInterrupt):
    """Ctrl-C once the new generation was in its place (renamed over the old log), as
    the compaction synced the directory and indexed it: the thread is compacted
    (``compaction`` says what it left). A Ctrl-C before the rename leaves the old log as
    it was and is a plain ``KeyboardInterrupt``. A ``KeyboardInterrupt`` too, so code
    that lets Ctrl-C end the program still does.

    Attributes:
        thread_id: The thread.
        compaction: What the compaction (or prune) did.
    """

    def __init__(self, thread_id: str, compaction: Compaction) -> None:
        super().__init__(f"thread {thread_id!r} was compacted: {compaction.before} -> "
                         f"{compaction.after} bytes")
        self.thread_id = thread_id
        self.compaction = compaction


def read_whole(log: ThreadLog) -> ThreadIndex:
    """``log.refresh()``, refusing a damaged log as a writable store does: a read-only
    one serves the part before the damage, and a dry run must refuse what its real run
    would (with the same error).

    Raises:
        CorruptLogError: The log cannot be read whole.
    """
    idx = log.refresh()
    damage = log.damage
    if damage is not None:
        raise CorruptLogError(str(damage), path=damage.path, offset=damage.offset)
    return idx


def preview(saver: StoreAccess, thread_id: str, *, keep_latest: bool = False) -> Compaction:
    """What :func:`compact_thread` (with ``keep_latest``, :func:`prune_thread`) would
    leave of a thread's log, computed the same way, with nothing written and no lock
    taken (a writer may append meanwhile). An absent thread: all zeros.

    Raises:
        CorruptLogError: The log cannot be read whole (as compaction would refuse it).
    """
    if not saver.store.has_thread(thread_id):
        return Compaction(0, 0, 0, 0)
    log = saver.store.thread_log(thread_id)
    with log.mutex:
        idx = read_whole(log)
        if not log.exists():
            return Compaction(0, 0, 0, 0)
        count = checkpoint_count(idx)
        records = _pruned(saver, log, idx) if keep_latest else _compacted(saver, log, idx)
        if records is None:
            return Compaction(idx.committed_end, idx.committed_end, count, count)
        size = generation_size(records, thread_id, log.gen + 1)
        kept = sum(1 for r in records if r.get("t") == "checkpoint")
        return Compaction(idx.committed_end, size, count, kept)


def _compacted(saver: StoreAccess, log: ThreadLog, idx: ThreadIndex) -> list[dict[str, Any]]:
    """The records of a compacted log (see :func:`compact_thread`)."""
    keep = _all_checkpoints(idx) | set(idx.writes)
    return _rebuilt_records(saver, log, idx, keep, live_writes_only=True)


def _prune_keeps(saver: StoreAccess, idx: ThreadIndex) -> set[tuple[str, str]] | None:
    """The checkpoints a prune keeps; ``None``: it would drop nothing."""
    keep: set[tuple[str, str]] = set()
    for ns in idx.namespaces():
        latest = idx.latest_id(ns)
        assert latest is not None
        keep.add((ns, latest))
        keep.update((ns, a) for a in _delta_ancestors(saver, idx, ns, latest))
    if keep == _all_checkpoints(idx) and set(idx.writes) <= keep:
        return None
    return keep


def prune_would_change(saver: StoreAccess, idx: ThreadIndex) -> bool:
    """Whether :func:`prune_thread` would rewrite a log with this index (a dry run's
    answer, as cheap as the real prune's own check)."""
    return _prune_keeps(saver, idx) is not None


def _pruned(saver: StoreAccess, log: ThreadLog, idx: ThreadIndex) -> list[dict[str, Any]] | None:
    """The records of a pruned log (see :func:`prune_thread`); ``None``: nothing to drop."""
    keep = _prune_keeps(saver, idx)
    return None if keep is None else _rebuilt_records(saver, log, idx, keep)


def compact_thread(saver: StoreAccess, thread_id: str) -> tuple[int, int]:
    """Rewrite a thread's log with the same answers and nothing superseded.

    Every checkpoint, pending write and tool-call event stays; snapshot records,
    superseded duplicates of a checkpoint record and write entries the index no longer
    serves go; each channel version is stored once, as a delta where it extends the
    previous one (chains kept short). Writes whose checkpoint is not (yet) in the log
    are kept too.

    Returns:
        The log's size in bytes before and after (``(0, 0)`` for an absent thread).

    Raises:
        CompactInterrupted: Ctrl-C once the new log was in place (see there).
    """
    done = compact_log(saver, thread_id)
    return done.before, done.after


def prune_thread(saver: StoreAccess, thread_id: str) -> None:
    """Keep the latest checkpoint per namespace (plus DeltaChannel ancestors).

    Raises:
        CompactInterrupted: Ctrl-C once the new log was in place (see there).
    """
    compact_log(saver, thread_id, keep_latest=True)


def compact_log(saver: StoreAccess, thread_id: str, *, keep_latest: bool = False) -> Compaction:
    """:func:`compact_thread` (with ``keep_latest``, :func:`prune_thread`) and what it
    left: the log's size and checkpoints before and after.

    Returns:
        What the log was and is (all zeros for an absent thread; a prune with nothing
        to drop leaves the log as it is, and says so: the same figures before and after).

    Raises:
        CorruptLogError: The log cannot be read whole; it was not rewritten.
        CompactInterrupted: Ctrl-C once the new log was in place (see there); one before
            that leaves the log as it was (a plain ``KeyboardInterrupt``).
    """
    if not saver.store.has_thread(thread_id):
        return Compaction(0, 0, 0, 0)  # no such thread: create no files for it
    log = saver.store.thread_log(thread_id)
    planned: Compaction | None = None
    old = -1
    try:  # around the lock too: a Ctrl-C as it is let go comes after the new log is in place
        with log.writer() as idx:
            if not log.exists():
                return Compaction(0, 0, 0, 0)
            count = checkpoint_count(idx)
            records = _pruned(saver, log, idx) if keep_latest else _compacted(saver, log, idx)
            if records is None:
                return Compaction(idx.committed_end, idx.committed_end, count, count)
            kept = sum(1 for r in records if r.get("t") == "checkpoint")
            old = os.stat(log.path).st_ino
            planned = Compaction(idx.committed_end, 0, count, kept)
            log.rewrite(records)
            return planned._replace(after=log.refresh().committed_end)
    except KeyboardInterrupt:
        now = _stat(log.path)
        if planned is None or now is None or now.st_ino == old:  # the old log is as it was
            raise
        saver.store.forget(thread_id)  # reopened as it is now, when next used
        raise CompactInterrupted(thread_id, planned._replace(after=now.st_size)) from None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def prune_locked(saver: StoreAccess, log: ThreadLog, idx: ThreadIndex) -> bool:
    """:func:`prune_thread` for a caller holding the log's writer lock (a sweep).

    Returns:
        Whether the log was rewritten (``False``: nothing to drop, or no log).
    """
    if not log.exists():
        return False
    records = _pruned(saver, log, idx)
    if records is None:
        return False
    log.rewrite(records)
    return True


def delete_runs(saver: StoreAccess, run_ids: set[str], threads: Iterable[str] | None = None) -> None:
    """Remove the checkpoints of the given runs from ``threads`` (every thread of the
    store if ``None``)."""
    for thread_id in list(saver.store.thread_ids() if threads is None else threads):
        log = saver.store.thread_log(thread_id)
        with log.writer() as idx:
            if not log.exists():
                continue
            removed = {
                (ns, cid)
                for ns, by_id in idx.checkpoints.items()
                for cid, entry in by_id.items()
                if saver.codec.peek(entry.metadata).get("run_id") in run_ids
            }
            if not removed:
                continue
            keep = _all_checkpoints(idx) - removed
            for ns, cid in keep:
                cut = [a for a in _delta_ancestors(saver, idx, ns, cid) if (ns, a) in removed]
                if cut:
                    raise DeltaHistoryError(
                        f"thread {thread_id!r}: checkpoint {cid} (namespace {ns!r}) rebuilds a "
                        f"DeltaChannel from the writes of checkpoint {cut[0]}, which belongs to "
                        "a run being deleted. Nothing was deleted in this thread. Delete the "
                        "later runs too, or prune(keep_latest) first."
                    )
            records = _rebuilt_records(saver, log, idx, keep)
            if not records:
                log.remove()
            else:
                log.rewrite(records)


def copy_records(saver: StoreAccess, source: str, target: str) -> None:
    """Append every record of ``source`` to ``target``'s log as one batch.

    A checkpoint whose metadata names the source thread (``"thread_id"``, which the
    LangGraph server puts in every run's metadata) names the target in the copy, as the
    server's own copy does; everything else is copied as it is."""
    src = saver.store.thread_log(source)
    records = [r for r in src.iter_records() if r.get("t") != "header"]
    if not records:
        return
    copied = [_renamed(saver, {k: v for k, v in r.items() if k != "seq"}, source, target) for r in records]
    dst = saver.store.thread_log(target)
    with dst.writer():
        dst.append(copied)


def _renamed(saver: StoreAccess, record: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    """``record`` with its metadata's ``"thread_id"`` set to ``target`` where it was ``source``."""
    if record.get("t") != "checkpoint" or not isinstance(record.get("md"), dict):
        return record
    metadata = saver.codec.peek(record["md"])
    if not isinstance(metadata, dict) or metadata.get("thread_id") != source:
        return record
    renamed = {**metadata, "thread_id": target}
    return {**record, "md": saver.codec.encode(renamed, f"thread {target!r}, a copied checkpoint's metadata")}
