"""LangChain messages in readable form: stored as their non-default fields, revived
without validation (it already ran when the message was built).

A message is stored as ``{"type": ..., <fields that differ from their defaults>}``:
about a third of a short message's bytes. Reviving fills a per-class template of the
fields in declaration order (what ``model_construct`` does, at about a third of its
cost). Only the classes below are stored readably: a subclass revived as its base class
would not compare equal, so it takes the serializer's typed path.

A listing revives mostly the same stored messages once per tuple: :func:`revive_messages`
prepares each dump once (its instance dict over the defaults) and copies that per tuple,
nested lists and dicts included, so no two results share a mutable object.
"""

from __future__ import annotations

import copy
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
from pydantic import BaseModel

from .cells import copy_nested, is_plain_json

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


def message_dump(value: Any) -> dict[str, Any] | None:
    if type(value) not in MESSAGE_CLASSES:
        return None
    # Fields at their defaults are left out (model_construct restores them): about a
    # third of a short message's bytes. "type" says which class to revive.
    dumped = {"type": value.type, **value.model_dump(exclude_defaults=True)}
    return dumped if is_plain_json(dumped) else None


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
            factory = field.default_factory
            value: Any
            if factory is dict or factory is list:
                # What get_default would return, without its inspect.signature of the
                # factory (about 0.2 ms per class, paid by a fresh process's first read).
                value = factory()
            else:
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
        self.plans: dict[tuple[str, ...], Plan | None] = {}

    def plan(self, keys: tuple[str, ...]) -> Plan | None:
        """How to revive a dump with ``keys`` (see :data:`Plan`); ``None`` for
        ``model_construct``."""
        found = self.plans.get(keys, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        present = set(keys)
        plan: Plan | None
        if not self.direct or not present <= self.fields or not self.required <= present:
            plan = None
        else:
            absent = [(n, make) for n, make in self.defaults.items() if make is not None and n not in present]
            plan = (
                tuple(n for n, make in absent if make is dict),
                tuple(n for n, make in absent if make is list),
                tuple((n, make) for n, make in absent if make is not dict and make is not list),
                tuple(k for k in keys if k not in _SCALAR_FIELDS),
            )
        if len(self.plans) < 256:  # dumps of one class have few distinct key sets
            self.plans[keys] = plan
        return plan


#: How a dump with given keys is revived: the absent fields whose default is an empty
#: dict, an empty list, or another mutable default (with the function that makes it),
#: and the stored fields that may hold lists or dicts.
Plan = tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, Any], ...], tuple[str, ...]]


_MISSING = object()
_SHAPES: dict[type, _MessageShape] = {}
#: Message fields that only ever hold strings (or None): never copied.
_SCALAR_FIELDS = frozenset({"type", "id", "name", "tool_call_id", "status", "role"})


def revive_message(data: dict[str, Any], fresh: bool = False) -> BaseMessage:
    """A message from its stored dump. With ``fresh``, nested lists and dicts are
    copied (the dump stays cached and may revive other messages)."""
    shape = _shape_of(data)
    # Validation already ran when the message was built, so it is rebuilt from its own
    # dump without running it again, as model_construct does: every field in
    # declaration order, fields left out of the dump (at their defaults) as fresh
    # copies of those defaults.
    plan = shape.plan(tuple(data))
    if plan is None:
        return _construct(data, fresh)
    empty_dicts, empty_lists, makers, maybe_nested = plan
    full = shape.template.copy()
    full.update(data)
    if fresh:
        for name in maybe_nested:
            value = full[name]
            if type(value) is list or type(value) is dict:
                full[name] = _loads(_dumps(value))
    for name in empty_dicts:
        full[name] = {}
    for name in empty_lists:
        full[name] = []
    for name, make in makers:
        full[name] = make()
    return _finish(shape.cls, full, shape.field_set)


