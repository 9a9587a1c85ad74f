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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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
    """A checkpoint's place in the log and the facts ``list`` needs without reading it."""

    ref: RecordRef
    parent: str | None
    metadata: Any
    versions: dict[str, Any]


class BlobEntry(NamedTuple):
    """Where the value of one channel version is stored.

    Attributes:
        ref: The record holding it (a checkpoint or snapshot record).
        kind: ``FULL``, ``DELTA`` or ``EMPTY``.
        base: For a delta, the version it extends.
        depth: Records to read to rebuild it (0 for a full value).
    """

    ref: RecordRef
    kind: int
    base: Any = None
    depth: int = 0


class WriteEntry(NamedTuple):
    """One pending write: its record, position in that record, channel and task path."""

    ref: RecordRef
    position: int
    channel: str
    task_path: str


@dataclass(frozen=True)
class SnapshotPolicy:
    """When a ``put`` also writes a snapshot record, and how long a delta chain may get.

    A snapshot is due once at least ``every`` checkpoint records *and* delta bytes worth
    ``ratio`` times the previous snapshot's size were written since it. Counting bytes
    keeps the log linear in the conversation: a snapshot's cost (the whole state) is
    paid once per ``ratio`` × state of new data, so snapshots add about ``1/ratio``
    times the delta bytes (plus the final state), and a read replays at most
    ``ratio`` × the state beyond the snapshot.
    (A count alone would copy the whole state every ``every`` steps: quadratic.)

    Attributes:
        every: Minimum checkpoint records between snapshots.
        ratio: Minimum delta bytes since the last snapshot, as a fraction of its size.
        max_depth: Longest delta chain; past it a full value is stored inline.
    """

    every: int = 64
    ratio: float = 2.0
    max_depth: int = 4096

    def due(self, index: ThreadIndex) -> bool:
        """Whether the next checkpoint record should be followed by a snapshot."""
        return (
            index.records_since_snapshot + 1 >= self.every
            and index.bytes_since_snapshot >= self.ratio * index.last_snapshot_bytes
        )


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


@dataclass
class ThreadIndex:
    """Lookups over one thread's log, built by applying record summaries in log order."""

    checkpoints: dict[str, dict[str, CheckpointEntry]] = field(default_factory=dict)
    ordered_ids: dict[str, list[str]] = field(default_factory=dict)
    blobs: dict[tuple[str, str, Any], BlobEntry] = field(default_factory=dict)
    writes: dict[tuple[str, str], dict[tuple[str, int], WriteEntry]] = field(
        default_factory=dict
    )
    tool_events: dict[tuple[str, str, str], list[RecordRef]] = field(default_factory=dict)
    last_seq: int = -1
    committed_end: int = 0
    records_since_snapshot: int = 0
    bytes_since_snapshot: int = 0
    last_snapshot_bytes: int = 0

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
                self.blobs[(ns, ch, version_key(ver))] = BlobEntry(ref, FULL)
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
            if kind == DELTA:
                base_entry = self.blobs.get((ns, ch, version_key(base)))
                depth = base_entry.depth + 1 if base_entry is not None else 1
                existing = self.blobs.get(key)
                if existing is not None and existing.kind == FULL:
                    continue  # a snapshot already holds this version in full
                self.blobs[key] = BlobEntry(ref, DELTA, base, depth)
            else:
                self.blobs[key] = BlobEntry(ref, kind)

    def _apply_writes(self, s: dict[str, Any], ref: RecordRef) -> None:
        slots = self.writes.setdefault((s["ns"], s["cp"]), {})
        task, path = s["task"], s["path"]
        for position, (idx, channel) in enumerate(s["w"]):
            slot = (task, idx)
            if idx >= 0 and slot in slots:
                continue
            slots[slot] = WriteEntry(ref, position, channel, path)

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
        return self.blobs.get((ns, channel, version_key(version)))

    def sorted_writes(self, ns: str, checkpoint_id: str) -> list[tuple[str, int, WriteEntry]]:
        """Pending writes of a checkpoint in ``writes_sort_key`` order.

        Returns:
            ``(task_id, idx, entry)`` triples.
        """
        slots = self.writes.get((ns, checkpoint_id))
        if not slots:
            return []
        return sorted(
            ((task, idx, e) for (task, idx), e in slots.items()),
            key=lambda item: (item[2].task_path, item[0], item[1]),
        )

    def has_write(self, ns: str, checkpoint_id: str, task_id: str, idx: int) -> bool:
        """Whether a write slot is already taken."""
        return (task_id, idx) in self.writes.get((ns, checkpoint_id), {})
