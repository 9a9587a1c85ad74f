"""``JsonlSaver``: LangGraph's checkpointer API over a store of append-only thread logs.

This class only maps LangGraph's calls onto what does the work, in the manner of
LangGraph's Postgres saver (decisions in one place, sync and async only execute):

- reads (``get_tuple``, ``list``, DeltaChannel history): :class:`~.reads.CheckpointReads`;
- writes (``put``, ``put_writes``), prepared outside the lock and applied under it:
  :class:`~.writes.CheckpointWrites`, with the refusals of :mod:`.guards`;
- one live run per thread: :mod:`.liveness` (a state update holds it: :mod:`.update_hold`);
- the replay adapter's tool-call journal (a mixin, :class:`~.tool_log.ToolCallMethods`);
- whole-thread operations (delete, copy, compact, prune, delete_for_runs): a mixin,
  :class:`~.thread_methods.ThreadMethods`, over :mod:`~..maintenance.compaction`;
- retention, session memory: mixins, :mod:`.retention_methods`, :mod:`.memory_methods`.

Every ``a*`` method is a thin twin of its sync method: ``aput``, ``aput_writes`` and
``aget_tuple`` run in the saver's own few threads (:mod:`.worker`), where the queued
appends of one thread are committed together (one lock hold, one ``fdatasync``); the
others run in ``asyncio.to_thread``. Nothing binds to an event loop at construction.

Records a ``put`` writes (one line each, see ``docs/format.md``)::

    {"t":"checkpoint","ns":"","id":..,"parent":..,"cv":{versions},"md":cell,"cp":cell,
     "values":{"messages":{"ver":..,"base":..,"keep":12,"tail":{"msgs":[...]}}, ...}}
    {"t":"snapshot","ns":"","cp":..,"values":{"messages":{"ver":..,"val":cell}},"h":..}
"""

from __future__ import annotations

import asyncio
import builtins
import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..disk.store import DEFAULT_MAX_OPEN_THREADS, Store
from ..errors import ConfigError
from ..maintenance.retention import RetentionPolicy
from ..values.codec import ValueCodec
from ..values.records import SnapshotPolicy
from .config import (
    CONCURRENT_RUNS,
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_SNAPSHOT_EVERY,
    DEFAULT_SNAPSHOT_RATIO,
    MEMORY,
    UNCHECKED_PUTS,
    amount,
    flag,
    healing,
    next_version,
    serializer,
    store_path,
    thread_id_of,
    whole_number,
)
from .heads import keep_heads
from .liveness import LiveRuns, ReadOnlyRuns, calling_loop
from .memory_methods import SessionMemoryMethods, keep_session_memory
from .reads import CheckpointReads
from .retention_methods import RetentionMethods
from .runs import RunTracker, in_run
from .thread_methods import ThreadMethods
from .tool_log import ToolCallMethods, ToolLog
from .update_hold import NO_HOLD, held_update
from .worker import Outcome, Worker
from .writes import CheckpointWrites

_LIST_BATCH = 64


