"""Writes of LangGraph's API: a put, a put_writes, and a group of them committed at once.

A write is *prepared* outside any lock (encoding values, reading the config: work that
may fail on bad input without touching the store), then *applied* under the thread's
writer lock (the checks of :mod:`.guards`, the records of :mod:`~..values.records`, the
append), then *finished* once durable (the run tracker notes the new head). The sync
calls apply one write per lock hold and ``fdatasync``; the async calls' worker applies
every queued write of one thread under one hold with one ``fdatasync``
(:meth:`CheckpointWrites.run_group`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)

from ..disk.index import ThreadIndex
from ..disk.log import ThreadLog
from ..disk.store import Store
from ..disk.view import IndexRebuilt
from ..errors import ConfigError, DurabilityError, JsonlCheckpointError, ThreadDeletedError
from ..values.cache import ValueCache
from ..values.codec import ValueCodec
from ..values.records import RecordBuilder, SnapshotPolicy
from . import run_threads
from .config import config_of, healing, thread_id_of
from .guards import refuse_deleted, refuse_moved_head, refuse_other_run, refuse_resume_of_deleted
from .runs import RunTracker
from .worker import Outcome


class Append(NamedTuple):
    """A put or put_writes prepared outside the lock: ``apply`` under it, ``finish`` after."""

    thread_id: str
    apply: Callable[[ThreadLog, ThreadIndex], Any]
    finish: Callable[[Any], Any]


class CheckpointWrites:
    """The saver's writes, on one store with one codec.

    Args:
        store: The store.
        codec: The saver's value codec.
        policy: When a put also writes a snapshot.
        runs: Which head each run expects (``None`` checks nothing).
        refuse_other_runs: Refuse a put of a run whose thread another run (by metadata
            ``run_id``) advanced meanwhile.
    """

    def __init__(
        self,
        store: Store,
        codec: ValueCodec,
        policy: SnapshotPolicy,
        runs: RunTracker,
        *,
        refuse_other_runs: bool,
    ) -> None:
        self.store = store
        self.codec = codec
        self.policy = policy
        self.runs = runs
        self.refuse_other_runs = refuse_other_runs

    # -- preparing -----------------------------------------------------------------

    def prepare_put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Append:
        """The part of a put done before taking the thread's lock: encoding, checks."""
        thread_id = thread_id_of(config, "put")
        if not isinstance(metadata, Mapping):
            raise ConfigError(
                f"thread {thread_id!r}: put needs the checkpoint's metadata as a dict ({{}} for none), "
                f"not {type(metadata).__name__}; nothing was stored."
            )
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        parent = configurable.get("checkpoint_id")
        codec = self.codec
        rest = {k: v for k, v in checkpoint.items() if k not in ("channel_values", "channel_versions", "id")}
        full_metadata = get_checkpoint_metadata(config, metadata)
        run_threads.noted(self.store.path, full_metadata.get("run_id"), thread_id)
        record: dict[str, Any] = {
            "t": "checkpoint",
            "ns": ns,
            "id": checkpoint["id"],
            "parent": parent,
            "cv": dict(checkpoint["channel_versions"]),
            "md": codec.encode(full_metadata, f"thread {thread_id!r}, metadata"),
            "cp": codec.encode(rest, f"thread {thread_id!r}, checkpoint {checkpoint['id']}"),
        }
        values = checkpoint["channel_values"]
        expected = self.runs.expected(configurable, thread_id, ns)

        def apply(log: ThreadLog, idx: ThreadIndex) -> None:
            self.refuse_refused_run(configurable, thread_id)
            self.append_checkpoint(log, idx, ns, parent, record, values, new_versions, expected)

        def finish(_: None) -> RunnableConfig:
            self.runs.advanced(configurable, thread_id, ns, checkpoint["id"])
            return config_of(thread_id, ns, checkpoint["id"])

        return Append(thread_id, apply, finish)

    def prepare_put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> Append:
        """The part of a put_writes done before taking the thread's lock."""
        thread_id = thread_id_of(config, "put_writes")
        configurable = config["configurable"]
        ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable.get("checkpoint_id")
        if not checkpoint_id:
            raise ConfigError(
                f"thread {thread_id!r}: put_writes needs the checkpoint_id the task ran from."
            )
        encoded: list[list[Any]] = [
            [
                WRITES_IDX_MAP.get(channel, i),
                channel,
                self.codec.encode(
                    value, f"thread {thread_id!r}, a write of task {task_id} to channel {channel!r}"
                ),
            ]
            for i, (channel, value) in enumerate(writes)
        ]

        def apply(log: ThreadLog, idx: ThreadIndex) -> None:
            self.refuse_refused_run(configurable, thread_id)
            refuse_deleted(log, idx, ns, named=checkpoint_id, archived=lambda: self.archive_of(thread_id))
            try:
                refuse_resume_of_deleted(log, idx, ns, task_id, encoded,
                                         archived=lambda: self.archive_of(thread_id))
            except ThreadDeletedError as exc:
                # LangGraph goes on from the start with no input: its saves are refused too
                self.runs.refuse(configurable, thread_id, str(exc))
                raise
            # A regular slot is stored once (a retried call must not duplicate it); a
            # special one (negative index) replaces the earlier write in its slot.
            fresh = [w for w in encoded if w[0] < 0 or not idx.has_write(ns, checkpoint_id, task_id, w[0])]
            if fresh:
                log.append([{"t": "writes", "ns": ns, "cp": checkpoint_id, "task": task_id,
                             "path": task_path, "w": fresh}])

        return Append(thread_id, apply, lambda _: None)

    # -- applying ------------------------------------------------------------------

    def refuse_refused_run(self, configurable: Mapping[str, Any], thread_id: str) -> None:
        """Refuse a write of a run whose resume of a deleted thread was refused.

        Raises:
            ThreadDeletedError: The run's resume was refused (the same message).
        """
        why = self.runs.refused(configurable, thread_id)
        if why is not None:
            raise ThreadDeletedError(why)

    def archive_of(self, thread_id: str) -> str | None:
        """The newest archive file of a thread a sweep archived (``None``: none, or the
        archive cannot be read)."""
        from ..disk.archive import ThreadArchive  # only when a late write is refused

        try:
            entries = ThreadArchive(self.store).entries(thread_id)
        except (OSError, JsonlCheckpointError):
            return None
        return entries[-1].path if entries else None

    def append_checkpoint(
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
        refuse_deleted(log, idx, ns, new=record["id"], named=parent,
                       archived=lambda: self.archive_of(log.thread_id))
        if self.refuse_other_runs:
            refuse_other_run(self.codec, log, idx, ns, parent, record["md"])
        refuse_moved_head(log, idx, ns, parent, expected)
        builder = RecordBuilder(log, idx, self.codec, self.policy)
        entries, proofs = builder.values(ns, parent, values, new_versions)
        record = {**record, "values": entries}
        batch = [record]
        if self.policy.due(idx):
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

    # -- running -------------------------------------------------------------------

    def run_alone(self, op: Append) -> Any:
        """Apply one prepared append under the thread's writer lock, durably."""
        log = self.store.thread_log(op.thread_id)

        def locked() -> Any:
            with log.writer() as idx:
                return op.apply(log, idx)

        return op.finish(healing(locked))

    def run_group(self, thread_id: Hashable, payloads: Sequence[Any]) -> list[Outcome]:
        """Run queued async appends of one thread (the worker's group runner).

        Each payload is ``(prepare, args)``. Prepared appends are applied in order under
        one hold of the thread's writer lock and made durable with one ``fdatasync``
        (:meth:`~..disk.log.ThreadLog.group_commit`). An append refused before it wrote
        anything (a concurrent run, a deleted thread, a value that cannot be encoded)
        fails alone; if the group cannot be made durable, every append in it fails and
        nothing of it stays in the log.
        """
        outcomes: list[Outcome | None] = [None] * len(payloads)
        ops: list[tuple[int, Append]] = []
        for i, (prepare, args) in enumerate(payloads):
            try:
                ops.append((i, prepare(*args)))
            except Exception as exc:  # noqa: BLE001 - handed to its caller
                outcomes[i] = (None, exc)
        if len(ops) == 1:
            i, op = ops[0]
            try:
                outcomes[i] = (self.run_alone(op), None)
            except Exception as exc:  # noqa: BLE001
                outcomes[i] = (None, exc)
        elif ops:
            self._run_together(str(thread_id), ops, outcomes)
        return outcomes  # type: ignore[return-value]

    def _run_together(
        self, thread_id: str, ops: list[tuple[int, Append]], outcomes: list[Outcome | None]
    ) -> None:
        log = self.store.thread_log(thread_id)
        applied: list[tuple[int, Append, Any]] = []
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
