"""What the sidecar holds (or would): the summary of every record a log's index holds.

Records covered by blocks (loaded from the sidecar, or built from a scan) stay in
columns; records indexed one at a time (appends, short scans) are kept as summaries
until they are written. Pure.
"""

from __future__ import annotations

import bisect
from typing import Any

from .lazy_blocks import LazyBlocks
from .sidecar import BLOCK_RECORDS, Block, columns_of, merge, one_line, placed

#: Records in a sidecar's last line, at most: a fresh process's first read decodes
#: that line only (:mod:`.lazy_blocks`), and needs the newest records.
LAST_LINE_RECORDS = 256


def last_bounds(count: int) -> list[int]:
    """Records per line of the ``count`` records a sidecar write ends with: lines of
    :data:`BLOCK_RECORDS`, the last of at most :data:`LAST_LINE_RECORDS` (decoding a
    long thread's last line of up to a thousand records was a tenth of its first read)."""
    last = min(count, LAST_LINE_RECORDS)
    full, rest = divmod(count - last, BLOCK_RECORDS)
    return [BLOCK_RECORDS] * full + ([rest] if rest else []) + ([last] if last else [])


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
        self._lazy: LazyBlocks | None = None  # blocks not all decoded yet (load_tail)

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

    def add_tail(self, lazy: LazyBlocks) -> None:
        """Blocks right after the header, decoded newest first as they are asked for."""
        assert not self.tail and not self.blocks
        last = lazy.decoded[-1]
        self._lazy = lazy
        self._covered = last.first + last.count - 1

    def settle(self) -> None:
        """Decode every block still undecoded."""
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            self._covered = 0
            blocks = lazy.everything()
            self.add_blocks([merge(blocks)] if len(blocks) > 1 else blocks)

    def append(self, summary: dict[str, Any]) -> None:
        self.settle()
        if self.header is None and summary["seq"] == 0:
            self.header = summary
        else:
            self.tail.append(summary)

    def fold(self, boundary: int) -> None:
        """Hold the summaries appended one at a time as blocks: columns are a few
        objects for the cyclic garbage collector to walk, where a summary is a dozen
        (dicts of values, metadata, versions). A block edge is kept at ``boundary``
        records (what the file holds), so the next write still appends."""
        if not self.tail:
            return
        cut = boundary - self._covered
        parts = [self.tail[:cut], self.tail[cut:]] if 0 < cut < len(self.tail) else [self.tail]
        for part in parts:
            offsets = [s["o"] for s in part]
            offsets.append(part[-1]["o"] + part[-1]["n"])
            block = Block.packed(columns_of(placed(part)), offsets)  # type: ignore[arg-type]
            self.blocks.append(block)
            self._starts.append(block.first)
            self._covered += block.count
        self.tail = []

    def last_span(self) -> tuple[int, int] | None:
        """Offset and length of the last indexed record."""
        if self.tail:
            s = self.tail[-1]
            return s["o"], s["n"]
        if self._lazy is not None:
            b = self._lazy.decoded[-1]
            return b.span(b.count - 1)
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
        self.settle()
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
        lazy = self._lazy
        if lazy is not None:
            while seq < lazy.start_seq and lazy.older():
                pass
            for block in reversed(lazy.decoded):
                if block.first <= seq:
                    return block.summary(seq)
            return None
        b = self.blocks[bisect.bisect_right(self._starts, seq) - 1]
        return b.summary(seq)

    def compact(self, facts: dict[str, Any] | None = None) -> None:
        """Hold everything in one block, written as lines of :data:`BLOCK_RECORDS`
        records (an appending writer leaves many short lines; each costs a reader)."""
        self.settle()
        pieces = list(self.blocks)
        for i in range(0, len(self.tail), BLOCK_RECORDS):
            part = self.tail[i : i + BLOCK_RECORDS]
            offsets = [s["o"] for s in part]
            offsets.append(part[-1]["o"] + part[-1]["n"])
            pieces.append(Block(columns_of(placed(part)), None, offsets))  # type: ignore[arg-type]
        if not pieces:
            return
        merged = merge(pieces)
        merged.bounds = last_bounds(merged.count)  # (encode_from splits it so again)
        if facts is not None:
            merged.facts = facts
        self.blocks, self._starts, self._covered, self.tail = [merged], [merged.first], merged.count, []

    def encode_from(self, count: int, facts: dict[str, Any] | None = None) -> bytes | None:
        """Block lines for the records after the first ``count`` (header not counted);
        ``None`` if ``count`` falls inside a block. ``facts`` (the index's, now) go into
        the last line.

        Blocks read from the file are written as the lines they were; the records
        indexed one at a time since (folded blocks, the tail) in lines of up to
        :data:`BLOCK_RECORDS`.
        """
        self.settle()
        pieces: list[Block] = []
        done = 0
        for b in self.blocks:
            if done >= count:
                pieces.append(b)
            elif done + b.count > count:
                return None
            done += b.count
        rest = self.tail[max(0, count - done) :]
        if rest:
            offsets = [s["o"] for s in rest]
            offsets.append(rest[-1]["o"] + rest[-1]["n"])
            pieces.append(Block(columns_of(placed(rest)), None, offsets))  # type: ignore[arg-type]
        groups: list[list[Block]] = []
        for b in pieces:
            fresh = b.line is None or b.folded
            if fresh and groups and (groups[-1][-1].line is None or groups[-1][-1].folded):
                groups[-1].append(b)
            else:
                groups.append([b])
        out = []
        for k, group in enumerate(groups):
            last = k == len(groups) - 1
            if len(group) == 1 and group[0].line is not None and not group[0].folded:
                block = group[0]  # read from the file: written as it was
                if last and facts is not None and block.facts != facts:
                    block.unpack()
                    block.facts, block.line = facts, None
                out.append(block.framed())
                continue
            count = sum(b.count for b in group)
            if count <= (LAST_LINE_RECORDS if last else BLOCK_RECORDS):
                out.append(one_line(group, facts if last else None))  # (a short log's head)
                continue
            merged = merge(group)
            if last:
                merged.bounds = last_bounds(merged.count)
            else:
                full, part = divmod(merged.count, BLOCK_RECORDS)
                merged.bounds = [BLOCK_RECORDS] * full + ([part] if part else [])
            merged.facts = facts if last else None
            out.append(merged.framed())
        return b"".join(out)
