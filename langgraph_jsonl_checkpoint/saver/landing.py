"""Waiting until a checkpoint is in a thread's log.

The replay adapter holds a side-effecting tool call until the checkpoint its tool node
runs from is durable (LangGraph saves it in the background under the default
``durability="async"``, while the node already runs): a crash after the tool's effect
must leave a checkpoint the resumed run starts from, or the run re-plans from the one
before and the tool runs again. :class:`CheckpointLanding` answers "is it in the log
yet?" from the index and wakes waiters as this saver's puts land; other processes'
puts are seen by looking again every 50 ms at most.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from ..disk.forks import renew_in_child
from ..disk.store import Store
from .config import healing

#: Longest sleep between two looks for another process's put.
_LOOK_AGAIN = 0.05


class CheckpointLanding:
    """Is a checkpoint in the log; wait until it is.

    Args:
        store: The saver's store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cond = threading.Condition()
        self._count = 0  # puts landed so far: a waiter looks again when it moves
        self._futures: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the condition's holder (a thread of the parent) is not here."""
        self._cond = threading.Condition()

    def stored(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> bool:
        """Whether the thread's log holds this checkpoint (committed, so durable)."""
        log = self.store.thread_log(thread_id)

        def look() -> bool:
            with log.mutex:
                return checkpoint_id in log.refresh().checkpoints.get(checkpoint_ns, {})

        return healing(look)

    def landed(self) -> None:
        """A put of this saver is durable: wake the waiters."""
        with self._cond:
            self._count += 1
            self._cond.notify_all()
            futures, self._futures = self._futures, set()
        for loop, future in futures:
            loop.call_soon_threadsafe(_settle, future)

    def wait(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float) -> bool:
        """Wait until the checkpoint is in the log (``False``: not within ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                seen = self._count
            if self.stored(thread_id, checkpoint_ns, checkpoint_id):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with self._cond:
                if self._count == seen:
                    self._cond.wait(min(left, _LOOK_AGAIN))

    async def await_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float
    ) -> bool:
        """:meth:`wait` for an event loop (the look runs in a thread; the wait awaits)."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while True:
            future: asyncio.Future[None] = loop.create_future()
            with self._cond:
                self._futures.add((loop, future))
            try:
                if await asyncio.to_thread(self.stored, thread_id, checkpoint_ns, checkpoint_id):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                try:
                    await asyncio.wait_for(future, min(left, _LOOK_AGAIN))
                except TimeoutError:
                    pass
            finally:
                with self._cond:
                    self._futures.discard((loop, future))


def _settle(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)
