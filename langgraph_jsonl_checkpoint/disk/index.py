"""The in-memory index of one thread's log, and its sidecar file form.

The index says where things are: each checkpoint's record (and its parent and metadata,
for ``list`` filters), each stored channel value by ``(namespace, channel, version)``,
and each pending write by checkpoint and write slot. It is *derived data*: every entry
comes from :func:`summarize` applied to a log record, so replaying the log's summaries
rebuilds it exactly, and the sidecar file is only a cache of those summaries.

Write-slot rules live here, because replaying the log must give the same answer as the
live saver: a regular write slot ``(task_id, idx >= 0)`` keeps its first write (a retried
``put_writes`` never duplicates it); a special slot (``__error__``, ``__interrupt__``,
... with negative idx) keeps its latest write.

Pure: summaries in, lookups out; no files.
"""

from __future__ import annotations

import bisect
import gc
import itertools
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import eq
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from ..errors import CorruptLogError

if TYPE_CHECKING:
    from .sidecar import Block

# Value kinds in a checkpoint record's "values" and in the index.
FULL = 0
DELTA = 1
EMPTY = 2


# Index entries are NamedTuples: tens of thousands are built when a sidecar is loaded,
# and frozen dataclasses cost several times more to construct.


class RecordRef(NamedTuple):
    """Where a record lies in the log: byte offset, length and sequence number."""

    offset: int
    length: int
    seq: int


class CheckpointEntry(NamedTuple):
    """A checkpoint's place in the log and the facts ``list`` needs without reading it.

    ``md`` and ``cv`` hold the metadata cell and the channel versions, or (for entries
    loaded from the sidecar) their JSON text, decoded by :attr:`metadata` and
    :attr:`versions` when asked for: most entries of a long thread never are.
    """

    ref: RecordRef
    parent: str | None
    md: Any
    cv: Any

    @property
    def metadata(self) -> Any:
        md = self.md
        return _decode(md, self, "metadata") if type(md) is str else md

    @property
    def versions(self) -> dict[str, Any]:
        cv = self.cv
        return _decode(cv, self, "channel versions") if type(cv) is str else cv


def _decode(text: str, entry: CheckpointEntry, what: str) -> Any:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if type(value) is not dict and not (value is None and text == "null" and what == "metadata"):
        raise CorruptLogError(
            f"the sidecar index holds damaged {what} for the checkpoint at byte offset "
            f"{entry.ref.offset} of the log (it was not written by this package). "
            "Delete the thread's .idx file; it is rebuilt from the log.",
            path="",
            offset=entry.ref.offset,
        )
    return value


class BlobEntry(NamedTuple):
    """Where the value of one channel version is stored.

    A delta's base is resolved when its record is indexed, in log order: ``prev`` is the
    entry its base version had *then*. A version written again later (a caller may
    pass any ``new_versions``) replaces the entry that lookups by version find, never
    the value of a delta built on it before; and since ``prev`` always lies earlier in
    the log, a chain of deltas can never loop.

    Attributes:
        ref: The record holding it (a checkpoint or snapshot record).
        kind: ``FULL``, ``DELTA`` or ``EMPTY``.
        base: For a delta, the version it extends.
        depth: Records to read to rebuild it (0 for a full value).
        prev: For a delta, the entry of its base when it was written (``None``: the
            base was not in the log, which this package never writes).
    """

    ref: RecordRef
    kind: int
    base: Any = None
    depth: int = 0
    prev: BlobEntry | None = None


class WriteEntry(NamedTuple):
    """One pending write: its record, position in that record, channel and task path."""

    ref: RecordRef
    position: int
    channel: str
    task_path: str


