"""``JsonlSaver``: LangGraph's checkpointer API over a store of append-only thread logs.

This module maps LangGraph calls to log records and back; the format lives in
``codec.py`` and ``framing.py``, files in ``log.py`` and ``store.py``, lookups in
``index.py``. One class serves sync and async callers: every ``a*`` method runs its sync
twin in a worker thread, so disk I/O and fsync never block the event loop, and nothing
binds to an event loop at construction time. ``aput``, ``aput_writes`` and ``aget_tuple``
use the saver's own few threads (``worker.py``), where the queued appends of one thread
are committed together (one lock hold, one ``fdatasync``); the others use
``asyncio.to_thread``.

Records a ``put`` writes (one line each, see ``docs/format.md``)::

    {"t":"checkpoint","ns":"","id":..,"parent":..,"cv":{versions},"md":cell,"cp":cell,
     "values":{"messages":{"ver":..,"base":..,"keep":12,"tail":{"msgs":[...]}}, ...}}
    {"t":"snapshot","ns":"","cp":..,"values":{"messages":{"ver":..,"val":cell}},"h":..}

``values`` holds only the channels in ``new_versions``: a full value, a delta against an
earlier version of the same channel, or ``{"empty":1}`` for a channel that was consumed.
A snapshot record follows a checkpoint when :class:`~.index.SnapshotPolicy` says so (at
least ``snapshot_every`` checkpoints and, in delta bytes, ``snapshot_ratio`` times the
last snapshot since it), giving full values for every delta-stored channel: the log
stays linear in the conversation, and a read replays at most that much past a snapshot.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import random
import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..disk.entries import CheckpointEntry, bulk_allocation
from ..disk.index import ThreadIndex
from ..disk.log import ThreadLog
from ..disk.store import DEFAULT_MAX_OPEN_THREADS, Store
from ..disk.summary import ValueKind
from ..disk.view import IndexRebuilt
from ..errors import ConcurrentRunError, ConfigError, DurabilityError, ThreadDeletedError
from ..replay.lifecycle import ToolCallKey, ToolCallRecord, calls_only, fold
from ..values.cache import ValueCache
from ..values.codec import ValueCodec
from ..values.reader import ValueReader
from ..values.records import RecordBuilder, SnapshotPolicy
from ..values.witness import ListWitness
from .runs import NEW_THREAD, RunTracker, in_run
from .worker import Outcome, Worker

#: The path that makes a temporary store, as ``SqliteSaver``'s ``":memory:"`` database.
MEMORY = ":memory:"
#: Default minimum number of checkpoint records between snapshot records.
DEFAULT_SNAPSHOT_EVERY = 64
#: Default minimum delta bytes between snapshots, relative to the last snapshot's size.
DEFAULT_SNAPSHOT_RATIO = 2.0
_LIST_BATCH = 64
_VERSION_WIDTH = 12


def _thread_id(config: RunnableConfig | None, what: str) -> str:
    configurable = (config or {}).get("configurable") or {}
    tid = configurable.get("thread_id")
    if tid is None or tid == "":
        raise ConfigError(
            f"{what} needs a thread_id: pass config={{'configurable': {{'thread_id': "
            "'...'}} to invoke/stream/get_state. Each thread_id is one conversation "
            "stored in its own log."
        )
    return str(tid)


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


T = TypeVar("T")


def _healing(operation: Callable[[], T]) -> T:
    """Run a read/append; if it found the sidecar index wrong (and rebuilt it), rerun it."""
    try:
        return operation()
    except IndexRebuilt:
        return operation()


def _refuse_deleted(log: ThreadLog, checkpoint_id: str) -> None:
    """A late write for a checkpoint of a deleted log must not bring the thread back."""
    if log.exists():
        return
    upto = log.deleted_up_to()
    if upto is not None and checkpoint_id <= upto:
        raise ThreadDeletedError(
            f"thread {log.thread_id!r} was deleted; refusing a write for its checkpoint "
            f"{checkpoint_id} (a run was still saving when delete_thread was called). "
            "Start a new run to use this thread id again."
        )


def _witness_lists(log: ThreadLog, ns: str, checkpoint: Mapping[str, Any]) -> None:
    """Remember the lists just handed out, so the next ``put`` of a run that continues
    from them can store a delta without encoding the whole list (:mod:`.witness`)."""
    versions = checkpoint["channel_versions"]
    for channel, value in checkpoint["channel_values"].items():
        if type(value) is list:
            witness = ListWitness.of(value)
            if witness is not None:
                ValueCache.of(log).prove(ns, channel, versions[channel], witness)


def _tagged(ids: Iterator[str], ns: str) -> Iterator[tuple[str, str]]:
    for cid in ids:
        yield cid, ns


class _Append(NamedTuple):
    """A put or put_writes prepared outside the lock: ``apply`` under it, ``finish`` after."""

    thread_id: str
    apply: Callable[[ThreadLog, ThreadIndex], Any]
    finish: Callable[[Any], Any]


class JsonlSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer that keeps each thread in an append-only JSONL log.

    Use it wherever ``SqliteSaver`` or ``InMemorySaver`` goes::

        graph = builder.compile(checkpointer=JsonlSaver("./checkpoints"))
        graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}})

    Every method has an async twin (``aget_tuple``, ``aput``, ...), so the same instance
    serves ``invoke`` and ``ainvoke``. ``put`` and ``put_writes`` (and their async twins)
    return only once their record is fsynced. Several processes may share one store.
    The async twins of the hot calls run in a few threads the saver starts on first use
    and ends on :meth:`close` (or after a few idle seconds).

    Args:
        path: Store directory; created (mode ``0700``) if missing. An existing empty
            directory becomes a store and its mode is set to ``0700`` (logged).
            ``":memory:"``: a new temporary store, removed by :meth:`close`.
        serde: Serializer for values that are not plain JSON or LangChain messages (and,
            if it is not LangGraph's ``JsonPlusSerializer`` — ``EncryptedSerializer``,
            say — for every value).
        snapshot_every: Minimum checkpoint records between snapshot records.
        snapshot_ratio: Minimum delta bytes between snapshot records, as a fraction of
            the previous snapshot's size (0 snapshots every ``snapshot_every`` records).
        read_only: Open an existing store for reading only.
        max_open_threads: Thread logs (and their file descriptors) kept open at once.
            The most recently used also keep their newest lists in memory (the objects
            last stored or read, and their stored form; 100,000 items in all, about
            110 MB at most), which makes the next put and read of a conversation cheap.
        concurrent_runs: ``"refuse"`` (default): a LangGraph run whose thread was
            advanced by another run meanwhile gets :class:`~.errors.ConcurrentRunError`
            at its next put instead of silently forking the thread (runs are told apart
            by LangGraph's per-run ``Runtime`` object, see :mod:`.runs`, or by a
            ``run_id`` in their metadata; time travel from an addressed checkpoint
            still forks).
            ``"allow"``: store every put as given, like LangGraph's own savers.

    Raises:
        ConfigError: ``path`` is not a directory.
        StoreError: The directory is not a store, or is writable by other users.
    """

    def __init__(
        self,
        path: str | Any,
        *,
        serde: SerializerProtocol | None = None,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        snapshot_ratio: float = DEFAULT_SNAPSHOT_RATIO,
        read_only: bool = False,
        max_open_threads: int = DEFAULT_MAX_OPEN_THREADS,
        concurrent_runs: str = "refuse",
    ) -> None:
        super().__init__(serde=serde)
        if concurrent_runs not in ("refuse", "allow"):
            raise ConfigError("concurrent_runs must be 'refuse' or 'allow'")
        self.concurrent_runs = concurrent_runs
        self._runs = RunTracker(enabled=concurrent_runs == "refuse")
        if snapshot_every < 1:
            raise ConfigError("snapshot_every must be at least 1")
        #: A temporary store made for ``":memory:"``, removed by :meth:`close`.
        self.temporary_path: str | None = None
        if os.fspath(path) == MEMORY:
            if read_only:
                raise ConfigError("a ':memory:' store is new and empty: read_only makes no sense")
            path = self.temporary_path = tempfile.mkdtemp(prefix="langgraph-jsonl-memory-")
        self.store = Store(path, read_only=read_only, max_open_threads=max_open_threads)
        if self.temporary_path is not None:
            # Removed with the store at the latest (the store outlives with_allowlist's
            # shallow copies, which share it), or when the interpreter exits.
            weakref.finalize(self.store, shutil.rmtree, self.temporary_path, True)
        if snapshot_ratio < 0:
            raise ConfigError("snapshot_ratio must not be negative")
        self.snapshot_policy = SnapshotPolicy(every=snapshot_every, ratio=snapshot_ratio)
        self._worker = Worker(self._run_group)

    # -- construction helpers ------------------------------------------------------

    @classmethod
    @contextmanager
    def from_conn_string(cls, path: str, **kwargs: Any) -> Iterator[JsonlSaver]:
        """Open a saver on ``path`` for a ``with`` block, as ``SqliteSaver.from_conn_string``.

        Args:
            path: Store directory; ``":memory:"`` (as tests written for ``SqliteSaver``
                pass) makes a temporary store that is removed when the block ends.
            **kwargs: Passed to :class:`JsonlSaver`.

        Yields:
            The saver; it is closed when the block ends.
        """
        saver = cls(path, **kwargs)
        try:
            yield saver
        finally:
            saver.close()

    def close(self) -> None:
        """Finish queued async writes, end the writer thread, write fresh sidecar indexes
        and release files and locks (and remove a ``":memory:"`` store). Idempotent."""
        self._worker.close()
        self.store.close()
        if self.temporary_path is not None:
            shutil.rmtree(self.temporary_path, ignore_errors=True)

    def __enter__(self) -> JsonlSaver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> JsonlSaver:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self.close)

    @property
    def codec(self) -> ValueCodec:
        """The value codec for this instance's serializer (shallow copies get their own)."""
        codec = self.__dict__.get("_codec")
        if codec is None or codec.serde is not self.serde:
            codec = ValueCodec(self.serde)
            self.__dict__["_codec"] = codec
        return codec

    # -- reads ------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint: the one named by ``checkpoint_id``, else the latest.

        Args:
            config: ``{"configurable": {"thread_id", "checkpoint_ns"?, "checkpoint_id"?}}``.

        Returns:
            The checkpoint tuple with pending writes in ``writes_sort_key`` order, or
            ``None`` if there is no such checkpoint.
        """
        thread_id = _thread_id(config, "get_tuple")
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        requested = get_checkpoint_id(config)
        log = self.store.thread_log(thread_id)

        def read() -> CheckpointTuple | None:
            with log.mutex:
                idx = log.refresh()
                checkpoint_id = requested or idx.latest_id(ns)
                if checkpoint_id is None:
                    return None
                entry = idx.checkpoints.get(ns, {}).get(checkpoint_id)
                if entry is None:
                    return None
                # A run continues from what it reads: witness its lists for its next put.
                return self._build_tuple(
                    log, idx, thread_id, ns, checkpoint_id, entry, witness=in_run(configurable)
                )

        tup = _healing(read)
        self._runs.read(configurable, thread_id, ns, tup.checkpoint["id"] if tup else None)
        if tup is None:
            return None
        if requested:
            return tup._replace(config=config)
        return tup

    def _build_tuple(
        self,
        log: ThreadLog,
        idx: ThreadIndex,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        entry: CheckpointEntry,
        reader: ValueReader | None = None,
        *,
        witness: bool = False,
    ) -> CheckpointTuple:
        """Rebuild a checkpoint tuple (under ``log.mutex``); with ``witness``, remember
        its lists for the next put (:func:`_witness_lists`)."""
        reader = reader or ValueReader(log, self.codec)
        reader.prefetch_checkpoint(idx, ns, checkpoint_id, entry)
        rec = reader.record(entry.ref)
        values: dict[str, Any] = {}
        # Reviving a long conversation allocates thousands of objects; the cyclic
        # collector's passes over them took half of a get_state_history call.
        with bulk_allocation():
            for channel, version in rec["cv"].items():
                blob = idx.blob(ns, channel, version)
                if blob is None or blob.kind == ValueKind.EMPTY:
                    continue
                values[channel] = reader.value(idx, ns, channel, version)
        checkpoint: dict[str, Any] = reader.decode(rec["cp"])
        checkpoint["id"] = checkpoint_id
        checkpoint["channel_versions"] = dict(rec["cv"])
        checkpoint["channel_values"] = values
        if witness:
            _witness_lists(log, ns, checkpoint)
        self.store.keep_warm(log)  # the reads above may have filled its value caches
        pending = [
            (task, w.channel, reader.write_value(w))
            for task, _, w in idx.sorted_writes(ns, checkpoint_id)
        ]
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=reader.decode(rec["md"]),
            parent_config=_config(thread_id, ns, entry.parent) if entry.parent else None,
            pending_writes=pending,
        )

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first.

        Args:
            config: Restrict to a thread (and to a namespace if ``checkpoint_ns`` is
                given, to one checkpoint if ``checkpoint_id`` is); ``None`` for all threads.
            filter: Metadata keys and the values they must equal.
            before: Only checkpoints with an id strictly smaller than this config's.
            limit: At most this many results (after filtering).

        Yields:
            Checkpoint tuples.
        """
        if config is not None:
            thread_ids: Any = [_thread_id(config, "list")]
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
                    matches = self._matching_ids(idx, ns_filter, id_filter, before_id, filter, want)
                # One reader for the whole listing: neighbouring checkpoints share most
                # of their records (delta chains, snapshots).
                reader = ValueReader(log, self.codec, shared=True)
                try:
                    for ns, checkpoint_id in matches:
                        if (ns, checkpoint_id) in seen:
                            continue
                        tup = self._read_listed(log, thread_id, ns, checkpoint_id, reader)
                        if tup is None:
                            continue  # removed since (prune, delete)
                        seen.add((ns, checkpoint_id))
                        if remaining is not None:
                            remaining -= 1
                        yield tup
                        if remaining is not None and remaining <= 0:
                            return
                except IndexRebuilt:
                    continue
                break

    def _read_listed(
        self, log: ThreadLog, thread_id: str, ns: str, checkpoint_id: str, reader: ValueReader
    ) -> CheckpointTuple | None:
        with log.mutex:
            idx = log.refresh()
            if reader.gen != log.generation_token():
                reader.records.clear()  # the log was rewritten: offsets changed
                reader.gen = log.generation_token()
            entry = idx.checkpoints.get(ns, {}).get(checkpoint_id)
            if entry is None:
                return None
            return self._build_tuple(log, idx, thread_id, ns, checkpoint_id, entry, reader)

    def _matching_ids(
        self,
        idx: ThreadIndex,
        ns_filter: str | None,
        id_filter: str | None,
        before_id: str | None,
        filter: dict[str, Any] | None,
        limit: int | None,
    ) -> list[tuple[str, str]]:
        namespaces = [ns_filter] if ns_filter is not None else idx.namespaces()
        streams = [_tagged(idx.iter_ids_desc(ns, before_id), ns) for ns in namespaces]
        out: list[tuple[str, str]] = []
        for cid, ns in heapq.merge(*streams, reverse=True):
            if id_filter and cid != id_filter:
                continue
            if filter:
                metadata = self._metadata_for_filter(idx.checkpoints[ns][cid])
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            out.append((ns, cid))
            if limit is not None and len(out) >= limit:
                break
        return out

    def _refuse_concurrent_run(
        self, log: ThreadLog, idx: ThreadIndex, ns: str, parent: str | None, record: dict[str, Any]
    ) -> None:
        """Refuse a put that would silently fork a thread another run is advancing.

        Works when runs carry a ``run_id`` in their metadata (LangGraph copies it from
        ``config["configurable"]["run_id"]`` or ``config["metadata"]["run_id"]``;
        LangGraph Platform sets it). A put is refused when its parent was written by the
        same run (so it is not the first step of a deliberate fork or time travel) and a
        newer checkpoint of another run has appeared since: the thread moved on
        underneath this run.
        """
        if self.concurrent_runs == "allow":
            return
        run_id = self._metadata_of_cell(record["md"]).get("run_id")
        latest = idx.latest_id(ns)
        if run_id is None or parent is None or latest is None or latest <= parent:
            return
        by_id = idx.checkpoints.get(ns, {})
        if parent not in by_id:
            return
        mine = self._metadata_for_filter(by_id[parent]).get("run_id")
        other = self._metadata_for_filter(by_id[latest]).get("run_id")
        if mine == run_id and other is not None and other != run_id:
            raise ConcurrentRunError(
                f"thread {log.thread_id!r}: run {run_id} tried to continue from checkpoint "
                f"{parent}, but run {other} has written a newer checkpoint ({latest}) to "
                "the same thread meanwhile. Two runs must not advance one thread at once; "
                "nothing was written for this step. Retry once the other run is done "
                "(graph.invoke(None, config) resumes from the latest checkpoint)."
            )

    def _refuse_moved_head(
        self, log: ThreadLog, idx: ThreadIndex, ns: str, parent: str | None, expected: Any
    ) -> None:
        """Refuse a run's put when the head it continues from is no longer the head.

        ``expected`` is what :class:`~.runs.RunTracker` knows of this run: the checkpoint
        it read as the latest or last wrote (or that it found the namespace empty);
        ``None`` when the run is not checked (time travel, no run identity, or
        ``concurrent_runs="allow"``).
        """
        if expected is None:
            return
        latest = idx.latest_id(ns)
        if expected is NEW_THREAD:
            moved = parent is None and latest is not None
        else:
            moved = parent == expected and latest is not None and latest != parent
        if moved:
            raise ConcurrentRunError(
                f"thread {log.thread_id!r} (file {log.path}): this run continues from "
                f"checkpoint {parent or '(none: a new thread)'}, but another run has written "
                f"checkpoint {latest} to the same thread meanwhile. Two runs must not advance "
                "one thread at once; nothing was written for this step. Retry once the "
                "other run is done (graph.invoke(None, config) resumes from the latest "
                "checkpoint), or pass concurrent_runs='allow' to keep both branches."
            )

    def _metadata_of_cell(self, cell: Mapping[str, Any]) -> Mapping[str, Any]:
        """Metadata to compare against (plain JSON is read in place, never handed out)."""
        return cell["json"] if "json" in cell else self.codec.decode(cell)

    def _metadata_for_filter(self, entry: CheckpointEntry) -> Mapping[str, Any]:
        return self._metadata_of_cell(entry.metadata)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed of each channel along the parent chain (DeltaChannel support).

        Walks parent links from the index, stopping per channel at the nearest ancestor
        that stores a value for it; writes come oldest first, each checkpoint's in
        ``writes_sort_key`` order. Same contract as ``BaseCheckpointSaver``'s.
        """
        if not channels:
            return {}
        return _healing(lambda: self._delta_channel_history(config, channels))

    def _delta_channel_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        thread_id = _thread_id(config, "get_delta_channel_history")
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
            while current is not None and remaining and current in by_id:
                ancestor = by_id[current]
                found = {}
                for ch in remaining:
                    version = ancestor.versions.get(ch)
                    if version is None:
                        continue
                    blob = idx.blob(ns, ch, version)
                    if blob is not None and blob.kind != ValueKind.EMPTY:
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

    # -- writes -----------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint durably (fsynced before returning).

        Args:
            config: The parent's config (``checkpoint_id`` = parent id, if any).
            checkpoint: The checkpoint.
            metadata: Its metadata (merged with the config's as LangGraph requires).
            new_versions: Channels whose version changed; only these values are stored.

        Returns:
            The config of the stored checkpoint.

        Raises:
            EncodeError: A value cannot be encoded; nothing was stored.
            DurabilityError: The record could not be made durable; nothing was stored.
        """
        op = self._prepare_put(config, checkpoint, metadata, new_versions)
        return self._run_alone(op)

    def _prepare_put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> _Append:
        """The part of a put done before taking the thread's lock: encoding, checks."""
        thread_id = _thread_id(config, "put")
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        parent = configurable.get("checkpoint_id")
        codec = self.codec
        rest = {
            k: v
            for k, v in checkpoint.items()
            if k not in ("channel_values", "channel_versions", "id")
        }
        record: dict[str, Any] = {
            "t": "checkpoint",
            "ns": ns,
            "id": checkpoint["id"],
            "parent": parent,
            "cv": dict(checkpoint["channel_versions"]),
            "md": codec.encode(get_checkpoint_metadata(config, metadata), f"thread {thread_id!r}, metadata"),
            "cp": codec.encode(rest, f"thread {thread_id!r}, checkpoint {checkpoint['id']}"),
        }
        values = checkpoint["channel_values"]
        expected = self._runs.expected(configurable, thread_id, ns)

        def apply(log: ThreadLog, idx: ThreadIndex) -> None:
            self._append_checkpoint(log, idx, ns, parent, record, values, new_versions, expected)

        def finish(_: None) -> RunnableConfig:
            self._runs.advanced(configurable, thread_id, ns, checkpoint["id"])
            return _config(thread_id, ns, checkpoint["id"])

        return _Append(thread_id, apply, finish)

    def _append_checkpoint(
        self,
        log: ThreadLog,
        idx: ThreadIndex,
        ns: str,
        parent: str | None,
        record: dict[str, Any],
        values: Mapping[str, Any],
        new_versions: ChannelVersions,
        expected: Any = None,
    ) -> None:
        """Append a checkpoint record (and a snapshot when due). Call under the writer lock."""
        _refuse_deleted(log, record["id"])
        self._refuse_concurrent_run(log, idx, ns, parent, record)
        self._refuse_moved_head(log, idx, ns, parent, expected)
        builder = RecordBuilder(log, idx, self.codec, self.snapshot_policy)
        entries, proofs = builder.values(ns, parent, values, new_versions)
        record = {**record, "values": entries}
        batch = [record]
        if self.snapshot_policy.due(idx):
            snapshot = builder.snapshot(ns, record, values)
            if snapshot is not None:
                batch.append(snapshot)
        log.append(batch)
        # Inside a group commit the batch is not durable yet; if the group fails, the
        # log's caches are dropped with its index (ThreadLog._abandon_group).
        cache = ValueCache.of(log)
        if self.codec.readable:
            cache.remember(ns, entries)
        for channel, proof in proofs.items():
            cache.prove(ns, channel, new_versions[channel], proof)
        self.store.keep_warm(log)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes durably, linked to the checkpoint it ran from.

        A regular write slot ``(task_id, index)`` is stored once: a retried call does not
        duplicate it. Special channels (errors, interrupts, resume values) replace the
        earlier write in their slot.
        """
        self._run_alone(self._prepare_put_writes(config, writes, task_id, task_path))

    def _prepare_put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> _Append:
        """The part of a put_writes done before taking the thread's lock."""
        thread_id = _thread_id(config, "put_writes")
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable.get("checkpoint_id")
        if not checkpoint_id:
            raise ConfigError(
                f"thread {thread_id!r}: put_writes needs the checkpoint_id the task ran from."
            )
        encoded = [
            [WRITES_IDX_MAP.get(channel, i), channel,
             self.codec.encode(value, f"thread {thread_id!r}, a write of task {task_id} to channel {channel!r}")]
            for i, (channel, value) in enumerate(writes)
        ]

        def apply(log: ThreadLog, idx: ThreadIndex) -> None:
            _refuse_deleted(log, checkpoint_id)
            fresh = [
                w for w in encoded if w[0] < 0 or not idx.has_write(ns, checkpoint_id, task_id, w[0])
            ]
            if not fresh:
                return
            log.append(
                [
                    {
                        "t": "writes",
                        "ns": ns,
                        "cp": checkpoint_id,
                        "task": task_id,
                        "path": task_path,
                        "w": fresh,
                    }
                ]
            )

        return _Append(thread_id, apply, lambda _: None)

    def _run_alone(self, op: _Append) -> Any:
        """Apply one prepared append under the thread's writer lock, durably."""
        log = self.store.thread_log(op.thread_id)

        def locked() -> Any:
            with log.writer() as idx:
                return op.apply(log, idx)

        return op.finish(_healing(locked))

    def _run_group(self, thread_id: Hashable, payloads: Sequence[Any]) -> list[Outcome]:
        """Run queued async appends of one thread (the worker's group runner).

        Each payload is ``(prepare, args)``. Prepared appends are applied in order under
        one hold of the thread's writer lock and made durable with one ``fdatasync``
        (:meth:`~.log.ThreadLog.group_commit`). An append refused before it wrote
        anything (a concurrent run, a deleted thread, a value that cannot be encoded)
        fails alone; if the group cannot be made durable, every append in it fails and
        nothing of it stays in the log.
        """
        outcomes: list[Outcome | None] = [None] * len(payloads)
        ops: list[tuple[int, _Append]] = []
        for i, (prepare, args) in enumerate(payloads):
            try:
                ops.append((i, prepare(*args)))
            except Exception as exc:  # noqa: BLE001 - handed to its caller
                outcomes[i] = (None, exc)
        if len(ops) == 1:
            i, op = ops[0]
            try:
                outcomes[i] = (self._run_alone(op), None)
            except Exception as exc:  # noqa: BLE001
                outcomes[i] = (None, exc)
        elif ops:
            log = self.store.thread_log(str(thread_id))
            applied: list[tuple[int, _Append, Any]] = []
            try:
                with log.writer(), log.group_commit():
                    for i, op in ops:
                        index, last_seq = log.index, log.index.last_seq
                        try:
                            try:
                                result = op.apply(log, log.index)
                            except IndexRebuilt:
                                result = op.apply(log, log.index)
                        except DurabilityError:
                            raise  # the group was cut: nothing of it is acknowledged
                        except Exception as exc:  # noqa: BLE001
                            if log.index is not index or log.index.last_seq != last_seq:
                                raise  # it failed after changing the log: fail the group
                            outcomes[i] = (None, exc)  # refused before writing: only it fails
                            continue
                        applied.append((i, op, result))
            except Exception as exc:  # noqa: BLE001
                for i, _ in ops:
                    if outcomes[i] is None:  # applied (not durable) or not reached
                        outcomes[i] = (None, exc)
            else:
                for i, op, result in applied:
                    try:
                        outcomes[i] = (op.finish(result), None)
                    except Exception as exc:  # noqa: BLE001
                        outcomes[i] = (None, exc)
        return outcomes  # type: ignore[return-value]

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in all namespaces, from disk."""
        thread_id = str(thread_id)
        if not self.store.has_files(thread_id):
            return  # nothing to delete: create no lock file for it either
        log = self.store.thread_log(thread_id)
        with log.writer():
            log.remove()
        self.store.forget(thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write (ids, parents, metadata, order) to another thread.

        The records are appended to the target's log as one batch: the copy appears
        whole or not at all.
        """
        from ..maintenance.compaction import copy_records

        _healing(lambda: copy_records(self, str(source_thread_id), str(target_thread_id)))

    def compact(self, thread_id: str) -> tuple[int, int]:
        """Rewrite a thread's log without what it no longer needs; answers stay the same.

        Keeps every checkpoint, pending write and tool-call event; drops snapshot
        records, superseded write entries (retried slots, replaced special writes) and
        superseded duplicate records, and stores each channel version once. The new
        generation replaces the log atomically (a crash leaves the old or the new one).
        ``prune`` also drops old checkpoints; ``compact`` never does.

        Returns:
            The log's size in bytes before and after.
        """
        from ..maintenance.compaction import compact_thread

        tid = str(thread_id)
        return _healing(lambda: compact_thread(self, tid))

    async def acompact(self, thread_id: str) -> tuple[int, int]:
        """Async :meth:`compact` (runs in a worker thread)."""
        return await asyncio.to_thread(self.compact, thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"keep_latest"`` per namespace, or ``"delete"`` everything.

        ``keep_latest`` keeps, per namespace, the latest checkpoint with its writes, plus
        the ancestors (and their writes) that its DeltaChannel channels need to be rebuilt
        (back to their last snapshot), so no channel silently reloads empty. The thread's
        log is replaced by a new generation atomically.
        """
        from ..maintenance.compaction import prune_thread

        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
            else:
                tid = str(thread_id)
                _healing(lambda: prune_thread(self, tid))  # noqa: B023 - called at once

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose ``metadata["run_id"]`` is given.

        Raises:
            DeltaHistoryError: A remaining checkpoint would lose DeltaChannel history it
                needs; nothing was deleted in that thread.
        """
        from ..maintenance.compaction import delete_runs

        if run_ids:
            _healing(lambda: delete_runs(self, {str(r) for r in run_ids}))

    # -- tool-call lifecycle (used by ReplayAdapter) ------------------------------

    def record_tool_events(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Append tool-call lifecycle events to a thread's log as one durable batch.

        Args:
            thread_id: The thread.
            events: Dicts with ``ev``, ``ns``, ``cp``, ``call`` and the event's fields
                (values already encoded as cells); see ``toolcalls.py``.
        """
        if not events:
            return
        log = self.store.thread_log(str(thread_id))
        with log.writer():
            log.append([{"t": "tool", **e} for e in events])

    def tool_calls(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> list[ToolCallRecord]:
        """The lifecycle of every tool call recorded in a thread (or of ``keys`` only).

        Returns:
            One :class:`ToolCallRecord` per call, in the order calls were first seen;
            ``effective_state`` tells ``uncertain`` calls (started by a dead process).
        """
        return calls_only(self.tool_call_records(thread_id, keys))

    def tool_call_records(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> dict[ToolCallKey, ToolCallRecord]:
        """Folded lifecycle records by key, including each task's question journal."""
        log = self.store.thread_log(str(thread_id))
        return _healing(lambda: self._tool_call_records(log, keys))

    def _tool_call_records(
        self, log: ThreadLog, keys: Sequence[ToolCallKey] | None
    ) -> dict[ToolCallKey, ToolCallRecord]:
        with log.mutex:
            idx = log.refresh()
            if keys is None:
                refs = [r for rs in idx.tool_events.values() for r in rs]
            else:
                refs = [
                    r
                    for k in keys
                    for r in idx.tool_events.get((k.ns, k.checkpoint_id, k.call_id), [])
                ]
            refs.sort(key=lambda r: r.seq)
            events = [log.read_record(r) for r in refs]
        return fold(events, self.codec.decode)

    async def arecord_tool_events(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Async :meth:`record_tool_events`."""
        await asyncio.to_thread(self.record_tool_events, thread_id, events)

    async def atool_calls(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> list[ToolCallRecord]:
        """Async :meth:`tool_calls`."""
        return await asyncio.to_thread(self.tool_calls, thread_id, keys)

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """Next channel version: ``"<counter>.<random hex>"``, string-sortable and unique.

        The counter is zero-padded to a fixed width (12 digits; or the width of
        ``current`` when that is a string, so versions from other savers, 32 digits
        wide, keep sorting correctly). The random part keeps forks of one thread apart.
        Versions appear in every checkpoint record several times, so they are kept
        short: LangGraph's bundled savers use 49 characters, these 25.
        """
        if current is None:
            counter, width = 0, _VERSION_WIDTH
        elif isinstance(current, int):
            counter, width = current, _VERSION_WIDTH
        else:
            head = str(current).split(".")[0]
            counter, width = int(head), max(len(head), _VERSION_WIDTH)
        return f"{counter + 1:0{width}}.{random.getrandbits(48):012x}"

    # -- async twins ------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (runs in one of this saver's worker threads)."""
        return await self._worker.call(lambda: self.get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`; results are fetched in batches in a worker thread."""
        it = self.list(config, filter=filter, before=before, limit=limit)
        while True:
            batch = await asyncio.to_thread(lambda: list(islice(it, _LIST_BATCH)))
            for item in batch:
                yield item
            if len(batch) < _LIST_BATCH:
                return

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`, durable when it returns.

        Runs in one of this saver's worker threads (see :mod:`.worker`), committed
        together with the other appends to the same thread that are queued at that
        moment: one lock hold, one ``fdatasync``. If that sync fails, every call of the
        group raises :class:`~.errors.DurabilityError` and none of it stays in the log.
        """
        thread_id = _thread_id(config, "put")
        return await self._worker.submit(
            thread_id, (self._prepare_put, (config, checkpoint, metadata, new_versions))
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`, durable when it returns (group committed as :meth:`aput`)."""
        thread_id = _thread_id(config, "put_writes")
        await self._worker.submit(
            thread_id, (self._prepare_put_writes, (config, writes, task_id, task_path))
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )


class AsyncJsonlSaver(JsonlSaver):
    """:class:`JsonlSaver` with an async ``from_conn_string``, for ``AsyncSqliteSaver`` users.

    ``JsonlSaver`` itself already serves ``ainvoke``/``astream``; this class only makes
    ``async with AsyncJsonlSaver.from_conn_string(path) as saver:`` work unchanged.
    """

    @classmethod
    @asynccontextmanager  # type: ignore[override]
    async def from_conn_string(cls, path: str, **kwargs: Any) -> AsyncIterator[AsyncJsonlSaver]:  # type: ignore[override]
        """Open a saver on ``path`` for an ``async with`` block.

        Args:
            path: Store directory (``":memory:"``: a temporary one, removed at the end).
            **kwargs: Passed to :class:`JsonlSaver`.

        Yields:
            The saver; it is closed when the block ends.
        """
        saver = await asyncio.to_thread(lambda: cls(path, **kwargs))
        try:
            yield saver
        finally:
            await asyncio.to_thread(saver.close)
