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

Block columns (one entry per record unless said otherwise; record kinds are coded as
:class:`~.summary.RecordKind`, or the record's ``t`` string for any other kind; value
kinds as :class:`~.summary.ValueKind`):

- ``s0``, ``o0``: sequence number and byte offset of the block's first record;
- ``n`` (lengths, newline included), ``t`` (kind), ``ns`` (namespace or null);
- per checkpoint record, in order: ``id``, ``p`` (parent), ``md``, ``cv`` (JSON text);
- per stored value (of checkpoint and snapshot records, in record order): ``vr`` (the
  record's ``seq``), ``vc`` (channel), ``vv`` (version), ``vk`` (0 full, 1 delta,
  2 empty; snapshots: 0), ``vb`` (a delta's base version, else null);
- per writes record: ``cp``, ``task``, ``path``, ``wn`` (its number of writes); per
  write, in record order: ``wi`` (the write's ``idx``), ``wc`` (its channel);
- per tool record: ``key`` (``[ns, checkpoint id, call id]``);
- optionally ``f``, the index's facts as of the block's last record
  (:class:`~.index.IndexFacts` as JSON: ``{"plain": bool, "heads": {ns: id}}``): what lets
  a reader answer the latest checkpoint from the last blocks alone (:mod:`.lazy_blocks`).

The file is untrusted (see :meth:`~.log.ThreadLog._load_sidecar`):
:func:`~.sidecar_checks.decode_block` checks every column's shape and types, and a block
that fails any check ends the usable prefix. Pure: bytes in, blocks out; the file I/O lives in ``log.py``.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from . import framing
from .summary import CHECKPOINT, DELTA, EMPTY, FULL, SNAPSHOT, TOOL, WRITES, RecordKind

#: Sidecar format version (the header's ``v``). Older sidecars (without it: one summary
#: per line, before 0.2; 2: blocks without facts) are ignored and rebuilt.
SIDECAR_VERSION = 3
#: Records per block when many are written at once (a rewrite after a scan).
BLOCK_RECORDS = 1024


def header_line(gen: int, ino: int | None, log_crc: str) -> bytes:
    return framing.frame(
        {"t": "index", "seq": 0, "v": SIDECAR_VERSION, "gen": gen, "ino": ino, "log": log_crc}
    )


def encode(summaries: list[dict[str, Any]], facts: dict[str, Any] | None = None) -> bytes:
    """Block lines for these summaries (nothing for none); ``facts`` (the index's, as
    of the last of them) go into the last line."""
    out = []
    for i in range(0, len(summaries), BLOCK_RECORDS):
        cols = columns_of(placed(summaries[i : i + BLOCK_RECORDS]))
        assert cols is not None
        if facts is not None and i + BLOCK_RECORDS >= len(summaries):
            cols["f"] = facts
        out.append(framing.frame(cols))
    return b"".join(out)


def placed(summaries: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int, int]]:
    """Summaries as :func:`columns_of` takes records: with their offsets and lengths."""
    return ((s, s["o"], s["n"]) for s in summaries)


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

    __slots__ = (
        "_cols", "line", "first", "count", "offsets", "bounds", "facts", "folded", "_rank", "_wstart"
    )

    def __init__(self, cols: dict[str, Any], line: bytes | None, offsets: Any) -> None:
        #: The index's facts as of this block's last record (``None``: not known).
        self.facts: dict[str, Any] | None = cols.pop("f", None)
        self._cols: dict[str, Any] | None = cols
        #: Built from records indexed one at a time (:meth:`packed`): never a file line.
        self.folded = False
        self.line = line  # framed line ("\n" included); None until encoded
        self.first: int = cols["s0"]
        self.count = len(cols["n"])
        self.offsets = offsets  # of each record, and one past the last
        self.bounds = [self.count]  # records per file line (several once merged)
        self._rank: list[int] | None = None
        self._wstart: Any = None

    @classmethod
    def packed(cls, cols: dict[str, Any], offsets: list[int]) -> Block:
        """A block kept as its framed line only: bytes, which the cyclic garbage
        collector never walks, where columns are two dozen lists. Its columns are
        decoded from the line whenever they are asked for."""
        block = cls(cols, framing.frame(cols), array("q", offsets))
        block._cols = None
        block.folded = True
        return block

    @property
    def cols(self) -> dict[str, Any]:
        """The columns (decoded again on every call for a :meth:`packed` block)."""
        cols = self._cols
        if cols is None:
            assert self.line is not None
            cols = framing.parse_line(self.line[:-1])
            assert cols is not None
            cols.pop("f", None)
        return cols

    def unpack(self) -> None:
        """Keep the columns decoded (before the line is dropped)."""
        if self._cols is None:
            self._cols = self.cols

    @property
    def end(self) -> int:
        return int(self.offsets[-1])

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
            if b == self.count and self.facts is not None:
                piece["f"] = self.facts
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
        keep = self._cols is not None  # (a packed block keeps nothing decoded)
        i = seq - self.first
        rank = self._rank
        if rank is None:
            counters = [0, 0, 0, 0]
            rank = []
            for code in c["t"]:
                if type(code) is int:
                    rank.append(counters[code])
                    counters[code] += 1
                else:
                    rank.append(-1)
            if keep:
                self._rank = rank
        code, j = c["t"][i], rank[i]
        s: dict[str, Any] = {"t": code, "seq": seq, "o": self.offsets[i], "n": c["n"][i]}
        if type(code) is not int:
            return s
        s["t"] = RecordKind(code).name.lower()
        if code == TOOL:
            s["ns"], s["cp"], s["call"] = c["key"][j]
            return s
        s["ns"] = c["ns"][i]
        if code == WRITES:
            wstart = self._wstart
            if wstart is None:
                wstart = list(itertools.accumulate(c["wn"], initial=0))
                if keep:
                    self._wstart = wstart
            a, b = wstart[j], wstart[j + 1]
            s.update(cp=c["cp"][j], task=c["task"][j], path=c["path"][j],
                     w=[[i, ch] for i, ch in zip(c["wi"][a:b], c["wc"][a:b])])
            return s
        lo, hi = bisect.bisect_left(c["vr"], seq), bisect.bisect_right(c["vr"], seq)
        if code == SNAPSHOT:
            s["values"] = {ch: {"ver": ver} for ch, ver in zip(c["vc"][lo:hi], c["vv"][lo:hi])}
        else:
            s.update(
                id=c["id"][j], parent=c["p"][j], md=orjson.loads(c["md"][j]), cv=orjson.loads(c["cv"][j])
            )
            s["values"] = {ch: _value_summary(ver, k, b) for ch, ver, k, b in zip(
                c["vc"][lo:hi], c["vv"][lo:hi], c["vk"][lo:hi], c["vb"][lo:hi])}
        if len(s["values"]) != hi - lo:
            return None  # a channel twice in one record: never what summarize made
        return s


def _value_summary(version: Any, kind: int, base: Any) -> dict[str, Any]:
    """A stored value's summary (as :func:`~.summary.summarize` makes it) from columns."""
    if kind == EMPTY:
        return {"ver": version, "empty": 1}
    if kind == DELTA:
        return {"ver": version, "base": base}
    return {"ver": version}


def merge(blocks: list[Block]) -> Block:
    """One block holding the records of consecutive blocks (integer columns as arrays)."""
    cols = {"s0": blocks[0].first, "o0": blocks[0].offsets[0]}
    each = [b.cols for b in blocks]  # (packed blocks decode theirs once)
    for name in each[0]:
        if name in ("s0", "o0"):
            continue
        if name in _INT_COLUMNS or (name == "t" and all(_types(c["t"]) == {int} for c in each)):
            col: Any = array("q")
            for c in each:
                col.extend(c[name])
        else:
            col = list(itertools.chain.from_iterable(c[name] for c in each))
        cols[name] = col
    offsets = array("q", itertools.chain.from_iterable(b.offsets[:-1] for b in blocks))
    offsets.append(blocks[-1].end)
    merged = Block(cols, None, offsets)
    merged.bounds = [n for b in blocks for n in b.bounds]
    merged.facts = blocks[-1].facts
    return merged


def one_line(blocks: list[Block], facts: dict[str, Any] | None) -> bytes:
    """The file line of consecutive blocks that fit one line: what ``merge(blocks)``
    framed with ``facts`` and a single bound gives, byte for byte, without the merged
    block (its integer columns made arrays, then cut back into lists for the line):
    each column's items joined straight into the line's lists."""
    each = [b.cols for b in blocks]  # (packed blocks decode theirs once)
    piece: dict[str, Any] = {"s0": blocks[0].first, "o0": int(blocks[0].offsets[0])}
    chain = itertools.chain.from_iterable
    for name in _COLUMN_ORDER:
        piece[name] = list(chain([c[name] for c in each]))
    if facts is not None:
        piece["f"] = facts
    return framing.frame(piece)


def merge_owned(blocks: list[Block]) -> Block:
    """:func:`merge` for blocks nothing else holds (just decoded or built): one block
    is made what :func:`merge` would give (not a file line any more) in place, its
    columns not copied."""
    if len(blocks) != 1 or blocks[0]._cols is None:
        return merge(blocks)
    block = _as_merged(blocks[0])
    block.line = None
    return block


def _as_merged(block: Block) -> Block:
    """One block just built from records, as :func:`merge` would give it alone: its
    integer columns made arrays in place (a short log's scan copies no other column)."""
    cols = block.cols
    for name in _INT_COLUMNS:
        cols[name] = array("q", cols[name])
    if _types(cols["t"]) == {int}:
        cols["t"] = array("q", cols["t"])
    block.offsets = array("q", block.offsets)
    return block


def _types(col: Any) -> set[type]:
    return set(map(type, col))


def columns_of(records: Iterable[tuple[dict[str, Any], int, int]]) -> dict[str, Any] | None:
    """The block columns of consecutive records, given with their offsets and lengths
    (``None`` for none): log records, or their summaries (:mod:`.summary`: the same
    fields), the one mapping from records to columns.

    :meth:`Block.summary` is its inverse; tests check that the two agree with
    :func:`~.summary.summarize` field for field.
    """
    t: list[Any] = []
    nss: list[Any] = []
    lengths: list[int] = []
    first = None
    ids: list[Any] = []
    ps: list[Any] = []
    mds: list[Any] = []
    cvs: list[Any] = []
    vr: list[Any] = []
    vc: list[Any] = []
    vv: list[Any] = []
    vk: list[Any] = []
    vb: list[Any] = []
    cps: list[Any] = []
    tasks: list[Any] = []
    paths: list[Any] = []
    wn: list[Any] = []
    wi: list[Any] = []
    wc: list[Any] = []
    keys: list[Any] = []
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
                    vk.append(EMPTY)
                    vb.append(None)
                elif "base" in entry:
                    vk.append(DELTA)
                    vb.append(entry["base"])
                else:
                    vk.append(FULL)
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
                vk.append(FULL)
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
    pieces: list[Block] = []
    stream = iter(records)
    while True:
        cols = columns_of(itertools.islice(stream, BLOCK_RECORDS))
        if cols is None:
            if len(pieces) == 1:
                return [_as_merged(pieces[0])]
            return [merge(pieces)] if pieces else []
        offsets = list(itertools.accumulate(cols["n"], initial=cols["o0"]))
        pieces.append(Block(cols, None, offsets))
