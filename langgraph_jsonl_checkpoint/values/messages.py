"""LangChain messages in readable form: stored as their non-default fields, revived
without validation (it already ran when the message was built).

A message is stored as ``{"type": ..., <fields that differ from their defaults>}``:
about a third of a short message's bytes. Reviving fills a per-class template of the
fields in declaration order (what ``model_construct`` does, at about a third of its
cost). Only the classes below are stored readably: a subclass revived as its base class
would not compare equal, so it takes the serializer's typed path.
"""

from __future__ import annotations

import copy
from typing import Any

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


def revive_message(data: dict[str, Any], fresh: bool = False) -> BaseMessage:
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
            copy_nested(stored, list(stored))
        return cls.model_construct(**defaults, **stored)
    makers, maybe_nested = plan
    full = shape.template.copy()
    full.update(data)
    if fresh:
        copy_nested(full, maybe_nested)
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
_set_extra = BaseModel.__pydantic_extra__.__set__  # type: ignore[union-attr]
_set_private = BaseModel.__pydantic_private__.__set__  # type: ignore[union-attr]
