"""Whether a thread on the target is the thread on the source, decoded.

Compared per checkpoint (every namespace): parent link, the checkpoint as LangGraph
loads it (values, versions, versions seen, time), metadata, and pending writes in
order (by task when the source could not tell their task paths, a saver object's:
the copy then cannot keep the order of a step's parallel tasks, only each task's
own). Values are compared as Python objects (messages by their fields), not as
bytes: each saver encodes differently. A ``DeltaChannel``'s value is rebuilt from its
snapshots and the pending writes between them, both compared here, so equal tuples
rebuild equal values (a snapshot one saver hands out at later checkpoints of the same
version, and the other only where it was written, is not a difference). A difference
is one line naming the checkpoint and what differs; values are never printed.

A target the app went on with after the copy is *ahead*, not different
(:func:`compare_histories`): per namespace, every source checkpoint is on the target
and equal, and what only the target holds continues the source's newest checkpoint of
that namespace, as a run going on from it leaves things:

- checkpoints whose parent is that newest checkpoint or another such checkpoint (a
  namespace the source lacks: a chain from no parent). A checkpoint branching from an
  older one is a difference: it cannot be told apart from a source and a target that
  both went on (the copy then puts the source's new checkpoints beside the target's);
  so a time travel on the target is reported too.
- at that newest checkpoint only, more pending writes: LangGraph adds the resume and the
  tasks' writes of the run going on to the checkpoint it goes on from, and writes a
  special channel (error, interrupt, resume, scheduled) into its task's fixed slot, so a
  second ``interrupt()`` of the same task replaces the first. So each source task's
  regular writes must start the target's writes of that task, in order and equal, and
  each special write of the source must still have its slot (same task and channel; the
  value may be newer). Older checkpoints get no writes from a run (LangGraph adds none
  to them, time travel included), so theirs must be equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP, CheckpointTuple
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from .endpoints import Endpoint, Key, StoredCheckpoint, checkpoint_key, chunks, parent_of
from .versions import widen_checkpoint, widest, width_of

#: Parts of a stored checkpoint compared (``pending_sends`` and others some savers add
#: or drop are not LangGraph's to load).
CHECKPOINT_KEYS = ("id", "ts", "channel_values", "channel_versions", "versions_seen")


@dataclass
class HistoryComparison:
    """How a thread's history on the target stands to the source's.

    Attributes:
        differences: Where the target departs from the source, a line each (no values).
        ahead: What only the target holds, going on from the source's history (see the
            module docstring), a line each.
        ahead_checkpoints: Checkpoints only the target holds, continuing the source's.
        ahead_writes: Pending writes at the source's newest checkpoints that only the
            target holds (a special write's newer value counted).
    """

    differences: list[str] = field(default_factory=list)
    ahead: list[str] = field(default_factory=list)
    ahead_checkpoints: int = 0
    ahead_writes: int = 0

    @property
    def is_ahead(self) -> bool:
        """The target holds the source's history unchanged, and goes on from it."""
        return not self.differences and bool(self.ahead)


def compare_threads(
    src: Endpoint, dst: Endpoint, thread_id: str, source_tuples: Sequence[CheckpointTuple] | None = None,
    *, width: int | None = None,
) -> list[str]:
    """Differences between a thread on ``src`` and on ``dst`` (none: equal). What a
    target ahead of its source holds beyond it is listed too; :func:`compare_histories`
    tells the two apart. Both ends are read a few checkpoints at a time
    (:data:`~.endpoints.CHUNK`), not whole.

    Args:
        src: The source.
        dst: The target.
        thread_id: The thread.
        source_tuples: The source's checkpoints, if already read (oldest first).
        width: The width the copy widened versions to (default: the target's own).
    """
    width = width_of(dst.saver) if width is None else width
    task_order = src.tells_task_paths()
    if source_tuples is not None:
        theirs = {checkpoint_key(t): t for t in source_tuples}
        check = HistoryCheck(theirs, width=width, task_order=task_order)
        for chunk in chunks(theirs):
            for key, copy in zip(chunk, dst.read_checkpoints(thread_id, chunk)):
                check.compare(theirs[key], copy)
    else:
        stored = src.stored_checkpoints(thread_id)
        check = HistoryCheck(stored, width=width, task_order=task_order)
        for chunk in chunks(stored):
            pairs = zip(src.read_checkpoints(thread_id, chunk), dst.read_checkpoints(thread_id, chunk))
            for tup, copy in pairs:
                if tup is not None:  # else removed from the source since it was listed
                    check.compare(tup, copy)
    found = check.finish(dst.stored_checkpoints(thread_id))
    return found.differences + found.ahead


def compare_histories(
    source: Sequence[CheckpointTuple], target: Sequence[CheckpointTuple], *, width: int = 0,
    task_order: bool = True,
) -> HistoryComparison:
    """Compare a thread's checkpoints on both ends (pure): equal, ahead or different
    (the rule is in the module docstring).

    Args:
        source: The source's checkpoints (every namespace).
        target: The target's.
        width: The width the copy widened the source's versions to.
        task_order: Whether the order of different tasks' pending writes is compared
            too (false: the copy had no task paths to keep it, only each task's order).
    """
    ours = {checkpoint_key(t): t for t in target}
    check = HistoryCheck([checkpoint_key(t) for t in source], width=width, task_order=task_order)
    for tup in sorted(source, key=lambda t: (_where(t)[0], _where(t)[1])):
        check.compare(tup, ours.get(checkpoint_key(tup)))
    return check.finish({key: StoredCheckpoint(parent_of(t), 0) for key, t in ours.items()})


class HistoryCheck:
    """A comparison of a thread's history fed one source checkpoint (and its copy) at a
    time, so that neither end is held whole: a copy compares each chunk it has put.

    Args:
        source: The source's checkpoints, by ``(namespace, id)`` (every one of them, for
            what only the target holds, and the newest of each namespace).
        width: The width the copy widened the source's versions to.
        task_order: Whether the order of different tasks' pending writes is compared
            (false when the source could not tell task paths: :meth:`Endpoint.tells_task_paths`).
    """

    def __init__(self, source: Iterable[Key], *, width: int = 0, task_order: bool = True) -> None:
        self.width = width
        self.task_order = task_order
        self._source = set(source)
        self._newest: dict[str, str] = {}
        for ns, cid in self._source:
            if cid > self._newest.get(ns, ""):
                self._newest[ns] = cid
        self._out = HistoryComparison()

    def compare(self, source: CheckpointTuple, copy: CheckpointTuple | None) -> None:
        """Compare one source checkpoint with its copy (``None``: the target lacks it)."""
        ns, cid = _where(source)
        at = _at(ns, cid)
        if copy is None:
            self._out.differences.append(f"{at}: missing on the target")
            return
        last = cid == self._newest.get(ns)
        found = compare_tuples(source, copy, width=self.width, writes=not last, task_order=self.task_order)
        self._out.differences += [f"{at}: {d}" for d in found]
        if last:
            _compare_newest_writes(source, copy, at, self._out, self.task_order)

    def finish(self, target: Mapping[Key, StoredCheckpoint]) -> HistoryComparison:
        """The comparison, given every checkpoint the target holds (with its parent): what
        only the target holds is ahead or a difference (the rule is in the module
        docstring)."""
        out = self._out
        only: dict[str, list[tuple[str, str | None]]] = {}
        for (ns, cid), stored in target.items():
            if (ns, cid) not in self._source:
                only.setdefault(ns, []).append((cid, stored.parent_id))
        for ns in sorted(only):
            newest = self._newest.get(ns)
            going_on = {newest}  # what a checkpoint only the target holds may continue
            for cid, parent in sorted(only[ns]):  # oldest first: a parent before its children
                at = _at(ns, cid)
                if parent in going_on:
                    going_on.add(cid)
                    out.ahead.append(f"{at}: on the target only")
                    out.ahead_checkpoints += 1
                else:
                    continues = f" {newest}" if newest else ""
                    out.differences.append(
                        f"{at}: on the target only, and it does not continue from the source's newest "
                        f"checkpoint{continues} (its parent is {parent})"
                    )
        return out


def _compare_newest_writes(
    a: CheckpointTuple, b: CheckpointTuple, at: str, out: HistoryComparison, task_order: bool,
) -> None:
    """The writes of the source's newest checkpoint of a namespace: equal, more on the
    target (a run went on from it), or different."""
    wa, wb = list(a.pending_writes or []), list(b.pending_writes or [])
    differs = _writes_difference(wa, wb, task_order)
    if differs is None:
        return
    beyond = _writes_beyond(wa, wb)
    if beyond is None:
        out.differences.append(f"{at}: {differs}")
    else:
        out.ahead.append(f"{at}: {len(wb)} pending write(s) on the target, {len(wa)} on the source")
        out.ahead_writes += beyond


def _writes_beyond(a: list[Any], b: list[Any]) -> int | None:
    """How many of ``b``'s writes a run going on from the checkpoint added to ``a``'s
    (``None``: ``b`` does not hold ``a``'s; the rule is in the module docstring)."""
    mine, theirs = _by_task(a), _by_task(b)
    kept = 0
    for task, (regular, special) in mine.items():
        their_regular, their_special = theirs.get(task, ([], {}))
        if len(their_regular) < len(regular) or not all(
            x[0] == y[0] and _same(x[1], y[1]) for x, y in zip(regular, their_regular)
        ):
            return None
        if not set(special) <= set(their_special):
            return None
        kept += len(regular) + sum(_same(v, their_special[ch]) for ch, v in special.items())
    return len(b) - kept


def _by_task(writes: list[Any]) -> dict[str, tuple[list[tuple[str, Any]], dict[str, Any]]]:
    """Each task's regular writes in order, and its special writes by channel (one slot each)."""
    out: dict[str, tuple[list[tuple[str, Any]], dict[str, Any]]] = {}
    for task, channel, value in writes:
        regular, special = out.setdefault(task, ([], {}))
        if channel in WRITES_IDX_MAP:
            special[channel] = value
        else:
            regular.append((channel, value))
    return out


def _at(ns: str, cid: str) -> str:
    return f"checkpoint {cid}" + (f" (namespace {ns})" if ns else "")


def compare_tuples(
    a: CheckpointTuple, b: CheckpointTuple, *, width: int = 0, writes: bool = True, task_order: bool = True,
) -> list[str]:
    """What differs between two tuples of one checkpoint (names of parts, no values);
    ``a``'s versions are widened to ``width`` first (see :mod:`.versions`); pending
    writes are compared unless ``writes`` is false (each task's in order; different
    tasks' order too unless ``task_order`` is false). Both sides' versions are then
    compared at the wider of their widths: a store's 12-digit versions copied to SQLite
    came back 32 digits wide, the same versions."""
    common = max(width, widest(a.checkpoint), widest(b.checkpoint))
    a = a._replace(checkpoint=widen_checkpoint(a.checkpoint, common))  # type: ignore[arg-type]
    b = b._replace(checkpoint=widen_checkpoint(b.checkpoint, common))  # type: ignore[arg-type]
    out = []
    if _parent(a) != _parent(b):
        out.append(f"parent {_parent(b)} on the target, {_parent(a)} on the source")
    for key in CHECKPOINT_KEYS:
        va: Any = dict(a.checkpoint).get(key)
        vb: Any = dict(b.checkpoint).get(key)
        if key == "channel_values":
            versions = a.checkpoint.get("channel_versions") or {}
            if versions == b.checkpoint.get("channel_versions"):
                va, vb = _without_delta_asymmetry(va or {}, vb or {})
            out += [f"value of channel {ch!r} differs" for ch in _differing(va or {}, vb or {})]
        elif not _same(va, vb):
            out.append(f"{key} differs")
    if not _same(dict(a.metadata or {}), dict(b.metadata or {})):
        keys = _differing(dict(a.metadata or {}), dict(b.metadata or {}))
        out.append(f"metadata differs ({', '.join(map(str, keys))})")
    if writes:
        differs = _writes_difference(list(a.pending_writes or []), list(b.pending_writes or []), task_order)
        out += [differs] if differs else []
    return out


def _writes_difference(wa: list[Any], wb: list[Any], task_order: bool = True) -> str | None:
    if len(wa) != len(wb):
        return f"{len(wb)} pending write(s) on the target, {len(wa)} on the source"
    if not task_order:  # tasks in one order on both ends; each task's writes as they are (a stable sort)
        wa, wb = sorted(wa, key=lambda w: str(w[0])), sorted(wb, key=lambda w: str(w[0]))
    if not all(x[0] == y[0] and x[1] == y[1] and _same(x[2], y[2]) for x, y in zip(wa, wb)):
        return "pending writes differ (task, channel, value or order)"
    return None


def _without_delta_asymmetry(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values, less a DeltaChannel's snapshot held on one side only.

    A saver that keeps values by checkpoint (``SqliteSaver``) holds a ``_DeltaSnapshot``
    only at the checkpoint that wrote it; one that keeps them by version (ours,
    ``PostgresSaver``, ``InMemorySaver``) hands it out at every later checkpoint with
    the same version. With equal versions the value LangGraph loads is the same either
    way (the other side rebuilds it from that snapshot and no writes in between).
    """
    a, b = dict(a), dict(b)
    for ch in set(a) ^ set(b):
        held = a.get(ch, b.get(ch))
        if isinstance(held, _DeltaSnapshot):
            a.pop(ch, None)
            b.pop(ch, None)
    return a, b


def _where(tup: CheckpointTuple) -> tuple[str, str]:
    c = tup.config["configurable"]
    return c.get("checkpoint_ns", ""), c["checkpoint_id"]


def _parent(tup: CheckpointTuple) -> str | None:
    return tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if k not in a or k not in b or not _same(a[k], b[k]))


def _same(a: Any, b: Any) -> bool:
    """Equal as decoded values: tuples and lists alike (JSON has no tuple)."""
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # values whose == raises (arrays): compare their text
        return repr(a) == repr(b)


def histories_diverged(stored: Any, have: Any, source: str, target: str) -> str | None:
    """Why the thread must not be copied: both ends hold checkpoints the other lacks
    (another conversation under the same id, or both apps went on after an earlier
    copy). Putting the source's would mix two histories in the target's thread, whose
    latest state could then be the source's. ``None``: the target holds part of the
    source's history (a copy to finish), all of it, or all of it and more (ahead)."""
    only_source = sum(1 for key in stored if key not in have)
    only_target = sum(1 for key in have if key not in stored)
    if not (only_source and only_target):
        return None
    return (
        f"both ends hold checkpoints the other lacks ({only_source} only on {source}, "
        f"{only_target} only on {target}): two histories under one thread id (another "
        "conversation, or both apps went on after an earlier copy). Nothing was put into the "
        "target's thread; leave the thread out (--threads), or delete or rename it on the target "
        "first."
    )
