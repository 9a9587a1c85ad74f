"""A sidecar's block lines decoded newest first, as lookups need them.

Loading a long thread's whole sidecar costs tens of milliseconds (parsing and checking
every block), and the first thing a process asks of a thread, its latest checkpoint,
is answered by the last records: the checkpoint, the delta chains back to the last
snapshot, the pending writes. So when the sidecar's last block carries the index's
facts (``f``: the newest checkpoint id of each namespace, and that the log is *plain*,
see :class:`~.index.IndexFacts`), the index is served from a suffix of decoded blocks
(:meth:`~.index.ThreadIndex.load_tail`) and asks for older blocks only when the suffix
cannot answer; anything else (a listing, an append, a write) decodes everything first.

Each line's first sequence number and byte offset are read from its first bytes when
the file is loaded (they must increase line by line, or the lines from there on are
ignored, as a damaged block ends the usable prefix of an eagerly loaded sidecar). A line
is checked in full (checksum, shape, and that it ends where the next line starts) when
it is decoded. One that fails means the file was not written by this package: the
records the blocks would cover are then scanned from the log instead
(:attr:`LazyBlocks.rescue`), and the index holds what the scan found. Pure, but for that
callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import sidecar
from .sidecar import Block

#: The start of a block line: ``{"s0":<seq>,"o0":<offset>,``.
_PREFIX = re.compile(rb'\{"s0":(\d{1,18}),"o0":(\d{1,18}),')


def line_starts(data: bytes, start: int) -> list[tuple[int, int, int, int]]:
    """``(line start, line end, s0, o0)`` of each block line of ``data`` from ``start``
    on, while their ``s0`` and ``o0`` increase (a line that does not start like a
    block, or does not end in a newline, ends the list)."""
    out: list[tuple[int, int, int, int]] = []
    pos = start
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        m = _PREFIX.match(data, pos, min(end, pos + 48))
        if m is None:
            break
        s0, o0 = int(m.group(1)), int(m.group(2))
        if out and (s0 <= out[-1][2] or o0 <= out[-1][3]):
            break
        out.append((pos, end, s0, o0))
        pos = end + 1
    return out


class LazyBlocks:
    """Block lines of one sidecar, the newest decoded first.

    Args:
        data: The sidecar's bytes.
        lines: Where each block line is (:func:`line_starts`), oldest first.
        last: The last line, decoded and checked.
        rescue: Scans the log for the records all blocks would cover and returns them
            as one block (called when an older line turns out damaged).
    """

    def __init__(
        self,
        data: bytes,
        lines: list[tuple[int, int, int, int]],
        last: Block,
        rescue: Callable[[int, int], list[Block]],
    ) -> None:
        self._data = data
        self._pending = lines[:-1]
        self._rescue = rescue
        self.first_seq = lines[0][2]
        self.first_offset = lines[0][3]
        #: Decoded blocks, oldest first; they end with the last line.
        self.decoded: list[Block] = [last]
        #: The blocks were found damaged and the records scanned from the log instead.
        self.rescued = False
        self._merged: Block | None = last

    @property
    def complete(self) -> bool:
        """Whether every block is decoded."""
        return not self._pending

    @property
    def start_seq(self) -> int:
        """The first record the decoded blocks cover."""
        return self.decoded[0].first

    def suffix(self) -> Block:
        """The decoded blocks as one."""
        if self._merged is None:
            self._merged = sidecar.merge(self.decoded) if len(self.decoded) > 1 else self.decoded[0]
        return self._merged

    def older(self) -> bool:
        """Decode the next older line; ``False`` if there is none."""
        if not self._pending:
            return False
        start, end, s0, o0 = self._pending.pop()
        after = self.decoded[0]
        block = sidecar.decode_block(self._data[start:end], s0, o0)
        if block is None or block.first + block.count != after.first or block.end != after.offsets[0]:
            self._rescue_all()
            return True
        self.decoded.insert(0, block)
        self._merged = None
        if not self._pending:
            self._data = b""
        return True

    def everything(self) -> list[Block]:
        """Decode every line; the blocks, oldest first."""
        while self.older():
            pass
        return self.decoded

    def _rescue_all(self) -> None:
        end = self.decoded[-1]
        self.decoded = self._rescue(self.first_offset, end.end)
        self._pending = []
        self._data = b""
        self._merged = None
        self.rescued = True