def revive_messages(dumps: list[dict[str, Any]], memo: dict[int, Any]) -> list[BaseMessage]:
    """Fresh messages (nothing shared with ``dumps`` or with other results) from stored
    dumps, through ``memo``: a dump's :data:`Prototype`, by the dump's identity, made
    once per ``memo``. A listing's tuples hold mostly the same dumps (one delta chain),
    so each is prepared once and copied per tuple. ``memo`` keeps every dump it has
    seen alive (its key must not be reused), so it lives as long as one listing."""
    out: list[BaseMessage] = []
    append = out.append
    for data in dumps:
        seen = memo.get(id(data))
        if seen is None:
            seen = memo[id(data)] = (data, _prototype(data))
        proto = seen[1]
        if proto is None:
            append(_construct(data, True))
            continue
        # a call per message would be a tenth of its cost: inline
        cls, base, nested, empty_dicts, empty_lists, makers, fields = proto
        full = base.copy()
        for name in empty_dicts:
            full[name] = {}
        for name in empty_lists:
            full[name] = []
        for name, make in makers:
            full[name] = make()
        for name, value in nested:
            full[name] = _loads(_dumps(value))
        message = _new(cls)
        _set_attr(message, "__dict__", full)
        _set_fields_set(message, fields.copy())
        _set_extra(message, {})
        _set_private(message, None)
        append(message)
    return out


#: What reviving one dump needs: the class; the instance dict, the dump's fields over
#: the defaults; the stored lists and dicts (copied per message); the absent fields whose
#: default is an empty dict, an empty list or another mutable value (made per message,
#: with its maker); the fields set.
Prototype = tuple[
    type[BaseMessage],
    dict[str, Any],
    tuple[tuple[str, Any], ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[tuple[str, Any], ...],
    set[str],
]


def _prototype(data: dict[str, Any]) -> Prototype | None:
    """What reviving ``data`` needs (:data:`Prototype`); ``None`` when the dump takes
    ``model_construct`` (extra keys, a required field missing)."""
    shape = _shape_of(data)
    plan = shape.plan(tuple(data))
    if plan is None:
        return None
    empty_dicts, empty_lists, makers, maybe_nested = plan
    full = shape.template.copy()
    full.update(data)
    nested = tuple((name, full[name]) for name in maybe_nested if type(full[name]) in (list, dict))
    return shape.cls, full, nested, empty_dicts, empty_lists, makers, shape.field_set


def _shape_of(data: dict[str, Any]) -> _MessageShape:
    """The shape of the class a dump names.

    Raises:
        ValueError: ``data`` is not a dump of a message class stored readably.
    """
    cls = MESSAGE_TYPES.get(data.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown message type {data.get('type')!r}")
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = _MessageShape(cls)
    return shape


def _finish(cls: type[BaseMessage], full: dict[str, Any], fields: set[str]) -> BaseMessage:
    message = _new(cls)
    _set_attr(message, "__dict__", full)
    _set_fields_set(message, fields.copy())
    _set_extra(message, {})
    _set_private(message, None)
    return message


def _construct(data: dict[str, Any], fresh: bool) -> BaseMessage:
    """``model_construct`` for dumps no prototype fits (extra keys, a missing field)."""
    cls = MESSAGE_TYPES[data["type"]]
    shape = _SHAPES[cls]
    defaults = {
        name: make() if make is not None else shape.template[name]
        for name, make in shape.defaults.items()
        if name not in data
    }
    stored = dict(data)
    if fresh:
        copy_nested(stored, list(stored))
    return cls.model_construct(**defaults, **stored)


_new = object.__new__
_set_attr = object.__setattr__
# pydantic's own slots on BaseModel instances, set as model_construct sets them
_set_fields_set = BaseModel.__pydantic_fields_set__.__set__  # type: ignore[attr-defined]
_set_extra = BaseModel.__pydantic_extra__.__set__  # type: ignore[union-attr]
_set_private = BaseModel.__pydantic_private__.__set__  # type: ignore[union-attr]
_loads = orjson.loads
_dumps = orjson.dumps
