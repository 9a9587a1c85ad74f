"""Reads of LangGraph's API: checkpoint tuples, listings, DeltaChannel history.

Each read takes the thread's in-process lock (never the writer lock), brings the index
up to date with the file, and rebuilds what it serves from the records (a read of a
short thread's latest checkpoint that finds its log not indexed in this process takes
its head file instead, if that names the log's bytes: :mod:`.heads`): no two results
share objects, and nothing handed out is an object a later put could change. A read
that finds the sidecar index wrong rebuilds it from the log and runs again
(:func:`~.config.healing`).
"""

from __future__ import annotations

import builtins
import heapq
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
)

from ..disk.entries import CheckpointEntry, bulk_allocation
from ..disk.index import ThreadIndex
from ..disk.store import Store
from ..disk.summary import EMPTY
from ..disk.view import IndexRebuilt, LogView
from ..values.cache import ValueCache
from ..values.codec import ValueCodec
from ..values.reader import ValueReader
from ..values.witness import ListWitness
from .config import healing, thread_id_of
from .heads import head_tuple, seed_from_head
from .tuples import checkpoint_tuple

#: The most tuples a listing reads ahead of its caller (:meth:`CheckpointReads.list`).
LIST_BATCH = 8


class CheckpointReads:
    """The saver's reads, on one store with one codec.

    Args:
        store: The store.
        codec: The saver's value codec.
    """

    def __init__(self, store: Store, codec: ValueCodec) -> None:
        self.store = store
        self.codec = codec

    # -- one checkpoint ------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig, *, witness: bool = False) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, else the latest of its namespace; with
        ``witness`` (a running graph reads it), its lists are remembered for the run's
        next put (:mod:`~..values.witness`)."""
        thread_id = thread_id_of(config, "get_tuple")
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        requested = get_checkpoint_id(config)
        log = self.store.thread_log(thread_id)
        if not requested and ns == "" and not witness and not log.exists():
            # Not indexed in this process: its head file, if it names the log's bytes.
            tup = head_tuple(log, self.codec)
            if tup is not None:
                return tup

        def read() -> CheckpointTuple | None:
            # No collector passes: a log indexed just now hands over every record its scan
            # parsed (the read takes the ones it needs instead of parsing them again), and
            # they are all dropped before the pause ends; what stays is the index, the
            # value cache and the tuple.
            with log.mutex, bulk_allocation():
                loaded: dict[int, dict[str, Any]] = {}
                try:
                    idx = log.refresh(loaded)
                    seed_from_head(log, self.codec)
                    checkpoint_id = requested or idx.latest_id(ns)
                    if checkpoint_id is None:
                        return None
                    entry = idx.entry(ns, checkpoint_id)
                    if entry is None:
                        return None
                    reader = ValueReader(log, self.codec, records=loaded)
                    return self.build_tuple(
                        log, idx, thread_id, ns, checkpoint_id, entry, reader, witness=witness
                    )
                finally:
                    # Freed before the collector resumes: they were counted as they were
                    # made, and would have set off a collection over them as it did.
                    loaded.clear()

        tup = healing(read)
        if tup is not None and requested:
            return tup._replace(config=config)
        return tup

    def build_tuple(
        self,
        log: LogView,
        idx: ThreadIndex,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        entry: CheckpointEntry,
        reader: ValueReader | None = None,
        *,
        witness: bool = False,
    ) -> CheckpointTuple:
        """Rebuild a checkpoint tuple (call under ``log.mutex``)."""
        reader = reader or ValueReader(log, self.codec)
        reader.prefetch_checkpoint(idx, ns, checkpoint_id, entry)
        rec = reader.record(entry.ref)
        values: dict[str, Any] = {}
        # Reviving a long conversation allocates thousands of objects; the cyclic
        # collector's passes over them took half of a get_state_history call.
        with bulk_allocation():
            for channel, version in rec["cv"].items():
                blob = idx.blob(ns, channel, version)
                if blob is None or blob.kind == EMPTY:
                    continue
                values[channel] = reader.value(idx, ns, channel, version)
        pending = [
            (task, w.channel, reader.write_value(w))
            for task, _, w in idx.sorted_writes(ns, checkpoint_id)
        ]
        tup = checkpoint_tuple(
            thread_id, ns, checkpoint_id, entry.parent, reader.decode(rec["cp"]), rec["cv"], values,
            reader.decode(rec["md"]), pending,
        )
        if witness:
            witness_lists(log, ns, tup.checkpoint)
        self.store.keep_warm(log)  # the reads above may have filled its value caches
        return tup

    # -- listings ----------------------------------------------------------------------

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints, newest first (see ``JsonlSaver.list``)."""
        if config:  # None and {} list every thread, as LangGraph's savers do
            thread_ids: Any = [thread_id_of(config, "list")]
            configurable = config["configurable"]
            ns_filter = configurable.get("checkpoint_ns")
            id_filter = configurable.get("checkpoint_id")
        else:
            thread_ids = self.store.thread_ids()
            ns_filter = id_filter = None
        before_id = get_checkpoint_id(before) if before else None
        remaining = limit
        for thread_id in thread_ids:
            if remaining is not None and remaining <= 0:
                return
            log = self.store.thread_log(thread_id)
            seen: set[tuple[str, str]] = set()
            while True:  # rerun for this thread if the index had to be rebuilt
                with log.mutex:
                    idx = log.refresh()
                    want = None if remaining is None else remaining + len(seen)
                    matches = self.matching_ids(idx, ns_filter, id_filter, before_id, filter, want)
                # One reader for the whole listing: neighbouring checkpoints share most
                # of their records (delta chains, snapshots).
                reader = ValueReader(log, self.codec, shared=True)
                try:
                    for key, tup in self._read_batches(log, thread_id, matches, seen, reader):
                        seen.add(key)
                        if remaining is not None:
                            remaining -= 1
                        yield tup
                        if remaining is not None and remaining <= 0:
                            return
                except IndexRebuilt:
                    continue
                break

    def _read_batches(
        self,
        log: LogView,
        thread_id: str,
        matches: builtins.list[tuple[str, str]],
        seen: set[tuple[str, str]],
        reader: ValueReader,
    ) -> Iterator[tuple[tuple[str, str], CheckpointTuple]]:
        """The tuples of ``matches`` not in ``seen``, read in batches of 1, 2, 4, ...
        :data:`LIST_BATCH`, each with the cyclic collector paused once.

        A tuple of a long conversation is thousands of new objects; paused per tuple,
        the collection when it resumes came once per tuple, and every tenth of those
        went on to the older generations (a listing of 20 paid for two, and a pass over
        the whole heap every few listings). Batches that double keep the work done ahead
        of the caller within what it has taken already; nothing runs between the tuples
        of a batch but this module's reads (no caller code while the collector waits).
        """
        todo = [key for key in matches if key not in seen]
        start, size = 0, 1
        while start < len(todo):
            batch = todo[start:start + size]  # not todo[size:] each time: linear in the listing
            start += size
            size = min(2 * size, LIST_BATCH)
            built = []
            with bulk_allocation():
                for ns, checkpoint_id in batch:
                    tup = self._read_listed(log, thread_id, ns, checkpoint_id, reader)
                    if tup is not None:  # else removed since (prune, delete)
                        built.append(((ns, checkpoint_id), tup))
            yield from built

    def _read_listed(
        self, log: LogView, thread_id: str, ns: str, checkpoint_id: str, reader: ValueReader
    ) -> CheckpointTuple | None:
        with log.mutex:
            idx = log.refresh()
            if reader.gen != log.generation_token():
                reader.records.clear()  # the log was rewritten: offsets changed
                reader.gen = log.generation_token()
            entry = idx.checkpoints.get(ns, {}).get(checkpoint_id)
            if entry is None:
                return None
            return self.build_tuple(log, idx, thread_id, ns, checkpoint_id, entry, reader)

    def matching_ids(
        self,
        idx: ThreadIndex,
        ns_filter: str | None,
        id_filter: str | None,
        before_id: str | None,
        filter: dict[str, Any] | None,
        limit: int | None,
    ) -> builtins.list[tuple[str, str]]:
        """``(namespace, checkpoint id)`` of the matches, newest first, at most ``limit``."""
        namespaces = [ns_filter] if ns_filter is not None else idx.namespaces()
        streams = [_tagged(idx.iter_ids_desc(ns, before_id), ns) for ns in namespaces]
        out: list[tuple[str, str]] = []
        for cid, ns in heapq.merge(*streams, reverse=True):
            if id_filter and cid != id_filter:
                continue
            if filter:
                metadata = self.codec.peek(idx.checkpoints[ns][cid].metadata)
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            out.append((ns, cid))
            if limit is not None and len(out) >= limit:
                break
        return out

    # -- DeltaChannel history ------------------------------------------------------------

    def delta_channel_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed of each channel along the parent chain (see
        ``JsonlSaver.get_delta_channel_history``). The walk visits each ancestor once:
        parent links that loop (a hand-edited log) end it."""
        thread_id = thread_id_of(config, "get_delta_channel_history")
        ns = config["configurable"].get("checkpoint_ns", "")
        log = self.store.thread_log(thread_id)
        collected: dict[str, list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        with log.mutex:
            idx = log.refresh()
            reader = ValueReader(log, self.codec)
            by_id = idx.checkpoints.get(ns, {})
            target = get_checkpoint_id(config) or idx.latest_id(ns)
            entry = by_id.get(target) if target else None
            current = entry.parent if entry else None
            remaining = set(channels)
            visited: set[str] = set()
            while current is not None and remaining and current in by_id and current not in visited:
                visited.add(current)
                ancestor = by_id[current]
                found = {}
                for ch in remaining:
                    version = ancestor.versions.get(ch)
                    if version is None:
                        continue
                    blob = idx.blob(ns, ch, version)
                    if blob is not None and blob.kind != EMPTY:
                        found[ch] = reader.value(idx, ns, ch, version)
                for task, _, w in reversed(idx.sorted_writes(ns, current)):
                    if w.channel in remaining:
                        collected[w.channel].append((task, w.channel, reader.write_value(w)))
                for ch, value in found.items():
                    seeds[ch] = value
                    remaining.discard(ch)
                current = ancestor.parent
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            item: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                item["seed"] = seeds[ch]
            result[ch] = item
        return result


def witness_lists(log: LogView, ns: str, checkpoint: Mapping[str, Any]) -> None:
    """Remember the lists just handed out, so the next ``put`` of a run that continues
    from them can store a delta without encoding the whole list."""
    versions = checkpoint["channel_versions"]
    for channel, value in checkpoint["channel_values"].items():
        if type(value) is list:
            witness = ListWitness.of(value)
            if witness is not None:
                ValueCache.of(log).prove(ns, channel, versions[channel], witness)


def _tagged(ids: Iterator[str], ns: str) -> Iterator[tuple[str, str]]:
    for cid in ids:
        yield cid, ns
