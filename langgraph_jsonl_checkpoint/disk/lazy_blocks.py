"""A sidecar's block lines read and decoded from its end, as lookups need them.

Loading a long thread's whole sidecar costs tens of milliseconds (reading, parsing and
checking every block), and the first thing a process asks of a thread, its latest
checkpoint, is answered by the last records: the checkpoint, the delta chains back to
the last snapshot, the pending writes. So when the sidecar's last block carries the
index's facts (``f``: the newest checkpoint id of each namespace, and that the log is
*plain*, see :meth:`~.index.ThreadIndex.facts`), only that line is read and decoded
(:func:`open_tail`); the index is served from the decoded suffix
(:meth:`~.index.ThreadIndex.load_tail`) and asks for older lines only when the suffix
cannot answer. Anything else (a listing, an append, a write) decodes everything first.

Older lines are read backwards through the descriptor the file was opened with (a
sidecar is replaced by a rename and only ever appended to in place, so the bytes
before the size seen at load never change under it). A line is checked in full when it
is decoded: checksum, shape, that it ends where the next line starts, and for the first
one that it starts right after the log's header. One that fails means the file was not
written by this package: the records the blocks would cover are then scanned from the
log instead (the ``rescue`` callback), and the index holds what the scan found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from . import files, sidecar, sidecar_checks
from .sidecar import Block

#: The start of a block line: ``{"s0":<seq>,"o0":<offset>,``.
_PREFIX = re.compile(rb'\{"s0":(\d{1,18}),"o0":(\d{1,18}),')
#: Bytes read at a time when looking for a line's start, backwards.
_CHUNK = 256 * 1024


def _line_before(fd: int, floor: int, end: int) -> tuple[int, bytes] | None:
    """The line that ends at byte ``end`` (its newline there), starting at or after
    ``floor``: ``(start, bytes without the newline)``; ``None`` if ``end <= floor``."""
    if end <= floor:
        return None
    chunk_start = end
    data = b""
    while True:
        chunk_start = max(floor, chunk_start - _CHUNK)
        data = files.os.pread(fd, end - chunk_start, chunk_start)
        if len(data) != end - chunk_start:
            return None  # the file shrank: not this package's doing
        nl = data.rfind(b"\n")
        if nl >= 0:
            return chunk_start + nl + 1, data[nl + 1 :]
        if chunk_start == floor:
            return floor, data


def _decoded(line: bytes) -> Block | None:
    """A block line decoded against the ``s0``/``o0`` it starts with (checked later
    against its neighbours)."""
    m = _PREFIX.match(line, 0, 48)
    if m is None:
        return None
    return sidecar_checks.decode_block(line, int(m.group(1)), int(m.group(2)))


class LazyBlocks:
    """Block lines of one sidecar, the newest decoded first.

    Args:
        fd: The sidecar, open for reading (owned from now on: closed when every line is
            decoded, or by :meth:`close`).
        floor: Where the first block line starts (after the header line).
        start: Where the last line (decoded as ``last``) starts.
        last: The last line, decoded and checked.
        first: ``(seq, byte offset)`` the first block must start with.
        rescue: Scans the log between two byte offsets and returns the records as
            blocks (called when an older line turns out damaged).
    """

    def __init__(
        self,
        fd: int,
        floor: int,
        start: int,
        last: Block,
        first: tuple[int, int],
        rescue: Callable[[int, int], list[Block]],
    ) -> None:
        self._fd: int | None = fd
        self._floor = floor
        self._next_end = start - 1  # where the next older line ends (its newline)
        self._first = first
        self._rescue = rescue
        #: Decoded blocks, oldest first; they end with the last line.
        self.decoded: list[Block] = [last]
        #: Lines decoded (for the sidecar's count of lines).
        self.lines = 1
        #: The blocks were found damaged and the records scanned from the log instead.
        self.rescued = False
        self._merged: Block | None = last
        self._done = False

    @property
    def complete(self) -> bool:
        """Whether every block is decoded."""
        return self._done

    @property
    def start_seq(self) -> int:
        """The first record the decoded blocks cover."""
        return self.decoded[0].first

    def suffix(self) -> Block:
        """The decoded blocks as one."""
        if self._merged is None:
            self._merged = sidecar.merge(self.decoded) if len(self.decoded) > 1 else self.decoded[0]
        return self._merged

    def close(self) -> None:
        """Let go of the file (older lines can no longer be read)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                files.os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        self.close()

    def older(self) -> bool:
        """Decode the next older line; ``False`` if there is none."""
        if self._done:
            return False
        if self._fd is None:
            raise RuntimeError("the sidecar's older blocks were let go before they were decoded")
        found = _line_before(self._fd, self._floor, self._next_end)
        after = self.decoded[0]
        block = _decoded(found[1]) if found is not None else None
        if block is None or block.first + block.count != after.first or block.end != after.offsets[0]:
            self._rescue_all()
            return True
        assert found is not None
        self.decoded.insert(0, block)
        self.lines += 1
        self._merged = None
        self._next_end = found[0] - 1
        if found[0] == self._floor:
            self._check_first()
        return True

    def everything(self) -> list[Block]:
        """Decode every line; the blocks, oldest first."""
        while self.older():
            pass
        return self.decoded

    def _check_first(self) -> None:
        first = self.decoded[0]
        if (first.first, first.offsets[0]) != self._first:
            self._rescue_all()
        else:
            self._done = True
            self.close()

    def _rescue_all(self) -> None:
        self._done = True
        self.close()
        self.decoded = self._rescue(self._first[1], self.decoded[-1].end)
        self._merged = None
        self.rescued = True


def open_tail(
    path: str,
    header_ok: Callable[[bytes], bool],
    first: tuple[int, int],
    rescue: Callable[[int, int], list[Block]],
) -> tuple[LazyBlocks, int, bool] | None:
    """Read and decode a sidecar's last block line, if the file's header line passes
    ``header_ok``, it has more than one block line, and the last one carries facts that
    say the log is plain.

    Args:
        path: The sidecar.
        header_ok: Whether its header line (without the newline) names this log.
        first: ``(seq, byte offset)`` the first block must start with.
        rescue: See :class:`LazyBlocks`.

    Returns:
        ``(blocks, file size, whether the file ends with that line)``, or ``None`` (load
        the file whole instead).
    """
    try:
        fd = files.open_file(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = files.os.fstat(fd).st_size
        head = files.os.pread(fd, min(size, 4096), 0)
        nl = head.find(b"\n")
        if nl < 0 or not header_ok(head[:nl]):
            files.os.close(fd)
            return None
        floor = nl + 1
        tail = files.os.pread(fd, min(size - floor, 64), size - min(size - floor, 64))
        end: int | None = size - 1 if tail.endswith(b"\n") else None
        if end is None:  # a line cut short at the end (a crash while appending): skip it
            cut = _line_before(fd, floor, size)
            end = cut[0] - 1 if cut is not None else None
        found = _line_before(fd, floor, end) if end is not None else None
        last = _decoded(found[1]) if found is not None and found[0] > floor else None
        if found is None or last is None or last.facts is None or not last.facts["plain"]:
            files.os.close(fd)
            return None
        return LazyBlocks(fd, floor, found[0], last, first, rescue), size, end == size - 1
    except BaseException:
        try:
            files.os.close(fd)
        except OSError:
            pass
        raise