def summarize(record: dict[str, Any], offset: int, length: int) -> dict[str, Any]:
    """Strip a log record down to what the index needs (values dropped).

    Args:
        record: A parsed log record.
        offset: Its byte offset in the log.
        length: Its length in bytes, newline included.

    Returns:
        A small JSON-able dict; :meth:`ThreadIndex.apply` takes it.
    """
    t = record.get("t")
    s: dict[str, Any] = {"o": offset, "n": length, "s": record["seq"], "t": t}
    if t == "checkpoint":
        s["ns"] = record["ns"]
        s["id"] = record["id"]
        s["p"] = record.get("parent")
        s["md"] = record.get("md")
        s["cv"] = record["cv"]
        s["vals"] = {
            ch: _value_summary(entry) for ch, entry in record.get("values", {}).items()
        }
    elif t == "snapshot":
        s["ns"] = record["ns"]
        s["vals"] = {ch: entry["ver"] for ch, entry in record["values"].items()}
    elif t == "writes":
        s["ns"] = record["ns"]
        s["cp"] = record["cp"]
        s["task"] = record["task"]
        s["path"] = record.get("path", "")
        s["w"] = [[w[0], w[1]] for w in record["w"]]
    elif t == "tool":
        s["key"] = [record["ns"], record["cp"], record["call"]]
    return s


def _value_summary(entry: dict[str, Any]) -> list[Any]:
    if "empty" in entry:
        return [entry["ver"], EMPTY, None]
    if "base" in entry:
        return [entry["ver"], DELTA, entry["base"]]
    return [entry["ver"], FULL, None]


def version_key(version: Any) -> Any:
    """A hashable key for a channel version that keeps ``1``, ``1.0`` and ``"1"`` apart.

    Strings (LangGraph's own versions) are their own key; a tuple never equals a str.
    """
    return version if type(version) is str else (type(version).__name__, version)




