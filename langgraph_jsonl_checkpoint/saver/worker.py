"""A saver's own worker threads for its async calls (``aput``, ``aput_writes``, ``aget_tuple``).

Why not ``asyncio.to_thread``: the default executor is shared with everything else
(LangGraph runs sync nodes there), so under load a durable append waited its turn for
tens of milliseconds behind other work, and its threads took the GIL in turn around
every system call of a put (lock, stat, write, fdatasync): most of the time went to
threads handing the GIL and the CPU to each other.

Here a few threads per saver (:data:`DEFAULT_THREADS`) run the calls. Two things make
them cheaper than an executor's:

- **Group commit per thread log.** Jobs carry a key (the thread id). A worker takes the
  oldest job whose key no other worker holds, together with every queued job of the same
  key, in order, and hands them to the saver's group runner, which writes them under one
  hold of the thread's locks and makes them durable with one ``fdatasync`` (see
  ``JsonlSaver._run_group``). LangGraph queues a step's ``aput_writes`` and the next
  ``aput`` of one thread at nearly the same time, so this halves the syncs of a busy
  thread. Jobs of one key never run on two workers at once, and run in the order they
  were submitted.
- **Batched wake-ups.** Results go back to each caller's event loop in batches (one
  ``call_soon_threadsafe`` per loop when the queue runs dry, or after
  :data:`FLUSH_SECONDS`), not one wake-up per call.

Threads start on first use and end when the saver is closed (after finishing what was
queued) or after :data:`IDLE_SECONDS` without work. They never hold their saver (a job
holds it while queued, as its caller does), so a saver dropped without
``close()`` is freed as any object is, its files closed, and its threads told to end
(:meth:`Worker.stop_soon`). Any number of event loops may submit:
each result goes back to the loop its caller awaits on.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..disk.forks import renew_in_child

#: Worker threads per saver. On 2 busy cores (benchmarks/micro.py --only async, load
#: 10-13) a worker spends most of a group commit waiting to take the GIL back after its
#: system calls (flock, stat, write, fdatasync), not in them, so 3 workers were the
#: bottleneck: 4 to 6 ran about 20% more steps/s than 3, 8 and 10 fewer (more switching).
DEFAULT_THREADS = 5
#: A worker thread with nothing to do for this long ends (a later call starts another).
IDLE_SECONDS = 5.0
#: Results older than this are handed back before the rest of a worker's queue is done.
FLUSH_SECONDS = 0.001

#: ``(result, exception)`` of one job; exactly one of them is meaningful.
Outcome = tuple[Any, "BaseException | None"]
#: Runs the payloads of one key's jobs, in order, and says how each ended.
GroupRunner = Callable[[Hashable, Sequence[Any]], Sequence[Outcome]]


class _Job:
    __slots__ = ("key", "payload", "loop", "fut", "runner")

    def __init__(self, key: Hashable | None, payload: Any, loop: asyncio.AbstractEventLoop,
                 fut: asyncio.Future[Any], runner: GroupRunner | None = None) -> None:
        self.key = key
        self.runner = runner
        self.payload = payload
        self.loop = loop
        self.fut = fut


def _deliver(done: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    """On the caller's loop: settle each future (a cancelled caller has gone)."""
    for fut, result, exc in done:
        if fut.cancelled():
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)


