"""A long run of records loaded at once, as columns, looked up lazily.

Loading a sidecar (or scanning a whole log) gives the summaries of tens of thousands of
records as columns (:mod:`.sidecar`). Building an index entry for each would cost two
objects per record and passes of the cyclic garbage collector over all of them; most
are never asked for. So the index keeps the columns (:class:`BulkRecords`) and folds an
entry in the first time a lookup asks for it: checkpoint ids are mapped at load (``list``
walks them) to positions in the columns (:class:`LazyEntries`); stored values and
pending writes stay in columns until a lookup asks for one channel or one checkpoint.
The answers are exactly those of applying each summary in turn
(:meth:`~.index.ThreadIndex.apply`). Pure.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from operator import eq
from typing import Any

from .entries import BlobEntry, CheckpointEntry, RecordRef, WriteEntry, bulk_allocation
from .sidecar import Block
from .summary import CHECKPOINT, DELTA, FULL, SNAPSHOT, TOOL, WRITES, version_key


def cat(blocks: list[Block], name: str) -> list[Any]:
    """One column of consecutive blocks."""
    if len(blocks) == 1:
        column: list[Any] = blocks[0].cols[name]
        return column
    return list(itertools.chain.from_iterable(b.cols[name] for b in blocks))


class LazyEntries(dict):  # type: ignore[type-arg]
    """Checkpoint id -> :class:`CheckpointEntry`; a bulk-loaded entry is kept as its
    position in the loaded columns until it is first looked up (a long thread's
    entries are mostly never asked for, and each would be two more objects to build
    and for the garbage collector to walk)."""

    __slots__ = ("_base",)

    def __init__(self, base: BulkRecords, *args: Any) -> None:
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

    def get(self, key: str, default: Any = None) -> Any:
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
        if isinstance(other, LazyEntries):
            other._build_all()
        return dict.__eq__(self, other)

    __hash__ = None


class LinkedDelta(BlobEntry):
    """The entry of a delta looked up in bulk-loaded columns: a
    :class:`~.entries.BlobEntry` that does not hold its chain of bases.

    An index keeps the entry of each version a lookup asked for while its log is open;
    holding each delta's chain too would be two more objects per delta (a conversation's
    whole history), which the cyclic collector walks on every pass. The tuple's last
    field holds ``(columns, namespace, channel, base slot)`` instead, and ``prev`` gives
    the base's entry from the columns' chain (:meth:`BulkRecords.entry_of_slot`: made
    once, kept until the index forgets its lookups, as the log goes idle).
    """

    __slots__ = ()

    @property
    def prev(self) -> BlobEntry | None:  # the base's entry as of this delta
        link = tuple.__getitem__(self, 4)
        if link is None:
            return None
        columns, ns, channel, slot = link
        found: BlobEntry = columns.entry_of_slot(ns, channel, slot)
        return found


class BulkRecords:
    """Records bulk-loaded from columns (sidecar blocks, or a long scan).

    Checkpoint ids are mapped at load to positions in these columns (:class:`LazyEntries`);
    stored values and pending writes stay here until a lookup asks for one channel or one
    checkpoint, then the index folds them into its dicts.
    """

    def __init__(self, blocks: list[Block]) -> None:
        def column(name: str) -> list[Any]:
            return cat(blocks, name)

        self.first = blocks[0].first
        self.lens = column("n")
        if len(blocks) == 1:
            self.offs = blocks[0].offsets  # one more at the end: where the last record ends
        else:
            self.offs = array("q", itertools.chain.from_iterable(b.offsets[:-1] for b in blocks))
        self.kinds = column("t")
        self.ns = column("ns")
        self.vr, self.vc, self.vv, self.vk, self.vb = (column(k) for k in ("vr", "vc", "vv", "vk", "vb"))
        namespaces = set(self.ns) - {None}
        #: The one namespace of every record (``None``: several, or none)
        self.only_ns = namespaces.pop() if len(namespaces) == 1 else None
        self.slot_maps: dict[tuple[str, str], dict[Any, int]] = {}
        #: (ns, channel, version key) -> every slot of a version stored more than once
        self.repeats: dict[tuple[str, str, Any], list[int]] = {}
        #: slot -> the entry apply() made for it (filled as lookups ask)
        self.slot_entries: dict[int, BlobEntry] = {}
        w_sel = list(map(eq, self.kinds, itertools.repeat(WRITES)))
        seqs = range(self.first, self.first + len(self.lens))
        self.wseq = array("q", itertools.compress(seqs, w_sel))
        self.wns = list(itertools.compress(self.ns, w_sel))
        self.wcp, self.wtask, self.wpath = (column(k) for k in ("cp", "task", "path"))
        self.wi, self.wc = column("wi"), column("wc")
        self.wstart = array("q", itertools.accumulate(column("wn"), initial=0))
        self.write_groups: dict[str, dict[str, Any]] | None = None
        # per checkpoint record
        is_cp = list(map(eq, self.kinds, itertools.repeat(CHECKPOINT)))
        self.cp_seq = array("q", itertools.compress(range(self.first, self.first + len(self.lens)), is_cp))
        self.cp_ns = list(itertools.compress(self.ns, is_cp))
        self.cp_id, self.cp_p, self.cp_md, self.cp_cv = (cat(blocks, k) for k in ("id", "p", "md", "cv"))
        self.tool_keys = cat(blocks, "key")

    def plain(self) -> bool:
        """Whether these records make a plain log (:class:`~.index.IndexFacts`): each
        checkpoint id newer than every earlier one of its namespace, each writes record
        after its checkpoint's, no version stored by a checkpoint record that was
        stored before."""
        first_at: dict[tuple[str, str], int] = {}
        newest: dict[str, str] = {}
        for ns, cid, seq in zip(self.cp_ns, self.cp_id, self.cp_seq):
            last = newest.get(ns)
            if last is not None and cid <= last:
                return False
            newest[ns] = cid
            first_at[(ns, cid)] = seq
        for ns, cp, seq in zip(self.wns, self.wcp, self.wseq):
            if first_at.get((ns, cp), seq) >= seq:
                return False
        # Value slots: checkpoint-record slots hold distinct versions, and no snapshot
        # copies a version before a checkpoint record stores it.
        first = self.first
        vv = self.vv if set(map(type, self.vv)) <= {str} else list(map(version_key, self.vv))
        slot_ns = self.ns if self.only_ns is None else None
        keys = list(zip(self.vc, vv) if slot_ns is None else
                    zip((self.ns[r - first] for r in self.vr), self.vc, vv))
        in_cp = [self.kinds[r - first] == CHECKPOINT for r in self.vr]
        cp_keys = list(itertools.compress(keys, in_cp))
        at = dict(zip(cp_keys, itertools.compress(range(len(keys)), in_cp)))
        if len(at) != len(cp_keys):
            return False
        for i in itertools.compress(range(len(keys)), map(operator.not_, in_cp)):
            if at.get(keys[i], -1) > i:
                return False
        return True

    def last_checkpoint_id(self, ns: str) -> str | None:
        """The id of the last checkpoint record of ``ns`` here, in log order."""
        for i in range(len(self.cp_id) - 1, -1, -1):
            if self.cp_ns[i] == ns:
                return self.cp_id[i]  # type: ignore[no-any-return]
        return None

    def held_by_checkpoints(self, held: list[int]) -> int:
        """How many of these value slots belong to checkpoint records."""
        return sum(self.kinds[self.vr[i] - self.first] == CHECKPOINT for i in held)

    def ref(self, seq: int) -> RecordRef:
        i = seq - self.first
        return RecordRef(self.offs[i], self.lens[i], seq)

    def slot_ns(self, slot: int) -> str:
        ns: str = self.ns[self.vr[slot] - self.first]
        return ns

    def slot_map(self, ns: str, channel: str) -> dict[Any, int]:
        """Version key -> the value slot that :meth:`~.index.ThreadIndex.apply` would have kept."""
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

    # -- folding into the index ---------------------------------------------------------

    def checkpoint_maps(self) -> dict[str, LazyEntries]:
        """Namespace -> checkpoint id -> its position, as lazily built entries."""
        out: dict[str, LazyEntries] = {}
        if len(set(self.cp_ns)) == 1:
            out[self.cp_ns[0]] = LazyEntries(self, zip(self.cp_id, range(len(self.cp_id))))
            return out
        for j, (ns, cid) in enumerate(zip(self.cp_ns, self.cp_id)):
            by_id = out.get(ns)
            if by_id is None:
                by_id = out[ns] = LazyEntries(self)
            by_id[cid] = j
        return out

    def tool_refs(self) -> list[tuple[tuple[str, str, str], RecordRef]]:
        """``((ns, checkpoint id, call id), ref)`` of each tool record, in log order."""
        if TOOL not in self.kinds:
            return []
        seqs = range(self.first, self.first + len(self.lens))
        tools = itertools.compress(seqs, map(eq, self.kinds, itertools.repeat(TOOL)))
        return [(tuple(key), self.ref(seq)) for seq, key in zip(tools, self.tool_keys)]

    def since_last_snapshot(self) -> tuple[int | None, int, int]:
        """``(length of the last snapshot record or None, checkpoint records after it,
        bytes of checkpoint and writes records after it)``."""
        since, nbytes = 0, 0
        for i in range(len(self.kinds) - 1, -1, -1):
            kind = self.kinds[i]
            if kind == SNAPSHOT:
                return self.lens[i], since, nbytes
            if kind == CHECKPOINT:
                since += 1
                nbytes += self.lens[i]
            elif kind == WRITES:
                nbytes += self.lens[i]
        return None, since, nbytes

    def blob(self, ns: str, channel: str, key: Any) -> BlobEntry | None:
        """The entry of the value slot apply() would have kept for this version; a delta's
        as a :class:`LinkedDelta`, whose chain of bases is made only if walked."""
        slot = self.slot_map(ns, channel).get(key)
        if slot is None:
            return None
        if self.vk[slot] != DELTA:
            return self.entry_of_slot(ns, channel, slot)
        # Never the chain's own entry (which holds the rest of it), even if a walk made it.
        below = self.slot_before(ns, channel, version_key(self.vb[slot]), slot)
        link: Any = None if below is None else (self, ns, channel, below)
        depth = 1 + self._depth(ns, channel, below)
        return LinkedDelta(self.ref(self.vr[slot]), DELTA, self.vb[slot], depth, link)

    def _depth(self, ns: str, channel: str, slot: int | None) -> int:
        """The ``depth`` of the entry of ``slot`` (0: none, or a full value), counted down
        the slots without building entries."""
        depth = 0
        while slot is not None and self.vk[slot] == DELTA:
            done = self.slot_entries.get(slot)
            if done is not None:
                return depth + done.depth
            depth += 1
            slot = self.slot_before(ns, channel, version_key(self.vb[slot]), slot)
        return depth

    def entry_of_slot(self, ns: str, channel: str, slot: int) -> BlobEntry:
        """The entry apply() made for one value slot, with its whole chain: a delta's
        ``prev`` is its base as of that slot (walked iteratively: chains run thousands
        long). Kept in ``slot_entries`` until :meth:`~.index.ThreadIndex.forget_lookups`
        (plain entries, which refer to nothing here: no cycle through these columns)."""
        chain: list[int] = []
        below: BlobEntry | None = None
        current: int | None = slot
        while current is not None:
            done = self.slot_entries.get(current)
            if done is not None:
                below = done
                break
            if self.vk[current] != DELTA:
                below = self.slot_entries[current] = BlobEntry(self.ref(self.vr[current]), self.vk[current])
                break
            chain.append(current)
            current = self.slot_before(ns, channel, version_key(self.vb[current]), current)
        for i in reversed(chain):
            depth = below.depth + 1 if below is not None else 1
            below = self.slot_entries[i] = BlobEntry(
                self.ref(self.vr[i]), DELTA, self.vb[i], depth, below
            )
        assert below is not None
        return below

    def rewritten(self, ns: str, channel: str, key: Any) -> bool:
        """Whether more than one checkpoint record stored this version."""
        self.slot_map(ns, channel)
        held = self.repeats.get((ns, channel, key), ())
        return self.held_by_checkpoints(list(held)) > 1

    def write_slots(self, ns: str, checkpoint_id: str) -> dict[tuple[str, int], WriteEntry] | None:
        """Take a checkpoint's pending writes out of the columns, as apply() would have
        slotted them (``None`` if it has none here)."""
        if not self.wseq:
            return None
        found = self.groups().get(ns, {}).pop(checkpoint_id, None)
        if type(found) is int:
            found = [found]
        if not found:
            return None
        slots: dict[tuple[str, int], WriteEntry] = {}
        for j in found:
            ref, path, task = self.ref(self.wseq[j]), self.wpath[j], self.wtask[j]
            a, b = self.wstart[j], self.wstart[j + 1]
            for position, (idx, channel) in enumerate(zip(self.wi[a:b], self.wc[a:b])):
                slot = (task, idx)
                if idx >= 0 and slot in slots:
                    continue
                slots[slot] = WriteEntry(ref, position, channel, path)
        return slots
