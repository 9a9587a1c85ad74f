"""Whether every stored value of a log can be rebuilt: a check in one pass. Pure.

A value stored as a delta is its base version's value plus a tail. The base must have
been stored before the delta (as a value, not as "empty") and hold the number of items
the delta keeps. This walks the records in log order as the index does (a delta's base
is what its version held when the delta was written) and tracks only item counts, so it
costs one pass whatever the length of the chains: ``verify`` reports what it finds,
``repair`` drops what it finds, ``compact`` refuses to copy it.
"""

from __future__ import annotations

from typing import Any

from ..disk.index import ThreadIndex
from ..disk.summary import EMPTY, summarize
from ..values.cells import list_items

#: The item count of a stored value that is not a readable list (a typed value).
_UNKNOWN = -1


def value_problems(records: list[tuple[dict[str, Any], int, int]]) -> list[tuple[int, str]]:
    """Checkpoint records whose values cannot be rebuilt, with their byte offsets.

    Walks the records in log order as the index does (a delta's base is the value its
    version had when the delta was written) and checks each delta against its base:
    the base must have been stored before it, as a value, holding the number of items
    the delta keeps. A record that fails is left out of what later records may build
    on, as it is unreadable. Pure: parsed records (with offsets and lengths) in.

    Returns:
        ``(offset, problem)`` for each failing checkpoint record, in log order.
    """
    idx = ThreadIndex()
    items: dict[tuple[int, str], int] = {}  # (record seq, channel) -> items it holds
    problems = []
    for rec, offset, length in records:
        t = rec.get("t")
        if t == "checkpoint":
            wrong = _delta_problems(idx, items, rec)
            if wrong:
                problems.append((offset, "; ".join(wrong.values())))
                continue
        if t in ("checkpoint", "snapshot"):
            for ch, entry in rec.get("values", {}).items():
                items[(rec["seq"], ch)] = _item_count(entry)
        idx.apply(summarize(rec, offset, length))
    return problems


def broken_values(records: list[tuple[dict[str, Any], int, int]]) -> list[tuple[int, str, str]]:
    """Stored values that cannot be rebuilt: ``(offset, channel, problem)`` in log order.

    As :func:`value_problems`, but value by value: a checkpoint record's other values
    stay what later records may build on; only the failing value is left out. Pure.
    """
    idx = ThreadIndex()
    items: dict[tuple[int, str], int] = {}
    broken: list[tuple[int, str, str]] = []
    for rec, offset, length in records:
        t = rec.get("t")
        if t in ("checkpoint", "snapshot"):
            wrong = _delta_problems(idx, items, rec) if t == "checkpoint" else {}
            broken.extend((offset, ch, problem) for ch, problem in wrong.items())
            if wrong:
                rec = {**rec, "values": {ch: e for ch, e in rec["values"].items() if ch not in wrong}}
            for ch, entry in rec.get("values", {}).items():
                items[(rec["seq"], ch)] = _item_count(entry)
        idx.apply(summarize(rec, offset, length))
    return broken


def _delta_problems(
    idx: ThreadIndex, items: dict[tuple[int, str], int], rec: dict[str, Any]
) -> dict[str, str]:
    wrong = {}
    for ch, entry in rec.get("values", {}).items():
        if "base" not in entry:
            continue
        prev = idx.blob(rec["ns"], ch, entry["base"])
        if prev is None or prev.kind == EMPTY:
            wrong[ch] = (
                f"channel {ch!r}: a delta (version {entry['ver']!r}) on version "
                f"{entry['base']!r}, which holds no value before it"
            )
            continue
        held = items.get((prev.ref.seq, ch), _UNKNOWN)
        if held != _UNKNOWN and held != entry.get("keep"):
            wrong[ch] = (
                f"channel {ch!r}: a delta (version {entry['ver']!r}) keeps "
                f"{entry.get('keep')!r} items of version {entry['base']!r}, which holds {held}"
            )
    return wrong


def _item_count(entry: dict[str, Any]) -> int:
    if "val" in entry:
        found = list_items(entry["val"])
        return len(found[1]) if found is not None else _UNKNOWN
    if "base" in entry:
        tail = list_items(entry["tail"])
        keep = entry.get("keep")
        return keep + len(tail[1]) if tail is not None and type(keep) is int else _UNKNOWN
    return _UNKNOWN
