"""A checkpoint's facts for people: when, which step, what it schedules next, which
questions wait for an answer, which tasks failed; read from the index and the
checkpoint's own record, without rebuilding its state.

What a person asks of a thread's history ("what ran, when, what is left") needs
neither the conversation nor the other channel values, so a listing of many
checkpoints (or of thousands of threads' latest ones) reads one record per checkpoint
plus, rarely, a small value (a ``Send`` packet, a join barrier) and the interrupt
writes. The trade-off is a second reading of the log beside the saver's
(:class:`~..saver.reads.CheckpointReads` rebuilds whole tuples): it reads the same
index and records, through the same read-only view, and is checked against LangGraph's
``get_state`` / ``get_state_history`` in the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..disk.index import ThreadIndex
from ..disk.store import Store
from ..disk.summary import EMPTY
from ..disk.view import LogView
from ..maintenance.access import StoreReading
from ..saver.config import healing
from .status import PendingWrite, interrupt_type, next_tasks, task_errors, waiting_interrupts

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..values.codec import ValueCodec
    from ..values.reader import ValueReader

T = TypeVar("T")


class StoreReader:
    """A store read without a saver, with LangGraph's default serializer (what a
    ``JsonlSaver`` without ``serde`` uses) unless given another: what the command line
    reads logs through. Opening a saver imports LangGraph's graph runtime (most of a
    second of a fresh process); this imports only the serializer, and that on the first
    value decoded.

    Args:
        store: The store (opened read-only for a listing).
        serde: The serializer the store was written with (default: LangGraph's).
    """

    def __init__(self, store: Store, serde: Any = None) -> None:
        self.store = store
        self.serde = serde

    @cached_property
    def codec(self) -> ValueCodec:
        """The value codec (made, and the serializer imported, on first use)."""
        from langgraph.checkpoint.serde.base import maybe_add_typed_methods
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        from ..values.codec import ValueCodec

        return ValueCodec(maybe_add_typed_methods(self.serde or JsonPlusSerializer()))


@dataclass(frozen=True)
class Question:
    """An ``interrupt()`` waiting for a person's answer.

    Attributes:
        task_id: The task that asked.
        interrupt_id: LangGraph's interrupt id (what a resume map is keyed by).
        value: What it asked (the value given to ``interrupt()``).
        type: Its kind (:func:`~.status.interrupt_type`): ``uncertain_tool_calls`` for the
            replay adapter's question about calls a crash cut off, else ``interrupt``.
    """

    task_id: str
    interrupt_id: str | None
    value: Any
    type: str


@dataclass(frozen=True)
class CheckpointFacts:
    """What a checkpoint says, without its state.

    Attributes:
        thread_id: The thread.
        ns: The checkpoint namespace (``""`` for the root graph).
        checkpoint_id: The checkpoint id.
        parent_id: Its parent's id, if any.
        metadata: Its metadata (``source``, ``step``, ``parents``, ...).
        created_at: Its ``ts`` (ISO 8601), if stored.
        versions_seen: The versions each node last saw (which nodes ran).
        next: The tasks it schedules (:func:`~.status.next_tasks`), finished ones included.
        writes: Its pending writes (task and channel).
        waiting: The questions still waiting for an answer.
        errors: ``"<type>: <message>"`` of each task that raised.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    metadata: dict[str, Any]
    created_at: str | None
    versions_seen: dict[str, Any] = field(repr=False)
    next: tuple[str, ...]
    writes: tuple[PendingWrite, ...]
    waiting: tuple[Question, ...]
    errors: tuple[str, ...]

    @property
    def step(self) -> int | None:
        """The metadata's ``step`` (``-1`` for the input checkpoint)."""
        step = self.metadata.get("step")
        return step if isinstance(step, int) else None

    @property
    def source(self) -> str | None:
        """The metadata's ``source``: ``input``, ``loop``, ``update`` or ``fork``."""
        source = self.metadata.get("source")
        return source if isinstance(source, str) else None


def read_facts(
    log: LogView, idx: ThreadIndex, reader: FactsReader, ns: str, checkpoint_id: str
) -> CheckpointFacts:
    """The facts of one checkpoint (call under ``log.mutex``, after ``log.refresh()``).

    Args:
        log: The thread's log.
        idx: Its index.
        reader: A value reader on the log (reads each record once).
        ns: The namespace.
        checkpoint_id: The checkpoint; it must be in ``idx``.

    Raises:
        KeyError: The index has no such checkpoint.
        CorruptLogError: A record it needs cannot be read.
    """
    entry = idx.checkpoints[ns][checkpoint_id]
    rec = reader.record(entry.ref)
    versions: dict[str, Any] = rec["cv"]
    cp = reader.decode(rec["cp"])
    cp = cp if isinstance(cp, Mapping) else {}
    metadata = reader.decode(rec["md"])
    raw_seen = cp.get("versions_seen")
    seen: Mapping[str, Mapping[str, Any]] = raw_seen if isinstance(raw_seen, Mapping) else {}

    def holds_value(channel: str) -> bool:
        blob = idx.blob(ns, channel, versions[channel])
        return blob is not None and blob.kind != EMPTY

    def value_of(channel: str) -> Any:
        return reader.value(idx, ns, channel, versions[channel])

    sorted_writes = idx.sorted_writes(ns, checkpoint_id)
    writes = tuple(PendingWrite(task, w.channel) for task, _, w in sorted_writes)
    entries = {(task, w.channel): w for task, _, w in sorted_writes}
    questions: list[Question] = []
    for pending in waiting_interrupts(writes):
        value = reader.write_value(entries[(pending.task_id, pending.channel)])
        for item in value if isinstance(value, (list, tuple)) else [value]:
            asked = getattr(item, "value", item)
            asker = pending.task_id
            questions.append(Question(asker, getattr(item, "id", None), asked, interrupt_type(asked)))
    errors = []
    for pending in task_errors(writes):
        error = reader.write_value(entries[(pending.task_id, pending.channel)])
        errors.append(f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error))
    ts = cp.get("ts")
    return CheckpointFacts(
        thread_id=log.thread_id,
        ns=ns,
        checkpoint_id=checkpoint_id,
        parent_id=entry.parent,
        metadata=metadata if isinstance(metadata, dict) else {},
        created_at=ts if isinstance(ts, str) else None,
        versions_seen=dict(seen),
        next=tuple(next_tasks(versions, seen, holds_value, value_of)),
        writes=writes,
        waiting=tuple(questions),
        errors=tuple(errors),
    )


