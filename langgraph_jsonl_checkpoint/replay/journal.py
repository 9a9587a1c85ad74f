"""Where the replay adapter keeps tool-call lifecycle events.

Two journals with one interface (:class:`ToolJournal`):

- :class:`SaverJournal` writes events into the thread's own log through a saver that
  keeps them (``JsonlSaver``: fsynced with the rest of the thread);
- :class:`StoreJournal` keeps them in any LangGraph ``BaseStore`` (``InMemoryStore``,
  ``PostgresStore``) for graphs whose checkpointer is not a ``JsonlSaver``. Each call is
  one store item holding its event list, under namespace
  ``("langgraph_jsonl_checkpoint", "tool_calls")``; a call started and not settled also
  has an item under ``("langgraph_jsonl_checkpoint", "open_tool_calls")``, so the calls
  of lost runs are found without reading every call. Its logic is written once as steps
  (:mod:`.steps`), run on the store's (and the checkpointer's) sync or async methods.

Both answer two questions about checkpoints for the adapter: is the checkpoint a tool
node runs from durable yet (:meth:`ToolJournal.wait_stored`), and which started calls
belong to a run whose checkpoint is gone (:meth:`ToolJournal.orphans`).

Values inside events (arguments, results) are cells (see :mod:`~..values.cells`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..values.codec import ValueCodec
from .checkpoints import apoll_stored, checkpoint_config, lost_runs, poll_stored
from .lifecycle import (
    FAILED,
    FINISHED,
    RELEASED,
    STARTED,
    SUPERSEDED,
    ToolCallKey,
    ToolCallRecord,
    calls_only,
    fold,
)
from .steps import Steps, arun, call, run

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

STORE_NAMESPACE = ("langgraph_jsonl_checkpoint", "tool_calls")
OPEN_NAMESPACE = ("langgraph_jsonl_checkpoint", "open_tool_calls")
#: Events after which a started call is no longer open.
SETTLING = frozenset({FINISHED, FAILED, SUPERSEDED, RELEASED})
_PAGE = 100


class ToolJournal(Protocol):
    """Durable storage of tool-call lifecycle events (sync and async)."""

    def encode(self, value: Any) -> dict[str, Any]:
        """Encode a value (arguments, a result) as a cell."""
        ...

    def load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        """Records of the given calls (absent calls are missing from the result)."""
        ...

    def record(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        """Store events durably before returning."""
        ...

    def all(self, thread_id: str) -> list[ToolCallRecord]:
        """Every call recorded for a thread."""
        ...

    async def aload(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        """Async :meth:`load`."""
        ...

    async def arecord(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        """Async :meth:`record`."""
        ...

    async def aall(self, thread_id: str) -> list[ToolCallRecord]:
        """Async :meth:`all`."""
        ...

    def orphans(self, thread_id: str, checkpointer: Any, carrying: bool = False) -> list[ToolCallRecord]:
        """Calls started and never settled whose checkpoint is not in the thread (in the
        graph's ``checkpointer``), marked ``lost_run``; with ``carrying``, also those a
        person answered that carry the answer to the call asked for again."""
        ...

    async def aorphans(
        self, thread_id: str, checkpointer: Any, carrying: bool = False
    ) -> list[ToolCallRecord]:
        """Async :meth:`orphans`."""
        ...

    def wait_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        """Wait until ``checkpointer`` holds the checkpoint (``False``: not in time)."""
        ...

    async def await_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        """Async :meth:`wait_stored`."""
        ...


class ToolEventLog(Protocol):
    """A checkpointer that keeps tool-call events in its threads (``JsonlSaver``)."""

    @property
    def codec(self) -> ValueCodec:
        """Its value codec."""
        ...

    def record_tool_events(self, thread_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Append events to a thread durably."""
        ...

    def tool_call_records(
        self, thread_id: str, keys: Sequence[ToolCallKey] | None = None
    ) -> dict[ToolCallKey, ToolCallRecord]:
        """Folded records by key (of ``keys`` only, if given)."""
        ...

    def tool_calls(self, thread_id: str, keys: Sequence[ToolCallKey] | None = None) -> list[ToolCallRecord]:
        """Every call of a thread."""
        ...

    def orphaned_tool_calls(self, thread_id: str, *, carrying: bool = False) -> list[ToolCallRecord]:
        """Started calls whose checkpoint is not in the thread (``carrying``: and those
        carrying a person's answer)."""
        ...

    def wait_for_checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float
    ) -> bool:
        """Wait until the checkpoint is durable in the thread's log."""
        ...

    async def await_for_checkpoint(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, timeout: float
    ) -> bool:
        """Async :meth:`wait_for_checkpoint`."""
        ...


