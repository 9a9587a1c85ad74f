"""What a checkpoint has left to do, read without the graph: its next tasks, the
interrupts waiting for an answer, and the status of a thread. Pure.

LangGraph decides a step's tasks from the graph (``prepare_next_tasks``); a store has
no graph, so this module reads the same facts from what LangGraph 1.x writes into every
checkpoint, by its naming conventions:

- a node is triggered by channels: ``branch:to:<node>`` (every edge and conditional
  edge of a ``StateGraph``), ``join:<a>+<b>:<node>`` (a waiting edge, whose barrier is
  complete when every named node has written), ``__start__`` (the start node; in the
  functional API the entrypoint, which is known once it has seen ``__start__``), and any
  channel a node has seen before (``versions_seen`` records exactly a node's triggers);
- a node is due when one of its trigger channels holds a value whose version is newer
  than the version the node last saw (``versions_seen[node][channel]``), as LangGraph's
  ``_triggers``; a node that never ran is due when a trigger holds a value;
- ``Send`` packets waiting in ``__pregel_tasks`` are tasks too (listed first);
- a task finished when it has an output write (any write but ``__error__``,
  ``__error_source_node__``, ``__interrupt__``, ``__resume__``), as LangGraph's
  ``read_task_statuses``; the ``__interrupt__`` write of an unfinished task is a
  question waiting for an answer, unless a ``Command(resume=...)`` value is already
  stored for the step (a ``__resume__`` write of the null task) and the task has not
  run on it since (no ``__resume__`` write of its own: one that has, asked again).

The trade-off: a graph that builds its own channels outside these conventions (a raw
``Pregel`` whose nodes never ran yet) can show fewer next tasks than LangGraph would;
tests compare every result with LangGraph's own ``get_state`` on real graphs. Pull
tasks are listed by node name (LangGraph lists them in the order nodes were added,
which the store does not know).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: LangGraph's reserved channels (``langgraph.checkpoint.serde.types``), spelled here so
#: that reading a store's statuses does not import LangGraph (``langgraph-jsonl threads``
#: from its cache imports none of it); ``tests/test_inspection_status.py`` checks they
#: are LangGraph's.
ERROR = "__error__"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"
TASKS = "__pregel_tasks"
#: LangGraph's task id of input and ``Command`` writes (``langgraph._internal``).
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
#: Written with ``__error__`` by the node that failed (``langgraph._internal``).
ERROR_SOURCE_NODE = "__error_source_node__"
#: Writes that say what happened to a task rather than what it produced.
CONTROL_WRITES = frozenset({ERROR, ERROR_SOURCE_NODE, INTERRUPT, RESUME})
START = "__start__"
#: Keys of ``versions_seen`` that are LangGraph's bookkeeping, not nodes
#: (``interrupt_before``/``after`` and DeltaChannel snapshot bumps; input writes).
NOT_NODES = frozenset({INTERRUPT, "__snapshot_bumps__", "__input__"})
BRANCH_PREFIX = "branch:to:"
JOIN_PREFIX = "join:"

#: Thread statuses (see :func:`thread_status`).
DONE = "done"
RUNNING = "running"
INTERRUPTED = "interrupted"
WAITING = "waiting"
DAMAGED = "damaged"
EMPTY = "empty"
STATUSES = (DONE, RUNNING, INTERRUPTED, WAITING, DAMAGED, EMPTY)
"""Every status a thread can have, as ``langgraph-jsonl threads`` shows them: ``done``,
``running`` (a live run holds the thread), ``interrupted`` (tasks left, no run going),
``waiting`` (an ``interrupt()`` awaits an answer), ``damaged`` (the log could not be
read), ``empty``."""
#: The status of a checkpoint that is not its namespace's latest: the thread went on
#: from it (or from a later one), so what it scheduled is history, not a thread status.
PAST = "past"


@dataclass(frozen=True)
class PendingWrite:
    """One pending write of a checkpoint, as the index knows it (no value).

    Attributes:
        task_id: The task that wrote it.
        channel: The channel written.
    """

    task_id: str
    channel: str


def triggered_nodes(channel: str, versions_seen: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The nodes a channel triggers, by LangGraph's channel names and the nodes that
    have seen it.

    Args:
        channel: A channel name.
        versions_seen: The checkpoint's ``versions_seen``.

    Returns:
        Node names (possibly none).
    """
    nodes = {
        node for node, seen in versions_seen.items()
        if node not in NOT_NODES and isinstance(seen, Mapping) and channel in seen
    }
    if channel.startswith(BRANCH_PREFIX):
        nodes.add(channel[len(BRANCH_PREFIX):])
    elif channel.startswith(JOIN_PREFIX) and channel.count(":") >= 2:
        nodes.add(channel.rsplit(":", 1)[1])
    elif channel == START and not nodes:
        nodes.add(START)
    return sorted(nodes)


def barrier_complete(channel: str, value: Any) -> bool:
    """Whether a ``join:<a>+<b>:<node>`` barrier's stored value says every named node
    has written (a set of names; ``(set, finished)`` for a deferred node)."""
    names = set(channel[len(JOIN_PREFIX):].rsplit(":", 1)[0].split("+"))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        seen, finished = value
        return finished and set(seen) == names
    return isinstance(value, (set, frozenset, list)) and set(value) == names


