"""The sidecar index file (``.idx``): record summaries in checksummed columnar blocks.

Layout (see ``docs/format.md``, "Sidecar index")::

    {"t":"index","seq":0,"v":2,"gen":…,"ino":…,"log":…,"c":"…"}
    {"s0":1,"o0":125,"n":[…],"t":[…],"ns":[…],"id":[…],…,"c":"…"}     one block
    {"s0":1025,"o0":…,…,"c":"…"}                                      the next block

A block holds the summaries (:func:`~.index.summarize`) of consecutive records as
columns, so loading tens of thousands of them is a few ``orjson.loads`` calls and list
operations instead of a Python loop per record. The fields of a record that are rarely
needed (metadata ``md`` and channel versions ``cv`` of a checkpoint) are kept as JSON
text and decoded when something asks for them.

Block columns (one entry per record unless said otherwise; record kinds are
``0`` checkpoint, ``1`` writes, ``2`` snapshot, ``3`` tool, or the record's ``t`` string
for any other kind):

- ``s0``, ``o0``: sequence number and byte offset of the block's first record;
- ``n`` (lengths, newline included), ``t`` (kind), ``ns`` (namespace or null);
- per checkpoint record, in order: ``id``, ``p`` (parent), ``md``, ``cv`` (JSON text);
- per stored value (of checkpoint and snapshot records, in record order): ``vr`` (the
  record's ``seq``), ``vc`` (channel), ``vv`` (version), ``vk`` (0 full, 1 delta,
  2 empty; snapshots: 0), ``vb`` (a delta's base version, else null);
- per writes record: ``cp``, ``task``, ``path``, ``wn`` (its number of writes); per
  write, in record order: ``wi`` (the write's ``idx``), ``wc`` (its channel);
- per tool record: ``key`` (``[ns, checkpoint id, call id]``).

The file is untrusted (see :meth:`~.log.ThreadLog._load_sidecar`): :func:`decode_block`
checks every column's shape and types, and a block that fails any check ends the usable
prefix. Pure: bytes in, blocks out; the file I/O lives in ``log.py``.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterable, Iterator
from operator import itemgetter, sub
from typing import Any

import orjson

from . import framing

#: Sidecar format version (the header's ``v``). Sidecars without it (one summary per
#: line, before 0.2) are ignored and rebuilt.
SIDECAR_VERSION = 2
#: Records per block when many are written at once (a rewrite after a scan).
BLOCK_RECORDS = 1024

KINDS = ("checkpoint", "writes", "snapshot", "tool")
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
CHECKPOINT, WRITES, SNAPSHOT, TOOL = range(4)
_SCALARS = {str, int, float, bool, type(None)}
_first, _last = itemgetter(0), itemgetter(-1)


def header_line(gen: int, ino: int | None, log_crc: str) -> bytes:
    return framing.frame({"t": "index", "seq": 0, "v": SIDECAR_VERSION, "gen": gen, "ino": ino, "log": log_crc})


def columns(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The block columns of consecutive record summaries (at least one)."""
    n, t, nss = [], [], []
    ids, ps, mds, cvs = [], [], [], []
    vr, vc, vv, vk, vb = [], [], [], [], []
    cps, tasks, paths, wn, wi, wc = [], [], [], [], [], []
    keys = []
    dumps = orjson.dumps
    for s in summaries:
        kind = s["t"]
        n.append(s["n"])
        code = _KIND_CODE.get(kind, kind)
        t.append(code)
        nss.append(s.get("ns"))
        if code == CHECKPOINT:
            ids.append(s["id"])
            ps.append(s["p"])
            mds.append(dumps(s["md"]).decode())
            cvs.append(dumps(s["cv"]).decode())
            for ch, (ver, vkind, base) in s["vals"].items():
                vr.append(s["s"])
                vc.append(ch)
                vv.append(ver)
                vk.append(vkind)
                vb.append(base)
        elif code == WRITES:
            cps.append(s["cp"])
            tasks.append(s["task"])
            paths.append(s["path"])
            wn.append(len(s["w"]))
            for idx, ch in s["w"]:
                wi.append(idx)
                wc.append(ch)
        elif code == SNAPSHOT:
            for ch, ver in s["vals"].items():
                vr.append(s["s"])
                vc.append(ch)
                vv.append(ver)
                vk.append(0)
                vb.append(None)
        elif code == TOOL:
            keys.append(s["key"])
            nss[-1] = None
    return {
        "s0": summaries[0]["s"], "o0": summaries[0]["o"], "n": n, "t": t, "ns": nss,
        "id": ids, "p": ps, "md": mds, "cv": cvs,
        "vr": vr, "vc": vc, "vv": vv, "vk": vk, "vb": vb,
        "cp": cps, "task": tasks, "path": paths, "wn": wn, "wi": wi, "wc": wc, "key": keys,
    }


