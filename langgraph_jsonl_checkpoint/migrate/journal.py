"""The replay adapter's journal, carried from one end of a copy to the other.

The adapter keeps each tool call's lifecycle events (requested, started, finished, ...,
and a task's questions and answers) either in the thread's log (``JsonlSaver``) or in a
LangGraph ``BaseStore`` (:class:`~..replay.journal.StoreJournal`: one item per call under
``STORE_NAMESPACE``, plus an item under ``OPEN_NAMESPACE`` while a started call is
unsettled). A copy moves the *events*, not the folded records, so the target decides
exactly as the source would: a finished call is not run again, a started one whose
process is gone is still uncertain and asked about, an answer given stays given.

Carrying is idempotent: per call, events the target already holds (the same kinds at
the same times, in order) are not added again; a target whose events for a call go on
from the source's (the app went on there) is ahead and left as it is; one whose events
neither start nor extend the source's is reported, never overwritten. Values inside events
(arguments, results, questions, answers) are cells of each end's own codec, so they
are decoded with the source's and encoded again with the target's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..replay.journal import OPEN_NAMESPACE, SETTLING, STORE_NAMESPACE, store_key
from ..replay.lifecycle import STARTED, ToolCallKey
from ..values.codec import ValueCodec

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from ..saver.jsonl_saver import JsonlSaver

#: Fields of an event that hold cells (values encoded by the journal's codec).
CELL_FIELDS = ("args", "result", "question", "answer")
#: Fields a log record adds around an event.
_RECORD_FIELDS = ("t", "seq", "c")
_PAGE = 500

Events = dict[ToolCallKey, list[dict[str, Any]]]


class JournalEnd(Protocol):
    """One end's journal, as a copy reads and writes it."""

    codec: ValueCodec

    def events(self, thread_id: str) -> Events:
        """Every call's events, calls in the order first seen, events in order."""
        ...

    def add(self, thread_id: str, new: Events, whole: Events) -> None:
        """Store ``new`` events (per call); ``whole`` is each call's complete list."""
        ...

    def setup(self) -> None:
        """Create what the journal needs (tables)."""
        ...


def _key(event: dict[str, Any]) -> ToolCallKey:
    return ToolCallKey(event["ns"], event["cp"], event["call"])


class LogJournal:
    """Events in the thread logs of a ``JsonlSaver``."""

    def __init__(self, saver: JsonlSaver) -> None:
        self.saver = saver
        self.codec = saver.codec

    def events(self, thread_id: str) -> Events:
        log = self.saver.store.thread_log(thread_id)
        with log.mutex:
            idx = log.refresh()
            refs = sorted((r for rs in idx.tool_events.values() for r in rs), key=lambda r: r.seq)
            records = [log.read_record(r) for r in refs]
        out: Events = {}
        for rec in records:
            event = {k: v for k, v in rec.items() if k not in _RECORD_FIELDS}
            out.setdefault(_key(event), []).append(event)
        return out

    def add(self, thread_id: str, new: Events, whole: Events) -> None:
        batch = [e for evs in new.values() for e in evs]
        if batch:
            self.saver.record_tool_events(thread_id, batch)

    def setup(self) -> None:
        pass


