"""Values and records: LangGraph objects to and from readable JSON.

A stored value is a *cell*, a one-key JSON object saying how to read it back:

==================  ==========================================================
``{"json": v}``     plain JSON (str, int, float, bool, null, list, dict), as is
``{"msg": m}``      one LangChain message: ``type`` plus its non-default fields
                    (``model_dump(exclude_defaults=True)``; ``m["content"]``)
``{"msgs": [m]}``   a list of LangChain messages
``{"dsnap": cell}`` a DeltaChannel ``_DeltaSnapshot`` wrapping another cell
``{"typed": [t, b64]}`` anything else: the serializer's ``dumps_typed`` output
==================  ==========================================================

The readable forms are used only with LangGraph's default ``JsonPlusSerializer`` and only
for values that come back *equal and of the same type* (tuples, sets, custom classes,
message subclasses, NaN, huge ints all take the typed path). With any other serializer
(``EncryptedSerializer`` above all) every value is typed, so the serializer sees every
byte and encryption is never bypassed.

Growing lists are stored as deltas: ``{"ver": v, "base": b, "keep": n, "tail": cell}``
means "the value of version ``b`` (which has ``n`` items), plus the items in ``tail``".
:class:`ListFingerprint` decides, without decoding anything, whether a new list extends
an old one: msgpack encodes a list as a header followed by its items' encodings, so a
list extends another exactly when its msgpack body starts with the other's body.

Nothing here touches files; every function takes values and returns values.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel

from ..errors import EncodeError

#: Message classes stored readably, by their ``type`` field. Subclasses are not listed
#: on purpose: a subclass revived as its base class would not compare equal.
MESSAGE_TYPES: dict[str, type[BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        AIMessage,
        AIMessageChunk,
        ChatMessage,
        ChatMessageChunk,
        FunctionMessage,
        FunctionMessageChunk,
        HumanMessage,
        HumanMessageChunk,
        RemoveMessage,
        SystemMessage,
        SystemMessageChunk,
        ToolMessage,
        ToolMessageChunk,
    )
}
MESSAGE_CLASSES = frozenset(MESSAGE_TYPES.values())

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1

# A serializer used only to fingerprint values (never to store them): deterministic
# msgpack bytes, whatever serializer the saver stores with.
_FINGERPRINT_SERDE = JsonPlusSerializer()


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` survives a JSON round trip unchanged, type for type."""
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return _INT_MIN <= value <= _INT_MAX
    if t is float:
        return math.isfinite(value)
    if t is list:
        return all(is_plain_json(v) for v in value)
    if t is dict:
        return all(type(k) is str and is_plain_json(v) for k, v in value.items())
    return False


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

    def decode(self, cell: Mapping[str, Any], *, fresh: bool = False) -> Any:
        """Decode a cell made by :meth:`encode`.

        Args:
            cell: The cell.
            fresh: Copy plain JSON out of the cell, for cells that stay cached: a
                message's nested lists and dicts (tool calls, content blocks, metadata)
                are copied too, so two results never share them. Typed values are
                always new objects.

        Raises:
            ValueError: The cell is not one this codec wrote. With a non-JSON serializer
                (encryption, say) readable cells are refused, so plaintext planted in a
                log is never accepted as data.
        """
        if "typed" in cell:
            type_, data = cell["typed"]
            return self.serde.loads_typed((type_, base64.b64decode(data)))
        if not self.readable:
            raise ValueError(
                "found a plaintext value, but this saver's serializer "
                f"({type(self.serde).__name__}) stores every value through itself"
            )
        if "json" in cell:
            value = cell["json"]
            if fresh and isinstance(value, (dict, list)):
                return orjson.loads(orjson.dumps(value))
            return value
        if "msgs" in cell:
            return [_revive_message(m, fresh) for m in cell["msgs"]]
        if "msg" in cell:
            return _revive_message(cell["msg"], fresh)
        if "dsnap" in cell:
            return _DeltaSnapshot(self.decode(cell["dsnap"], fresh=fresh))
        raise ValueError(f"unknown value cell with keys {sorted(cell)}")


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
            return [(f"[{orjson.dumps(k).decode() if type(k) is str else repr(k)}]", v) for k, v in part.items()]
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