def encode(summaries: list[dict[str, Any]]) -> bytes:
    """Block lines for these summaries (nothing for none)."""
    return b"".join(
        framing.frame(columns(summaries[i : i + BLOCK_RECORDS]))
        for i in range(0, len(summaries), BLOCK_RECORDS)
    )


#: Integer columns, held as arrays once loaded: the cyclic garbage collector walks every
#: item of a list (a long thread's index would cost it milliseconds per pass), never
#: the items of an array.
_INT_COLUMNS = ("n", "vr", "vk", "wn", "wi")
_PER_RECORD = ("n", "t", "ns")
_PER_KIND = {CHECKPOINT: ("id", "p", "md", "cv"), WRITES: ("cp", "task", "path", "wn"), TOOL: ("key",)}
_PER_SLOT = ("vr", "vc", "vv", "vk", "vb")
_PER_WRITE = ("wi", "wc")
_KIND_OF = {name: kind for kind, names in _PER_KIND.items() for name in names}
_COLUMN_ORDER = ("n", "t", "ns", "id", "p", "md", "cv", "vr", "vc", "vv", "vk", "vb",
                 "cp", "task", "path", "wn", "wi", "wc", "key")


class Block:
    """Decoded, checked columns of consecutive records (one file line, or several merged)."""

    __slots__ = ("cols", "line", "first", "count", "offsets", "bounds", "_rank", "_wstart")

    def __init__(self, cols: dict[str, Any], line: bytes | None, offsets: Any) -> None:
        self.cols = cols
        self.line = line  # framed line ("\n" included); None until encoded
        self.first: int = cols["s0"]
        self.count = len(cols["n"])
        self.offsets = offsets  # of each record, and one past the last
        self.bounds = [self.count]  # records per file line (several once merged)
        self._rank: list[int] | None = None
        self._wstart: Any = None

    @property
    def end(self) -> int:
        return self.offsets[-1]

    def framed(self) -> bytes:
        """File lines for this block: the lines it was read from or built as, again."""
        if self.line is not None:
            return self.line
        return b"".join(framing.frame(cols) for cols in self._pieces())

    def _pieces(self) -> Iterator[dict[str, Any]]:
        c = self.cols
        kinds = list(c["t"])
        wstart = list(itertools.accumulate(c["wn"], initial=0))
        vr = c["vr"]
        rank = [0, 0, 0, 0]
        a = 0
        for size in self.bounds:
            b = a + size
            part = kinds[a:b]
            upto = [rank[k] + part.count(k) for k in range(4)]
            lo = bisect.bisect_left(vr, self.first + a)
            hi = bisect.bisect_left(vr, self.first + b)
            wa, wb = wstart[rank[WRITES]], wstart[upto[WRITES]]
            piece: dict[str, Any] = {"s0": self.first + a, "o0": self.offsets[a]}
            for name in _COLUMN_ORDER:  # as columns() writes them
                if name in _PER_RECORD:
                    piece[name] = list(c[name][a:b])
                elif name in _PER_SLOT:
                    piece[name] = list(c[name][lo:hi])
                elif name in _PER_WRITE:
                    piece[name] = list(c[name][wa:wb])
                else:
                    kind = _KIND_OF[name]
                    piece[name] = list(c[name][rank[kind] : upto[kind]])
            rank = upto
            a = b
            yield piece

    def span(self, i: int) -> tuple[int, int]:
        return self.offsets[i], self.cols["n"][i]

    def summary(self, seq: int) -> dict[str, Any] | None:
        """The summary of record ``seq`` as :func:`~.index.summarize` made it (``None``
        if the block cannot say: it was not written by this package)."""
        try:
            return self._summary(seq)
        except (ValueError, TypeError, IndexError, KeyError):
            return None

    def _summary(self, seq: int) -> dict[str, Any] | None:
        c = self.cols
        i = seq - self.first
        if self._rank is None:
            counters = [0, 0, 0, 0]
            rank = []
            for code in c["t"]:
                if type(code) is int:
                    rank.append(counters[code])
                    counters[code] += 1
                else:
                    rank.append(-1)
            self._rank = rank
        code, j = c["t"][i], self._rank[i]
        s: dict[str, Any] = {"o": self.offsets[i], "n": c["n"][i], "s": seq}
        if type(code) is not int:
            s["t"] = code
            return s
        s["t"] = KINDS[code]
        if code == TOOL:
            s["key"] = c["key"][j]
            return s
        s["ns"] = c["ns"][i]
        if code == WRITES:
            if self._wstart is None:
                self._wstart = list(itertools.accumulate(c["wn"], initial=0))
            a, b = self._wstart[j], self._wstart[j + 1]
            s.update(cp=c["cp"][j], task=c["task"][j], path=c["path"][j],
                     w=[[i, ch] for i, ch in zip(c["wi"][a:b], c["wc"][a:b])])
            return s
        lo, hi = bisect.bisect_left(c["vr"], seq), bisect.bisect_right(c["vr"], seq)
        if code == SNAPSHOT:
            s["vals"] = dict(zip(c["vc"][lo:hi], c["vv"][lo:hi]))
        else:
            s.update(id=c["id"][j], p=c["p"][j], md=orjson.loads(c["md"][j]), cv=orjson.loads(c["cv"][j]))
            s["vals"] = {ch: [ver, k, b] for ch, ver, k, b in zip(
                c["vc"][lo:hi], c["vv"][lo:hi], c["vk"][lo:hi], c["vb"][lo:hi])}
        if len(s["vals"]) != hi - lo:
            return None  # a channel twice in one record: never what summarize made
        return s



