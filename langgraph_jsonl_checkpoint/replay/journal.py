"""Where the replay adapter keeps tool-call lifecycle events.

Two journals with one interface:

- :class:`SaverJournal` writes events into the thread's own log through a
  :class:`~.saver.JsonlSaver` (fsynced with the rest of the thread);
- :class:`StoreJournal` keeps them in any LangGraph ``BaseStore`` (``InMemoryStore``,
  ``PostgresStore``) for graphs whose checkpointer is not a ``JsonlSaver``. Each call is
  one store item holding its event list, under namespace
  ``("langgraph_jsonl_checkpoint", "tool_calls")``.

Values inside events (arguments, results) are cells (see ``codec.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..values.codec import ValueCodec
from .lifecycle import ToolCallKey, ToolCallRecord, calls_only, fold

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from ..saver.jsonl_saver import JsonlSaver

STORE_NAMESPACE = ("langgraph_jsonl_checkpoint", "tool_calls")
_PAGE = 100


class ToolJournal(Protocol):
    """Durable storage of tool-call lifecycle events."""

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


class SaverJournal:
    """Lifecycle events in the thread's JSONL log.

    Args:
        saver: The graph's ``JsonlSaver``.
    """

    def __init__(self, saver: JsonlSaver) -> None:
        self.saver = saver

    def encode(self, value: Any) -> dict[str, Any]:
        return self.saver.codec.encode(value)

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
        return self._codec.encode(value)

    def _fold(self, items: list[Any]) -> dict[ToolCallKey, ToolCallRecord]:
        events = [e for item in items if item is not None for e in item.value["events"]]
        return fold(events, self._codec.decode)

    def load(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        items = [self.store.get(STORE_NAMESPACE, _store_key(thread_id, k)) for k in keys]
        return self._fold(items)

    def record(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        for key, evs in _by_key(events).items():
            skey = _store_key(thread_id, key)
            item = self.store.get(STORE_NAMESPACE, skey)
            self.store.put(STORE_NAMESPACE, skey, _appended(item, thread_id, evs), index=False)

    def all(self, thread_id: str) -> list[ToolCallRecord]:
        items, offset = [], 0
        while True:
            page = self.store.search(
                STORE_NAMESPACE, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset
            )
            items += page
            if len(page) < _PAGE:
                return self._calls(items)
            offset += _PAGE

    async def aload(self, thread_id: str, keys: Sequence[ToolCallKey]) -> dict[ToolCallKey, ToolCallRecord]:
        items = [await self.store.aget(STORE_NAMESPACE, _store_key(thread_id, k)) for k in keys]
        return self._fold(items)

    async def arecord(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        for key, evs in _by_key(events).items():
            skey = _store_key(thread_id, key)
            item = await self.store.aget(STORE_NAMESPACE, skey)
            await self.store.aput(STORE_NAMESPACE, skey, _appended(item, thread_id, evs), index=False)

    async def aall(self, thread_id: str) -> list[ToolCallRecord]:
        items, offset = [], 0
        while True:
            page = await self.store.asearch(
                STORE_NAMESPACE, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset
            )
            items += page
            if len(page) < _PAGE:
                return self._calls(items)
            offset += _PAGE

    def _calls(self, items: list[Any]) -> list[ToolCallRecord]:
        items.sort(key=lambda i: i.created_at)
        return calls_only(self._fold(items))


def _appended(item: Any, thread_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The store value of a call with ``events`` added to what ``item`` held."""
    old = item.value["events"] if item is not None else []
    return {"thread_id": thread_id, "events": old + events}


def _by_key(events: list[dict[str, Any]]) -> dict[ToolCallKey, list[dict[str, Any]]]:
    out: dict[ToolCallKey, list[dict[str, Any]]] = {}
    for e in events:
        out.setdefault(ToolCallKey(e["ns"], e["cp"], e["call"]), []).append(e)
    return out
