"""Rebuilding stored values: a full value plus the deltas that extend it.

A channel version's value is stored in full (a checkpoint or snapshot record) or as a
delta ``{"base": b, "keep": n, "tail": cell}`` on another version. :class:`ValueReader`
follows deltas back to a full value and rebuilds forward, reading each record once per
call; with ``shared=True`` it may be reused across results, and then copies plain JSON
out of its cache so results never share objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..disk.index import ThreadIndex
from ..disk.summary import DELTA, EMPTY
from ..disk.view import LogView
from ..errors import CorruptLogError, DecodeError
from .cache import ValueCache
from .cells import extend_items, list_items
from .codec import ValueCodec


class ValueReader:
    """Reads one thread's records for one call (or one listing), each at most once."""

    def __init__(
        self,
        log: LogView,
        codec: ValueCodec,
        *,
        shared: bool = False,
        kept: bool = True,
        records: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        self.log = log
        self.codec = codec
        #: Reused across several results (list): decoded values must not share objects.
        self.shared = shared
        #: Use (and fill) the log's newest lists in stored form (:mod:`.cache`); off for
        #: reads that must come from the records themselves (verify).
        self.kept = kept and codec.readable
        self.cache = ValueCache.of(log) if self.kept else None
        #: Records read so far, by offset (``records``: ones the caller already has,
        #: as :meth:`~..disk.view.LogView.refresh` handed them over).
        self.records: dict[int, dict[str, Any]] = records if records is not None else {}
        self.gen = log.generation_token()
        #: A shared reader's prototypes of the stored messages it revived, by identity:
        #: each revived once per listing, copied per result (kept with the records).
        self.memo: dict[int, Any] | None = {} if shared else None
        #: A shared reader's channels whose newest listed value is (or was) kept.
        self.listed: set[tuple[str, str]] = set()

    def decode(self, cell: Mapping[str, Any]) -> Any:
        return self._decoded(cell, fresh=self.shared)

    def _decoded(self, cell: Mapping[str, Any], *, fresh: bool) -> Any:
        """The codec's decoding of ``cell``; a value the serializer cannot read is
        refused naming this thread and its log."""
        try:
            return self.codec.decode(cell, fresh=fresh, memo=self.memo)
        except DecodeError as exc:
            raise DecodeError.in_log(self.log.thread_id, self.log.path, exc) from exc

    def record(self, ref: Any) -> dict[str, Any]:
        rec = self.records.get(ref.offset)
        if rec is None:
            rec = self.log.read_record(ref)
            self.records[ref.offset] = rec
        return rec

    def prefetch(self, refs: list[Any]) -> None:
        """Read the records at ``refs`` that are not cached yet, in as few reads as can be."""
        missing = [r for r in refs if r.offset not in self.records]
        if len(missing) > 1:
            self.records.update(self.log.read_records(missing))

    def prefetch_checkpoint(self, idx: ThreadIndex, ns: str, checkpoint_id: str, entry: Any) -> None:
        """Prefetch what rebuilding a checkpoint will read, as the index describes it:
        its record, each channel's delta chain back to a full value, its writes."""
        refs = [entry.ref]
        for channel, version in entry.versions.items():
            if self.kept and self.cache.kept(ns, channel, version) is not None:  # type: ignore[union-attr]
                continue  # decoded from the kept items, not from records
            blob = idx.blob(ns, channel, version)
            while blob is not None and blob.kind != EMPTY:
                refs.append(blob.ref)
                if blob.kind != DELTA:
                    break
                blob = blob.prev  # always an earlier record: the walk ends
        refs.extend(w.ref for _, _, w in idx.sorted_writes(ns, checkpoint_id))
        self.prefetch(refs)

    def value(self, idx: ThreadIndex, ns: str, channel: str, version: Any) -> Any:
        """The stored value of a channel version (following deltas back to a full value)."""
        kept = self.cache.kept(ns, channel, version) if self.cache is not None else None
        if kept is not None:
            if self.shared:
                self.listed.add((ns, channel))
            return self._decoded({kept[0]: kept[1]}, fresh=True)
        entry, chain = self._delta_chain(idx, ns, channel, version)
        if entry is None or entry.kind == EMPTY:
            self.log.distrust_sidecar()
            raise self._unrebuildable(channel, version, chain[0] if chain else None)
        base = self.record(entry.ref)["values"][channel]["val"]
        joined = self._joined_items(channel, base, chain) if self.kept else None
        if joined is not None:
            # Kept (stored form) for the next read of this version: no chain walk then.
            # A listing (newest first) keeps the first version it reads of a channel
            # only: its older tuples must not push out the one the next run reads.
            if (ns, channel) not in self.listed:
                self.cache.keep(ns, channel, version, *joined)  # type: ignore[union-attr]
                if self.shared:
                    self.listed.add((ns, channel))
            return self._decoded({joined[0]: joined[1]}, fresh=True)
        value = self.decode(base)
        if chain and type(value) is list:
            value = list(value)  # extended in place below: never the parsed record's own list
        for at, stored in chain:
            self._expect_base(channel, stored, value, at)
            value.extend(self.decode(stored["tail"]))  # linear in the result, not quadratic
        return value

    def _delta_chain(
        self, idx: ThreadIndex, ns: str, channel: str, version: Any
    ) -> tuple[Any, list[tuple[Any, dict[str, Any]]]]:
        """Where a channel version's deltas lead: the blob entry they end at (``None`` or
        an empty one: no value to extend) and each ``(delta entry, stored delta)``,
        oldest first."""
        entry = idx.blob(ns, channel, version)
        chain: list[tuple[Any, dict[str, Any]]] = []
        while entry is not None and entry.kind == DELTA:
            chain.append((entry, self.record(entry.ref)["values"][channel]))
            entry = entry.prev  # the base as it was when this delta was written
        chain.reverse()
        return entry, chain

    def stored_cell(self, idx: ThreadIndex, ns: str, channel: str, version: Any) -> dict[str, Any] | None:
        """What :meth:`value` decodes for a channel version, without decoding it: the
        stored value itself, or a delta chain over a list joined in stored form (what
        the value cache keeps), else (a list of typed items) the chain as it is stored,
        ``{"chain": [base cell, [keep, tail cell], ...]}`` (see :func:`decode_stored`);
        ``None`` if the chain does not end at a stored value. It may share objects with
        the records and the cache: serialize it, never change it."""
        kept = self.cache.kept(ns, channel, version) if self.cache is not None else None
        if kept is not None:
            return {kept[0]: kept[1]}
        entry, chain = self._delta_chain(idx, ns, channel, version)
        if entry is None or entry.kind == EMPTY:
            return None
        base: dict[str, Any] = self.record(entry.ref)["values"][channel]["val"]
        if not chain:
            return base
        joined = self._joined_items(channel, base, chain)
        if joined is not None:
            return {joined[0]: joined[1]}
        return {"chain": [base, *([stored["keep"], stored["tail"]] for _, stored in chain)]}

    def write_cell(self, entry: Any) -> Any:
        """The stored cell of a pending write (what :meth:`write_value` decodes)."""
        return self.record(entry.ref)["w"][entry.position][2]

    def _unrebuildable(
        self, channel: str, version: Any, oldest: tuple[Any, dict[str, Any]] | None
    ) -> CorruptLogError:
        """The error for a value whose delta chain does not end at a stored value."""
        if oldest is None:
            return CorruptLogError(
                f"thread {self.log.thread_id!r}: log {self.log.path} holds no value for "
                f"channel {channel!r} at version {version!r}. {self.log.repair_hint()}",
                path=self.log.path,
                offset=0,
            )
        at, stored = oldest
        return CorruptLogError(
            f"thread {self.log.thread_id!r}: log {self.log.path} holds a delta for channel "
            f"{channel!r} (version {stored['ver']!r}, in the record at byte offset "
            f"{at.ref.offset}) whose base version {stored['base']!r} was not stored before "
            f"it, so the value at version {version!r} cannot be rebuilt. This package never "
            f"writes such a record: the log was edited or damaged. {self.log.repair_hint()}",
            path=self.log.path,
            offset=at.ref.offset,
        )

    def _joined_items(
        self, channel: str, base: Mapping[str, Any], chain: list[tuple[Any, dict[str, Any]]]
    ) -> tuple[str, list[Any]] | None:
        """A delta chain over a list of messages (or of plain JSON) joined in stored form,
        before anything is decoded; ``None`` for other values."""
        start = list_items(base)
        if start is None:
            return None
        kind: str = start[0]
        items = list(start[1])  # a copy: the record's own list stays as is
        for at, stored in chain:
            self._expect_base(channel, stored, items, at)
            extended = extend_items(kind, items, stored["tail"])
            if extended is None:
                return None
            kind = extended
        return kind, items

    def _expect_base(self, channel: str, stored: Mapping[str, Any], value: Any, at: Any) -> None:
        keep = stored["keep"]
        if type(value) is not list or len(value) != keep:
            self.log.distrust_sidecar()
            raise CorruptLogError(
                f"thread {self.log.thread_id!r}: log {self.log.path} holds a delta for "
                f"channel {channel!r} (version {stored['ver']!r} in the record at byte "
                f"offset {at.ref.offset}) that extends {keep} items of its base, which "
                f"holds {len(value) if type(value) is list else 'no list'}: the value "
                "cannot be rebuilt. This package never writes such a record (the log was "
                f"edited or damaged). {self.log.repair_hint()}",
                path=self.log.path,
                offset=at.ref.offset,
            )

    def write_value(self, entry: Any) -> Any:
        return self.decode(self.write_cell(entry))


def decode_stored(codec: ValueCodec, stored: Mapping[str, Any]) -> Any:
    """The value :meth:`ValueReader.stored_cell` gave the stored form of, as
    :meth:`ValueReader.value` returns it (a chain: its base decoded, each delta's tail
    decoded and appended, after checking the delta extends as many items as it says).

    Raises:
        ValueError: A delta does not extend the list it follows.
    """
    if "chain" not in stored:
        return codec.decode(stored)
    base, *tails = stored["chain"]
    value = codec.decode(base)
    if type(value) is list:
        value = list(value)
    for keep, tail in tails:
        if type(value) is not list or len(value) != keep:
            raise ValueError("a delta does not extend the list it follows")
        value.extend(codec.decode(tail))
    return value
