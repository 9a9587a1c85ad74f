"""How a live run's end is noticed, besides the loop being freed (see :mod:`.liveness`).

A run's hold goes back as its graph loop's exit stack unwinds (after the run's last
save). Two endings never unwind that stack, and LangGraph then reports the end to the
run's own callbacks (``on_chain_error``), where :class:`RunEnd` gives the hold back:

- an error out of the loop's ``__enter__`` (a run LangGraph refuses at its start: an
  unknown interrupt id under strict resume, a bad resume map): the loop never entered;
- a cancel that lands as the async loop starts to exit: the loop unwinds its stack in
  a task of its own (``asyncio.create_task(stack.__aexit__(...))``), and the run's task
  cancelled while it awaits that task cancels it before it ever ran. The run's task
  then keeps the loop alive for as long as its error is kept (a task whose error
  nobody fetched, ``asyncio.gather(..., return_exceptions=True)``), so waiting for the
  loop to be freed could hold the thread indefinitely.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

try:  # the loop classes LangGraph runs a graph in (stable in langgraph 1.x)
    from langgraph.pregel._loop import AsyncPregelLoop as _AsyncPregelLoop
    from langgraph.pregel._loop import SyncPregelLoop as _SyncPregelLoop

    #: The code of the loops' ``__enter__`` / ``__aenter__``: an error that came out of
    #: one of them ended a run whose exit stack will never be unwound.
    _ENTER_CODES = frozenset({_SyncPregelLoop.__enter__.__code__, _AsyncPregelLoop.__aenter__.__code__})
except ImportError:  # pragma: no cover - a LangGraph organised otherwise
    _ENTER_CODES = frozenset()

#: Gives a run's hold back: ``(thread_id, token)``.
Release = Callable[[str, Any], None]
#: Gives it back once the loop's background saves have ended: ``(loop_ref, thread_id, token)``.
ReleaseAfterSaves = Callable[[Any, str, Any], None]


class RunEnd(BaseCallbackHandler):
    """One run's hold: given back by the loop's exit stack (:meth:`loop_exited`), or, if
    the run ended without that stack unwinding, as LangGraph reports the end
    (``on_chain_error``, called after the loop's ``async with`` / ``with`` is over)."""

    run_inline = True  # called where the run ends, in order, never in an executor

    def __init__(self, loop: Any, release: Release, release_after_saves: ReleaseAfterSaves,
                 thread_id: str, token: Any) -> None:
        self._loop = weakref.ref(loop)
        self._release = release
        self._release_after_saves = release_after_saves
        self._thread_id = thread_id
        self._token = token
        self._exited = False

    def watch(self, loop: Any) -> None:
        """Join the run's own callbacks (not inherited by its nodes)."""
        manager = getattr(loop, "manager", None)
        handlers = getattr(manager, "handlers", None)
        if manager is not None and isinstance(handlers, list):
            manager.handlers = [*handlers, self]

    def loop_exited(self) -> None:
        """On the loop's exit stack: the hold goes once the run's saves have ended."""
        self._exited = True
        self._release_after_saves(self._loop, self._thread_id, self._token)

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        loop = self._loop()
        if loop is None or _came_out_of_enter(error, loop):
            self._release(self._thread_id, self._token)
        elif not self._exited:  # its exit task was cancelled before it ran
            self._release_after_saves(self._loop, self._thread_id, self._token)


def unfinished_background_tasks(loop: Any) -> list[Any]:
    """The tasks still running in ``loop``'s background executor (LangGraph's
    ``BackgroundExecutor`` / ``AsyncBackgroundExecutor``, whose bound ``submit`` the loop
    keeps): its saves and parallel nodes. None for a loop organised otherwise."""
    executor = getattr(getattr(loop, "submit", None), "__self__", None)
    tasks = getattr(executor, "tasks", None)
    if not isinstance(tasks, dict):
        return []
    return [task for task in list(tasks) if not task.done()]


def _came_out_of_enter(error: BaseException, loop: Any) -> bool:
    """Whether ``error`` was raised in (or passed through) ``loop``'s ``__enter__``."""
    tb = error.__traceback__
    for _ in range(10_000):  # bounded: a traceback is finite, but never trust a walk
        if tb is None:
            return False
        frame = tb.tb_frame
        if frame.f_code in _ENTER_CODES and frame.f_locals.get("self") is loop:
            return True
        tb = tb.tb_next
    return False
