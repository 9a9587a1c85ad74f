"""Any state value as JSON a person or a script can read. Pure.

Graph state holds more than JSON: LangChain messages, pydantic models, dataclasses,
sets, tuples, ``Send`` packets, ``Interrupt`` objects, bytes. Showing them must never
fail, so each becomes the closest JSON: a message its ``model_dump()`` with its
``type``, a model or dataclass its fields, a set or tuple a list, bytes base64, and
anything else ``{"type": <class>, "repr": <repr>}``. The trade-off: the result reads
well but does not round-trip (use the saver to get the values themselves).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import sys
from collections.abc import Mapping
from datetime import date, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeGuard
from uuid import UUID

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from pydantic import BaseModel

_DEPTH = 64


def is_message(value: Any) -> TypeGuard[BaseMessage]:
    """Whether ``value`` is a LangChain message, without importing LangChain: an object
    can be one only once the module defining ``BaseMessage`` was imported (a listing
    served from its cache imports none of LangChain)."""
    return _is_instance(value, "langchain_core.messages.base", "BaseMessage")


def _is_model(value: Any) -> TypeGuard[BaseModel]:
    """Whether ``value`` is a pydantic model (pydantic not imported for it)."""
    return _is_instance(value, "pydantic.main", "BaseModel")


def _is_instance(value: Any, module: str, name: str) -> bool:
    cls = getattr(sys.modules.get(module), name, None)
    return cls is not None and isinstance(value, cls)


def jsonable(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON-ready data (dicts with str keys, lists, str, numbers, bools,
    ``None``); never raises.

    Args:
        value: Any value.

    Returns:
        The JSON form described in the module docstring.
    """
    if _depth > _DEPTH:
        return {"type": type(value).__qualname__, "repr": "..."}
    d = _depth + 1
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, Enum):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if is_message(value):
        fields = value.model_dump()
        return {"type": value.type, **{k: jsonable(v, d) for k, v in fields.items() if k != "type"}}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, d) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, d) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v, d) for v in value]
        return sorted(items, key=repr)
    if _is_model(value):
        return {k: jsonable(v, d) for k, v in value.model_dump().items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name, None), d) for f in dataclasses.fields(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Enum):
        return jsonable(value.value, d)
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    attrs = _slots_or_dict(value)
    if attrs is not None:
        return {"type": type(value).__name__, **{k: jsonable(v, d) for k, v in attrs.items()}}
    return {"type": f"{type(value).__module__}.{type(value).__qualname__}", "repr": repr(value)}


def _slots_or_dict(value: Any) -> dict[str, Any] | None:
    """The public attributes of a small plain object (``Send``, ``Interrupt``), if any."""
    names = getattr(type(value), "__slots__", None)
    if isinstance(names, (list, tuple)) and names:
        return {n: getattr(value, n) for n in names if not n.startswith("_") and hasattr(value, n)}
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and attrs:
        return {k: v for k, v in attrs.items() if not k.startswith("_")}
    return None
