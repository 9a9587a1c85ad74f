"""What the index keeps of a log record: its summary, and the kinds it names. Pure.

A *summary* is a record without its values' contents: the same field names (``t``,
``seq``, ``ns``, ``id``, ``parent``, ``md``, ``cv``, ``values``, ``cp``, ``task``,
``path``, ``w``, ``call``), each stored value reduced to its version and kind, each
write to its slot and channel, plus where the record lies (``o`` its byte offset, ``n``
its length, newline included). Being record-shaped, a summary goes through the same
function as a record wherever the two meet (:func:`~.sidecar.columns_of`), and the
index (:meth:`~.index.ThreadIndex.apply`) is rebuilt exactly by applying the summaries
of a log's records in order: it is derived data.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class RecordKind(IntEnum):
    """Record kinds the index knows, as the sidecar's ``t`` column codes them."""

    CHECKPOINT = 0
    WRITES = 1
    SNAPSHOT = 2
    TOOL = 3


class ValueKind(IntEnum):
    """How a stored channel version is held (the sidecar's ``vk`` column)."""

    FULL = 0  #: ``{"ver": v, "val": cell}``
    DELTA = 1  #: ``{"ver": v, "base": b, "keep": n, "tail": cell}``
    EMPTY = 2  #: ``{"ver": v, "empty": 1}``


#: The kinds by name, for hot code (an enum's attribute lookup costs five times a
#: comparison): ``kind == DELTA`` rather than ``kind == ValueKind.DELTA``.
CHECKPOINT, WRITES, SNAPSHOT, TOOL = RecordKind
FULL, DELTA, EMPTY = ValueKind

#: The kind of each record type (``t``) the index knows; other types are passed over.
KIND_OF_TYPE = {kind.name.lower(): kind for kind in RecordKind}


def value_kind(entry: dict[str, Any]) -> ValueKind:
    """The kind of one entry of a record's ``values``."""
    if "empty" in entry:
        return EMPTY
    if "base" in entry:
        return DELTA
    return FULL


def summarize(record: dict[str, Any], offset: int, length: int) -> dict[str, Any]:
    """A log record's summary (see the module docstring).

    Args:
        record: A parsed log record.
        offset: Its byte offset in the log.
        length: Its length in bytes, newline included.
    """
    t = record.get("t")
    s: dict[str, Any] = {"t": t, "seq": record["seq"], "o": offset, "n": length}
    if t == "checkpoint":
        s["ns"] = record["ns"]
        s["id"] = record["id"]
        s["parent"] = record.get("parent")
        s["md"] = record.get("md")
        s["cv"] = record["cv"]
        s["values"] = {ch: _value_summary(e) for ch, e in record.get("values", {}).items()}
    elif t == "snapshot":
        s["ns"] = record["ns"]
        s["values"] = {ch: {"ver": e["ver"]} for ch, e in record["values"].items()}
    elif t == "writes":
        s["ns"] = record["ns"]
        s["cp"] = record["cp"]
        s["task"] = record["task"]
        s["path"] = record.get("path", "")
        s["w"] = [[w[0], w[1]] for w in record["w"]]
    elif t == "tool":
        s["ns"] = record["ns"]
        s["cp"] = record["cp"]
        s["call"] = record["call"]
    return s


def _value_summary(entry: dict[str, Any]) -> dict[str, Any]:
    kind = value_kind(entry)
    if kind == EMPTY:
        return {"ver": entry["ver"], "empty": 1}
    if kind == DELTA:
        return {"ver": entry["ver"], "base": entry["base"]}
    return {"ver": entry["ver"]}


def version_key(version: Any) -> Any:
    """A hashable key for a channel version that keeps ``1``, ``1.0`` and ``"1"`` apart.

    Strings (LangGraph's own versions) are their own key; a tuple never equals a str.
    """
    return version if type(version) is str else (type(version).__name__, version)
