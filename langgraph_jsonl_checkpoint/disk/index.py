"""The in-memory index of one thread's log: where every checkpoint, value and write is.

The index says where things are: each checkpoint's record (and its parent and metadata,
for ``list`` filters), each stored channel value by ``(namespace, channel, version)``,
and each pending write by checkpoint and write slot. It is *derived data*: applying the
summaries (:mod:`.summary`) of a log's records in order rebuilds it exactly, and the
sidecar file is only a cache of those summaries.

Rules that replaying the log must answer as the live saver did live here:

- a regular write slot ``(task_id, idx >= 0)`` keeps its first write (a retried
  ``put_writes`` never duplicates it); a special slot (``__error__``,
  ``__interrupt__``, ... with negative idx) keeps its latest write;
- a version stored again replaces what lookups by version find; a delta's base is the
  entry its base version had when the delta was indexed (``BlobEntry.prev``), so chains
  only ever run backwards through the log;
- a delta never replaces a full value of the same version (a snapshot's copy of it).

Pure: summaries in, lookups out; no files.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .columns import BulkRecords
from .entries import BlobEntry, CheckpointEntry, RecordRef, WriteEntry, bulk_allocation
from .lazy_blocks import LazyBlocks
from .sidecar import Block
from .summary import DELTA, FULL, value_kind, version_key


def _text(value: Any) -> str:
    return orjson.dumps(value).decode()


@dataclass
class SnapshotCounters:
    """What the snapshot policy weighs: records and bytes since the last snapshot."""

    records: int = 0
    bytes: int = 0
    last_snapshot_bytes: int = 0


@dataclass
class ThreadIndex:
    """Lookups over one thread's log, built by applying record summaries in log order
    (:meth:`apply`), or a long run of them at once from columns (:meth:`load_blocks`)."""

    _checkpoints: dict[str, dict[str, CheckpointEntry]] = field(default_factory=dict)
    _ordered_ids: dict[str, list[str]] = field(default_factory=dict)
    _tool_events: dict[tuple[str, str, str], list[RecordRef]] = field(default_factory=dict)
    last_seq: int = -1
    committed_end: int = 0
    _since_snapshot: SnapshotCounters = field(default_factory=SnapshotCounters)
    #: The log is *plain* (see :class:`IndexFacts`) as far as indexed.
    plain: bool = True
    #: Checkpoint-record values stored for a version that already had one (a caller
    #: passing an old version in ``new_versions``): caches keyed by version go stale.
    rewritten_versions: int = 0
    _rewritten: set[tuple[str, str, Any]] = field(default_factory=set)
    _blob_map: dict[tuple[str, str, Any], BlobEntry] = field(default_factory=dict)
    _write_map: dict[tuple[str, str], dict[tuple[str, int], WriteEntry]] = field(default_factory=dict)
    _bulk: BulkRecords | None = None
    #: Lazily loaded (:meth:`load_tail`): older blocks not decoded yet, and the facts.
    _tail: LazyBlocks | None = None
    _heads: dict[str, str] = field(default_factory=dict)

    @property
    def checkpoints(self) -> dict[str, dict[str, CheckpointEntry]]:
        """Namespace -> checkpoint id -> its entry."""
        if self._tail is not None:
            self._materialize()
        return self._checkpoints

    @property
    def ordered_ids(self) -> dict[str, list[str]]:
        """Namespace -> its checkpoint ids, sorted (oldest first)."""
        if self._tail is not None:
            self._materialize()
        return self._ordered_ids

    @property
    def tool_events(self) -> dict[tuple[str, str, str], list[RecordRef]]:
        """(namespace, checkpoint id, call id) -> the tool records of that call."""
        if self._tail is not None:
            self._materialize()
        return self._tool_events

    @property
    def since_snapshot(self) -> SnapshotCounters:
        """What the snapshot policy weighs (records and bytes since the last snapshot)."""
        if self._tail is not None:
            self._materialize()
        return self._since_snapshot

    @property
    def lazy(self) -> bool:
        """Whether older blocks are still undecoded (:meth:`load_tail`)."""
        return self._tail is not None

    def facts(self) -> dict[str, Any]:
        """The index's :class:`IndexFacts`, as the sidecar's last block stores them."""
        if self._tail is not None:
            return {"plain": self.plain, "heads": dict(self._heads)}
        return {"plain": self.plain, "heads": {ns: ids[-1] for ns, ids in self._ordered_ids.items() if ids}}

    @property
    def blobs(self) -> dict[tuple[str, str, Any], BlobEntry]:
        """Every stored value: (namespace, channel, version key) -> where it is."""
        if self._tail is not None:
            self._materialize()
        bulk = self._bulk
        if bulk is not None:
            for i, (ch, ver) in enumerate(zip(bulk.vc, bulk.vv)):
                self.blob(bulk.slot_ns(i), ch, ver)
        return self._blob_map

    @property
    def writes(self) -> dict[tuple[str, str], dict[tuple[str, int], WriteEntry]]:
        """Every pending write: (namespace, checkpoint id) -> write slot -> entry."""
        if self._tail is not None:
            self._materialize()
        if self._bulk is not None:
            for ns, by_cp in list(self._bulk.groups().items()):
                for cp in list(by_cp):
                    self._write_slots(ns, cp)
        return self._write_map

    # -- building --------------------------------------------------------------------

    def forget_lookups(self) -> None:
        """Drop the entries materialized from bulk columns by lookups (made again on
        the next lookup): what an idle log need not keep."""
        if self._bulk is not None:
            self._bulk.slot_entries.clear()

    def load_blocks(self, blocks: list[Block]) -> None:
        """Add the records of consecutive blocks, which follow the header directly.

        Same result as :meth:`apply` on each summary in turn (except the ``depth`` of
        deltas, computed from the final index: it only steers when a full value is
        written), with stored values and pending writes folded in on first lookup.
        """
        if not blocks:
            return
        if self._checkpoints or self._write_map or self._blob_map or self._bulk is not None:
            raise ValueError("blocks load into an index holding only the header")
        bulk = self._bulk = BulkRecords(blocks)
        self._checkpoints.update(bulk.checkpoint_maps())
        for ns, by_id in self._checkpoints.items():
            self._ordered_ids[ns] = sorted(by_id)
        for key, ref in bulk.tool_refs():
            self._tool_events.setdefault(key, []).append(ref)
        snapshot_bytes, records, nbytes = bulk.since_last_snapshot()
        counters = self._since_snapshot
        if snapshot_bytes is not None:
            counters.records, counters.bytes, counters.last_snapshot_bytes = records, nbytes, snapshot_bytes
        else:
            counters.records += records
            counters.bytes += nbytes
        self.last_seq = bulk.first + len(bulk.lens) - 1
        self.committed_end = blocks[-1].end
        facts = blocks[-1].facts
        self.plain = self.plain and (facts["plain"] if facts is not None else bulk.plain())

    def load_tail(self, tail: LazyBlocks) -> None:
        """Serve lookups from the last blocks of a sidecar whose last block holds the
        index's facts, decoding older blocks only when the ones decoded cannot answer
        (:mod:`.lazy_blocks`); anything but the lookups of one checkpoint decodes them all.

        The index must hold only the header, and the facts must say the log is plain.
        """
        facts = tail.decoded[-1].facts
        assert facts is not None and facts["plain"] and self.last_seq == 0 and not self._checkpoints
        self._tail = tail
        self._heads = dict(facts["heads"])
        self._bulk = BulkRecords([tail.suffix()])
        self._checkpoints.update(self._bulk.checkpoint_maps())
        self.last_seq = tail.decoded[-1].first + tail.decoded[-1].count - 1
        self.committed_end = tail.decoded[-1].end

    def _materialize(self) -> None:
        """Decode every block and index them all (the end of lazy loading)."""
        tail = self._tail
        assert tail is not None
        blocks = tail.everything()
        with bulk_allocation():
            self._tail = None
            self._heads = {}
            self._checkpoints, self._blob_map, self._write_map, self._bulk = {}, {}, {}, None
            self.load_blocks(blocks)

    def _older(self) -> bool:
        """Lazily loaded: decode one more older block (``False``: none is left, and the
        index is now loaded whole)."""
        tail = self._tail
        assert tail is not None
        tail.older()
        if tail.complete:
            self._materialize()
            return False
        self._bulk = BulkRecords([tail.suffix()])
        self._checkpoints = dict(self._bulk.checkpoint_maps())
        return True

    def apply(self, s: dict[str, Any]) -> None:
        """Add one record summary (from :func:`~.summary.summarize`) to the index."""
        if self._tail is not None:
            self._materialize()
        ref = RecordRef(s["o"], s["n"], s["seq"])
        t = s["t"]
        counters = self._since_snapshot
        if t == "checkpoint":
            self._apply_checkpoint(s, ref)
            counters.records += 1
            counters.bytes += ref.length
        elif t == "writes":
            self._apply_writes(s, ref)
            counters.bytes += ref.length
        elif t == "snapshot":
            ns = s["ns"]
            for ch, entry in s["values"].items():
                self._blob_map[(ns, ch, version_key(entry["ver"]))] = BlobEntry(ref, FULL)
            counters.records = counters.bytes = 0
            counters.last_snapshot_bytes = ref.length
        elif t == "tool":
            self._tool_events.setdefault((s["ns"], s["cp"], s["call"]), []).append(ref)
        self.last_seq = ref.seq
        self.committed_end = ref.offset + ref.length

    def _apply_checkpoint(self, s: dict[str, Any], ref: RecordRef) -> None:
        ns, cid = s["ns"], s["id"]
        by_id = self._checkpoints.setdefault(ns, {})
        if cid not in by_id:
            ids = self._ordered_ids.setdefault(ns, [])
            if not ids or ids[-1] < cid:
                ids.append(cid)
            else:
                bisect.insort(ids, cid)
                self.plain = False
        else:
            self.plain = False
        # As JSON text (decoded when asked for, as for entries from the sidecar): a
        # string is nothing for the cyclic collector to walk, two dicts per entry were.
        by_id[cid] = CheckpointEntry(ref, s["parent"], _text(s["md"]), _text(s["cv"]))
        for ch, entry in s["values"].items():
            ver = entry["ver"]
            key = (ns, ch, version_key(ver))
            existing = self.blob(ns, ch, ver)
            if existing is not None:
                self.plain = False
                self.rewritten_versions += 1
                self._rewritten.add(key)
            kind = value_kind(entry)
            if kind == DELTA:
                if existing is not None and existing.kind == FULL:
                    continue  # the same value, already held in full (a copy's snapshot)
                base = entry["base"]
                prev = self.blob(ns, ch, base)
                depth = prev.depth + 1 if prev is not None else 1
                self._blob_map[key] = BlobEntry(ref, DELTA, base, depth, prev)
            else:
                self._blob_map[key] = BlobEntry(ref, kind)

    def _apply_writes(self, s: dict[str, Any], ref: RecordRef) -> None:
        if s["cp"] not in self._checkpoints.get(s["ns"], ()):
            self.plain = False
        slots = self._write_slots(s["ns"], s["cp"], create=True)
        assert slots is not None
        task, path = s["task"], s["path"]
        for position, (idx, channel) in enumerate(s["w"]):
            slot = (task, idx)
            if idx >= 0 and slot in slots:
                continue
            slots[slot] = WriteEntry(ref, position, channel, path)

    def _write_slots(
        self, ns: str, checkpoint_id: str, *, create: bool = False
    ) -> dict[tuple[str, int], WriteEntry] | None:
        key = (ns, checkpoint_id)
        slots = self._write_map.get(key)
        if slots is None and self._tail is not None:
            # A plain log writes a checkpoint's writes after it: the blocks from its
            # record on hold them all.
            entry = self.entry(ns, checkpoint_id)
            while self._tail is not None and (entry is None or entry.ref.seq < self._tail.start_seq):
                if not self._older():
                    break
        if slots is None and self._bulk is not None:
            slots = self._bulk.write_slots(ns, checkpoint_id)
            if slots is not None:
                self._write_map[key] = slots
        if slots is None and create:
            slots = self._write_map[key] = {}
        return slots

    # -- lookups ---------------------------------------------------------------

    def namespaces(self) -> list[str]:
        """Namespaces that hold at least one checkpoint."""
        return [ns for ns, ids in self.ordered_ids.items() if ids]

    def latest_id(self, ns: str) -> str | None:
        """The newest checkpoint id in ``ns`` (ids sort by time)."""
        if self._tail is not None:
            head = self._heads.get(ns)
            # The facts are checked against the blocks: the last checkpoint record of
            # ``ns`` they hold must be the newest the facts name.
            while self._tail is not None:
                assert self._bulk is not None
                last = self._bulk.last_checkpoint_id(ns)
                if last is not None:
                    if last == head:
                        return head
                    self._materialize()
                    break
                if head is None:
                    self._materialize()
                    break
                self._older()
        ids = self._ordered_ids.get(ns)
        return ids[-1] if ids else None

    def entry(self, ns: str, checkpoint_id: str) -> CheckpointEntry | None:
        """The entry of one checkpoint, if it is indexed."""
        while True:
            entry = self._checkpoints.get(ns, {}).get(checkpoint_id)
            if entry is not None or self._tail is None:
                return entry
            self._older()

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
        if entry is None and self._tail is not None:
            return self._lazy_blob(ns, channel, key)
        if entry is None and self._bulk is not None:
            entry = self._bulk.blob(ns, channel, key[2])
            if entry is not None:
                self._blob_map[key] = entry
        return entry

    def _lazy_blob(self, ns: str, channel: str, key: tuple[str, str, Any]) -> BlobEntry | None:
        """:meth:`blob` from the decoded blocks: in a plain log the last value slot of a
        version is the one :meth:`apply` keeps, so one found there (with its whole delta
        chain) is the answer; otherwise older blocks are decoded."""
        while True:
            assert self._bulk is not None
            entry = self._bulk.blob(ns, channel, key[2])
            below = entry
            while below is not None and below.kind == DELTA:
                below = below.prev
            if entry is not None and below is not None:
                self._blob_map[key] = entry
                return entry
            if not self._older():
                return self.blob(ns, channel, key[2])

    def rewritten(self, ns: str, channel: str, version: Any) -> bool:
        """Whether more than one checkpoint record stored this version (a snapshot's
        copy of a value does not count): deltas written before the last of them were
        built on another value than lookups find now."""
        if self._tail is not None:
            return False  # a plain log stores no version twice
        key = (ns, channel, version_key(version))
        if key in self._rewritten:
            return True
        return self._bulk is not None and self._bulk.rewritten(ns, channel, key[2])

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
