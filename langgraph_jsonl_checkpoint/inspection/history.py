"""A thread's history for people: its checkpoints newest first, each with its step,
source, the node(s) whose writes made it, its time and what it schedules next.

``get_state_history`` rebuilds every checkpoint's whole state; a person scanning what
ran needs none of it, so each row comes from :mod:`.checkpoints` (one record per
checkpoint, plus its parent's for the writers). ``--since`` stops at the first
checkpoint older than the bound: checkpoint ids sort by time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from .checkpoints import ThreadFacts, reading, writers
from .times import at_or_after

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver


@dataclass(frozen=True)
class HistoryEntry:
    """One checkpoint in a thread's history.

    Attributes:
        checkpoint_id: The checkpoint.
        ns: Its namespace.
        parent_id: Its parent.
        step: Its step (``-1``: the input).
        source: ``input``, ``loop``, ``update`` or ``fork``.
        writers: The node(s) whose writes made it (:func:`~.checkpoints.writers`).
        created_at: Its time (ISO 8601).
        next: What it schedules.
        waiting_for: The kinds of the questions waiting at it.
    """

    checkpoint_id: str
    ns: str
    parent_id: str | None
    step: int | None
    source: str | None
    writers: tuple[str, ...]
    created_at: str | None
    next: tuple[str, ...]
    waiting_for: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The entry as JSON-ready data (the ``history --json`` shape)."""
        return {
            "checkpoint_id": self.checkpoint_id, "ns": self.ns, "parent_id": self.parent_id,
            "step": self.step, "source": self.source, "writers": list(self.writers),
            "created_at": self.created_at, "next": list(self.next), "waiting_for": list(self.waiting_for),
        }


def checkpoint_history(
    saver: JsonlSaver,
    thread_id: str,
    *,
    ns: str = "",
    limit: int | None = None,
    since: datetime | None = None,
) -> list[HistoryEntry]:
    """A thread's checkpoints in one namespace, newest first.

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        thread_id: The thread.
        ns: The namespace (``""``: the root graph; a subgraph's is ``node:<task id>``).
        limit: At most this many.
        since: Only checkpoints made at or after this time.

    Raises:
        CorruptLogError: The log cannot be read.
    """

    def work(facts: ThreadFacts) -> list[HistoryEntry]:
        out: list[HistoryEntry] = []
        for cid in facts.index.iter_ids_desc(ns):
            if limit is not None and len(out) >= limit:
                break
            f = facts.facts(ns, cid)
            if not at_or_after(f.created_at, since):
                break
            out.append(HistoryEntry(
                checkpoint_id=cid, ns=ns, parent_id=f.parent_id, step=f.step, source=f.source,
                writers=writers(f, facts.parent(f)), created_at=f.created_at, next=f.next,
                waiting_for=tuple(q.type for q in f.waiting),
            ))
        return out

    return reading(saver, thread_id, work)


def namespaces(saver: JsonlSaver, thread_id: str) -> list[str]:
    """The namespaces of a thread that hold checkpoints (``""`` first, if it has any)."""
    names = reading(saver, thread_id, lambda facts: facts.index.namespaces())
    return sorted(names, key=lambda n: (n != "", n))


def require_namespace(saver: JsonlSaver, thread_id: str, ns: str) -> None:
    """Check that a namespace holds checkpoints of a thread (the root graph's, ``""``,
    always passes: a thread may have none yet).

    Raises:
        NotFoundError: It holds none: the error names the thread, the namespace and the
            namespaces the thread has.
        CorruptLogError: The log cannot be read.
    """
    if not ns:
        return
    names = namespaces(saver, thread_id)
    if ns in names:
        return
    have = ", ".join(f"{n!r}" + (" (the root graph)" if n == "" else "") for n in names)
    raise NotFoundError(
        f"thread {thread_id!r} has no checkpoint in namespace {ns!r}; its namespaces: "
        + (have or "none (it has no checkpoint)") + "; give one of them with --ns"
    )
