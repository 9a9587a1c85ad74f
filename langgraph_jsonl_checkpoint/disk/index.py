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

from .columns import BulkRecords
from .entries import BlobEntry, CheckpointEntry, RecordRef, WriteEntry
from .sidecar import Block
from .summary import DELTA, FULL, value_kind, version_key


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

    checkpoints: dict[str, dict[str, CheckpointEntry]] = field(default_factory=dict)
    ordered_ids: dict[str, list[str]] = field(default_factory=dict)
    tool_events: dict[tuple[str, str, str], list[RecordRef]] = field(default_factory=dict)
    last_seq: int = -1
    committed_end: int = 0
    since_snapshot: SnapshotCounters = field(default_factory=SnapshotCounters)
    #: Checkpoint-record values stored for a version that already had one (a caller
    #: passing an old version in ``new_versions``): caches keyed by version go stale.
    rewritten_versions: int = 0
    _rewritten: set[tuple[str, str, Any]] = field(default_factory=set)
    _blob_map: dict[tuple[str, str, Any], BlobEntry] = field(default_factory=dict)
    _write_map: dict[tuple[str, str], dict[tuple[str, int], WriteEntry]] = field(default_factory=dict)
    _bulk: BulkRecords | None = None

    @property
    def blobs(self) -> dict[tuple[str, str, Any], BlobEntry]:
        """Every stored value: (namespace, channel, version key) -> where it is."""
        bulk = self._bulk
        if bulk is not None:
            for i, (ch, ver) in enumerate(zip(bulk.vc, bulk.vv)):
                self.blob(bulk.slot_ns(i), ch, ver)
        return self._blob_map

    @property
    def writes(self) -> dict[tuple[str, str], dict[tuple[str, int], WriteEntry]]:
        """Every pending write: (namespace, checkpoint id) -> write slot -> entry."""
        if self._bulk is not None:
            for ns, by_cp in list(self._bulk.groups().items()):
                for cp in list(by_cp):
                    self._write_slots(ns, cp)
        return self._write_map

    # -- building --------------------------------------------------------------------

    def load_blocks(self, blocks: list[Block]) -> None:
        """Add the records of consecutive blocks, which follow the header directly.

        Same result as :meth:`apply` on each summary in turn (except the ``depth`` of
        deltas, computed from the final index: it only steers when a full value is
        written), with stored values and pending writes folded in on first lookup.
        """
        if not blocks:
            return
        if self.checkpoints or self._write_map or self._blob_map or self._bulk is not None:
            raise ValueError("blocks load into an index holding only the header")
        bulk = self._bulk = BulkRecords(blocks)
        self.checkpoints.update(bulk.checkpoint_maps())
        for ns, by_id in self.checkpoints.items():
            self.ordered_ids[ns] = sorted(by_id)
        for key, ref in bulk.tool_refs():
            self.tool_events.setdefault(key, []).append(ref)
        snapshot_bytes, records, nbytes = bulk.since_last_snapshot()
        counters = self.since_snapshot
        if snapshot_bytes is not None:
            counters.records, counters.bytes, counters.last_snapshot_bytes = records, nbytes, snapshot_bytes
        else:
            counters.records += records
            counters.bytes += nbytes
        self.last_seq = bulk.first + len(bulk.lens) - 1
        self.committed_end = blocks[-1].end

    def apply(self, s: dict[str, Any]) -> None:
        """Add one record summary (from :func:`~.summary.summarize`) to the index."""
        ref = RecordRef(s["o"], s["n"], s["seq"])
        t = s["t"]
        counters = self.since_snapshot
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
            self.tool_events.setdefault((s["ns"], s["cp"], s["call"]), []).append(ref)
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
        by_id[cid] = CheckpointEntry(ref, s["parent"], s["md"], s["cv"])
        for ch, entry in s["values"].items():
            ver = entry["ver"]
            key = (ns, ch, version_key(ver))
            existing = self.blob(ns, ch, ver)
            if existing is not None:
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
        if entry is None and self._bulk is not None:
            entry = self._bulk.blob(ns, channel, key[2])
            if entry is not None:
                self._blob_map[key] = entry
        return entry

    def rewritten(self, ns: str, channel: str, version: Any) -> bool:
        """Whether more than one checkpoint record stored this version (a snapshot's
        copy of a value does not count): deltas written before the last of them were
        built on another value than lookups find now."""
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
