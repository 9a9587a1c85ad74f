"""Building the records of a ``put``: which values go in full, which as deltas, snapshots.

Pure decisions over the thread's index and a small per-thread cache of list
fingerprints; the only reads are of stored values (to fingerprint a parent's list after a
restart, and to fill a snapshot), done through :class:`~.reader.ValueReader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .codec import ListFingerprint, ValueCodec, state_hash
from .errors import JsonlCheckpointError
from .index import DELTA, EMPTY, SnapshotPolicy, ThreadIndex
from .log import ThreadLog
from .reader import ValueReader


def value_entry(
    codec: ValueCodec,
    version: Any,
    value: Any,
    fp: ListFingerprint | None,
    base: tuple[Any, ListFingerprint] | None,
) -> dict[str, Any]:
    """A ``values`` entry: a delta on ``base`` when ``value`` extends it, else full.

    Args:
        codec: Encodes the value (or the delta's tail).
        version: The version being stored.
        value: Its value.
        fp: The value's fingerprint (``None`` if it is not a list).
        base: ``(version, fingerprint)`` of a stored list it may extend.
    """
    if fp is not None and base is not None and fp.extends(base[1]):
        keep = base[1].count
        return {"ver": version, "base": base[0], "keep": keep, "tail": codec.encode(value[keep:])}
    return {"ver": version, "val": codec.encode(value)}


class RecordBuilder:
    """Builds the value entries and snapshot record of one ``put`` (under the lock).

    Args:
        log: The thread's log (its ``cache`` holds the last fingerprint per channel).
        idx: The thread's index, current.
        codec: The value codec.
        policy: Snapshot pacing and the longest delta chain.
    """

    def __init__(self, log: ThreadLog, idx: ThreadIndex, codec: ValueCodec, policy: SnapshotPolicy) -> None:
        self.log = log
        self.idx = idx
        self.codec = codec
        self.policy = policy

    def values(
        self, ns: str, parent: str | None, values: Mapping[str, Any], new_versions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, ListFingerprint]]:
        """Entries for the channels in ``new_versions``, and the new list fingerprints."""
        entries: dict[str, Any] = {}
        fingerprints: dict[str, ListFingerprint] = {}
        for channel, version in new_versions.items():
            if channel not in values:
                entries[channel] = {"ver": version, "empty": 1}
                continue
            value = values[channel]
            fp = ListFingerprint.of(value)
            base = self._extendable_base(ns, channel, parent) if fp is not None else None
            entries[channel] = value_entry(self.codec, version, value, fp, base)
            if fp is not None:
                fingerprints[channel] = fp
        return entries, fingerprints

    def _extendable_base(self, ns: str, channel: str, parent: str | None) -> tuple[Any, ListFingerprint] | None:
        base = self.log.cache.get((ns, channel)) or self._parent_fingerprint(ns, channel, parent)
        if base is None:
            return None
        blob = self.idx.blob(ns, channel, base[0])
        if blob is None or blob.kind == EMPTY or blob.depth >= self.policy.max_depth:
            return None
        return base

    def _parent_fingerprint(self, ns: str, channel: str, parent: str | None) -> tuple[Any, ListFingerprint] | None:
        """After a restart, fingerprint the parent's value so deltas continue."""
        entry = self.idx.checkpoints.get(ns, {}).get(parent) if parent else None
        version = entry.versions.get(channel) if entry else None
        if version is None:
            return None
        blob = self.idx.blob(ns, channel, version)
        if blob is None or blob.kind == EMPTY:
            return None
        try:
            value = ValueReader(self.log, self.codec).value(self.idx, ns, channel, version)
        except (JsonlCheckpointError, ValueError):
            return None
        fp = ListFingerprint.of(value)
        return (version, fp) if fp is not None else None

    def snapshot(self, ns: str, record: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Full values for every channel of this checkpoint that is stored as a delta.

        Values of channels this put did not write come from the store, not from the
        graph, so a state mutated in place is snapshotted as it was stored.
        """
        reader = ValueReader(self.log, self.codec)
        full: dict[str, tuple[Any, Any]] = {}
        for channel, version in record["cv"].items():
            entry = record["values"].get(channel)
            if entry is not None:
                if "base" in entry:
                    full[channel] = (version, values[channel])
                continue
            blob = self.idx.blob(ns, channel, version)
            if blob is not None and blob.kind == DELTA:
                full[channel] = (version, reader.value(self.idx, ns, channel, version))
        if not full:
            return None
        return {
            "t": "snapshot",
            "ns": ns,
            "cp": record["id"],
            "values": {ch: {"ver": ver, "val": self.codec.encode(val)} for ch, (ver, val) in full.items()},
            "h": state_hash(full),
        }
