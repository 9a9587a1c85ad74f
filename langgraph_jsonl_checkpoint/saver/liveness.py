"""Which thread has a live run: one LangGraph run per thread at a time, across
processes, threads and asyncio tasks.

A run is *live* from its first read of the thread until its graph loop exits (finished,
stopped at an ``interrupt()``, failed, cancelled) or its process dies. It holds the
thread's live-run lock (:mod:`~..disk.runlock`) for that long: the kernel releases it if
the process dies. In the process, three things give it back, whichever comes first:

- the run's graph loop, as it exits: a callback on the loop's exit stack, which
  LangGraph unwinds after the run's last save, on success, error, ``KeyboardInterrupt``,
  task cancellation and a ``stream`` generator closed early alike (a task cancelled
  while the exit waits for its background saves cuts that wait short: the hold then
  goes once those saves have ended);
- the run's end as LangGraph reports it to the run's callbacks (``on_chain_error``),
  when that exit stack was never unwound (:mod:`.run_end`): an error out of the loop's
  ``__enter__`` (a run LangGraph refuses at its start), or a cancel landing as the
  async loop starts its exit task, which it cancels before that task ever ran;
- the loop object itself being freed (``weakref.finalize``): an ``astream`` generator
  dropped after its event loop closed is never resumed to run its ``async with`` exit.
  Its loop usually sits in a reference cycle, so a run that finds the thread held by a
  run *of its own process* asks the cyclic collector first (:func:`_collect_gone_runs`):
  a hold whose run is gone never refuses another run.

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
import contextvars
import gc
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing, suppress
from types import FrameType
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from ..disk.forks import renew_in_child, renew_module_in_child
from ..disk.log import read_only_error
from ..disk.runlock import BRIEF_HOLDS, STATE_UPDATE, RunLock
from ..disk.runlock import HOST as _HOST
from ..disk.store import Store
from ..errors import ThreadBusyError
from .run_end import RunEnd, unfinished_background_tasks
from .runs import CONFIG_KEY_RUNTIME

logger = logging.getLogger(__name__)

#: Seconds between two attempts at a busy thread's lock (growing up to the last).
_POLL = (0.001, 0.002, 0.005, 0.01)

try:  # the loop class LangGraph runs a graph in (stable in langgraph 1.x)
    from langgraph.pregel._loop import PregelLoop as _PregelLoop
except ImportError:  # pragma: no cover - a LangGraph organised otherwise
    _PregelLoop = None  # type: ignore[assignment,misc]

#: Whether the cyclic collector is running (its own callbacks say so): a run's hold
#: given back then is handed to a thread of its own (see :meth:`LiveRuns._release`).
_IN_COLLECTION = [False]


def _collector_phase(phase: str, info: dict[str, Any]) -> None:
    _IN_COLLECTION[0] = phase == "start"


gc.callbacks.append(_collector_phase)


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


class ReadOnlyRuns:
    """What stands for :class:`LiveRuns` on a store opened read-only: a graph run is
    refused as its root loop first reads the thread, before any of its nodes runs (its
    first save would fail, in durability ``"async"`` and ``"exit"`` only after its first
    node ran); a read that is not a run's (``get_state``) goes on."""

    def enter(self, configurable: Mapping[str, Any], thread_id: str, loop: Any) -> None:
        """Refuse a run (``loop``: the caller's graph loop, ``None`` for no run).

        Raises:
            ConfigError: The caller is a LangGraph graph loop.
        """
        if loop is not None:
            raise read_only_error(thread_id)

    async def aenter(self, configurable: Mapping[str, Any], thread_id: str, loop: Any) -> None:
        """:meth:`enter` for an async run."""
        self.enter(configurable, thread_id, loop)


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
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the lock's holder (a thread of the parent) is not here."""
        self._lock = threading.Lock()

    # -- the one attempt -----------------------------------------------------------

    def _take(self, thread_id: str, token: Any, loop: Any, lock: RunLock) -> bool:
        """Hold the thread's lock for this run if it can be had now."""
        # The file operations happen outside self._lock, which the event loop takes too
        # (a run's start and end): it must never wait for them. The flock itself decides
        # between two attempts, as between two processes.
        if not lock.try_acquire(_label(token)):
            return False
        try:  # (a Ctrl-C from here on must not leave the lock taken with no one to free it)
            with self._lock:
                self._held[thread_id] = (token, lock)
            self.store.pin(thread_id, token)
            # Released as the run's loop exits, after its last save; or as LangGraph
            # reports the run ended without its loop entering; or with the loop (see
            # the module docstring).
            end = RunEnd(loop, self._release, self._release_after_saves, thread_id, token)
            loop.stack.callback(end.loop_exited)
            end.watch(loop)
            weakref.finalize(loop, self._release, thread_id, token).atexit = False
        except BaseException:
            self._release(thread_id, token)
            lock.release()  # (idempotent: for an interrupt before the lock was recorded)
            raise
        return True

    def _release_after_saves(self, loop_ref: Any, thread_id: str, token: Any) -> None:
        """The loop's exit: give the hold back once the run's background tasks (its
        saves under durability ``"async"``) have ended. The loop waits for them before
        this runs, but a wait cancelled with the run's task (``task.cancel()`` as the loop
        exits, a second Ctrl-C) does not: the saves go on landing after the run's caller
        got its ``CancelledError``, and a run that started meanwhile would continue from
        a head they are about to move."""
        pending = unfinished_background_tasks(loop_ref())
        if not pending:
            self._release(thread_id, token)
            return
        left = [len(pending)]
        count = threading.Lock()

        def ended(_: Any) -> None:
            with count:
                left[0] -= 1
                last = left[0] == 0
            if last:
                self._release(thread_id, token)

        for task in pending:
            task.add_done_callback(ended)

    def _release(self, thread_id: str, token: Any, handed_off: bool = False) -> None:
        """Give the run's hold back: its lock, its pin of the thread's log, its entry.

        Called by the collector too (the loop's finalizer, the exit of a run's generator
        dropped in a reference cycle), which runs wherever an allocation happens: inside
        a locked section of this object or of the store on this very thread, whose lock
        this would then wait for forever. While the collector runs, the release is
        handed to a thread of its own, which waits for the locks as long as they are
        held (:func:`_collect_gone_runs` waits for it)."""
        if _IN_COLLECTION[0] and not handed_off:
            held = self._held.get(thread_id)  # (a dict read: no lock needed)
            if held is not None and held[0] is token:
                _hand_off(self._release, thread_id, token)
            return
        with self._lock:
            held = self._held.get(thread_id)
            if held is None or held[0] is not token:
                return  # given back already
            held[1].release()  # (first: a flock let go never waits)
        # The entry goes last: a Ctrl-C anywhere before leaves it, and a later release
        # (the loop's finalizer) does each step again; each may be done twice.
        self.store.unpin(thread_id, token)
        with self._lock:
            if self._held.get(thread_id) is held:
                del self._held[thread_id]

    def _refusal(self, thread_id: str, waited: float | None) -> ThreadBusyError:
        holder = self.store.run_lock(thread_id).holder()
        who = holder_words(holder)
        how = (
            f"It waited {waited:.1f} s (busy_timeout) for that run to end. Retry once that run "
            "has ended, or open the saver with a longer busy_timeout."
            if waited is not None
            else "Wait for that run to end and retry, or open the saver with "
            "concurrent_runs='wait' to queue runs on a thread."
        )
        if _of_this_process(holder):
            how += (
                " That run is in this process: if it is a stream()/astream() left unfinished "
                "(a loop over it stopped by an exception or Ctrl-C), it holds the thread until "
                "it is run to its end or closed: call its .close() (await .aclose()), or del it."
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
        if _inside_holder(held[0] if held is not None else None, lock):
            if self.never_refuse:  # "hold": as after busy_timeout, without waiting for itself
                return
            raise _nested_refusal(thread_id)
        started = time.monotonic()
        probed: float | None = None
        try:
            for pause in pauses():
                # A run that has not waited yet lets waiting runs go first.
                queue_ahead = self.wait and lock.others_waiting()
                if not queue_ahead and self._take(thread_id, token, loop, lock):
                    return
                waited = time.monotonic() - started
                probe_due = probed is None or waited - probed >= GONE_PROBE_INTERVAL
                holder = lock.holder() if probe_due or not self.wait else None
                if probe_due and _of_this_process(holder):
                    # Held by a run of this process: it may be a run that is gone but
                    # not yet freed. Ask the collector, then try again at once.
                    probed = waited
                    if _collect_gone_runs() and self._take(thread_id, token, loop, lock):
                        return
                # Refusing modes still wait out a sweep or restore (a few file
                # operations), and a run of this process that is ending.
                limit = self.busy_timeout if self.wait else grace(holder)
                if waited >= limit:
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
        running = asyncio.get_running_loop()
        try:
            while True:
                # A future, not a task (as asyncio.to_thread would make): on Ctrl-C,
                # asyncio.run cancels every task, and this one must end only with its
                # thread's call (the generator cannot be closed while it executes).
                context = contextvars.copy_context()
                attempt = running.run_in_executor(None, context.run, _next_pause, attempts)
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

#: Longest wait for a sweep, restore or state update holding a thread, in a mode that
#: refuses runs.
MAINTENANCE_WAIT = 10.0

#: Seconds between two collections on behalf of one waiting run (a run of this process
#: holding the thread may be gone but not yet freed; see :func:`_collect_gone_runs`).
GONE_PROBE_INTERVAL = 1.0


def _hand_off(release: Callable[[str, Any, bool], None], thread_id: str, token: Any) -> None:
    """Give a run's hold back in a thread of its own (see :meth:`LiveRuns._release`)."""
    giver = threading.Thread(target=release, args=(thread_id, token, True), daemon=True)
    with suppress(RuntimeError):  # (no new thread as the interpreter exits: nor is one needed)
        giver.start()
        _GIVING_BACK[:] = [*(g for g in _GIVING_BACK if g.is_alive()), giver]


def _label(token: Any) -> str:
    """What a run records of itself as the holder's ``run``."""
    return f"{type(token).__name__}@{id(token):x}"


def _inside_holder(held: Any, lock: RunLock) -> bool:
    """Whether the caller runs inside the run holding the thread (a node or tool of it:
    the config LangGraph hands its nodes is the context's runnable config): ``held``,
    this saver's run on the thread, or the run of this process the lock file names
    (one of another saver on the store)."""
    config = var_child_runnable_config.get()
    outer = run_token(config.get("configurable") or {}) if config is not None else None
    if outer is None:
        return False
    if outer is held:
        return True
    holder = lock.holder()
    return holder is not None and _of_this_process(holder) and holder.get("run") == _label(outer)


def _nested_refusal(thread_id: str) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is busy: this graph was invoked on it from inside the run "
        "working on it (a node or tool of that run calling invoke/stream with a config of "
        "its own), and that run cannot end before this call does. This run was refused "
        "before it read or wrote anything. Give the inner graph a thread_id of its own, "
        "or pass it the node's config so that it runs as a subgraph of that run.",
        thread_id=thread_id,
        holder={"pid": os.getpid(), "host": _HOST},
    )