@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic objects are built.

    Loading a sidecar allocates tens of thousands of small objects; the collector's
    passes over the growing heap took about 45% of the load time (and half of reading
    a long conversation's history). The collector is only resumed if it was running
    when the pause began; code inside must not run user callbacks.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _cat(blocks: list[Block], name: str) -> list[Any]:
    """One column of consecutive blocks."""
    if len(blocks) == 1:
        return blocks[0].cols[name]
    return list(itertools.chain.from_iterable(b.cols[name] for b in blocks))


class _Entries(dict):  # type: ignore[type-arg]
    """Checkpoint id -> :class:`CheckpointEntry`; a bulk-loaded entry is kept as its
    position in the loaded columns until it is first looked up (a long thread's
    entries are mostly never asked for, and each would be two more objects to build
    and for the garbage collector to walk)."""

    __slots__ = ("_base",)

    def __init__(self, base: _Base, *args: Any) -> None:
        super().__init__(*args)
        self._base = base

    def _build(self, key: str, j: int) -> CheckpointEntry:
        b = self._base
        entry = CheckpointEntry(b.ref(b.cp_seq[j]), b.cp_p[j], b.cp_md[j], b.cp_cv[j])
        dict.__setitem__(self, key, entry)
        return entry

    def __getitem__(self, key: str) -> CheckpointEntry:
        entry = dict.__getitem__(self, key)
        return self._build(key, entry) if type(entry) is int else entry

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        entry = dict.get(self, key, default)
        return self._build(key, entry) if type(entry) is int else entry

    def _build_all(self) -> None:
        for key, entry in list(dict.items(self)):
            if type(entry) is int:
                self._build(key, entry)

    def items(self) -> Any:
        self._build_all()
        return dict.items(self)

    def values(self) -> Any:
        self._build_all()
        return dict.values(self)

    def __eq__(self, other: object) -> bool:
        self._build_all()
        if isinstance(other, _Entries):
            other._build_all()
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


class _Base:
    """Records bulk-loaded from columns (sidecar blocks, or a long scan), looked up lazily.

    Checkpoint ids are mapped at load (``list`` walks them) to positions in these
    columns (:class:`_Entries`); stored values and pending writes stay in columns until
    a lookup asks for one channel or one checkpoint, then :class:`ThreadIndex` folds
    them into its dicts.
    """

    def __init__(self, blocks: list[Block]) -> None:
        def cat(name: str) -> list[Any]:
            return _cat(blocks, name)

        self.first = blocks[0].first
        self.lens = cat("n")
        if len(blocks) == 1:
            self.offs = blocks[0].offsets  # one more at the end: where the last record ends
        else:
            self.offs = array("q", itertools.chain.from_iterable(b.offsets[:-1] for b in blocks))
        self.kinds = cat("t")
        self.ns = cat("ns")
        self.vr, self.vc, self.vv, self.vk, self.vb = (cat(k) for k in ("vr", "vc", "vv", "vk", "vb"))
        namespaces = set(self.ns) - {None}
        #: The one namespace of every record (``None``: several, or none)
        self.only_ns = namespaces.pop() if len(namespaces) == 1 else None
        self.slot_maps: dict[tuple[str, str], dict[Any, int]] = {}
        #: (ns, channel, version key) -> every slot of a version stored more than once
        self.repeats: dict[tuple[str, str, Any], list[int]] = {}
        #: slot -> its entry, for the deltas of versions stored more than once
        self.slot_entries: dict[int, BlobEntry] = {}
        w_sel = list(map(eq, self.kinds, itertools.repeat(1)))
        seqs = range(self.first, self.first + len(self.lens))
        self.wseq = array("q", itertools.compress(seqs, w_sel))
        self.wns = list(itertools.compress(self.ns, w_sel))
        self.wcp, self.wtask, self.wpath = (cat(k) for k in ("cp", "task", "path"))
        self.wi, self.wc = cat("wi"), cat("wc")
        self.wstart = array("q", itertools.accumulate(cat("wn"), initial=0))
        self.write_groups: dict[str, dict[str, Any]] | None = None
        # per checkpoint record (set by ThreadIndex.load_blocks)
        self.cp_seq: Any = []
        self.cp_p: list[Any] = []
        self.cp_md: list[Any] = []
        self.cp_cv: list[Any] = []

    def ref(self, seq: int) -> RecordRef:
        i = seq - self.first
        return RecordRef(self.offs[i], self.lens[i], seq)

    def slot_ns(self, slot: int) -> str:
        return self.ns[self.vr[slot] - self.first]

    def slot_map(self, ns: str, channel: str) -> dict[Any, int]:
        """Version key -> the value slot that :meth:`ThreadIndex.apply` would have kept."""
        found = self.slot_maps.get((ns, channel))
        if found is not None:
            return found
        if self.only_ns is not None and self.only_ns != ns:
            slots: list[int] = []  # (another namespace's records only)
        else:
            slots = list(itertools.compress(range(len(self.vc)), map(eq, self.vc, itertools.repeat(channel))))
        if self.only_ns is None:
            slots = [i for i in slots if self.slot_ns(i) == ns]
        keys = list(map(self.vv.__getitem__, slots))
        if set(map(type, keys)) - {str}:
            keys = list(map(version_key, keys))
        found = dict(zip(keys, slots))  # the last entry of a version wins...
        if len(found) < len(slots):
            # ...unless it is a delta and the entry before it is a full value (apply()
            # never lets a delta replace a full value). A version stored more than once
            # keeps all its slots, for deltas written in between (:meth:`slot_before`).
            repeated: dict[Any, list[int]] = {}
            for k, i in zip(keys, slots):
                repeated.setdefault(k, []).append(i)
            for k, held in repeated.items():
                if len(held) > 1:
                    self.repeats[(ns, channel, k)] = held
                    found[k] = self._kept_slot(held)
        self.slot_maps[(ns, channel)] = found
        return found

    def _kept_slot(self, held: list[int]) -> int:
        """The slot apply() keeps of a version stored in ``held`` (in log order)."""
        kept = held[0]
        for i in held[1:]:
            if self.vk[i] != DELTA or self.vk[kept] != FULL:
                kept = i
        return kept

    def slot_before(self, ns: str, channel: str, key: Any, position: int) -> int | None:
        """The slot apply() held for version ``key`` just before slot ``position`` was
        indexed (``None``: not stored before it)."""
        slot = self.slot_map(ns, channel).get(key)
        if slot is None:
            return None
        held = self.repeats.get((ns, channel, key))
        if held is None:
            return slot if slot < position else None
        earlier = held[: bisect.bisect_left(held, position)]
        return self._kept_slot(earlier) if earlier else None

    def groups(self) -> dict[str, dict[str, Any]]:
        """Namespace -> checkpoint id -> its writes records (column positions, in order;
        one position instead of a list when no checkpoint has several). Built without a
        container per record: allocating those would set off the cyclic collector's
        passes over everything the process holds."""
        if self.write_groups is None:
            groups: dict[str, dict[str, Any]] = {}
            if len(set(self.wns)) == 1:
                single = dict(zip(self.wcp, range(len(self.wcp))))
                if len(single) == len(self.wcp):
                    self.write_groups = {self.wns[0]: single}
                    return self.write_groups
            with bulk_allocation():
                for j, (ns, cp) in enumerate(zip(self.wns, self.wcp)):
                    by_cp = groups.get(ns)
                    if by_cp is None:
                        by_cp = groups[ns] = {}
                    g = by_cp.get(cp)
                    if g is None:
                        by_cp[cp] = [j]
                    else:
                        g.append(j)
            self.write_groups = groups
        return self.write_groups


@dataclass
class ThreadIndex:
    """Lookups over one thread's log, built by applying record summaries in log order
    (:meth:`apply`), or a long run of them at once from columns (:meth:`load_blocks`)."""

    checkpoints: dict[str, dict[str, CheckpointEntry]] = field(default_factory=dict)
    ordered_ids: dict[str, list[str]] = field(default_factory=dict)
    _blob_map: dict[tuple[str, str, Any], BlobEntry] = field(default_factory=dict)
    _write_map: dict[tuple[str, str], dict[tuple[str, int], WriteEntry]] = field(
        default_factory=dict
    )
    tool_events: dict[tuple[str, str, str], list[RecordRef]] = field(default_factory=dict)
    last_seq: int = -1
    committed_end: int = 0
    records_since_snapshot: int = 0
    bytes_since_snapshot: int = 0
    last_snapshot_bytes: int = 0
    #: Checkpoint-record values stored for a version that already had one (a caller
    #: passing an old version in ``new_versions``): caches keyed by version go stale.
    rewritten_versions: int = 0
    _rewritten: set[tuple[str, str, Any]] = field(default_factory=set)
    _base: _Base | None = None

    @property
    def blobs(self) -> dict[tuple[str, str, Any], BlobEntry]:
        """Every stored value: (namespace, channel, version key) -> where it is."""
        base = self._base
        if base is not None:
            for i, (ch, ver) in enumerate(zip(base.vc, base.vv)):
                self.blob(base.slot_ns(i), ch, ver)
        return self._blob_map

    @property
    def writes(self) -> dict[tuple[str, str], dict[tuple[str, int], WriteEntry]]:
        """Every pending write: (namespace, checkpoint id) -> write slot -> entry."""
        if self._base is not None:
            for ns, by_cp in list(self._base.groups().items()):
                for cp in list(by_cp):
                    self._write_slots(ns, cp)
        return self._write_map

    def load_blocks(self, blocks: list[Block]) -> None:
        """Add the records of consecutive blocks, which follow the header directly.

        Same result as :meth:`apply` on each summary in turn (except the ``depth`` of
        deltas, computed from the final index: it only steers when a full value is
        written), with stored values and pending writes folded in on first lookup.
        """
        if not blocks:
            return
        if self.checkpoints or self._write_map or self._blob_map or self._base is not None:
            raise ValueError("blocks load into an index holding only the header")
        base = self._base = _Base(blocks)
        kinds, lens, first = base.kinds, base.lens, base.first
        sel = list(map(eq, kinds, itertools.repeat(0)))
        seqs = range(first, first + len(lens))
        base.cp_seq = array("q", itertools.compress(seqs, sel))
        base.cp_p, base.cp_md, base.cp_cv = (_cat(blocks, k) for k in ("p", "md", "cv"))
        ids = _cat(blocks, "id")
        cp_ns = list(itertools.compress(base.ns, sel))
        if len(set(cp_ns)) == 1:
            self.checkpoints[cp_ns[0]] = _Entries(base, zip(ids, range(len(ids))))
        else:
            for j, (ns, cid) in enumerate(zip(cp_ns, ids)):
                by_id = self.checkpoints.get(ns)
                if by_id is None:
                    by_id = self.checkpoints[ns] = _Entries(base)
                by_id[cid] = j
        for ns, by_id in self.checkpoints.items():
            self.ordered_ids[ns] = sorted(by_id)
        if 3 in kinds:
            tools = itertools.compress(seqs, map(eq, kinds, itertools.repeat(3)))
            for seq, key in zip(tools, _cat(blocks, "key")):
                self.tool_events.setdefault(tuple(key), []).append(base.ref(seq))  # type: ignore[arg-type]
        since, nbytes = 0, 0
        for i in range(len(kinds) - 1, -1, -1):
            kind = kinds[i]
            if kind == 2:
                self.records_since_snapshot, self.bytes_since_snapshot = since, nbytes
                self.last_snapshot_bytes = lens[i]
                break
            if kind == 0:
                since += 1
                nbytes += lens[i]
            elif kind == 1:
                nbytes += lens[i]
        else:
            self.records_since_snapshot += since
            self.bytes_since_snapshot += nbytes
        self.last_seq = first + len(lens) - 1
        self.committed_end = blocks[-1].end

    def apply(self, s: dict[str, Any]) -> None:
        """Add one record summary (from :func:`summarize`) to the index."""
        ref = RecordRef(s["o"], s["n"], s["s"])
        t = s["t"]
        if t == "checkpoint":
            self._apply_checkpoint(s, ref)
            self.records_since_snapshot += 1
            self.bytes_since_snapshot += ref.length
        elif t == "writes":
            self._apply_writes(s, ref)
            self.bytes_since_snapshot += ref.length
        elif t == "snapshot":
            ns = s["ns"]
            for ch, ver in s["vals"].items():
                self._blob_map[(ns, ch, version_key(ver))] = BlobEntry(ref, FULL)
            self.records_since_snapshot = 0
            self.bytes_since_snapshot = 0
            self.last_snapshot_bytes = ref.length
        elif t == "tool":
            self.tool_events.setdefault(tuple(s["key"]), []).append(ref)  # type: ignore[arg-type]
        self.last_seq = ref.seq
        self.committed_end = ref.offset + ref.length

    def _apply_checkpoint(self, s: dict[str, Any], ref: RecordRef) -> None:
        ns, cid = s["ns"], s["id"]
        by_id = self.checkpoints.setdefault(ns, {})
        if cid not in by_id:
            ids = self.ordered_ids.setdefault(ns, [])
            if not ids or ids[-1] < cid:
                ids.append(cid)
            else:
                bisect.insort(ids, cid)
        by_id[cid] = CheckpointEntry(ref, s["p"], s["md"], s["cv"])
        for ch, (ver, kind, base) in s["vals"].items():
            key = (ns, ch, version_key(ver))
            existing = self.blob(ns, ch, ver)
            if existing is not None:
                self.rewritten_versions += 1
                self._rewritten.add(key)
            if kind == DELTA:
                if existing is not None and existing.kind == FULL:
                    continue  # the same value, already held in full (a copy's snapshot)
                prev = self.blob(ns, ch, base)
                depth = prev.depth + 1 if prev is not None else 1
                self._blob_map[key] = BlobEntry(ref, DELTA, base, depth, prev)
            else:
                self._blob_map[key] = BlobEntry(ref, kind)

    def _apply_writes(self, s: dict[str, Any], ref: RecordRef) -> None:
        slots = self._write_slots(s["ns"], s["cp"], create=True)
        task, path = s["task"], s["path"]
        for position, (idx, channel) in enumerate(s["w"]):
            slot = (task, idx)
            if idx >= 0 and slot in slots:  # type: ignore[operator]
                continue
            slots[slot] = WriteEntry(ref, position, channel, path)  # type: ignore[index]

    def _write_slots(
        self, ns: str, checkpoint_id: str, *, create: bool = False
    ) -> dict[tuple[str, int], WriteEntry] | None:
        key = (ns, checkpoint_id)
        slots = self._write_map.get(key)
        if slots is None and self._base is not None and self._base.wseq:
            base = self._base
            found = base.groups().get(ns, {}).pop(checkpoint_id, None)
            if type(found) is int:
                found = [found]
            if found:
                slots = self._write_map[key] = {}
                for j in found:
                    ref, path = base.ref(base.wseq[j]), base.wpath[j]
                    task = base.wtask[j]
                    a, b = base.wstart[j], base.wstart[j + 1]
                    for position, (idx, channel) in enumerate(zip(base.wi[a:b], base.wc[a:b])):
                        slot = (task, idx)
                        if idx >= 0 and slot in slots:
                            continue
                        slots[slot] = WriteEntry(ref, position, channel, path)
        if slots is None and create:
            slots = self._write_map[key] = {}
        return slots

    def _base_blob(self, key: tuple[str, str, Any]) -> BlobEntry | None:
        """Fold a bulk-loaded value (and the deltas it extends) into the index."""
        base = self._base
        assert base is not None
        slot = base.slot_map(key[0], key[1]).get(key[2])
        if slot is None:
            return self._blob_map.get(key)
        entry = self._blob_map[key] = self._slot_entry(key[0], key[1], slot)
        return entry

    def _slot_entry(self, ns: str, channel: str, slot: int) -> BlobEntry:
        """The entry apply() made for one bulk-loaded value slot: a delta's ``prev`` is
        its base as of that slot (walked iteratively: chains run thousands long)."""
        base = self._base
        assert base is not None
        chain: list[int] = []
        below: BlobEntry | None = None
        current: int | None = slot
        while current is not None:
            done = base.slot_entries.get(current)
            if done is not None:
                below = done
                break
            if base.vk[current] != DELTA:
                below = base.slot_entries[current] = BlobEntry(base.ref(base.vr[current]), base.vk[current])
                break
            chain.append(current)
            current = base.slot_before(ns, channel, version_key(base.vb[current]), current)
        for i in reversed(chain):
            depth = below.depth + 1 if below is not None else 1
            below = base.slot_entries[i] = BlobEntry(base.ref(base.vr[i]), DELTA, base.vb[i], depth, below)
        assert below is not None
        return below

    # -- lookups ---------------------------------------------------------------

    def namespaces(self) -> list[str]:
        """Namespaces that hold at least one checkpoint."""
        return [ns for ns, ids in self.ordered_ids.items() if ids]

    def latest_id(self, ns: str) -> str | None:
        """The newest checkpoint id in ``ns`` (ids sort by time)."""
        ids = self.ordered_ids.get(ns)
        return ids[-1] if ids else None

    def iter_ids_desc(self, ns: str, before: str | None = None) -> Iterator[str]:
        """Checkpoint ids of ``ns``, newest first, strictly older than ``before``."""
        ids = self.ordered_ids.get(ns, [])
        end = bisect.bisect_left(ids, before) if before is not None else len(ids)
        for i in range(end - 1, -1, -1):
            yield ids[i]

    def blob(self, ns: str, channel: str, version: Any) -> BlobEntry | None:
        """Where the value of ``channel`` at ``version`` is stored, if anywhere."""
        key = (ns, channel, version_key(version))
        entry = self._blob_map.get(key)
        if entry is None and self._base is not None:
            entry = self._base_blob(key)
        return entry

    def rewritten(self, ns: str, channel: str, version: Any) -> bool:
        """Whether more than one checkpoint record stored this version (a snapshot's
        copy of a value does not count): deltas written before the last of them were
        built on another value than lookups find now."""
        key = (ns, channel, version_key(version))
        if key in self._rewritten:
            return True
        base = self._base
        if base is None:
            return False
        base.slot_map(ns, channel)
        held = base.repeats.get(key, ())
        return sum(base.kinds[base.vr[i] - base.first] == 0 for i in held) > 1

    def sorted_writes(self, ns: str, checkpoint_id: str) -> list[tuple[str, int, WriteEntry]]:
        """Pending writes of a checkpoint in ``writes_sort_key`` order.

        Returns:
            ``(task_id, idx, entry)`` triples.
        """
        slots = self._write_slots(ns, checkpoint_id)
        if not slots:
            return []
        return sorted(
            ((task, idx, e) for (task, idx), e in slots.items()),
            key=lambda item: (item[2].task_path, item[0], item[1]),
        )

    def has_write(self, ns: str, checkpoint_id: str, task_id: str, idx: int) -> bool:
        """Whether a write slot is already taken."""
        return (task_id, idx) in (self._write_slots(ns, checkpoint_id) or {})
