"""Values to cells and back, with one serializer (cells: see :mod:`.cells`).

The readable forms (plain JSON, LangChain messages) are used only with LangGraph's
default ``JsonPlusSerializer`` and only for values that come back *equal and of the same
type* (tuples, sets, custom classes, message subclasses, NaN, huge ints all take the
typed path). With any other serializer (``EncryptedSerializer`` above all) every value
is typed, so the serializer sees every byte and encryption is never bypassed.

Nothing here touches files; every function takes values and returns values.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel

from ..errors import DecodeError, EncodeError
from .cells import is_plain_json
from .messages import message_dump, revive_message, revive_messages


class ValueCodec:
    """Encodes values to cells and back with one serializer.

    Args:
        serde: The saver's serializer. Readable cells are used only when it is a
            ``JsonPlusSerializer``; otherwise every value goes through it.
    """

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self.readable = isinstance(serde, JsonPlusSerializer)

    # -- encoding ---------------------------------------------------------------

    def encode(self, value: Any, what: str = "a value") -> dict[str, Any]:
        """Encode one value as a cell.

        Args:
            value: The value.
            what: What it is, for the error message (``"thread 't', channel 'messages'"``).

        Raises:
            EncodeError: The serializer cannot encode the value; the message names the
                part of it that cannot be encoded (``["messages"][2].additional_kwargs
                ["cb"]``) and its type.
        """
        if self.readable:
            cell = _readable_cell(value)
            if cell is not None:
                return cell
            if type(value) is _DeltaSnapshot:
                return {"dsnap": self.encode(value.value, what)}
        return self._typed(value, what)

    def _typed(self, value: Any, what: str) -> dict[str, Any]:
        try:
            type_, data = self.serde.dumps_typed(value)
        except Exception as exc:  # the serializer's own error types vary
            path, part = _unencodable_part(value, self.serde)
            where = f"its part {path} (a {_type_name(part)})" if path else "it"
            raise EncodeError(
                f"{what}: cannot store a {_type_name(value)} value: the serializer "
                f"{type(self.serde).__name__} cannot encode {where} ({type(exc).__name__}: "
                f"{_short(exc)}). Nothing was stored. Keep plain data, LangChain messages, "
                "pydantic models or dataclasses in the graph state, or pass a serde= that "
                "can encode this type.",
                path=path,
            ) from exc
        return {"typed": [type_, base64.b64encode(data).decode("ascii")]}


    # -- decoding ---------------------------------------------------------------

    def peek(self, cell: Mapping[str, Any]) -> Any:
        """A cell's value to look at, not to hand out (plain JSON is the cell's own
        object, not a copy): metadata compared against a ``list`` filter, say."""
        return cell["json"] if "json" in cell else self.decode(cell)

    def decode(
        self, cell: Mapping[str, Any], *, fresh: bool = False, memo: dict[int, Any] | None = None
    ) -> Any:
        """Decode a cell made by :meth:`encode`.

        Args:
            cell: The cell.
            fresh: Copy plain JSON out of the cell, for cells that stay cached: a
                message's nested lists and dicts (tool calls, content blocks, metadata)
                are copied too, so two results never share them. Typed values are
                always new objects.
            memo: With ``fresh``, where lists of messages keep what reviving each
                stored message needs, by the message's identity
                (:func:`~.messages.revive_messages`): for many reads of one listing.

        Raises:
            DecodeError: The serializer cannot decode the cell's bytes (another wrote
                them), or it is a readable cell and the serializer is not JSON-based
                (encryption, say): plaintext planted in a log is never accepted as data.
            ValueError: The cell is not one this codec wrote.
        """
        if "typed" in cell:
            type_, data = cell["typed"]
            try:
                return self.serde.loads_typed((type_, base64.b64decode(data)))
            except Exception as exc:  # the serializer's own error types vary
                raise DecodeError(
                    f"a value stored as {_short_text(type_)} cannot be decoded by the serializer "
                    f"{type(self.serde).__name__} ({type(exc).__name__}: {_short(exc)}): it was "
                    f"written through another one. {_OPEN_WITH_THE_WRITER}"
                ) from exc
        if not self.readable:
            raise DecodeError(
                "found a plaintext value, but this saver's serializer "
                f"({type(self.serde).__name__}) stores every value through itself: it was "
                f"written without it. {_OPEN_WITH_THE_WRITER}"
            )
        if "json" in cell:
            value = cell["json"]
            if fresh and isinstance(value, (dict, list)):
                return orjson.loads(orjson.dumps(value))
            return value
        if "msgs" in cell:
            if fresh and memo is not None:
                return revive_messages(cell["msgs"], memo)
            return [revive_message(m, fresh) for m in cell["msgs"]]
        if "msg" in cell:
            return revive_message(cell["msg"], fresh)
        if "dsnap" in cell:
            return _DeltaSnapshot(self.decode(cell["dsnap"], fresh=fresh, memo=memo))
        raise ValueError(f"unknown value cell with keys {sorted(cell)}")


_OPEN_WITH_THE_WRITER = (
    "Open the store with the serde= that wrote it (the same EncryptedSerializer key, "
    "pickle_fallback=True, ...); the langgraph-jsonl command takes it as --serde "
    "module:attr or $LANGGRAPH_JSONL_SERDE."
)


def _short_text(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().split("\n", 1)[0]
    return text if len(text) <= 120 else text[:117] + "..."


def _unencodable_part(value: Any, serde: SerializerProtocol) -> tuple[str, Any]:
    """The path (``["messages"][2].additional_kwargs["cb"]``) and object of the first
    part of ``value`` that ``serde`` cannot encode; ``("", value)`` if no part alone
    fails. Walks dicts, lists, tuples, sets, pydantic models and dataclasses."""
    seen: set[int] = set()

    def encodes(part: Any) -> bool:
        try:
            serde.dumps_typed(part)
        except Exception:
            return False
        return True

    def children(part: Any) -> list[tuple[str, Any]]:
        if isinstance(part, dict):
            return [
                (f"[{orjson.dumps(k).decode() if type(k) is str else repr(k)}]", v) for k, v in part.items()
            ]
        if isinstance(part, (list, tuple)):
            return [(f"[{i}]", v) for i, v in enumerate(part)]
        if isinstance(part, (set, frozenset)):
            return [("{...}", v) for v in part]
        if isinstance(part, BaseModel):
            extra = getattr(part, "__pydantic_extra__", None) or {}
            names = [*type(part).model_fields, *extra]
            return [(f".{n}", getattr(part, n, None)) for n in names]
        if dataclasses.is_dataclass(part) and not isinstance(part, type):
            return [(f".{f.name}", getattr(part, f.name, None)) for f in dataclasses.fields(part)]
        return []

    def find(part: Any, path: str, depth: int) -> tuple[str, Any] | None:
        if depth > 64 or id(part) in seen:
            return None
        seen.add(id(part))
        kids = children(part)
        for step, child in kids:
            if not encodes(child):
                return find(child, path + step, depth + 1) or (path + step, child)
        return None

    found = find(value, "", 0)
    return found if found is not None else ("", value)


def _readable_cell(value: Any) -> dict[str, Any] | None:
    if is_plain_json(value):
        return {"json": value}
    dumped = message_dump(value)
    if dumped is not None:
        return {"msg": dumped}
    if type(value) is list and value:
        dumps = []
        for item in value:
            d = message_dump(item)
            if d is None:
                return None
            dumps.append(d)
        return {"msgs": dumps}
    return None