def _of_this_process(holder: dict[str, Any] | None) -> bool:
    """Whether the lock's holder recorded that it is a run of this process."""
    if not holder:
        return False
    ours = holder.get("pid") == os.getpid() and holder.get("host") == _HOST
    return ours and holder.get("run") not in BRIEF_HOLDS


def holder_words(holder: dict[str, Any] | None) -> str:
    """Who holds a thread, for a person: the run (or state update) and its process."""
    if not holder:
        return "another run"
    # (A run's "run" tells runs apart in the file; it means nothing to a person.)
    what = "a state update (update_state)" if holder.get("run") == STATE_UPDATE else "a run"
    return f"{what} of process {holder.get('pid')} on {holder.get('host')}, since {holder.get('since')},"


#: One collection at a time for the whole process (runs waiting in several threads share it).
_collecting = threading.Lock()
#: Releases handed to threads of their own (:func:`_hand_off`; pruned as it adds one).
_GIVING_BACK: list[threading.Thread] = []


def _renew_collecting() -> None:
    """In a forked child: a parent's thread collecting is not here (its copy of the lock
    would keep every collection of the child from starting), nor are its threads."""
    global _collecting
    _collecting = threading.Lock()
    _GIVING_BACK.clear()


renew_module_in_child(_renew_collecting)