def writers(facts: CheckpointFacts, parent: CheckpointFacts | None) -> tuple[str, ...]:
    """The node(s) whose writes made a checkpoint: the tasks its parent scheduled (a
    step of the loop), ``input`` for the input checkpoint, else its source (``update``:
    ``update_state``, whose ``as_node`` LangGraph does not store; ``fork``).

    Args:
        facts: The checkpoint.
        parent: Its parent's facts (``None`` if it has none or it is not stored).
    """
    source = facts.source
    if source == "input":
        return ("input",)
    if source == "loop" and parent is not None:
        return parent.next
    return (source,) if source else ()


class ThreadFacts:
    """Facts of one thread's checkpoints, read for one call: each record once, each
    checkpoint's facts once (see :func:`reading`).

    Attributes:
        log: The thread's log.
        index: Its index, as of the call's start.
        reader: Reads the log's records and values for this call.
    """

    def __init__(self, log: LogView, index: ThreadIndex, reader: FactsReader) -> None:
        self.log = log
        self.index = index
        self.reader = reader
        self._facts: dict[tuple[str, str], CheckpointFacts] = {}

    def has(self, ns: str, checkpoint_id: str) -> bool:
        """Whether the thread holds this checkpoint."""
        return checkpoint_id in self.index.checkpoints.get(ns, {})

    def facts(self, ns: str, checkpoint_id: str) -> CheckpointFacts:
        """The facts of a checkpoint the thread holds (:meth:`has`)."""
        key = (ns, checkpoint_id)
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = read_facts(self.log, self.index, self.reader, ns, checkpoint_id)
        return found

    def parent(self, facts: CheckpointFacts) -> CheckpointFacts | None:
        """The facts of a checkpoint's parent, if the thread holds it."""
        if facts.parent_id is None or not self.has(facts.ns, facts.parent_id):
            return None
        return self.facts(facts.ns, facts.parent_id)


