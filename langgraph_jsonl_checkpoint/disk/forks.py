"""A forked child starts its in-process locks afresh.

A process that forks while another of its threads holds one of the package's
in-process locks (a ``multiprocessing`` pool started by a node while LangGraph saves
the last checkpoint in a background thread; ``gunicorn --preload``) gives its child a
copy of that lock, held by a thread that does not exist in the child: the child would
wait for it for good on first use. Every object (or module) keeping such a lock says
so here; one ``os.register_at_fork(after_in_child=...)`` hook then lets each make its
locks (and whatever their holders were half way through) anew in the child. Nothing
of this runs outside a fork: the locks' uses stay as they are.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any, Protocol


class Renewable(Protocol):
    """An object whose in-process locks a forked child makes anew."""

    def _after_fork(self) -> None: ...


#: Objects of this process to renew in a forked child (each forgotten with its object).
_OBJECTS: weakref.WeakSet[Any] = weakref.WeakSet()
#: Module-level renewals (a module's own lock), in the order they were registered.
_FUNCTIONS: list[Callable[[], None]] = []


def renew_in_child(obj: Renewable) -> None:
    """Call ``obj._after_fork()`` in every child this process forks from now on (for
    as long as ``obj`` lives)."""
    _OBJECTS.add(obj)


def renew_module_in_child(renew: Callable[[], None]) -> None:
    """Call ``renew()`` in every child this process forks (a module's own locks)."""
    _FUNCTIONS.append(renew)


def _in_child() -> None:
    for renew in _FUNCTIONS:
        renew()
    for obj in list(_OBJECTS):
        obj._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)
