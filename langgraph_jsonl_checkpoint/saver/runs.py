"""Which checkpoint each LangGraph run in this process expects to be its thread's head.

Two workers advancing one thread at once would otherwise fork it silently: each reads
the latest checkpoint, each appends its steps after it, and the one that writes second
leaves the other's branch behind without anyone having asked for a fork. A checkpoint
log alone cannot tell that apart from deliberate time travel (continuing from an old
checkpoint), so the saver watches how each run *started*:

- a run that read the thread's latest checkpoint (``get_tuple`` without a
  ``checkpoint_id``) expects to stay on the head: if, when it puts its next checkpoint,
  the thread's newest checkpoint is not that run's own parent, another run advanced the
  thread underneath it;
- a run that read a checkpoint by id is time travelling: its first put forks on purpose
  and is never refused; from then on it is on its own head like any other run.

A run is recognised by the ``Runtime`` object LangGraph puts into every config of one
invocation (``configurable["__pregel_runtime"]``, the same object from the first read
to the last put of that run, a different one for each subgraph and each invocation).
Calls without it (a saver driven directly) are never checked. The tracker keeps the
last :data:`MAX_RUNS` runs it has seen, by the ``id`` of their ``Runtime`` and the id of
the task that runs them (``configurable["__pregel_task_id"]``; none for a root run): it
holds no reference to them (a ``Runtime`` carries the run's context and previous
result, which must not outlive the run; it supports no weak references). A forgotten
run is simply not checked. A finished run's ``Runtime`` address may be taken by a later
one. A root run always reads before its first put, which replaces what was noted; a
subgraph replayed by LangGraph does not (its parent hands it its state), but it runs
in a task of another id, so it never finds the notes of an earlier run at its address.

The tracker also remembers a run whose first write was refused for good (the answer of
a ``Command(resume=...)`` to a thread deleted while it waited: LangGraph goes on from
the graph's start): the rest of that run's writes to the thread are refused with it
(whatever ``enabled`` says), until the same run object reads the thread again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..disk.forks import renew_in_child

try:  # the keys LangGraph stores the run's Runtime and task id under (stable in langgraph 1.x)
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME as CONFIG_KEY_RUNTIME
    from langgraph._internal._constants import CONFIG_KEY_TASK_ID as CONFIG_KEY_TASK_ID
except ImportError:  # pragma: no cover - older or reorganised langgraph
    CONFIG_KEY_RUNTIME = "__pregel_runtime"
    CONFIG_KEY_TASK_ID = "__pregel_task_id"

def in_run(configurable: Mapping[str, Any]) -> bool:
    """Whether a saver call comes from a running graph (not ``get_state`` and the like)."""
    return CONFIG_KEY_RUNTIME in configurable


MAX_RUNS = 4096
"""Runs remembered at once (the least recently seen is forgotten first)."""

TIME_TRAVEL = object()
"""Marker: the run addressed a checkpoint by id, so its next put may fork."""

NEW_THREAD = object()
"""Marker: the run found no checkpoint in the namespace (a new thread)."""


class RunTracker:
    """Remember, per run and namespace, the checkpoint the run's next put must follow.

    Args:
        enabled: ``False`` (``concurrent_runs="unchecked"``): note nothing, check nothing.
        max_runs: Runs remembered at once.
    """

    def __init__(self, *, enabled: bool = True, max_runs: int = MAX_RUNS) -> None:
        self._runs: OrderedDict[tuple[int, Any], dict[tuple[str, str], Any]] = OrderedDict()
        #: Runs whose writes to a thread are refused, with why (kept whatever ``enabled``).
        self._refused: OrderedDict[tuple[int, Any, str], str] = OrderedDict()
        self._enabled = enabled
        self._max = max_runs
        self._lock = threading.Lock()
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the lock's holder (a thread of the parent) is not here."""
        self._lock = threading.Lock()

    def _tips(self, configurable: Mapping[str, Any], create: bool) -> dict[tuple[str, str], Any] | None:
        runtime = configurable.get(CONFIG_KEY_RUNTIME) if self._enabled else None
        if runtime is None:
            return None
        key = (id(runtime), configurable.get(CONFIG_KEY_TASK_ID))
        tips = self._runs.get(key)
        if tips is not None:
            self._runs.move_to_end(key)
            return tips
        if not create:
            return None
        tips = self._runs[key] = {}
        while len(self._runs) > self._max:
            self._runs.popitem(last=False)
        return tips

    def read(self, configurable: Mapping[str, Any], thread_id: str, ns: str,
             found: str | None) -> None:
        """Note a ``get_tuple``: by id (time travel) or of the latest (``found``)."""
        with self._lock:
            runtime = configurable.get(CONFIG_KEY_RUNTIME)
            if self._refused and runtime is not None:  # a run starts: not an earlier one's refusal
                self._refused.pop((id(runtime), configurable.get(CONFIG_KEY_TASK_ID), thread_id), None)
            tips = self._tips(configurable, create=True)
            if tips is None:
                return
            if configurable.get("checkpoint_id"):
                tips[(thread_id, ns)] = TIME_TRAVEL
            elif tips.get((thread_id, ns)) is not TIME_TRAVEL:
                # LangGraph reads the latest after an addressed read too (to see whether
                # the thread moved past it): that must not undo the time travel.
                tips[(thread_id, ns)] = NEW_THREAD if found is None else found

    def expected(self, configurable: Mapping[str, Any], thread_id: str, ns: str) -> Any:
        """The head this run expects before its put, or ``None`` if it is not checked."""
        with self._lock:
            tips = self._tips(configurable, create=False)
            if tips is None:
                return None
            tip = tips.get((thread_id, ns))
            return None if tip is TIME_TRAVEL else tip

    def advanced(self, configurable: Mapping[str, Any], thread_id: str, ns: str,
                 checkpoint_id: str) -> None:
        """Note that the run's put succeeded: its new checkpoint is now its head."""
        with self._lock:
            tips = self._tips(configurable, create=True)
            if tips is not None:
                tips[(thread_id, ns)] = checkpoint_id

    def refuse(self, configurable: Mapping[str, Any], thread_id: str, why: str) -> None:
        """Refuse every later write of this run to ``thread_id`` with ``why`` (its first
        write could not be taken, and the rest of the run stands on it)."""
        runtime = configurable.get(CONFIG_KEY_RUNTIME)
        if runtime is None:
            return
        with self._lock:
            self._refused[(id(runtime), configurable.get(CONFIG_KEY_TASK_ID), thread_id)] = why
            while len(self._refused) > self._max:
                self._refused.popitem(last=False)

    def refused(self, configurable: Mapping[str, Any], thread_id: str) -> str | None:
        """Why this run's writes to ``thread_id`` are refused (``None``: they are not)."""
        runtime = configurable.get(CONFIG_KEY_RUNTIME)
        if runtime is None or not self._refused:
            return None
        with self._lock:
            return self._refused.get((id(runtime), configurable.get(CONFIG_KEY_TASK_ID), thread_id))
