"""Which thread has a live run: one LangGraph run per thread at a time, across
processes, threads and asyncio tasks.

A run is *live* from its first read of the thread until its graph loop exits (finished,
stopped at an ``interrupt()``, failed, cancelled) or its process dies. It holds the
thread's live-run lock (:mod:`~..disk.runlock`) for that long: the kernel releases it if
the process dies, and the run's graph loop releases it as it exits (a callback on the
loop's exit stack, which LangGraph unwinds after the run's last save, on success,
error, ``KeyboardInterrupt`` and task cancellation alike).

A run is told by LangGraph's ``RunControl``: one object per invocation, shared by its
subgraphs and parallel branches, so they are that run, not others. The root graph's
loop is the caller of the run's first ``get_tuple`` (LangGraph reads the thread in the
loop's ``__enter__``), found by looking one or two frames up; where it cannot be found
(a saver driven directly, a LangGraph that works otherwise), no lock is taken and the
run is checked as with ``concurrent_runs="allow"``.

With another run live, a new run is refused (``"refuse"``: :class:`ThreadBusyError`
before it reads or writes anything) or waits until it ends (``"wait"``, bounded by
``busy_timeout``), then reads the thread's head. ``"hold"`` (for the LangGraph server,
which decides itself which runs may overlap) waits like ``"wait"`` but is never
refused: after ``busy_timeout`` it goes ahead without the lock. A sweep or restore
holding the lock (:data:`~..disk.runlock.MAINTENANCE`, a few file operations) is waited
for in every mode, never a reason to refuse. The wait is written once, as one
non-blocking attempt; the sync caller sleeps between attempts, the async one awaits
and makes each attempt (file operations) in a worker thread, off the event loop.
Waiting runs go before runs that have not waited (see :mod:`~..disk.runlock`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import closing, suppress
from types import FrameType
from typing import Any

from ..disk.runlock import MAINTENANCE, RunLock
from ..disk.store import Store
from ..errors import ThreadBusyError
from .runs import CONFIG_KEY_RUNTIME

logger = logging.getLogger(__name__)

#: Seconds between two attempts at a busy thread's lock (growing up to the last).
_POLL = (0.001, 0.002, 0.005, 0.01)

try:  # the loop class LangGraph runs a graph in (stable in langgraph 1.x)
    from langgraph.pregel._loop import PregelLoop as _PregelLoop
except ImportError:  # pragma: no cover - a LangGraph organised otherwise
    _PregelLoop = None  # type: ignore[assignment,misc]


def calling_loop(depth: int = 4) -> Any:
    """The LangGraph graph loop among the callers of the caller (``None`` if none)."""
    if _PregelLoop is None:
        return None
    frame: FrameType | None = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, _PregelLoop):
            return candidate
        frame = frame.f_back
    return None


def run_token(configurable: Mapping[str, Any]) -> Any:
    """What tells one run from another: its ``RunControl`` (else its ``Runtime``)."""
    runtime = configurable.get(CONFIG_KEY_RUNTIME)
    if runtime is None:
        return None
    control = getattr(runtime, "control", None)
    return control if control is not None else runtime


class LiveRuns:
    """The live-run locks this saver's runs hold, and the policy for a busy thread.

    Args:
        store: The store.
        wait: Wait for a live run to end (``True``) or refuse the new run.
        busy_timeout: Longest wait, in seconds.
        never_refuse: After ``busy_timeout``, go ahead without the lock instead of
            refusing (``concurrent_runs="hold"``; implies ``wait``).
    """

    def __init__(self, store: Store, *, wait: bool, busy_timeout: float, never_refuse: bool = False) -> None:
        self.store = store
        self.wait = wait or never_refuse
        self.never_refuse = never_refuse
        self.busy_timeout = busy_timeout
        self._held: dict[str, tuple[Any, RunLock]] = {}
        self._lock = threading.Lock()

    # -- the one attempt -----------------------------------------------------------

    def _take(self, thread_id: str, token: Any, loop: Any, lock: RunLock) -> bool:
        """Hold the thread's lock for this run if it can be had now."""
        # The file operations happen outside self._lock, which the event loop takes too
        # (a run's start and end): it must never wait for them. The flock itself decides
        # between two attempts, as between two processes.
        if not lock.try_acquire(f"{type(token).__name__}@{id(token):x}"):
            return False
        with self._lock:
            self._held[thread_id] = (token, lock)
        # Released as the run's loop exits, after its last save (see module docstring).
        loop.stack.callback(self._release, thread_id, token)
        return True

    def _release(self, thread_id: str, token: Any) -> None:
        with self._lock:
            held = self._held.get(thread_id)
            if held is None or held[0] is not token:
                return
            del self._held[thread_id]
        held[1].release()

    def _refusal(self, thread_id: str, waited: float | None) -> ThreadBusyError:
        holder = self.store.run_lock(thread_id).holder()
        who = (
            f"run {holder.get('run')} of process {holder.get('pid')} on {holder.get('host')}, "
            f"since {holder.get('since')}" if holder else "another run"
        )
        how = (
            f"It waited {waited:.1f} s (busy_timeout) for that run to end."
            if waited is not None
            else "Wait for that run to end and retry, or open the saver with "
            "concurrent_runs='wait' to queue runs on a thread."
        )
        return ThreadBusyError(
            f"thread {thread_id!r} is busy: {who} is still working on it. This run was "
            f"refused before it read or wrote anything. {how}",
            thread_id=thread_id,
            holder=holder,
        )

    # -- the wait, once; a sync and an async driver ------------------------------------

    def _entering(
        self, configurable: Mapping[str, Any], thread_id: str, loop: Any
    ) -> Generator[float, None, None]:
        """Attempts at the lock; yields how long to pause before the next one."""
        token = run_token(configurable)
        if token is None or loop is None or getattr(loop, "is_nested", True):
            return
        with self._lock:
            held = self._held.get(thread_id)
        if held is not None and held[0] is token:
            return  # the run reading its thread again: it holds the lock already
        lock = self.store.run_lock(thread_id)
        started = time.monotonic()
        try:
            for pause in _pauses():
                # A run that has not waited yet lets waiting runs go first.
                queue_ahead = self.wait and lock.others_waiting()
                if not queue_ahead and self._take(thread_id, token, loop, lock):
                    return
                waited = time.monotonic() - started
                # Refusing modes still wait out a sweep or restore (a few file operations).
                limit = self.busy_timeout if self.wait else MAINTENANCE_WAIT
                if waited >= limit or not (self.wait or _maintenance(lock, waited)):
                    if self.never_refuse:
                        logger.warning(
                            "thread %r: still busy after %.1f s (busy_timeout); this run goes "
                            "ahead without the live-run lock (concurrent_runs='hold')", thread_id, waited,
                        )
                        return
                    raise self._refusal(thread_id, waited if self.wait else None)
                lock.start_waiting()
                yield max(0.0, min(pause, limit - waited))
        finally:
            lock.stop_waiting()

    def enter(self, configurable: Mapping[str, Any], thread_id: str, loop: Any) -> None:
        """Before a root graph loop's first read: hold the thread, wait, or refuse.

        Raises:
            ThreadBusyError: Another run is live (and, waiting, stayed live).
        """
        with closing(self._entering(configurable, thread_id, loop)) as attempts:
            for pause in attempts:
                time.sleep(pause)

    async def aenter(self, configurable: Mapping[str, Any], thread_id: str, loop: Any) -> None:
        """:meth:`enter` for an async run: waits without blocking the event loop, and
        makes each attempt (file operations) in a worker thread.

        A task cancelled meanwhile gets its ``CancelledError``; an attempt still running
        in its thread then ends there, and whatever it took is let go (the run's loop,
        which would have let it go on exit, never starts)."""
        token = run_token(configurable)
        if token is None or loop is None or getattr(loop, "is_nested", True):
            return  # not a root graph loop's first read: nothing to take (and no thread hop)
        with self._lock:
            held = self._held.get(thread_id)
        if held is not None and held[0] is token:
            return  # the run reading its thread again: it holds the lock already
        attempts = self._entering(configurable, thread_id, loop)
        attempt: asyncio.Future[float | None] | None = None
        try:
            while True:
                attempt = asyncio.ensure_future(asyncio.to_thread(next, attempts, None))
                pause = await asyncio.shield(attempt)
                if pause is None:
                    return
                await asyncio.sleep(pause)
        except BaseException:
            if attempt is not None and not attempt.done():
                # An attempt is a few file operations: let it end, then undo what it took.
                with suppress(asyncio.CancelledError):
                    await asyncio.wait([attempt])
            if attempt is not None and not attempt.done():  # cancelled again while waiting
                attempt.add_done_callback(lambda _: self._abandon(attempts, thread_id, token, attempt))
            else:
                self._abandon(attempts, thread_id, token, attempt)
            raise

    def _abandon(
        self, attempts: Generator[float, None, None], thread_id: str, token: Any,
        attempt: asyncio.Future[float | None] | None,
    ) -> None:
        """A run gave up before it began: end its attempts, let go what they took."""
        if attempt is not None and not attempt.cancelled():
            attempt.exception()  # seen: the run is over, its refusal has no one to tell
        attempts.close()
        self._release(thread_id, token)

    def close(self) -> None:
        """Let every lock go (the saver is closed)."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for _, lock in held:
            lock.release()


#: Longest wait for a sweep or restore holding a thread, in a mode that refuses runs.
MAINTENANCE_WAIT = 10.0


def _maintenance(lock: RunLock, waited: float) -> bool:
    """Whether the lock's holder is a sweep or restore (it lets go within moments), or
    may be one: an empty record means the lock is changing hands (taken, record not yet
    written; or being released: the record is cleared before the lock goes), so the
    caller tries again, within its bound (``MAINTENANCE_WAIT``)."""
    holder = lock.holder()
    if not holder:
        return True
    return holder.get("run") == MAINTENANCE


def _pauses() -> Iterator[float]:
    yield from _POLL
    while True:
        yield _POLL[-1]