def merge(blocks: list[Block]) -> Block:
    """One block holding the records of consecutive blocks (integer columns as arrays)."""
    cols = {"s0": blocks[0].first, "o0": blocks[0].offsets[0]}
    for name in blocks[0].cols:
        if name in ("s0", "o0"):
            continue
        if name in _INT_COLUMNS or (name == "t" and all(_types(b.cols["t"]) == {int} for b in blocks)):
            col = array("q")
            for b in blocks:
                col.extend(b.cols[name])
        else:
            col = list(itertools.chain.from_iterable(b.cols[name] for b in blocks))
        cols[name] = col
    offsets = array("q", itertools.chain.from_iterable(b.offsets[:-1] for b in blocks))
    offsets.append(blocks[-1].end)
    merged = Block(cols, None, offsets)
    merged.bounds = [n for b in blocks for n in b.bounds]
    return merged

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


def _checked(c: dict[str, Any], seq: int, offset: int, line: bytes) -> Block | None:
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
        if not kinds <= {int, str, type(None)} or any(k in _KIND_CODE for k in t if type(k) is str):
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
            if not set(itertools.compress(vk, in_snap)) <= {0} or not set(itertools.compress(vb, in_snap)) <= {None}:
                return None
    offsets = list(itertools.accumulate(n, initial=offset))
    return Block(c, line + b"\n", offsets)


class Summaries:
    """What the sidecar holds (or would): the summary of every indexed record.

    Records covered by blocks (loaded from the sidecar, or built from a scan) stay in
    columns; records indexed one at a time (appends, short scans) are kept as
    summaries until they are written.
    """

    def __init__(self) -> None:
        self.header: dict[str, Any] | None = None
        self.blocks: list[Block] = []
        self._starts: list[int] = []  # first seq of each block
        self.tail: list[dict[str, Any]] = []
        self._covered = 0  # records in blocks

    def __len__(self) -> int:
        return (self.header is not None) + self._covered + len(self.tail)

    def set_header(self, summary: dict[str, Any]) -> None:
        self.header = summary

    def add_blocks(self, blocks: list[Block]) -> None:
        """Blocks right after the header (only before any record was appended)."""
        assert not self.tail
        for b in blocks:
            self.blocks.append(b)
            self._starts.append(b.first)
            self._covered += b.count

    def append(self, summary: dict[str, Any]) -> None:
        if self.header is None and summary["s"] == 0:
            self.header = summary
        else:
            self.tail.append(summary)

    def last_span(self) -> tuple[int, int] | None:
        """Offset and length of the last indexed record."""
        if self.tail:
            s = self.tail[-1]
            return s["o"], s["n"]
        if self.blocks:
            b = self.blocks[-1]
            return b.span(b.count - 1)
        if self.header is not None:
            return self.header["o"], self.header["n"]
        return None

    def last_seq(self) -> int:
        return len(self) - 1

    def spans(self) -> list[tuple[int, int]]:
        """Offset and length of every indexed record, header first."""
        out = [(self.header["o"], self.header["n"])] if self.header else []
        for b in self.blocks:
            out.extend(zip(b.offsets, b.cols["n"]))
        out.extend((s["o"], s["n"]) for s in self.tail)
        return out

    def get(self, seq: int) -> dict[str, Any] | None:
        """The summary of record ``seq`` (``None`` if not indexed)."""
        if seq == 0:
            return self.header
        if seq <= 0 or seq >= len(self):
            return None
        if seq > self._covered:
            return self.tail[seq - self._covered - 1]
        b = self.blocks[bisect.bisect_right(self._starts, seq) - 1]
        return b.summary(seq)

    def compact(self) -> None:
        """Hold everything in one block, written as lines of :data:`BLOCK_RECORDS`
        records (an appending writer leaves many short lines; each costs a reader)."""
        pieces = list(self.blocks)
        for i in range(0, len(self.tail), BLOCK_RECORDS):
            part = self.tail[i : i + BLOCK_RECORDS]
            offsets = [s["o"] for s in part]
            offsets.append(part[-1]["o"] + part[-1]["n"])
            pieces.append(Block(columns(part), None, offsets))
        if not pieces:
            return
        merged = merge(pieces)
        full, rest = divmod(merged.count, BLOCK_RECORDS)
        merged.bounds = [BLOCK_RECORDS] * full + ([rest] if rest else [])
        self.blocks, self._starts, self._covered, self.tail = [merged], [merged.first], merged.count, []

    def encode_from(self, count: int) -> bytes | None:
        """Block lines for the records after the first ``count`` (header not counted);
        ``None`` if ``count`` falls inside a block."""
        out = []
        done = 0
        for b in self.blocks:
            if done >= count:
                out.append(b.framed())
            elif done + b.count > count:
                return None
            done += b.count
        out.append(encode(self.tail[max(0, count - done):]))
        return b"".join(out)