class JsonlSaver(
    ToolCallMethods, ThreadMethods, RetentionMethods, SessionMemoryMethods, BaseCheckpointSaver[str]
):
    """A LangGraph checkpointer that keeps each thread in an append-only JSONL log.

    Use it wherever ``SqliteSaver`` or ``InMemorySaver`` goes::

        with JsonlSaver.from_conn_string("./checkpoints") as saver:
            graph = builder.compile(checkpointer=saver)
            graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}})

    Every method has an async twin (``aget_tuple``, ``aput``, ...), so the same instance
    serves ``invoke`` and ``ainvoke``; those of the hot calls run in a few threads started
    on first use. ``put`` and ``put_writes`` (and their twins) return only once their
    record is fsynced. Several processes may share one store.

    Args:
        path: Store directory; created (mode ``0700``) if missing. An existing empty
            directory becomes a store and its mode is set to ``0700`` (logged).
            ``":memory:"``: a new temporary store, removed by :meth:`close`. An empty
            path, or a database URL (``sqlite:///...``, ``postgresql://...``), is a
            :class:`~.errors.ConfigError`, as is an option of the wrong type or range.
        serde: Serializer for values that are not plain JSON or LangChain messages (and,
            if it is not LangGraph's ``JsonPlusSerializer`` — ``EncryptedSerializer``,
            say — for every value).
        snapshot_every: Minimum checkpoint records between snapshot records.
        snapshot_ratio: Minimum delta bytes between snapshot records, as a fraction of
            the previous snapshot's size (0 snapshots every ``snapshot_every`` records).
        read_only: Open an existing store for reading only.
        max_open_threads: Idle thread logs (and descriptors) kept open at once, or one
            while none is used again (a live run's log stays open while it runs); one
            let go of is opened again on its next use. The most recently used also keep
            their newest lists in memory (the objects last stored or read, and their
            stored form; 100,000 items in all, about 110 MB at most), which makes the
            next put and read of a conversation cheap.
        concurrent_runs: What a LangGraph run gets when another run is still working
            on its thread (a *live* run: it read or wrote the thread and neither ended
            nor died; one per thread across processes, threads and tasks, see
            :mod:`.liveness`):

            - ``"refuse"`` (default): :class:`~.errors.ThreadBusyError` before it reads
              or writes anything (LangGraph server's "reject" multitask strategy); a
              live run of this same process is first given up to a second to end;
            - ``"wait"``: it waits until the live run ends (at most ``busy_timeout``
              seconds, then ``ThreadBusyError``) and starts from the thread's head
              (the server's "enqueue");
            - ``"allow"``: both run; the one whose thread the other advanced underneath
              it gets :class:`~.errors.ConcurrentRunError` at its next put, with
              nothing of that step stored (runs told by LangGraph's ``Runtime``, see
              :mod:`.runs`, or a ``run_id`` in their metadata);
            - ``"unchecked"``: every put is stored as given, like LangGraph's own
              savers, and no lock is taken;
            - ``"hold"``: every put is stored as given and a run is never refused,
              but it holds the thread's live-run lock while it works, so a sweep
              leaves its thread alone; a run finding the thread busy waits for it up
              to ``busy_timeout``, then goes ahead without the lock. For the LangGraph
              server, which coordinates runs itself (its factory opens the saver so).

            In every mode, time travel (a run from an addressed checkpoint) forks on
            purpose, and a saver driven directly (no LangGraph run) is never refused.
        busy_timeout: Longest wait of ``concurrent_runs="wait"`` (or ``"hold"``), in seconds.
        ttl: Retention, in the LangGraph server's terms: ``{"default_ttl": minutes of
            inactivity, "strategy": "delete" | "keep_latest" | "archive"}`` (and
            ``sweep_interval_minutes``, ``sweep_limit``), a number of minutes
            (``"delete"``), or a :class:`~.maintenance.retention.RetentionPolicy`.
            Applied by :meth:`sweep` (and by the server factory every
            ``sweep_interval_minutes``); nothing expires by itself between sweeps.
        session_memory: Keep each thread's session memory up to date as records are
            appended (:meth:`session_memory`; a ``<stem>.mem`` file beside the log).
            Off, the memory is built from the log when asked for.

    Raises:
        ConfigError: ``path`` is not a directory, or an option is out of range (an
            unknown ``concurrent_runs``, ``snapshot_every`` below 1, a ``ttl`` the
            policy does not know).
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
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        ttl: RetentionPolicy | Mapping[str, Any] | float | None = None,
        session_memory: bool = True,
    ) -> None:
        super().__init__(serde=serializer(serde))
        #: The retention policy :meth:`sweep` applies (``None``: none configured).
        self.retention = RetentionPolicy.of(ttl) if ttl is not None else None
        if concurrent_runs not in CONCURRENT_RUNS:
            raise ConfigError(
                f"concurrent_runs must be one of {', '.join(map(repr, CONCURRENT_RUNS))}, "
                f"not {concurrent_runs!r}"
            )
        busy_timeout = amount("busy_timeout", busy_timeout, 0, "of seconds")
        whole_number("max_open_threads", max_open_threads, 1)
        whole_number("snapshot_every", snapshot_every, 1)
        amount("snapshot_ratio", snapshot_ratio, 0)
        flag("read_only", read_only)
        flag("session_memory", session_memory)
        path = store_path(path)
        self.concurrent_runs = concurrent_runs
        self._runs = RunTracker(enabled=concurrent_runs not in UNCHECKED_PUTS)
        #: A temporary store made for ``":memory:"``, removed by :meth:`close`.
        self.temporary_path: str | None = None
        if path == MEMORY:
            if read_only:
                raise ConfigError("a ':memory:' store is new and empty: read_only makes no sense")
            path = self.temporary_path = tempfile.mkdtemp(prefix="langgraph-jsonl-memory-")
        self.store = Store(path, read_only=read_only, max_open_threads=max_open_threads)
        if self.temporary_path is not None:
            # Removed with the store at the latest (the store outlives with_allowlist's
            # shallow copies, which share it), or when the interpreter exits.
            weakref.finalize(self.store, shutil.rmtree, self.temporary_path, True)
        self.snapshot_policy = SnapshotPolicy(every=snapshot_every, ratio=snapshot_ratio)
        if session_memory:
            keep_session_memory(self.store, self.codec)
        keep_heads(self.store, self.codec)
        self._worker = Worker(owner=self)  # (its threads end once this saver is freed)
        #: The replay adapter's journal in the logs (shared with with_allowlist's copies).
        self._tool_log = ToolLog(self.store)
        #: The live-run locks of this saver's runs (shared with with_allowlist's copies).
        self._live: LiveRuns | ReadOnlyRuns | None = (
            ReadOnlyRuns() if read_only else LiveRuns(
                self.store, wait=concurrent_runs == "wait", busy_timeout=busy_timeout,
                never_refuse=concurrent_runs == "hold",
            )
            if concurrent_runs in ("refuse", "wait", "hold") else None
        )

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
        and close the files (and remove a ``":memory:"`` store). Idempotent. A run still
        going keeps its thread's live-run lock until it ends (its loop's exit gives it
        back); a saver used again opens what it needs again."""
        self._worker.close()
        self.store.close()
        if self.temporary_path is not None:
            shutil.rmtree(self.temporary_path, ignore_errors=True)
            self.store.removed = (
                "this saver's ':memory:' store was removed when the saver was closed; it holds "
                "nothing any more. Open a new JsonlSaver(':memory:') (and compile the graph with "
                "it), or give a directory to keep the threads."
            )

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

    @property
    def _reads(self) -> CheckpointReads:
        return CheckpointReads(self.store, self.codec)

    @property
    def _writes(self) -> CheckpointWrites:
        return CheckpointWrites(
            self.store, self.codec, self.snapshot_policy, self._runs,
            refuse_other_runs=self.concurrent_runs not in UNCHECKED_PUTS,
        )

    # -- reads ------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint: the one named by ``checkpoint_id``, else the latest.

        Args:
            config: ``{"configurable": {"thread_id", "checkpoint_ns"?, "checkpoint_id"?}}``.

        Returns:
            The checkpoint tuple with pending writes in ``writes_sort_key`` order, or
            ``None`` if there is no such checkpoint.

        Raises:
            ConfigError: The config names no ``thread_id``; or a graph run reads through
                a ``read_only`` saver (refused before any node runs).
            CorruptLogError: A record the read needs is damaged (a ``read_only`` saver
                serves the log's valid prefix instead); the message names the file, the
                offset and the ``langgraph-jsonl repair`` command.
        """
        if self._live is not None:
            configurable = (config or {}).get("configurable") or {}
            self._live.enter(configurable, thread_id_of(config, "get_tuple"), calling_loop())
        return self._read_tuple(config)

    def _read_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = (config or {}).get("configurable") or {}
        # A run continues from what it reads: witness its lists for its next put.
        tup = self._reads.get_tuple(config, witness=in_run(configurable))
        self._runs.read(
            configurable, thread_id_of(config, "get_tuple"), configurable.get("checkpoint_ns", ""),
            tup.checkpoint["id"] if tup else None,
        )
        return tup

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
                given, to one checkpoint if ``checkpoint_id`` is); ``None`` (or ``{}``) for
                all threads.
            filter: Metadata keys and the values they must equal.
            before: Only checkpoints with an id strictly smaller than this config's.
            limit: At most this many results (after filtering).

        Yields:
            Checkpoint tuples.
        """
        return self._reads.list(config, filter=filter, before=before, limit=limit)

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
        return healing(lambda: self._reads.delta_channel_history(config, channels))

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
            ConcurrentRunError: Another run advanced this thread meanwhile, or (a ``ThreadBusyError``)
                ``update_state`` came while a run is live on it; nothing was stored.
            ThreadDeletedError: The thread was deleted after this checkpoint was made (a
                late write of a run still saving); nothing was stored.
        """
        ops = self._writes
        with held_update(self._live, config, metadata):
            stored: RunnableConfig = ops.run_alone(
                ops.prepare_put(config, checkpoint, metadata, new_versions))
        self._tool_log.landing.landed()
        return stored

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

        Args:
            config: The config of the checkpoint the task ran from (its ``checkpoint_id``).
            writes: ``(channel, value)`` pairs, in the task's order.
            task_id: The task that wrote them.
            task_path: The task's path (orders parallel tasks' writes).

        Raises:
            ConfigError: The config names no ``thread_id`` or no ``checkpoint_id``.
            EncodeError: A value cannot be encoded; nothing was stored.
            DurabilityError: The record could not be made durable; nothing was stored.
            ThreadDeletedError: The thread was deleted after the checkpoint was made.
        """
        ops = self._writes
        ops.run_alone(ops.prepare_put_writes(config, writes, task_id, task_path))

    def _run_group(self, thread_id: Hashable, payloads: Sequence[Any]) -> builtins.list[Outcome]:
        """The worker's group runner (see :meth:`~.writes.CheckpointWrites.run_group`)."""
        return self._writes.run_group(thread_id, payloads)

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """Next channel version: ``"<counter>.<random hex>"``, string-sortable and unique
        (see :func:`~.config.next_version`)."""
        return next_version(current)

    # -- async twins ------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple` (runs in one of this saver's worker threads; a run
        waiting for a busy thread waits on the event loop, not in a worker)."""
        if self._live is not None:
            configurable = (config or {}).get("configurable") or {}
            await self._live.aenter(configurable, thread_id_of(config, "get_tuple"), calling_loop())
        found: CheckpointTuple | None = await self._worker.call(lambda: self._read_tuple(config))
        return found

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
        thread_id = thread_id_of(config, "put")
        if held_update(self._live, config, metadata) is not NO_HOLD:  # (a file lock: not on the loop)
            return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)
        payload = (self._writes.prepare_put, (config, checkpoint, metadata, new_versions))
        stored: RunnableConfig = await self._worker.submit(thread_id, payload, self._run_group)
        self._tool_log.landing.landed()
        return stored

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`, durable when it returns (group committed as :meth:`aput`)."""
        thread_id = thread_id_of(config, "put_writes")
        payload = (self._writes.prepare_put_writes, (config, writes, task_id, task_path))
        await self._worker.submit(thread_id, payload, self._run_group)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )
