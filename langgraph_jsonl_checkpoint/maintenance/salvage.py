"""Which checkpoints of a damaged log can still be served, and the records that serve
them. Pure: parsed records in, records out.

A checkpoint's value of a channel is the value stored for its version (``cv``) by the
last record that stored that version, so a checkpoint can be served when every version
it names is stored, somewhere in the kept records, by a value that can be rebuilt. After
a dropped line:

- a stored value that cannot be rebuilt (a delta whose chain runs through the dropped
  line) is left out of its record; the record's checkpoint stays if another record
  holds that version (the snapshot record written after it holds it in full);
- a checkpoint naming a version nothing readable holds is dropped, its pending writes
  stay;
- the values a dropped checkpoint record stored that kept records still need (a
  ``branch:to:*`` or ``__start__`` value unchanged since, a list a later delta extends)
  are moved into the next kept checkpoint record of its namespace, or joined with the
  delta that extends them, so dropping one checkpoint takes no other with it.

Each dropped checkpoint names the damaged line its values depend on (directly, or
through a delta chain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..disk.summary import version_key
from ..values.cells import extend_items, list_items
from .checks import broken_values

#: A parsed record with its byte offset and length in the log.
Line = tuple[dict[str, Any], int, int]
_Key = tuple[str, str, Any]


@dataclass(frozen=True)
class _Cause:
    """Why the value of one version cannot be had."""

    #: The damaged line (``bytes a-b``), or the problem a check found (no damaged line).
    root: str
    #: The value itself was in the damaged line (not a value built on one that was).
    lost: bool


def settle(
    lines: list[Line], damage: list[tuple[int, int]], *, damaged: bool
) -> tuple[list[Line], list[str]]:
    """The records to keep and, per dropped checkpoint, why (see the module docstring).

    Args:
        lines: The committed records in log order (header excluded).
        damage: Byte ranges of the damaged lines, in log order (what a cause names).
        damaged: Something was dropped from the log: a checkpoint naming a version no
            kept record stores is dropped too (that value may have been in the lost bytes).

    Returns:
        The kept records (values moved or left out as above) and one line per dropped
        checkpoint.
    """
    first_use = _first_uses(lines)
    causes: dict[_Key, _Cause] = {}
    dropped: list[str] = []
    while True:
        broken = {(offset, ch): problem for offset, ch, problem in broken_values(lines)}
        at = {offset: i for i, (_, offset, _) in enumerate(lines)}
        for (offset, ch), problem in broken.items():
            rec = lines[at[offset]][0]
            entry = rec["values"][ch]
            base_key = (rec["ns"], ch, version_key(entry["base"]))
            base = causes.get(base_key)
            root = base.root if base else _damage_before(damage, first_use, base_key)
            causes.setdefault(_key(rec, ch, entry), _Cause(root or problem, False))
        stored = _stored(lines, broken)
        gone: dict[int, str] = {}
        for rec, offset, _ in lines:
            if rec.get("t") != "checkpoint":
                continue
            missing = [
                ch for ch, ver in rec["cv"].items()
                if (rec["ns"], ch, version_key(ver)) not in stored
                and (damaged or (rec["ns"], ch, version_key(ver)) in causes)
            ]
            if missing:
                gone[offset] = _reason(rec, missing, causes, damage, first_use)
        if not gone:
            break
        for rec, offset, _ in lines:
            if offset in gone:
                dropped.append(f"checkpoint {rec.get('id')} at byte {offset}: {gone[offset]}")
        lines = _move_values(lines, gone, broken, causes)
    kept = [
        ({**rec, "values": {c: e for c, e in rec["values"].items() if (offset, c) not in broken}}, offset, n)
        if any((offset, c) in broken for c in rec.get("values", {})) else (rec, offset, n)
        for rec, offset, n in lines
    ]
    return kept, dropped


def _key(rec: dict[str, Any], ch: str, entry: dict[str, Any]) -> _Key:
    return (rec["ns"], ch, version_key(entry["ver"]))


def _first_uses(lines: list[Line]) -> dict[_Key, int]:
    """Per version, the offset of the first record naming it (as a version or a base):
    the record that stored it came before."""
    first: dict[_Key, int] = {}
    for rec, offset, _ in lines:
        if rec.get("t") == "checkpoint":
            for ch, ver in rec["cv"].items():
                first.setdefault((rec["ns"], ch, version_key(ver)), offset)
            for ch, entry in rec.get("values", {}).items():
                if "base" in entry:
                    first.setdefault((rec["ns"], ch, version_key(entry["base"])), offset)
    return first


def _damage_before(damage: list[tuple[int, int]], first_use: dict[_Key, int], key: _Key) -> str | None:
    """The damaged line a lost version was most likely in: the last one before the
    first record naming it."""
    use = first_use.get(key)
    spans = [span for span in damage if use is None or span[0] < use]
    return f"the damaged line at bytes {spans[-1][0]}-{spans[-1][1]}" if spans else None


def _stored(lines: list[Line], broken: dict[tuple[int, str], str]) -> set[_Key]:
    """Every version some kept record holds a value of that can be rebuilt."""
    return {
        _key(rec, ch, entry)
        for rec, offset, _ in lines
        if rec.get("t") in ("checkpoint", "snapshot")
        for ch, entry in rec.get("values", {}).items()
        if (offset, ch) not in broken
    }


def _reason(
    rec: dict[str, Any], missing: list[str], causes: dict[_Key, _Cause],
    damage: list[tuple[int, int]], first_use: dict[_Key, int],
) -> str:
    """Why a checkpoint is dropped: its missing channels, grouped by cause."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for ch in missing:
        key = (rec["ns"], ch, version_key(rec["cv"][ch]))
        cause = causes.get(key)
        if cause is None:
            cause = _Cause(_damage_before(damage, first_use, key) or "a damaged record", True)
            causes[key] = cause
        groups.setdefault((cause.root, cause.lost), []).append(ch)
    parts = []
    for (root, lost), chs in groups.items():
        if not root.startswith(("the damaged line", "a damaged record")):
            parts.append(root)  # a check's finding in an undamaged log, as it is
        elif lost:
            parts.append(f"the values of {chs} were in {root}")
        else:
            parts.append(f"the values of {chs} extend, by deltas, a value that was in {root}")
    return "; ".join(parts)


