"""The cell vocabulary: how one stored value says how to read it back. Pure.

A stored value is a *cell*, a one-key JSON object:

==================  ==========================================================
``{"json": v}``     plain JSON (str, int, float, bool, null, list, dict), as is
``{"msg": m}``      one LangChain message: ``type`` plus its non-default fields
``{"msgs": [m]}``   a list of LangChain messages
``{"dsnap": cell}`` a DeltaChannel ``_DeltaSnapshot`` wrapping another cell
``{"typed": [t, b64]}`` anything else: the serializer's ``dumps_typed`` output
==================  ==========================================================

Lists of messages or of plain JSON are what grows (a conversation), so deltas join
their items in stored form, before anything is decoded (:func:`list_items`,
:func:`extend_items`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1



def is_plain_json(value: Any) -> bool:
    """Whether ``value`` survives a JSON round trip unchanged, type for type.

    One pass over an explicit stack (a message's dump is checked at every put: a call
    per nested value was a tenth of a put's Python calls)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    isfinite = math.isfinite
    while stack:
        v = pop()
        t = type(v)
        if t is str:
            # A lone surrogate (os.fsdecode of a name that is not UTF-8) is not JSON:
            # such a value goes to the serializer, as LangGraph's savers send it.
            if not v.isascii() and not _utf8(v):
                return False
            continue
        if t is bool or v is None:
            continue
        if t is int:
            if not _INT_MIN <= v <= _INT_MAX:
                return False
        elif t is float:
            if not isfinite(v):
                return False
        elif t is dict:
            for k in v:
                if type(k) is not str or not (k.isascii() or _utf8(k)):
                    return False
            extend(v.values())
        elif t is list:
            extend(v)
        else:
            return False
    return True


def _utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def copy_nested(fields: dict[str, Any], names: Any) -> None:
    """Replace the lists and dicts among ``fields[name]`` by deep copies (in place)."""
    for name in names:
        v = fields.get(name)
        if type(v) is list or type(v) is dict:
            fields[name] = orjson.loads(orjson.dumps(v))


def list_items(cell: Mapping[str, Any]) -> tuple[str, list[Any]] | None:
    """The items of a cell holding a list of messages or of plain JSON, in stored form."""
    if "msgs" in cell:
        return "msgs", cell["msgs"]
    if type(cell.get("json")) is list:
        return "json", cell["json"]
    return None


def extend_items(kind: str, items: list[Any], tail_cell: Mapping[str, Any]) -> str | None:
    """Append a delta's tail to ``items`` in place; the kind of the result, or ``None``
    (``items`` untouched) if the tail is not a list cell of the same kind."""
    tail = list_items(tail_cell)
    if tail is None or (tail[1] and items and tail[0] != kind):
        return None
    if not tail[1]:
        return kind
    items.extend(tail[1])
    return tail[0]
