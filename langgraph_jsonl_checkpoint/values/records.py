"""Building the records of a ``put``: which values go in full, which as deltas, snapshots.

Pure decisions over the thread's index and a small per-thread cache holding, per
channel, the last stored or revived version of a list and its proof: a
:class:`~.witness.ListWitness` (the objects themselves) or a
:class:`~.fingerprint.ListFingerprint` (their encoding). The only reads are of stored values
(to fingerprint a parent's list when no proof is cached, and to fill a snapshot), done
through :class:`~.reader.ValueReader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..disk.index import ThreadIndex
from ..disk.log import ThreadLog
from ..disk.summary import DELTA, EMPTY, version_key
from ..errors import JsonlCheckpointError
from .cache import Proof, ValueCache
from .codec import ValueCodec
from .fingerprint import ListFingerprint, same_encoding, state_hash
from .reader import ValueReader
from .witness import ListWitness


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
            index.since_snapshot.records + 1 >= self.every
            and index.since_snapshot.bytes >= self.ratio * index.since_snapshot.last_snapshot_bytes
        )


def value_entry(
    codec: ValueCodec,
    version: Any,
    value: Any,
    fp: ListFingerprint | None,
    base: tuple[Any, ListFingerprint] | None,
    what: str = "a value",
) -> dict[str, Any]:
    """A ``values`` entry: a delta on ``base`` when ``value`` extends it, else full.

    Args:
        codec: Encodes the value (or the delta's tail).
        version: The version being stored.
        value: Its value.
        fp: The value's fingerprint (``None`` if it is not a list).
        base: ``(version, fingerprint)`` of a stored list it may extend.
        what: What the value is, for an error message.
    """
    if fp is not None and base is not None and fp.extends(base[1]):
        return delta_entry(codec, version, value, base[0], base[1].count, what)
    return {"ver": version, "val": codec.encode(value, what)}


def delta_entry(
    codec: ValueCodec, version: Any, value: list[Any], base: Any, keep: int, what: str = "a value"
) -> dict[str, Any]:
    """The entry storing ``value`` as the value of version ``base`` (``keep`` items)
    followed by the rest of ``value``."""
    return {"ver": version, "base": base, "keep": keep, "tail": codec.encode(value[keep:], what)}


class RecordBuilder:
    """Builds the value entries and snapshot record of one ``put`` (under the lock).

    Args:
        log: The thread's log (its :class:`~.cache.ValueCache` holds each channel's proof).
        idx: The thread's index, current.
        codec: The value codec.
        policy: Snapshot pacing and the longest delta chain.
    """

    def __init__(self, log: ThreadLog, idx: ThreadIndex, codec: ValueCodec, policy: SnapshotPolicy) -> None:
        self.log = log
        self.cache = ValueCache.of(log)
        self.idx = idx
        self.codec = codec
        self.policy = policy

    def values(
        self, ns: str, parent: str | None, values: Mapping[str, Any], new_versions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Proof]]:
        """Entries for the channels in ``new_versions``, and the proofs of the new lists
        (for the log's cache, once the record is durable)."""
        entries: dict[str, Any] = {}
        proofs: dict[str, Proof] = {}
        for channel, version in new_versions.items():
            stored = self.idx.blob(ns, channel, version)
            if stored is not None:
                self._store_again(ns, channel, version, stored, values, entries, proofs)
                continue
            if channel not in values:
                entries[channel] = {"ver": version, "empty": 1}
                continue
            value = values[channel]
            if type(value) is not list:
                entries[channel] = {"ver": version, "val": self.codec.encode(value, self._what(channel))}
                continue
            entry, proof = self._witnessed_delta(ns, channel, version, value)
            if entry is None:
                # The slow way: compare encodings with the cached or the parent's list.
                fp = ListFingerprint.of(value)
                base = self._extendable_base(ns, channel, parent) if fp is not None else None
                entry = value_entry(self.codec, version, value, fp, base, self._what(channel))
                proof = ListWitness.of(value) or fp
            entries[channel] = entry
            if proof is not None:
                proofs[channel] = proof
        return entries, proofs

    def _what(self, channel: str) -> str:
        return f"thread {self.log.thread_id!r}, channel {channel!r}"

    def _store_again(
        self,
        ns: str,
        channel: str,
        version: Any,
        stored: Any,
        values: Mapping[str, Any],
        entries: dict[str, Any],
        proofs: dict[str, Proof],
    ) -> None:
        """A version that is already stored, named again in ``new_versions`` (a script
        passing every channel's version; LangGraph never does). The same value is not
        stored twice; another value replaces it in full, as ``InMemorySaver``'s blob
        for that version is replaced. Never a delta: a record must not depend on the
        very version it replaces."""
        if channel not in values:
            if stored.kind != EMPTY:
                entries[channel] = {"ver": version, "empty": 1}
            return
        value = values[channel]
        proof = ListWitness.of(value) or ListFingerprint.of(value)
        if stored.kind == EMPTY or not self._same_as_stored(ns, channel, version, value):
            entries[channel] = {"ver": version, "val": self.codec.encode(value, self._what(channel))}
        if proof is not None:
            proofs[channel] = proof

    def _same_as_stored(self, ns: str, channel: str, version: Any, value: Any) -> bool:
        """Whether ``value`` is the stored value of ``version`` (encodings compared)."""
        cached = self.cache.proof(ns, channel)
        if cached is not None and version_key(cached[0]) == version_key(version):
            proof = cached[1]
            if type(proof) is ListWitness:
                if type(value) is list and proof.prefix_of(value) == len(value):
                    return True
            elif ListFingerprint.of(value) == proof:
                return True
        try:
            current = ValueReader(self.log, self.codec).value(self.idx, ns, channel, version)
        except (JsonlCheckpointError, ValueError):
            return False  # unreadable: store the new value in full
        return same_encoding(current, value)

    def _witnessed_delta(
        self, ns: str, channel: str, version: Any, value: list[Any]
    ) -> tuple[dict[str, Any] | None, Proof | None]:
        """A delta on the cached version, if ``value`` starts with its very objects,
        unchanged (see :mod:`.witness`); ``(None, None)`` if that cannot be shown."""
        cached = self.cache.proof(ns, channel)
        if cached is None:
            return None, None
        base_version, witness = cached
        if not isinstance(witness, ListWitness):
            return None, None
        keep = witness.prefix_of(value)
        if keep is None or not self._usable_base(ns, channel, base_version):
            return None, None
        entry = delta_entry(self.codec, version, value, base_version, keep, self._what(channel))
        return entry, witness.extended(value) or ListFingerprint.of(value)

    def _usable_base(self, ns: str, channel: str, version: Any) -> bool:
        blob = self.idx.blob(ns, channel, version)
        return blob is not None and blob.kind != EMPTY and blob.depth < self.policy.max_depth

    def _extendable_base(
        self, ns: str, channel: str, parent: str | None
    ) -> tuple[Any, ListFingerprint] | None:
        cached = self.cache.proof(ns, channel)
        if cached is None or type(cached[1]) is not ListFingerprint:
            cached = self._parent_fingerprint(ns, channel, parent)
        if cached is None or not self._usable_base(ns, channel, cached[0]):
            return None
        return cached[0], cast(ListFingerprint, cached[1])

    def _parent_fingerprint(
        self, ns: str, channel: str, parent: str | None
    ) -> tuple[Any, ListFingerprint] | None:
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
            if entry is not None and version_key(entry["ver"]) == version_key(version):
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
