"""Which threads each run of this process wrote to, so ``delete_for_runs`` (the
LangGraph server's rollback of a cancelled run) opens those threads only, not every
thread of the store.

Every saver of one store directory in the process shares one table (the server opens a
saver per OS thread; the run and its rollback may be on different ones). A run is
noted before its first checkpoint is written, so no checkpoint of a noted run lands in
a thread the table does not name; a copy of a thread adds the copy to the runs that
wrote the source. A run the table does not know (written by another process, before
a restart, or forgotten: the table keeps the last :data:`KEPT_RUNS` runs) is looked
for in every thread, as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from ..disk.forks import renew_module_in_child

#: Runs remembered per store (the least recently written are forgotten first).
KEPT_RUNS = 10_000

_lock = threading.Lock()
_tables: dict[str, OrderedDict[str, set[str]]] = {}


def _renew() -> None:
    """In a forked child: the lock's holder (a thread of the parent) is not here."""
    global _lock
    _lock = threading.Lock()


renew_module_in_child(_renew)


def noted(store_key: str, run_id: Any, thread_id: str) -> None:
    """A checkpoint of ``run_id`` is about to be written to ``thread_id``."""
    if run_id is None:
        return
    run = str(run_id)
    with _lock:
        table = _tables.setdefault(store_key, OrderedDict())
        threads = table.get(run)
        if threads is None:
            threads = table[run] = set()
            while len(table) > KEPT_RUNS:
                table.popitem(last=False)
        else:
            table.move_to_end(run)
        threads.add(thread_id)


def copied(store_key: str, source: str, target: str) -> None:
    """``source`` was copied to ``target``: its runs' checkpoints are in both now."""
    with _lock:
        for threads in _tables.get(store_key, {}).values():
            if source in threads:
                threads.add(target)


def threads_of(store_key: str, run_ids: Iterable[str]) -> set[str] | None:
    """The threads the given runs wrote to; ``None`` if one of them is not known here."""
    found: set[str] = set()
    with _lock:
        table: dict[str, set[str]] = _tables.get(store_key, {})
        for run in run_ids:
            threads = table.get(str(run))
            if threads is None:
                return None
            found |= threads
    return found