class StoreJournalEnd:
    """Events in a LangGraph ``BaseStore``, as :class:`~..replay.journal.StoreJournal`
    keeps them (same namespaces, keys and item shapes).

    ``items``, if given, reads a thread's items' values (oldest first) instead of the
    store's ``search``: a query of the database's own that does not touch the columns an
    older release's table lacks (:mod:`.store_tables`).
    """

    def __init__(
        self, store: BaseStore, *, setup: Any = None, ready: bool = True, empty: bool = False,
        items: Callable[[str], list[Any]] | None = None,
    ) -> None:
        self.store = store
        self._items = items
        self.codec = ValueCodec(JsonPlusSerializer())
        self._setup = setup
        #: Whether the store's tables exist (else there is nothing to read, and the
        #: first write creates them).
        self.ready = ready
        #: Whether the store held no journal item when opened (then none is searched for
        #: until one is added: the store may be the app's own, of an older schema).
        self.empty = empty

    def events(self, thread_id: str) -> Events:
        if not self.ready or self.empty:
            return {}
        values = self._items(thread_id) if self._items is not None else self._search(thread_id)
        out: Events = {}
        for value in values:
            for event in value["events"]:
                out.setdefault(_key(event), []).append(event)
        return out

    def _search(self, thread_id: str) -> list[Any]:
        """A thread's items' values through the store's ``search``, oldest first."""
        items: list[Any] = []
        offset = 0
        while True:
            page = self.store.search(
                STORE_NAMESPACE, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset
            )
            items += page
            if len(page) < _PAGE:
                break
            offset += _PAGE
        items.sort(key=lambda i: i.created_at)
        return [item.value for item in items]

    def add(self, thread_id: str, new: Events, whole: Events) -> None:
        if not self.ready:
            self.setup()
        self.empty = False
        for key in new:
            events = whole[key]
            skey = store_key(thread_id, key)
            self.store.put(STORE_NAMESPACE, skey, {"thread_id": thread_id, "events": events}, index=False)
            kinds = [e["ev"] for e in events]
            last_start = max((i for i, k in enumerate(kinds) if k == STARTED), default=None)
            if last_start is not None and not SETTLING & set(kinds[last_start:]):
                opened = {"thread_id": thread_id, "key": [key.ns, key.checkpoint_id, key.call_id]}
                self.store.put(OPEN_NAMESPACE, skey, opened, index=False)
            else:
                self.store.delete(OPEN_NAMESPACE, skey)

    def setup(self) -> None:
        if self._setup is not None:
            self._setup()
        self.ready = True


class EmptyJournal:
    """The journal of a target that is not there yet, as a dry run reads it: no events
    (and nothing may be added)."""

    def __init__(self) -> None:
        self.codec = ValueCodec(JsonPlusSerializer())

    def events(self, thread_id: str) -> Events:
        return {}

    def add(self, thread_id: str, new: Events, whole: Events) -> None:
        raise RuntimeError("a dry run's stand-in journal cannot be written to")

    def setup(self) -> None:
        pass


def _stamp(event: dict[str, Any]) -> tuple[Any, Any]:
    return (event.get("ev"), event.get("at"))


class Carried(NamedTuple):
    """What :func:`carry` did with a thread's journal.

    Attributes:
        added: Events added to the target (a dry run: that would be).
        conflicts: A line per call whose events on the target are not a prefix of the
            source's, nor go on from them (left alone).
        ahead: Events only the target holds, going on from the source's (a call the
            app went on with on the target, or a call only the target knows).
    """

    added: int
    conflicts: list[str]
    ahead: int


def carry(source: JournalEnd, target: JournalEnd, thread_id: str, *, dry_run: bool = False) -> Carried:
    """Copy a thread's journal events the target does not hold yet.

    Per call: the target's events a prefix of the source's: the rest is added; the
    source's a prefix of the target's: the target went on (ahead), nothing is added;
    otherwise a conflict, left alone.
    """
    theirs = source.events(thread_id)
    ours = target.events(thread_id)
    new: Events = {}
    whole: Events = {}
    conflicts: list[str] = []
    ahead = sum(len(events) for key, events in ours.items() if key not in theirs)
    for key, events in theirs.items():
        have = ours.get(key, [])
        shared = min(len(have), len(events))
        if [_stamp(e) for e in have[:shared]] != [_stamp(e) for e in events[:shared]]:
            conflicts.append(
                f"tool call {key.call_id} (checkpoint {key.checkpoint_id}, {key.ns}): the target's "
                "journal differs from the source's; left as it is"
            )
            continue
        if len(have) > len(events):
            ahead += len(have) - len(events)
        elif len(have) < len(events):
            recoded = [_recode(e, source.codec, target.codec) for e in events]
            new[key] = recoded[len(have):]
            whole[key] = have + new[key]
    added = sum(len(v) for v in new.values())
    if not dry_run and new:
        target.add(thread_id, new, whole)
    return Carried(added, conflicts, ahead)


def _recode(event: dict[str, Any], source: ValueCodec, target: ValueCodec) -> dict[str, Any]:
    if source is target:
        return dict(event)
    out = dict(event)
    for name in CELL_FIELDS:
        if name in out:
            out[name] = target.encode(source.decode(out[name]), "a tool call's journal")
    return out


def events_count(events: Events) -> int:
    """How many events ``events`` holds."""
    return sum(len(v) for v in events.values())


__all__ = [
    "CELL_FIELDS", "Carried", "EmptyJournal", "JournalEnd", "LogJournal", "StoreJournalEnd", "carry",
    "events_count",
]
