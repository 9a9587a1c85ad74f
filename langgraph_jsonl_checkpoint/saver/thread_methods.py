"""The saver's whole-thread operations: ``delete_thread``, ``copy_thread``, ``compact``,
``prune``, ``delete_for_runs`` and their async twins (a mixin of
:class:`~.jsonl_saver.JsonlSaver`).

They map onto :mod:`~..maintenance.compaction`, which does the work under the thread's
writer lock; the async twins run in a worker thread, so an event loop never waits on
the disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

from ..disk.store import Store
from ..errors import ConfigError, CorruptLogError
from ..maintenance.access import StoreAccess
from ..maintenance.compaction import compact_thread, copy_records, delete_runs, prune_thread
from . import run_threads
from .config import healing


class ThreadMethods:
    """Operations on whole threads (mixed into ``JsonlSaver``, which has the store,
    codec and snapshot policy that maintenance needs)."""

    store: Store

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in all namespaces, from disk.

        A log every read refuses as damaged (:class:`~.errors.CorruptLogError`) is
        deleted too: deleting is what was asked, and nothing else gets such a thread
        going again short of ``repair``.
        """
        thread_id = str(thread_id)
        if not self.store.has_files(thread_id):
            return  # nothing to delete: create no lock file for it either
        log = self.store.thread_log(thread_id)
        try:
            with log.writer():
                log.remove()
        except CorruptLogError:
            with log.locked():  # no index to take the newest checkpoint id from
                log.remove()
        self.store.forget(thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write (ids, parents, metadata, order) to another thread.

        The records are appended to the target's log as one batch: the copy appears
        whole or not at all. Metadata whose ``"thread_id"`` is the source's (the
        LangGraph server puts it in every run's metadata) names the target in the copy,
        as the server's own copy does.
        """
        source, target = str(source_thread_id), str(target_thread_id)
        healing(lambda: copy_records(cast(StoreAccess, self), source, target))
        run_threads.copied(self.store.path, source, target)

    def compact(self, thread_id: str) -> tuple[int, int]:
        """Rewrite a thread's log without what it no longer needs; answers stay the same.

        Keeps every checkpoint, pending write and tool-call event; drops snapshot
        records, superseded write entries (retried slots, replaced special writes) and
        superseded duplicate records, and stores each channel version once. The new
        generation replaces the log atomically (a crash leaves the old or the new one).
        ``prune`` also drops old checkpoints; ``compact`` never does.

        Returns:
            The log's size in bytes before and after (``(0, 0)`` for a thread with no log).
        """
        tid = str(thread_id)
        return healing(lambda: compact_thread(cast(StoreAccess, self), tid))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: ``"keep_latest"`` per namespace, or ``"delete"`` everything.

        ``keep_latest`` keeps, per namespace, the latest checkpoint with its writes, plus
        the ancestors (and their writes) that its DeltaChannel channels need to be rebuilt
        (back to their last snapshot), so no channel silently reloads empty. The thread's
        log is replaced by a new generation atomically.
        """
        _refuse_one_string("prune", "thread_ids", thread_ids)
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
            else:
                tid = str(thread_id)
                healing(lambda: prune_thread(cast(StoreAccess, self), tid))  # noqa: B023 - called at once

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose ``metadata["run_id"]`` is given.

        Raises:
            DeltaHistoryError: A remaining checkpoint would lose DeltaChannel history it
                needs; nothing was deleted in that thread.
        """
        _refuse_one_string("delete_for_runs", "run_ids", run_ids)
        if run_ids:
            runs = {str(r) for r in run_ids}
            # Runs of this process: only the threads they wrote to (else every thread).
            threads = run_threads.threads_of(self.store.path, runs)
            within = None if threads is None else sorted(t for t in threads if self.store.has_thread(t))
            healing(lambda: delete_runs(cast(StoreAccess, self), runs, within))

    # -- async twins ------------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def acompact(self, thread_id: str) -> tuple[int, int]:
        """Async :meth:`compact`."""
        return await asyncio.to_thread(self.compact, thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)


def _refuse_one_string(method: str, name: str, ids: Sequence[str]) -> None:
    """A lone id where a list of them is due would be read a character at a time: every
    character an id, none of them the one meant, and nothing done without a word."""
    if isinstance(ids, (str, bytes)):
        raise ConfigError(
            f"{method} takes a list of ids as {name}, not the single {type(ids).__name__} "
            f"{ids!r}: write {method}([{ids!r}]). Nothing was changed."
        )