def _move_values(
    lines: list[Line], gone: dict[int, str], broken: dict[tuple[int, str], str],
    causes: dict[_Key, _Cause],
) -> list[Line]:
    """``lines`` without the checkpoint records in ``gone``, the values of theirs that
    kept records still need moved into the next kept checkpoint record of the namespace
    (or joined with the delta there that extends them). A value that cannot be moved is
    lost: its cause is that of the checkpoint it was in."""
    out = [(rec, offset, n) for rec, offset, n in lines if offset not in gone]
    needed = _needed(out, broken)
    holders: list[tuple[dict[str, Any], int, str, dict[str, Any]]] = []
    for rec, offset, _ in reversed(lines):  # last first: a delta's base is needed once it is
        if offset not in gone:
            continue
        for ch, entry in rec.get("values", {}).items():
            key = _key(rec, ch, entry)
            if (offset, ch) not in broken and key in needed:
                needed.discard(key)  # one record holds it (the last that stored it)
                holders.append((rec, offset, ch, entry))
                if "base" in entry:
                    needed.add((rec["ns"], ch, version_key(entry["base"])))
    for rec, offset, ch, entry in holders:  # joined into the delta on it, last first
        if not _place(out, offset, rec["ns"], ch, entry):
            first = next(iter(_missing_causes(rec, causes)), None)
            root = first.root if first else "a damaged record"
            causes.setdefault(_key(rec, ch, entry), _Cause(root, False))
    return out


def _needed(lines: list[Line], broken: dict[tuple[int, str], str]) -> set[_Key]:
    """The versions kept records name: checkpoint versions and the bases of kept deltas."""
    needed: set[_Key] = set()
    for rec, offset, _ in lines:
        if rec.get("t") == "checkpoint":
            needed.update((rec["ns"], ch, version_key(v)) for ch, v in rec["cv"].items())
            for ch, entry in rec.get("values", {}).items():
                if "base" in entry and (offset, ch) not in broken:
                    needed.add((rec["ns"], ch, version_key(entry["base"])))
    return needed


def _missing_causes(rec: dict[str, Any], causes: dict[_Key, _Cause]) -> list[_Cause]:
    return [c for ch, v in rec["cv"].items() if (c := causes.get((rec["ns"], ch, version_key(v))))]


def _place(out: list[Line], after: int, ns: str, ch: str, entry: dict[str, Any]) -> bool:
    """Put ``entry`` into the first kept checkpoint record of ``ns`` after byte ``after``
    that stores no value of ``ch``, or join it with the delta on it that a record before
    that one stores. Whether it found a place."""
    for i, (rec, offset, n) in enumerate(out):
        if offset < after or rec.get("t") != "checkpoint" or rec["ns"] != ns:
            continue
        there = rec.get("values", {}).get(ch)
        if there is None:
            out[i] = ({**rec, "values": {**rec.get("values", {}), ch: entry}}, offset, n)
            return True
        joined = _joined(entry, there)
        if joined is None:
            return False
        out[i] = ({**rec, "values": {**rec["values"], ch: joined}}, offset, n)
        return True
    return False


def _joined(entry: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any] | None:
    """``delta`` rebuilt on what ``entry`` is built on (``entry``'s items followed by the
    delta's tail), if it extends ``entry`` and both hold readable lists."""
    if "base" not in delta or version_key(delta["base"]) != version_key(entry["ver"]):
        return None
    found = list_items(entry["tail"] if "base" in entry else entry.get("val", {}))
    if found is None:
        return None
    kind, items = found[0], list(found[1])
    joined_kind = extend_items(kind, items, delta["tail"])
    if joined_kind is None:
        return None
    if "base" in entry:
        if entry.get("keep") is None or delta.get("keep") != entry["keep"] + len(found[1]):
            return None
        tail = {joined_kind: items}
        return {"ver": delta["ver"], "base": entry["base"], "keep": entry["keep"], "tail": tail}
    if delta.get("keep") != len(found[1]):
        return None
    return {"ver": delta["ver"], "val": {joined_kind: items}}
