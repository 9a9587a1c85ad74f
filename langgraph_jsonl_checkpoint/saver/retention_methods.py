"""The saver's retention methods: ``sweep``, ``restore``, ``archived`` and their async
twins (a mixin of :class:`~.jsonl_saver.JsonlSaver`).

They map onto :mod:`~..maintenance.retention`, which does the work; the mixin only
picks the policy (the saver's ``ttl``, or one given to the call) and runs the async
twins in a worker thread, so a server's event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any, cast

from ..disk.archive import ArchivedThread
from ..errors import ConfigError
from ..maintenance.access import StoreAccess
from ..maintenance.restore import restore
from ..maintenance.retention import RetentionPolicy, SweepReport, archived, sweep


class RetentionMethods:
    """Sweep, restore and list archives (mixed into ``JsonlSaver``, which has the store,
    codec and snapshot policy maintenance needs, and ``retention``)."""

    #: The retention policy :meth:`sweep` applies (``None``: none configured).
    retention: RetentionPolicy | None

    def sweep(
        self,
        ttl: RetentionPolicy | Mapping[str, Any] | float | None = None,
        *,
        dry_run: bool = False,
        now: float | None = None,
        stop: threading.Event | None = None,
    ) -> SweepReport:
        """Apply the retention policy: each thread idle for ``default_ttl`` minutes is
        deleted, pruned to its latest checkpoints or archived, unless it is pinned
        (``"pinned": true`` in its latest checkpoint's metadata) or a run is working on
        it. Crash-atomic per thread; safe with other processes sweeping at once.

        Args:
            ttl: The policy to apply (default: the saver's ``ttl``).
            dry_run: Only report what would be done.
            now: The time to judge by, in epoch seconds (default: now).
            stop: Set it (from another thread) to stop the sweep before its next
                thread (the thread under way is finished); the report says ``stopped``.

        Returns:
            What was done (or would be), thread by thread.

        Raises:
            ConfigError: No policy given and none configured.
        """
        policy = RetentionPolicy.of(ttl) if ttl is not None else self.retention
        if policy is None:
            raise ConfigError(
                "sweep needs a retention policy: open the saver with ttl={'default_ttl': "
                "minutes, 'strategy': 'delete' | 'keep_latest' | 'archive'} or pass one to sweep()."
            )
        return sweep(cast(StoreAccess, self), policy, now=now, dry_run=dry_run, stop=stop)

    def restore(self, thread_id: str, *, dry_run: bool = False) -> ArchivedThread:
        """Bring an archived thread back (its newest archive): it then reads exactly as
        it did when it was archived.

        Args:
            thread_id: The thread.
            dry_run: Change nothing: return the archive a restore would bring back, or
                raise the error it would raise.

        Returns:
            The archive it came from (now gone from ``archive/``), or would come from.

        Raises:
            RestoreError: No archive of the thread, it has a log again, or a run is
                working on it.
            CorruptLogError: Its newest archive is damaged (kept as it is).
            ForeignFileError: A file of its name in ``archive/`` is not an archived log.
        """
        return restore(cast(StoreAccess, self), str(thread_id), dry_run=dry_run).archive

    def archived(self, thread_id: str | None = None) -> list[ArchivedThread]:
        """Archived threads (all, or one thread's archives), oldest first. A damaged
        archive is listed under its thread (:meth:`restore` refuses it).

        Raises:
            ForeignFileError: A file in ``archive/`` is not an archived log of this store.
            CorruptLogError: A damaged archive whose thread cannot be told (its header
                unreadable, no tombstone of it): ``archived(thread_id)`` lists it.
        """
        return archived(cast(StoreAccess, self), None if thread_id is None else str(thread_id))

    async def asweep(
        self,
        ttl: RetentionPolicy | Mapping[str, Any] | float | None = None,
        *,
        dry_run: bool = False,
        now: float | None = None,
        stop: threading.Event | None = None,
    ) -> SweepReport:
        """Async :meth:`sweep`. Cancelling it does not stop the sweep running in its
        worker thread: set ``stop`` for that."""
        return await asyncio.to_thread(lambda: self.sweep(ttl, dry_run=dry_run, now=now, stop=stop))

    async def arestore(self, thread_id: str, *, dry_run: bool = False) -> ArchivedThread:
        """Async :meth:`restore`."""
        return await asyncio.to_thread(lambda: self.restore(thread_id, dry_run=dry_run))