def channel_available(channel: str, value: Any) -> bool:
    """Whether a trigger channel holding ``value`` can trigger its node: barriers when
    complete, a deferred node's channel (``(value, finished)``) once finished, any other
    stored value always."""
    if channel.startswith(JOIN_PREFIX):
        return barrier_complete(channel, value)
    if channel.startswith(BRANCH_PREFIX) and isinstance(value, tuple) and len(value) == 2:
        return bool(value[1]) if isinstance(value[1], bool) else True
    return True


def next_tasks(
    versions: Mapping[str, Any],
    versions_seen: Mapping[str, Mapping[str, Any]],
    holds_value: Callable[[str], bool],
    value_of: Callable[[str], Any],
) -> list[str]:
    """The names of the tasks a checkpoint schedules (LangGraph's ``next``, with the
    tasks that already finished included, as in ``get_state_history``).

    Args:
        versions: The checkpoint's ``channel_versions``.
        versions_seen: Its ``versions_seen``.
        holds_value: Whether a channel holds a value at its version (from the index,
            without reading it).
        value_of: A channel's value (read only for barriers, deferred nodes and
            ``Send`` packets).

    Returns:
        ``Send`` targets in packet order, then due nodes by name.
    """
    out: list[str] = []
    if TASKS in versions and holds_value(TASKS):
        packets = value_of(TASKS)
        for packet in packets if isinstance(packets, (list, tuple)) else []:
            node = getattr(packet, "node", None)
            if isinstance(node, str):
                out.append(node)
    null = "" if all(isinstance(v, str) for v in versions.values()) else _null_like(versions)
    due: set[str] = set()
    for channel, version in versions.items():
        if channel == TASKS or not holds_value(channel):
            continue
        nodes = [n for n in triggered_nodes(channel, versions_seen) if n not in due]
        if not nodes:
            continue
        if channel.startswith((JOIN_PREFIX, BRANCH_PREFIX)) and not channel_available(
            channel, value_of(channel)
        ):
            continue
        for node in nodes:
            seen = versions_seen.get(node)
            if seen is None or _newer(version, seen.get(channel, null)):
                due.add(node)
    return out + sorted(due)


def _null_like(versions: Mapping[str, Any]) -> Any:
    for v in versions.values():
        return type(v)()
    return None


def _newer(version: Any, seen: Any) -> bool:
    try:
        return bool(version > seen)
    except TypeError:  # an int version against a str one (a migrated thread)
        return str(version) > str(seen)


def finished_tasks(writes: Iterable[PendingWrite]) -> set[str]:
    """Tasks with an output write (finished, by LangGraph's rule); the null task's
    input writes are not a task's."""
    return {
        w.task_id for w in writes if w.task_id != NULL_TASK_ID and w.channel not in CONTROL_WRITES
    }


def waiting_interrupts(writes: Sequence[PendingWrite]) -> list[PendingWrite]:
    """The ``__interrupt__`` writes still waiting for an answer: those of unfinished
    tasks (LangGraph's rule), but for a question a ``Command(resume=...)`` value stored
    for the step answers and its task has not run since. A task that ran on an answer
    (its own ``__resume__`` write) and is unfinished asked again: a question refused
    and asked anew in the same task, or its next one.

    Args:
        writes: A checkpoint's pending writes.
    """
    answered = any(w.task_id == NULL_TASK_ID and w.channel == RESUME for w in writes)
    done = finished_tasks(writes)
    resumed = {w.task_id for w in writes if w.channel == RESUME and w.task_id != NULL_TASK_ID}
    return [
        w for w in writes
        if w.channel == INTERRUPT and w.task_id not in done and (not answered or w.task_id in resumed)
    ]


def task_errors(writes: Iterable[PendingWrite]) -> list[PendingWrite]:
    """The ``__error__`` writes of a checkpoint (tasks that raised)."""
    return [w for w in writes if w.channel == ERROR]


def thread_status(next_names: Sequence[str], waiting: Sequence[Any], *, live: bool = False) -> str:
    """A thread's status from its latest checkpoint.

    Args:
        next_names: The tasks the latest checkpoint schedules.
        waiting: The interrupts still waiting for an answer.
        live: Whether a run holds the thread right now (its process is alive).

    Returns:
        ``running`` (a live run works on it), ``waiting`` (a question waits for a
        person), ``interrupted`` (tasks left to run and no run going: a crash, a failed
        node, a breakpoint), else ``done``.
    """
    if live:
        return RUNNING
    if waiting:
        return WAITING
    if next_names:
        return INTERRUPTED
    return DONE


def interrupt_type(value: Any) -> str:
    """What kind of question an interrupt asks: its value's ``"type"`` when it has one
    (``uncertain_tool_calls`` for the replay adapter's), else ``interrupt``."""
    if isinstance(value, Mapping) and isinstance(value.get("type"), str) and value["type"]:
        return str(value["type"])
    return "interrupt"
