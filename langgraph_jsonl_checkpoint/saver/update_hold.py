"""A state update made outside a run holds the thread while it is written.

``update_state`` (an admin's edit, a second request) on a thread a run is working on
would move the head that run continues from: the run's next save is then refused
(``ConcurrentRunError``) and its step lost. A put of a state update (metadata source
``"update"`` or ``"fork"``, no run ``Runtime`` in its config) therefore takes the
thread's live-run lock (:mod:`.liveness`) for the time it is written, and is refused
with :class:`~..errors.ThreadBusyError` while another run is live, in ``"refuse"`` and
``"wait"`` alike: the update was made from the state it read, and written after the run
it would fork the thread from before the run's turn. ``"hold"`` (the server decides)
never refuses.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from ..disk.runlock import STATE_UPDATE
from ..errors import ThreadBusyError
from .liveness import LiveRuns, grace, holder_words, pauses
from .runs import CONFIG_KEY_RUNTIME

#: The sources LangGraph gives the checkpoint of a state update (``update_state``,
#: ``bulk_update_state``; ``"fork"``: ``as_node="__copy__"``).
UPDATE_SOURCES = frozenset({"update", "fork"})

#: What :func:`held_update` gives for a put that is not a state update to hold.
NO_HOLD: AbstractContextManager[None] = nullcontext()


def held_update(live: Any, config: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> Any:
    """The hold a put needs: :func:`updating` for a state update made outside a run
    (``update_state``), else :data:`NO_HOLD`."""
    configurable = (config or {}).get("configurable") or {}
    if (isinstance(live, LiveRuns) and CONFIG_KEY_RUNTIME not in configurable
            and isinstance(metadata, Mapping) and metadata.get("source") in UPDATE_SOURCES
            and "thread_id" in configurable):
        return updating(live, str(configurable["thread_id"]))
    return NO_HOLD


@contextmanager
def updating(live: LiveRuns, thread_id: str) -> Iterator[None]:
    """Hold the thread while a state update is written (see the module docstring); a
    sweep, or a run of this process that is ending, is waited for as for runs.

    Raises:
        ThreadBusyError: Another run is live.
    """
    if live.never_refuse:
        yield
        return
    lock, started = live.store.run_lock(thread_id), time.monotonic()
    try:
        for pause in pauses():
            if lock.try_acquire(STATE_UPDATE):
                break
            waited, holder = time.monotonic() - started, lock.holder()
            if waited >= grace(holder):
                who = holder_words(holder)
                raise ThreadBusyError(
                    f"thread {thread_id!r} is busy: {who} is still working on it. update_state "
                    "was refused and nothing was written (written now, it would move the thread "
                    "under that run, whose next step would then be refused). Read the state "
                    "again and update it once that run has ended (or stopped at an interrupt()).",
                    thread_id=thread_id, holder=holder,
                )
            time.sleep(max(0.0, min(pause, grace(holder) - waited)))
        yield
    finally:
        lock.release()