def reading(saver: StoreReading, thread_id: str, work: Callable[[ThreadFacts], T]) -> T:
    """Run ``work`` on a thread's facts, under the thread's in-process lock (never the
    writer lock), after bringing the index up to date with the file (another process
    may be appending); once more if the sidecar index had to be rebuilt.

    Args:
        saver: A saver on the store (``read_only=True`` is enough), or a
            :class:`StoreReader` (whose values are decoded by a :class:`PlainFirstReader`).
        thread_id: The thread.
        work: What to read.

    Returns:
        What ``work`` returns.

    Raises:
        CorruptLogError: The log cannot be read.
    """
    log = saver.store.thread_log(thread_id)

    def read() -> T:
        with log.mutex:
            idx = log.refresh()
            if isinstance(saver, StoreReader):
                reader: FactsReader = PlainFirstReader(log, saver)
            else:
                from ..values.reader import ValueReader  # imported with the saver, not with this module

                reader = ValueReader(log, saver.codec, kept=False)
            return work(ThreadFacts(log, idx, reader))

    return healing(read)


class FactsReader(Protocol):
    """What reading facts needs of a reader of one log (a
    :class:`~..values.reader.ValueReader` is one): records, each read once, and values."""

    def record(self, ref: Any) -> dict[str, Any]:
        """The record at ``ref`` (read and checked once per call)."""
        ...

    def decode(self, cell: Mapping[str, Any]) -> Any:
        """A cell's value."""
        ...

    def value(self, idx: ThreadIndex, ns: str, channel: str, version: Any) -> Any:
        """A channel version's stored value."""
        ...

    def write_value(self, entry: Any) -> Any:
        """A pending write's value."""
        ...


class PlainFirstReader:
    """A :class:`FactsReader` for a :class:`StoreReader` that decodes plain JSON cells
    itself (what a thread's summary mostly reads: metadata, the checkpoint's time and
    the versions its nodes saw), and everything else through a
    :class:`~..values.reader.ValueReader` made on first need: that one imports the value
    codec, LangChain's messages and LangGraph's serializer (about 0.3 s of a fresh
    process), which a listing of threads that wait for nothing never needs. A plain
    JSON cell decodes the same either way (the store reader's serializer is LangGraph's
    default, which reads such cells as their value).

    Args:
        log: The thread's log.
        store: The store reader (its ``codec`` is made on first need).
    """

    def __init__(self, log: LogView, store: StoreReader) -> None:
        self.log = log
        self._store = store
        self._records: dict[int, dict[str, Any]] = {}
        self._values: ValueReader | None = None

    def record(self, ref: Any) -> dict[str, Any]:
        rec = self._records.get(ref.offset)
        if rec is None:
            rec = self._records[ref.offset] = self.log.read_record(ref)
        return rec

    def decode(self, cell: Mapping[str, Any]) -> Any:
        if len(cell) == 1 and "json" in cell:
            return cell["json"]
        return self._reader().decode(cell)

    def value(self, idx: ThreadIndex, ns: str, channel: str, version: Any) -> Any:
        return self._reader().value(idx, ns, channel, version)

    def write_value(self, entry: Any) -> Any:
        return self._reader().write_value(entry)

    def _reader(self) -> ValueReader:
        if self._values is None:
            from ..values.reader import ValueReader

            self._values = ValueReader(self.log, self._store.codec, kept=False, records=self._records)
        return self._values
