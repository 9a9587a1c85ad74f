"""Where the replay adapter keeps tool-call lifecycle events.

Two journals with one interface (:class:`ToolJournal`):

- :class:`SaverJournal` writes events into the thread's own log through a saver that
  keeps them (``JsonlSaver``: fsynced with the rest of the thread);
- :class:`StoreJournal` keeps them in any LangGraph ``BaseStore`` (``InMemoryStore``,
  ``PostgresStore``) for graphs whose checkpointer is not a ``JsonlSaver``. Each call is
  one store item holding its event list, under namespace
  ``("langgraph_jsonl_checkpoint", "tool_calls")``. Its logic is written once as steps
  (:mod:`.steps`), run on the store's sync or async methods.

Values inside events (arguments, results) are cells (see :mod:`~..values.cells`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..values.codec import ValueCodec
from .lifecycle import ToolCallKey, ToolCallRecord, calls_only, fold
from .steps import Steps, arun, call, run

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

STORE_NAMESPACE = ("langgraph_jsonl_checkpoint", "tool_calls")
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


def _store_key(thread_id: str, key: ToolCallKey) -> str:
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

    # -- the logic, once (steps on BaseStore.get/put/search) ----------------------------

    def _load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> Steps[dict[ToolCallKey, ToolCallRecord]]:
        items = []
        for k in keys:
            items.append((yield call("get", STORE_NAMESPACE, _store_key(thread_id, k))))
        return self._fold(items)

    def _record(self, thread_id: str, events: list[dict[str, Any]]) -> Steps[None]:
        for key, evs in _by_key(events).items():
            skey = _store_key(thread_id, key)
            item = yield call("get", STORE_NAMESPACE, skey)
            yield call("put", STORE_NAMESPACE, skey, _appended(item, thread_id, evs), index=False)

    def _all(self, thread_id: str) -> Steps[list[ToolCallRecord]]:
        items: list[Any] = []
        offset = 0
        while True:
            page = yield call(
                "search", STORE_NAMESPACE, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset
            )
            items += page
            if len(page) < _PAGE:
                items.sort(key=lambda i: i.created_at)
                return calls_only(self._fold(items))
            offset += _PAGE

    def _fold(self, items: list[Any]) -> dict[ToolCallKey, ToolCallRecord]:
        events = [e for item in items if item is not None for e in item.value["events"]]
        return fold(events, self._codec.decode)


def _appended(item: Any, thread_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The store value of a call with ``events`` added to what ``item`` held."""
    old = item.value["events"] if item is not None else []
    return {"thread_id": thread_id, "events": old + events}


def _by_key(events: list[dict[str, Any]]) -> dict[ToolCallKey, list[dict[str, Any]]]:
    out: dict[ToolCallKey, list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault(ToolCallKey(e["ns"], e["cp"], e["call"]), []).append(e)
    return out