def _collect_gone_runs() -> bool:
    """Run the cyclic collector, so that a run that is gone but sits in a reference
    cycle (its loop, dropped with its generator) is freed and gives its hold back.
    ``False`` if another thread is collecting right now (its collection serves both)."""
    if not _collecting.acquire(blocking=False):
        return False
    try:
        gc.collect()
        end = time.monotonic() + OWN_RUN_GRACE
        for giver in list(_GIVING_BACK):  # (the holds the collection gave back)
            giver.join(max(0.0, end - time.monotonic()))
    finally:
        _collecting.release()
    return True


#: Longest wait for a run of this process, in a mode that refuses runs: a run ending
#: as its event loop gets round to it (an ``astream`` generator its cancelled consumer
#: left behind is closed by the loop's finalizer a few iterations later, and makes its
#: last saves then) is over in moments; a run still working is refused after this.
OWN_RUN_GRACE = 1.0


def grace(holder: dict[str, Any] | None) -> float:
    """How long a refusing mode waits for this holder before it refuses: a sweep,
    restore or state update (of any process), or a lock changing hands (an empty
    record: taken and not yet written, or being released: the record is cleared before
    the lock goes), up to ``MAINTENANCE_WAIT``; a run of this process up to
    ``OWN_RUN_GRACE``; another process's run not at all."""
    if not holder or holder.get("run") in BRIEF_HOLDS:
        return MAINTENANCE_WAIT
    return OWN_RUN_GRACE if _of_this_process(holder) else 0.0


def pauses() -> Iterator[float]:
    yield from _POLL
    while True:
        yield _POLL[-1]


def _next_pause(attempts: Iterator[float]) -> float | None:
    """The next attempt at a thread's lock: ``None`` once taken, else the pause before
    the next one (a worker thread runs it)."""
    return next(attempts, None)
