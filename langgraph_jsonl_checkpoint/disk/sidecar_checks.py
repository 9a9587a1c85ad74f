"""Checks of a sidecar block read from disk (:mod:`.sidecar`): the file is untrusted, so
every column's shape and types are checked before a block is used, and a block that fails
any check ends the usable prefix of the file. Pure: bytes in, a block or ``None`` out.
"""

from __future__ import annotations

import itertools
from operator import itemgetter, sub
from typing import Any

from . import framing
from .sidecar import Block
from .summary import CHECKPOINT, KIND_OF_TYPE, SNAPSHOT, TOOL, WRITES

_SCALARS = {str, int, float, bool, type(None)}
_first, _last = itemgetter(0), itemgetter(-1)


def _types(col: Any) -> set[type]:
    return set(map(type, col))


def _strings(col: list[Any]) -> bool:
    """Whether every item is a string (``str.join`` refuses anything else, quickly)."""
    try:
        "".join(col)
    except TypeError:
        return False
    return True


def decode_block(line: bytes, seq: int, offset: int) -> Block | None:
    """Check one block line; ``None`` unless it is whole, well formed and starts at
    record ``seq`` at byte ``offset``."""
    cols = framing.parse_line(line)
    if cols is None:
        return None
    try:
        return _checked(cols, seq, offset, line)
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def decode_known_block(line: bytes, seq: int, offset: int) -> Block | None:
    """:func:`decode_block` for a line whose bytes this process made or already checked
    (see :attr:`~.view.LogView.head_index_crc`): its checksum and its place are checked,
    its columns not again."""
    cols = framing.parse_line(line)
    if cols is None or cols.get("s0") != seq or cols.get("o0") != offset or type(cols.get("n")) is not list:
        return None
    return Block(cols, line + b"\n", list(itertools.accumulate(cols["n"], initial=offset)))


def facts_ok(facts: Any) -> bool:
    """Whether a block's ``f`` field has the shape :func:`encode` gives it."""
    if type(facts) is not dict or set(facts) != {"plain", "heads"} or type(facts["plain"]) is not bool:
        return False
    heads = facts["heads"]
    return type(heads) is dict and all(type(v) is str for v in heads.values())


def _checked(c: dict[str, Any], seq: int, offset: int, line: bytes) -> Block | None:
    if "f" in c and not facts_ok(c["f"]):
        return None
    if type(c.get("s0")) is not int or c["s0"] != seq or type(c.get("o0")) is not int or c["o0"] != offset:
        return None
    n, t, ns = c["n"], c["t"], c["ns"]
    count = len(n)
    if not (count and type(n) is list and type(t) is list and type(ns) is list
            and len(t) == count and len(ns) == count):
        return None
    if _types(n) != {int} or min(n) < 2:
        return None
    kinds = _types(t)
    if kinds != {int}:
        if not kinds <= {int, str, type(None)} or any(k in KIND_OF_TYPE for k in t if type(k) is str):
            return None  # known kinds are always coded
    codes = [k for k in t if type(k) is int] if kinds != {int} else t
    if codes and (min(codes) < 0 or max(codes) > TOOL):
        return None
    if not _types(ns) <= {str, type(None)}:
        return None
    counts = [codes.count(k) for k in range(4)]
    # per checkpoint
    for name in ("id", "p", "md", "cv"):
        if type(c[name]) is not list or len(c[name]) != counts[CHECKPOINT]:
            return None
    if counts[CHECKPOINT] and not (_strings(c["id"]) and _types(c["p"]) <= {str, type(None)}
                                   and _strings(c["md"]) and _strings(c["cv"])):
        return None
    # JSON text of an object (metadata may be null), decoded when asked for
    if counts[CHECKPOINT] and not (
        set(map(_first, c["cv"])) == {"{"} and set(map(_last, c["cv"])) == {"}"}
        and set(map(_first, c["md"])) <= {"{", "n"} and set(map(_last, c["md"])) <= {"}", "l"}
    ):
        return None
    if counts[CHECKPOINT] and ("l" in set(map(_last, c["md"])) or "n" in set(map(_first, c["md"]))):
        if any(x != "null" for x in c["md"] if x[0] == "n" or x[-1] == "l"):
            return None
    # per writes record, and its writes flattened: wn[j] of them per record
    for name in ("cp", "task", "path", "wn"):
        if type(c[name]) is not list or len(c[name]) != counts[WRITES]:
            return None
    wn, wi, wc = c["wn"], c["wi"], c["wc"]
    if type(wi) is not list or type(wc) is not list or len(wi) != len(wc):
        return None
    if counts[WRITES]:
        if not (_strings(c["cp"]) and _strings(c["task"]) and _strings(c["path"])
                and _types(wn) == {int} and min(wn) >= 0 and sum(wn) == len(wi)):
            return None
        if wi and (_types(wi) != {int} or not _strings(wc)):
            return None
    elif wi:
        return None
    # per tool record
    keys = c["key"]
    if type(keys) is not list or len(keys) != counts[TOOL]:
        return None
    if keys and (_types(keys) != {list} or set(map(len, keys)) != {3}
                 or _types(itertools.chain.from_iterable(keys)) != {str}):
        return None
    # the namespace: a string for checkpoint, writes and snapshot records
    if None in ns and any(k in (CHECKPOINT, WRITES, SNAPSHOT) and x is None for k, x in zip(t, ns)):
        return None
    # stored values
    vr, vc, vv, vk, vb = (c[k] for k in ("vr", "vc", "vv", "vk", "vb"))
    if not all(type(x) is list and len(x) == len(vr) for x in (vr, vc, vv, vk, vb)):
        return None
    if vr:
        if _types(vr) != {int} or vr != sorted(vr) or vr[0] < seq or vr[-1] >= seq + count:
            return None
        holders = set(vr)
        if not set(map(t.__getitem__, map(sub, holders, itertools.repeat(seq)))) <= {CHECKPOINT, SNAPSHOT}:
            return None
        if (not _strings(vc) or not _types(vv) <= _SCALARS or not _types(vb) <= _SCALARS
                or _types(vk) != {int} or not set(vk) <= {0, 1, 2}):
            return None
        if counts[SNAPSHOT]:  # a snapshot stores full values only
            snaps = {r for r in holders if t[r - seq] == SNAPSHOT}
            in_snap = list(map(snaps.__contains__, vr))
            if not set(itertools.compress(vk, in_snap)) <= {0} or not set(
                itertools.compress(vb, in_snap)
            ) <= {None}:
                return None
    offsets = list(itertools.accumulate(n, initial=offset))
    return Block(c, line + b"\n", offsets)
