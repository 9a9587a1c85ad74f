"""The saver's session-memory methods: ``session_memory`` and ``asession_memory`` (a mixin
of :class:`~.jsonl_saver.JsonlSaver`).

The memory is kept by a :class:`~..memory.keeper.MemoryKeeper` on each thread log, which
the saver attaches as the store opens the log; once the thread's memory was asked for,
it follows every append. These methods bring it up to date with the log (the records
appended before it was asked for, or by another process) and apply the budget.
"""

from __future__ import annotations

import asyncio

from ..disk.log import ThreadLog
from ..disk.store import Store
from ..memory.keeper import MemoryKeeper
from ..memory.model import DEFAULT_BUDGET, SessionMemory, fit_budget
from ..values.codec import ValueCodec
from .config import healing


def keep_session_memory(store: Store, codec: ValueCodec) -> None:
    """Attach a memory keeper to every log ``store`` opens from now on."""

    def attach(log: ThreadLog) -> None:
        MemoryKeeper.attach(log, codec)

    store.on_open.append(attach)


class SessionMemoryMethods:
    """``session_memory`` and its async twin (mixed into ``JsonlSaver``)."""

    store: Store

    @property
    def codec(self) -> ValueCodec:
        """The saver's value codec (``JsonlSaver`` has it)."""
        raise NotImplementedError

    def session_memory(self, thread_id: str, *, budget: int | None = DEFAULT_BUDGET) -> SessionMemory:
        """The thread's session memory: its current goal, work completed, failed
        attempts, decisions taken, open items and counts, derived from its log by rules
        (deterministic; no model is called).

        Args:
            thread_id: The thread (an absent thread has an empty memory).
            budget: Most characters of its text (:meth:`SessionMemory.to_text`); older
                items are folded into counts. ``None``: every item kept.

        Returns:
            The memory, as of the log's last committed record.
        """
        thread_id = str(thread_id)
        log = self.store.thread_log(thread_id)
        keeper = MemoryKeeper.attach(log, self.codec)
        keeper.wanted = True  # asked for: its appends are followed from now on
        if not self.store.has_thread(thread_id):
            return SessionMemory(thread_id)
        memory = healing(keeper.memory)
        return memory if budget is None else fit_budget(memory, budget)

    async def asession_memory(self, thread_id: str, *, budget: int | None = DEFAULT_BUDGET) -> SessionMemory:
        """Async :meth:`session_memory`."""
        return await asyncio.to_thread(self.session_memory, thread_id, budget=budget)