def record_columns(records: Iterable[tuple[dict[str, Any], int, int]]) -> dict[str, Any] | None:
    """:func:`columns` of the summaries of these log records (with their offsets and
    lengths), without building them; ``None`` for no records.

    Must agree with :func:`~.index.summarize` field for field (tests check it).
    """
    t, nss, lengths = [], [], []
    first = None
    ids, ps, mds, cvs = [], [], [], []
    vr, vc, vv, vk, vb = [], [], [], [], []
    cps, tasks, paths, wn, wi, wc = [], [], [], [], [], []
    keys = []
    dumps = orjson.dumps
    for rec, offset, length in records:
        if first is None:
            first = rec["seq"], offset
        lengths.append(length)
        kind = rec.get("t")
        if kind == "checkpoint":
            t.append(CHECKPOINT)
            nss.append(rec["ns"])
            ids.append(rec["id"])
            ps.append(rec.get("parent"))
            mds.append(dumps(rec.get("md")).decode())
            cvs.append(dumps(rec["cv"]).decode())
            seq = rec["seq"]
            for ch, entry in rec.get("values", {}).items():
                vr.append(seq)
                vc.append(ch)
                vv.append(entry["ver"])
                if "empty" in entry:
                    vk.append(2)
                    vb.append(None)
                elif "base" in entry:
                    vk.append(1)
                    vb.append(entry["base"])
                else:
                    vk.append(0)
                    vb.append(None)
        elif kind == "writes":
            t.append(WRITES)
            nss.append(rec["ns"])
            cps.append(rec["cp"])
            tasks.append(rec["task"])
            paths.append(rec.get("path", ""))
            wn.append(len(rec["w"]))
            for w in rec["w"]:
                wi.append(w[0])
                wc.append(w[1])
        elif kind == "snapshot":
            t.append(SNAPSHOT)
            nss.append(rec["ns"])
            seq = rec["seq"]
            for ch, entry in rec["values"].items():
                vr.append(seq)
                vc.append(ch)
                vv.append(entry["ver"])
                vk.append(0)
                vb.append(None)
        elif kind == "tool":
            t.append(TOOL)
            nss.append(None)
            keys.append([rec["ns"], rec["cp"], rec["call"]])
        else:
            t.append(kind)
            nss.append(None)
    if first is None:
        return None
    return {
        "s0": first[0], "o0": first[1], "n": lengths, "t": t, "ns": nss,
        "id": ids, "p": ps, "md": mds, "cv": cvs,
        "vr": vr, "vc": vc, "vv": vv, "vk": vk, "vb": vb,
        "cp": cps, "task": tasks, "path": paths, "wn": wn, "wi": wi, "wc": wc, "key": keys,
    }


def blocks_of(records: Iterable[tuple[dict[str, Any], int, int]]) -> list[Block]:
    """The summaries of these (checked, consecutive) log records, given with their
    offsets and lengths (as :func:`~.framing.iter_records` yields them), as one merged
    block (none for no records)."""
    pieces = []
    stream = iter(records)
    while True:
        cols = record_columns(itertools.islice(stream, BLOCK_RECORDS))
        if cols is None:
            return [merge(pieces)] if pieces else []
        offsets = list(itertools.accumulate(cols["n"], initial=cols["o0"]))
        pieces.append(Block(cols, None, offsets))