class SaverJournal:
    """Lifecycle events in the thread's own log.

    Args:
        saver: The graph's ``JsonlSaver`` (any :class:`ToolEventLog`).
    """

    def __init__(self, saver: ToolEventLog) -> None:
        self.saver = saver

    def encode(self, value: Any) -> dict[str, Any]:
        return self.saver.codec.encode(value, "a tool call's journal")

    def load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        return self.saver.tool_call_records(thread_id, keys)

    def record(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        self.saver.record_tool_events(thread_id, events)

    def all(self, thread_id: str) -> list[ToolCallRecord]:
        return self.saver.tool_calls(thread_id)

    async def aload(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        return await asyncio.to_thread(self.load, thread_id, keys)

    async def arecord(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        await asyncio.to_thread(self.record, thread_id, events)

    async def aall(self, thread_id: str) -> list[ToolCallRecord]:
        return await asyncio.to_thread(self.all, thread_id)

    def _owns(self, checkpointer: Any) -> bool:
        """Whether the graph's checkpointer keeps its checkpoints in this saver's logs."""
        return getattr(checkpointer, "store", None) is getattr(self.saver, "store", self)

    def orphans(self, thread_id: str, checkpointer: Any, carrying: bool = False) -> list[ToolCallRecord]:
        if self._owns(checkpointer):
            return self.saver.orphaned_tool_calls(thread_id, carrying=carrying)
        return run(lost_runs(thread_id, self.all(thread_id), carrying), checkpointer)

    async def aorphans(
        self, thread_id: str, checkpointer: Any, carrying: bool = False
    ) -> list[ToolCallRecord]:
        if self._owns(checkpointer):
            return await asyncio.to_thread(self.orphans, thread_id, checkpointer, carrying)
        return await arun(lost_runs(thread_id, await self.aall(thread_id), carrying), checkpointer)

    def wait_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        if self._owns(checkpointer):
            return self.saver.wait_for_checkpoint(thread_id, checkpoint_ns, checkpoint_id, timeout)
        return poll_stored(checkpointer, checkpoint_config(thread_id, checkpoint_ns, checkpoint_id), timeout)

    async def await_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        if self._owns(checkpointer):
            return await self.saver.await_for_checkpoint(thread_id, checkpoint_ns, checkpoint_id, timeout)
        cfg = checkpoint_config(thread_id, checkpoint_ns, checkpoint_id)
        return await apoll_stored(checkpointer, cfg, timeout)


def store_key(thread_id: str, key: ToolCallKey) -> str:
    """The store key of a call's item (thread, namespace, checkpoint, call id)."""
    # \x1f (unit separator) cannot appear in ids LangGraph generates.
    return "\x1f".join((thread_id, key.ns, key.checkpoint_id, key.call_id))


class StoreJournal:
    """Lifecycle events in a LangGraph ``BaseStore``.

    Args:
        store: Any ``BaseStore``. Durability is the store's: ``PostgresStore`` commits
            each write; ``InMemoryStore`` keeps nothing across processes.
    """

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self._codec = ValueCodec(JsonPlusSerializer())

    def encode(self, value: Any) -> dict[str, Any]:
        return self._codec.encode(value, "a tool call's journal")

    def load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        return run(self._load(thread_id, keys), self.store)

    def record(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        run(self._record(thread_id, events), self.store)

    def all(self, thread_id: str) -> list[ToolCallRecord]:
        return run(self._all(thread_id), self.store)

    async def aload(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        return await arun(self._load(thread_id, keys), self.store)

    async def arecord(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        await arun(self._record(thread_id, events), self.store)

    async def aall(self, thread_id: str) -> list[ToolCallRecord]:
        return await arun(self._all(thread_id), self.store)

    def orphans(self, thread_id: str, checkpointer: Any, carrying: bool = False) -> list[ToolCallRecord]:
        if checkpointer is None:
            return []
        return run(self._orphans(thread_id, carrying), _StoreAndSaver(self.store, checkpointer))

    async def aorphans(
        self, thread_id: str, checkpointer: Any, carrying: bool = False
    ) -> list[ToolCallRecord]:
        if checkpointer is None:
            return []
        return await arun(self._orphans(thread_id, carrying), _StoreAndSaver(self.store, checkpointer))

    def wait_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        return poll_stored(checkpointer, checkpoint_config(thread_id, checkpoint_ns, checkpoint_id), timeout)

    async def await_stored(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, checkpointer: Any, timeout: float
    ) -> bool:
        cfg = checkpoint_config(thread_id, checkpoint_ns, checkpoint_id)
        return await apoll_stored(checkpointer, cfg, timeout)

    # -- the logic, once (steps on BaseStore.get/put/search) ----------------------------

    def _load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> Steps[dict[ToolCallKey, ToolCallRecord]]:
        items = []
        for k in keys:
            items.append((yield call("get", STORE_NAMESPACE, store_key(thread_id, k))))
        return self._fold(items)

    def _record(self, thread_id: str, events: list[dict[str, Any]]) -> Steps[None]:
        for key, evs in _by_key(events).items():
            skey = store_key(thread_id, key)
            item = yield call("get", STORE_NAMESPACE, skey)
            yield call("put", STORE_NAMESPACE, skey, _appended(item, thread_id, evs), index=False)
            kinds = {e["ev"] for e in evs}
            # open until settled (a started call's last word), or while it carries a
            # person's answer (a lost call's: see .lost)
            if STARTED in kinds or (evs[-1]["ev"] == FINISHED and evs[-1].get("carry")):
                opened = {"thread_id": thread_id, "key": [key.ns, key.checkpoint_id, key.call_id]}
                yield call("put", OPEN_NAMESPACE, skey, opened, index=False)
            elif kinds & SETTLING:
                yield call("delete", OPEN_NAMESPACE, skey)

    def _orphans(self, thread_id: str, carrying: bool) -> Steps[list[ToolCallRecord]]:
        opened = yield from _search_all(OPEN_NAMESPACE, thread_id)
        keys = [ToolCallKey(*item.value["key"]) for item in opened]
        records = yield from self._load(thread_id, keys)
        return (yield from lost_runs(thread_id, list(records.values()), carrying))

    def _all(self, thread_id: str) -> Steps[list[ToolCallRecord]]:
        items = yield from _search_all(STORE_NAMESPACE, thread_id)
        items.sort(key=lambda i: i.created_at)
        return calls_only(self._fold(items))

    def _fold(self, items: list[Any]) -> dict[ToolCallKey, ToolCallRecord]:
        events = [e for item in items if item is not None for e in item.value["events"]]
        return fold(events, self._codec.decode)


def _search_all(namespace: tuple[str, ...], thread_id: str) -> Steps[list[Any]]:
    """Every item of a thread under ``namespace`` (paged search)."""
    items: list[Any] = []
    offset = 0
    while True:
        page = yield call("search", namespace, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset)
        items += page
        if len(page) < _PAGE:
            return items
        offset += _PAGE


def _appended(item: Any, thread_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The store value of a call with ``events`` added to what ``item`` held."""
    old = item.value["events"] if item is not None else []
    return {"thread_id": thread_id, "events": old + events}


def _by_key(events: list[dict[str, Any]]) -> dict[ToolCallKey, list[dict[str, Any]]]:
    out: dict[ToolCallKey, list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault(ToolCallKey(e["ns"], e["cp"], e["call"]), []).append(e)
    return out


class _StoreAndSaver:
    """One target for steps that use both a store and a checkpointer."""

    def __init__(self, store: Any, checkpointer: Any) -> None:
        self.get, self.aget = store.get, store.aget
        self.search, self.asearch = store.search, store.asearch
        self.get_tuple, self.aget_tuple = checkpointer.get_tuple, checkpointer.aget_tuple