class Worker:
    """Runs submitted jobs in a few threads of its own; results handed back in batches.

    Args:
        group_runner: Runs the payloads of jobs submitted with a key (see module doc),
            unless the job names its own (:meth:`submit`).
        name: Thread name (for debuggers and ``py-spy``).
        threads: How many threads may run jobs at once.
        owner: Once this object is freed, the threads end (:meth:`stop_soon`).
    """

    def __init__(self, group_runner: GroupRunner | None = None, *, name: str = "jsonl-saver-worker",
                 threads: int = DEFAULT_THREADS, owner: Any = None) -> None:
        self._group_runner = group_runner
        self.name = name
        self._max_threads = max(1, threads)
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[_Job] = deque()
        self._busy: set[Hashable] = set()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._stopping = False
        self._closing = 0  # close() calls waiting for their threads
        renew_in_child(self)  # a forked child forgets its parent's threads (see _after_fork)
        if owner is not None:
            weakref.finalize(owner, self.stop_soon).atexit = False

    def _after_fork(self) -> None:
        """In a forked child: the parent's threads and queued jobs do not exist here."""
        self._cond = threading.Condition(threading.Lock())
        self._jobs = deque()
        self._busy = set()
        self._threads = set()
        self._idle = 0
        self._stopping = False
        self._closing = 0

    async def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` in a worker thread and return (or raise) what it did."""
        return await self._submit(None, fn)

    async def submit(self, key: Hashable, payload: Any, runner: GroupRunner | None = None) -> Any:
        """Hand ``payload`` to the group runner (``runner``, else the worker's) with the
        other queued jobs of ``key``. A ``runner`` bound to a saver holds it only while
        the job is queued or runs: the threads never keep a saver alive.

        A caller that is cancelled stops waiting, but a job that was already submitted
        still runs to its end (as with ``asyncio.to_thread``).
        """
        return await self._submit(key, payload, runner)

    def _submit(self, key: Hashable | None, payload: Any,
                runner: GroupRunner | None = None) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        with self._cond:
            self._jobs.append(_Job(key, payload, loop, fut, runner))
            if self._idle:
                self._cond.notify()
            elif len(self._threads) < self._max_threads:
                if not self._closing:  # (while close() waits, its threads must still end)
                    self._stopping = False
                t = threading.Thread(target=self._main, name=self.name, daemon=True)
                self._threads.add(t)
                t.start()
        return fut

    def close(self) -> None:
        """Finish the queued jobs, then end the threads. Idempotent; the worker may be
        used again afterwards (new threads start)."""
        with self._cond:
            threads = list(self._threads)
            if not threads:
                return
            self._stopping = True
            self._closing += 1
            self._cond.notify_all()
        me = threading.current_thread()
        try:
            for t in threads:
                if t is not me:
                    t.join()
        finally:
            with self._cond:
                self._closing -= 1

    def stop_soon(self) -> None:
        """End the threads once the queued jobs are done, without waiting for them (the
        saver that owns this worker was freed without ``close()``)."""
        with self._cond:
            if self._threads:
                self._stopping = True
                self._cond.notify_all()

    @property
    def running(self) -> int:
        """How many worker threads exist now."""
        with self._cond:
            return len(self._threads)

    # -- the threads ---------------------------------------------------------------

    def _main(self) -> None:
        done: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        oldest = 0.0
        while True:
            batch = self._take(wait=not done)
            if batch is None:
                if done:
                    self._flush(done)  # nothing runnable now: hand back what is done
                    continue
                return  # closed or idle; this thread is already deregistered
            try:
                outcomes = self._run(batch)
            finally:
                if batch[0].key is not None:
                    with self._cond:
                        self._busy.discard(batch[0].key)
                        if self._idle and self._stopping:
                            # Closing: threads that found only jobs of this key went back
                            # to sleep; each must look again (to take them, or to end).
                            self._cond.notify_all()
                        elif self._jobs and self._idle:
                            self._cond.notify()  # jobs of that key may be runnable now
            if not done:
                oldest = time.perf_counter()
            for job, (result, exc) in zip(batch, outcomes):
                done.setdefault(job.loop, []).append((job.fut, result, exc))
            # Nothing of the jobs stays in this frame while it waits for more: a payload
            # may hold its saver, which must be freed once its owner drops it.
            del batch, outcomes, job, result, exc
            # A caller must not wait long for other jobs once its own is done; waking a
            # loop once per job is what this batching saves.
            if time.perf_counter() - oldest >= FLUSH_SECONDS:
                self._flush(done)

    def _run(self, batch: list[_Job]) -> Sequence[Outcome]:
        try:
            if batch[0].key is None:
                return [(batch[0].payload(), None)]
            runner = batch[0].runner or self._group_runner
            assert runner is not None, "a keyed job needs a group runner"
            outcomes = runner(batch[0].key, [j.payload for j in batch])
            if len(outcomes) != len(batch):  # pragma: no cover - a runner bug
                raise RuntimeError("group runner returned the wrong number of outcomes")
            return outcomes
        except BaseException as exc:  # noqa: BLE001 - handed to every awaiting caller
            return [(None, exc)] * len(batch)

    def _take(self, wait: bool) -> list[_Job] | None:
        """The next runnable jobs: the oldest job whose key no worker holds, with the
        queued jobs of its key. ``None`` if there is none (and ``wait`` is false) or the
        thread should end (closed, or idle too long: then it is deregistered here)."""
        me = threading.current_thread()
        with self._cond:
            while True:
                batch = self._pop_runnable()
                if batch is not None:
                    return batch
                if not wait:
                    return None
                if self._stopping and not self._jobs:
                    self._threads.discard(me)
                    return None
                self._idle += 1
                try:
                    woken = self._cond.wait(IDLE_SECONDS)
                finally:
                    self._idle -= 1
                if not woken and not self._jobs and not self._stopping:
                    self._threads.discard(me)
                    return None

    def _pop_runnable(self) -> list[_Job] | None:
        jobs = self._jobs
        for i, job in enumerate(jobs):
            if job.key is None:
                del jobs[i]
                return [job]
            if job.key not in self._busy:
                key = job.key
                self._busy.add(key)
                batch = [j for j in jobs if j.key == key]
                self._jobs = deque(j for j in jobs if j.key != key)
                return batch
        return None

    @staticmethod
    def _flush(done: dict[asyncio.AbstractEventLoop, list[Any]]) -> None:
        for loop, items in done.items():
            try:
                loop.call_soon_threadsafe(_deliver, items)
            except RuntimeError:
                pass  # that loop is closed: nobody is waiting any more
        done.clear()
