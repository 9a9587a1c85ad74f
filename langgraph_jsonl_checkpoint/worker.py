"""A saver's own worker thread for its async writes (``aput``, ``aput_writes``, ...).

Why not ``asyncio.to_thread``: the default executor is shared with everything else
(LangGraph runs sync nodes there), so under load a durable append waited its turn for
tens of milliseconds behind other work, and each of the executor's threads took the GIL
in turn around every system call of a put (lock, stat, write, fdatasync), so most of the
time went to threads handing the GIL and the CPU to each other. Here one thread per
saver runs the sync methods, unchanged (same locks, same ``fdatasync`` before a call
counts as done), one after another in the order they were submitted, and hands results
back to each event loop in batches: every job finished by the time the queue runs dry
is delivered with one ``call_soon_threadsafe`` per loop.

The thread starts on first use and ends when the saver is closed (after finishing what
was queued) or after :data:`IDLE_SECONDS` without work, so a saver that is dropped
without ``close()`` leaves no thread behind for long. Any number of event loops may
submit: each result goes back to the loop its caller awaits on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: A worker thread with nothing to do for this long ends (a later call starts another).
IDLE_SECONDS = 5.0

#: Results older than this are handed back before the rest of a batch is done.
FLUSH_SECONDS = 0.001

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


def _deliver(done: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    """On the caller's loop: settle each future (a cancelled caller has gone)."""
    for fut, result, exc in done:
        if fut.cancelled():
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)


class SerialWorker:
    """Runs submitted callables in a few threads of its own, results handed back in batches.

    Args:
        name: Thread name (for debuggers and ``py-spy``).
        threads: How many threads may run jobs at once.
    """

    def __init__(self, name: str = "jsonl-saver-writer", threads: int = 3) -> None:
        self.name = name
        self._max_threads = max(1, threads)
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[_Job] = deque()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._stopping = False

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a worker thread and return (or raise) what it did.

        A caller that is cancelled stops waiting, but a job that was already submitted
        still runs to its end (as with ``asyncio.to_thread``).
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._cond:
            self._jobs.append((fn, loop, fut))
            if self._idle:
                self._cond.notify()
            elif len(self._threads) < self._max_threads:
                self._stopping = False
                t = threading.Thread(target=self._main, name=self.name, daemon=True)
                self._threads.add(t)
                t.start()
        return await fut

    def close(self) -> None:
        """Finish the queued jobs, then end the threads. Idempotent; the worker may be
        used again afterwards (new threads start)."""
        with self._cond:
            threads = list(self._threads)
            if not threads:
                return
            self._stopping = True
            self._cond.notify_all()
        me = threading.current_thread()
        for t in threads:
            if t is not me:
                t.join()

    @property
    def running(self) -> int:
        """How many worker threads exist now."""
        return len(self._threads)

    def _main(self) -> None:
        done: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        oldest = 0.0
        while True:
            job = self._next_job(wait=not done)
            if job is None:
                if done:
                    self._flush(done)  # the queue ran dry: hand back what is done
                    continue
                return  # closed or idle; this thread is already deregistered
            fn, loop, fut = job
            try:
                item = (fut, fn(), None)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                item = (fut, None, exc)
            if not done:
                oldest = time.perf_counter()
            done.setdefault(loop, []).append(item)
            # A caller must not wait long for other jobs once its own is done; waking a
            # loop once per job is what this batching saves.
            if time.perf_counter() - oldest >= FLUSH_SECONDS:
                self._flush(done)

    def _next_job(self, wait: bool) -> _Job | None:
        """The next queued job; ``None`` if there is none (and ``wait`` is false) or the
        thread should end (closed, or idle too long: then it is deregistered here)."""
        me = threading.current_thread()
        with self._cond:
            while not self._jobs:
                if not wait:
                    return None
                if self._stopping:
                    self._threads.discard(me)
                    return None
                self._idle += 1
                try:
                    woken = self._cond.wait(IDLE_SECONDS)
                finally:
                    self._idle -= 1
                if not woken and not self._jobs:
                    self._threads.discard(me)
                    return None
            return self._jobs.popleft()

    @staticmethod
    def _flush(done: dict[asyncio.AbstractEventLoop, list[Any]]) -> None:
        for loop, items in done.items():
            try:
                loop.call_soon_threadsafe(_deliver, items)
            except RuntimeError:
                pass  # that loop is closed: nobody is waiting any more
        done.clear()