def _copy_nested(fields: dict[str, Any], names: Any) -> None:
    """Replace the lists and dicts among ``fields[name]`` by deep copies (in place)."""
    for name in names:
        v = fields.get(name)
        if type(v) is list or type(v) is dict:
            fields[name] = orjson.loads(orjson.dumps(v))


def _message_dump(value: Any) -> dict[str, Any] | None:
    if type(value) not in MESSAGE_CLASSES:
        return None
    # Fields at their defaults are left out (model_construct restores them): about a
    # third of a short message's bytes. "type" says which class to revive.
    dumped = {"type": value.type, **value.model_dump(exclude_defaults=True)}
    return dumped if is_plain_json(dumped) else None


def _readable_cell(value: Any) -> dict[str, Any] | None:
    if is_plain_json(value):
        return {"json": value}
    dumped = _message_dump(value)
    if dumped is not None:
        return {"msg": dumped}
    if type(value) is list and value:
        dumps = []
        for item in value:
            d = _message_dump(item)
            if d is None:
                return None
            dumps.append(d)
        return {"msgs": dumps}
    return None


class _MessageShape:
    """What reviving a message class needs, computed once per class.

    ``template`` holds every field in declaration order (the order ``model_construct``
    gives ``__dict__``) at its default; a revived message is ``template.copy()``
    updated with the stored fields (an update keeps each key's position). ``plans``
    maps the tuple of a dump's keys to the mutable defaults that need fresh copies and
    the stored fields that may hold lists or dicts (``None``: revive with
    ``model_construct``, for extra keys or a missing required field).
    """

    __slots__ = ("cls", "defaults", "direct", "field_set", "fields", "plans", "required", "template")

    def __init__(self, cls: type[BaseMessage]) -> None:
        self.cls = cls
        self.fields = frozenset(cls.model_fields)
        self.template: dict[str, Any] = {}
        self.defaults: dict[str, Any] = {}  # name -> make (None: immutable, shared)
        required = set()
        for name, field in cls.model_fields.items():
            if field.is_required():
                required.add(name)
                self.template[name] = None
                continue
            value = field.get_default(call_default_factory=True)
            if isinstance(value, (dict, list, set)):
                make = type(value) if not value else (lambda v=value: copy.deepcopy(v))
                # Always replaced by make() or a stored value; a placeholder keeps the
                # template free of containers, so the cyclic collector does not track
                # the __dict__ copied from it (most messages hold none).
                value = None
            else:
                make = None
            self.template[name] = value
            self.defaults[name] = make
        self.required = frozenset(required)
        self.field_set = set(self.template)  # __pydantic_fields_set__: every field
        # Without a post-init hook, filling the instance directly is what
        # model_construct does, at less than half the cost.
        self.direct = (
            getattr(cls, "__pydantic_post_init__", None) is None and cls.__new__ is object.__new__
        )
        self.plans: dict[tuple[str, ...], tuple[list[tuple[str, Any]], tuple[str, ...]] | None] = {}

    def plan(self, keys: tuple[str, ...]) -> tuple[list[tuple[str, Any]], tuple[str, ...]] | None:
        found = self.plans.get(keys, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        present = set(keys)
        if not self.direct or not present <= self.fields or not self.required <= present:
            plan = None
        else:
            makers = [(n, make) for n, make in self.defaults.items()
                      if make is not None and n not in present]
            plan = (makers, tuple(k for k in keys if k not in _SCALAR_FIELDS))
        if len(self.plans) < 256:  # dumps of one class have few distinct key sets
            self.plans[keys] = plan
        return plan


_MISSING = object()
_SHAPES: dict[type, _MessageShape] = {}
#: Message fields that only ever hold strings (or None): never copied.
_SCALAR_FIELDS = frozenset({"type", "id", "name", "tool_call_id", "status", "role"})


def _revive_message(data: dict[str, Any], fresh: bool = False) -> BaseMessage:
    """A message from its stored dump. With ``fresh``, nested lists and dicts are
    copied (the dump stays cached and may revive other messages)."""
    cls = MESSAGE_TYPES.get(data.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown message type {data.get('type')!r}")
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = _MessageShape(cls)
    # Validation already ran when the message was built, so it is rebuilt from its own
    # dump without running it again, as model_construct does: every field in
    # declaration order, fields left out of the dump (at their defaults) as fresh
    # copies of those defaults.
    plan = shape.plan(tuple(data))
    if plan is None:
        defaults = {
            name: make() if make is not None else shape.template[name]
            for name, make in shape.defaults.items()
            if name not in data
        }
        stored = dict(data)
        if fresh:
            _copy_nested(stored, list(stored))
        return cls.model_construct(**defaults, **stored)
    makers, maybe_nested = plan
    full = shape.template.copy()
    full.update(data)
    if fresh:
        _copy_nested(full, maybe_nested)
    for name, make in makers:
        full[name] = make()
    message = _new(cls)
    _set_attr(message, "__dict__", full)
    _set_fields_set(message, shape.field_set.copy())
    _set_extra(message, {})
    _set_private(message, None)
    return message


_new = object.__new__
_set_attr = object.__setattr__
# pydantic's own slots on BaseModel instances, set as model_construct sets them
_set_fields_set = BaseModel.__pydantic_fields_set__.__set__  # type: ignore[attr-defined]
_set_extra = BaseModel.__pydantic_extra__.__set__  # type: ignore[attr-defined]
_set_private = BaseModel.__pydantic_private__.__set__  # type: ignore[attr-defined]


# -- list deltas --------------------------------------------------------------


@dataclass(frozen=True)
class ListFingerprint:
    """The msgpack body of a list (its items' encodings, without the array header).

    Attributes:
        body: Concatenated msgpack encodings of the items.
        count: Number of items.
    """

    body: bytes
    count: int

    @classmethod
    def of(cls, value: Any) -> ListFingerprint | None:
        """Fingerprint a list; ``None`` for other values or lists msgpack cannot encode."""
        if type(value) is not list:
            return None
        try:
            type_, data = _FINGERPRINT_SERDE.dumps_typed(value)
        except Exception:
            return None
        if type_ != "msgpack" or not data:
            return None
        head = data[0]
        if 0x90 <= head <= 0x9F:
            skip = 1
        elif head == 0xDC:
            skip = 3
        elif head == 0xDD:
            skip = 5
        else:
            return None
        return cls(data[skip:], len(value))

    def extends(self, older: ListFingerprint) -> bool:
        """Whether this list is ``older`` followed by zero or more items."""
        return (
            self.count >= older.count
            and older.count > 0
            and self.body.startswith(older.body)
        )


def same_encoding(a: Any, b: Any) -> bool:
    """Whether two values have the same deterministic msgpack encoding: what
    LangGraph's own savers store, so they could not tell them apart either. Values
    msgpack cannot encode are never the same."""
    try:
        return _FINGERPRINT_SERDE.dumps_typed(a) == _FINGERPRINT_SERDE.dumps_typed(b)
    except Exception:
        return False


def state_hash(values: Mapping[str, tuple[Any, Any]]) -> str:
    """Hash of a set of channel values, for snapshot records and ``verify``.

    Args:
        values: Channel name to ``(version, value)``.

    Returns:
        ``"sha256:<hex>"`` over each channel's name, version and deterministic msgpack
        encoding, in channel order. Independent of the storage serializer, so a value
        rebuilt from deltas can be checked against it even when records are encrypted.
    """
    h = hashlib.sha256()
    for name in sorted(values):
        version, value = values[name]
        try:
            type_, data = _FINGERPRINT_SERDE.dumps_typed(value)
        except Exception:
            type_, data = "unhashable", b""
        h.update(f"{name}\0{version!r}\0{type_}\0".encode())
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return "sha256:" + h.hexdigest()
