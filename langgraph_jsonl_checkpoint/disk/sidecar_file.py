"""The sidecar index file of one log, as this process knows it: load, trust, write.

The sidecar (``<stem>.idx``, format in :mod:`.sidecar`) is derived data, written only
after the records it covers were fsynced, and never trusted blindly: it is used only if
it names this very log (generation, inode, the checksum of the header line), blocks
are used while each is whole and starts where the previous one ended, and only if the
log holds the record the last of them ends with. Every entry is compared with its
record the first time that record is read (:meth:`SidecarFile.matches`). Its last entry
is a durable watermark: a log holding fewer committed records is damaged, not short.

The sidecar is rewritten whole (temp file + rename) or appended to, every few hundred
records and on close; it is not fsynced (the log past it is scanned on open, as Kafka
recovers from a recovery point).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import files, framing, sidecar, sidecar_checks
from .entries import RecordRef
from .index import ThreadIndex
from .lazy_blocks import LazyBlocks, open_tail
from .sidecar import Block
from .summaries import Summaries
from .summary import summarize


def _names(head: dict[str, Any] | None, identity: LogIdentity) -> bool:
    """Whether a sidecar's parsed header line is this version's, for this very log."""
    return bool(
        head
        and head.get("v") == sidecar.SIDECAR_VERSION
        and head.get("gen") == identity.gen
        and head.get("ino") == identity.ino
        and head.get("log") == identity.header_crc
    )


#: Summaries of records appended one at a time are folded into a block this often.
FOLD_RECORDS = 16


@dataclass(frozen=True)
class LogIdentity:
    """What names one generation of one log file: a sidecar of another is ignored.

    Generation and inode number alone can match another log (a thread deleted and
    created again starts over at generation 1, and file systems reuse inode numbers):
    the checksum of the header line (which holds its creation time) tells them apart.
    """

    gen: int
    ino: int | None
    header_crc: str


class SidecarFile:
    """The sidecar of one log, and the summary of every record the log's index holds.

    Args:
        path: The sidecar file.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.reset()

    def reset(self) -> None:
        """Forget everything (the log is reloaded)."""
        lazy = getattr(self, "_lazy", None)
        if lazy is not None:
            lazy.close()
        #: Lazily loaded blocks (:mod:`.lazy_blocks`), if the file was loaded so.
        self._lazy: LazyBlocks | None = None
        #: What the sidecar holds or would: every indexed record's summary.
        self.summaries = Summaries()
        #: (size in bytes, records covered) of the file as this process last saw/wrote it
        self.written = (0, 0)
        self.lines = 0  # block lines in the file, as of ``written``
        #: Highest seq the sidecar says was fsynced (0: none).
        self.durable_seq = 0
        #: Records the file was found to cover when only its watermark was taken
        #: (:meth:`load_watermark`): it needs no rewrite until the log grows past them.
        self.file_covers = 0
        #: Index entries came from the file, not from a scan of the log.
        self.trusted = False
        self.verified: set[int] = set()  # entries checked against their record
        #: The entries came with a CRC-32 of the whole log they were made from, which the
        #: log's bytes matched (a head file's index): no record need be checked again.
        self.whole_log_checked = False
        self.last_crc: bytes | None = None  # checksum digits of the last indexed record

    # -- reading -------------------------------------------------------------------

    def read(self) -> tuple[bytes, list[bytes], dict[str, Any] | None] | None:
        """The file's bytes, its lines and its parsed header line (``None``: no file)."""
        try:
            data = files.read_whole(self.path)
        except OSError:
            return None
        lines = data.split(b"\n")
        return data, lines, framing.parse_line(lines[0])

    def claimed_last_seq(self, ino: int) -> int | None:
        """The last record the sidecar of the log with inode ``ino`` says was durable."""
        found = self.read()
        if found is None:
            return None
        _, lines, head = found
        if head is None or head.get("ino") != ino:
            return None  # another generation's index, or none
        return _last_claimed(lines)

    def load_watermark(self, index: ThreadIndex, identity: LogIdentity) -> None:
        """Take only the durable watermark of the file (as :meth:`load` would), if it
        names this log: the log is then indexed by a scan (a short log is scanned faster
        than its sidecar's entries are loaded and each record read is checked against
        them). ``index`` holds the header only."""
        self.durable_seq = self.file_covers = self.durable_claim(identity, index.committed_end)

    def durable_claim(self, identity: LogIdentity, header_end: int) -> int:
        """The last record the file says was durable if it names this log (whose header
        line ends at byte ``header_end``), else 0: what a log holding fewer records
        was cut short of (``repair`` reports them lost)."""
        found = self.read()
        if found is None or not _names(found[2], identity):
            return 0
        return _valid_prefix(found[1], 1, header_end)[1]

    def load(
        self,
        index: ThreadIndex,
        identity: LogIdentity,
        holds: Callable[[RecordRef], bool],
        scan: Callable[[int, int], list[Block]] | None = None,
    ) -> None:
        """Load the file's longest valid prefix of blocks that matches this log into
        ``index`` (which holds the header only).

        A partial or damaged block ends the usable prefix (the file may be being
        appended to by another process); the log past it is scanned instead. With
        ``scan``, a file whose last block holds the facts of a plain log is loaded
        lazily (:mod:`.lazy_blocks`): only its last block is decoded now.

        Args:
            index: The log's index, holding only its header.
            identity: The log's generation, inode and header checksum.
            holds: Whether the log holds a given record (read and checked there).
            scan: The log's records between two byte offsets, as blocks (for a lazily
                loaded file whose older blocks turn out damaged).
        """
        if scan is not None and self._load_lazily(index, identity, holds, scan):
            return
        found = self.read()
        if found is None:
            return
        data, lines, head = found
        if not _names(head, identity):
            return
        # Written only after the records it covers were fsynced: the log must hold at
        # least that many records, whatever else is wrong with it.
        blocks, self.durable_seq = _valid_prefix(lines, index.last_seq + 1, index.committed_end)
        used = len(blocks)
        if blocks:
            o, n = blocks[-1].span(blocks[-1].count - 1)
            if not holds(RecordRef(o, n, self.durable_seq)):
                blocks = []  # inconsistent with the log: rebuild from the log
            else:
                blocks = [sidecar.merge(blocks)]
        index.load_blocks(blocks)
        self.summaries.add_blocks(blocks)
        self.trusted = bool(blocks)
        if (blocks or not used) and used == len(lines[1:]) - (1 if lines[-1] == b"" else 0):
            self.written = (len(data), blocks[0].count if blocks else 0)
            self.lines = used

    def _load_lazily(
        self,
        index: ThreadIndex,
        identity: LogIdentity,
        holds: Callable[[RecordRef], bool],
        scan: Callable[[int, int], list[Block]],
    ) -> bool:
        """Load only the last block, if it holds the facts of a plain log and the log
        holds its last record (``False``: load the file whole instead)."""

        def rescue(first_offset: int, end: int) -> list[Block]:
            # An older block is damaged: index those records from the log itself.
            self.trusted = False
            self.written = (0, 0)
            self.lines = 0
            return scan(first_offset, end)

        opened = open_tail(
            self.path,
            lambda line: _names(framing.parse_line(line), identity),
            (index.last_seq + 1, index.committed_end),
            rescue,
        )
        if opened is None:
            return False
        lazy, size, whole = opened
        last = lazy.decoded[-1]
        end_seq = last.first + last.count - 1
        o, n = last.span(last.count - 1)
        if not holds(RecordRef(o, n, end_seq)):
            lazy.close()
            return False
        index.load_tail(lazy)
        self.summaries.add_tail(lazy)
        self._lazy = lazy
        self.durable_seq = end_seq
        self.trusted = True
        if whole:
            self.written = (size, end_seq)
            self.lines = 1  # counted when the rest is decoded (see write)
        return True

    def add_checked_blocks(self, blocks: list[Block]) -> None:
        """Blocks of the whole log (after its header) from an index that came with a
        CRC-32 of the log's bytes, which they matched (a head file's, see
        :func:`~.head_file.head_index`): served like the file's, never checked again
        record by record (the bytes are the ones its writer indexed)."""
        self.summaries.add_blocks(blocks)
        self.trusted = self.whole_log_checked = True

    def note(self, summary: dict[str, Any]) -> None:
        """Add the summary of a record just indexed (folded into columns every
        :data:`FOLD_RECORDS`)."""
        summaries = self.summaries
        summaries.append(summary)
        if len(summaries.tail) >= FOLD_RECORDS:
            summaries.fold(self.written[1])

    def matches(self, rec: dict[str, Any], ref: RecordRef) -> bool:
        """Whether the summary the index holds for ``ref`` is that of ``rec`` (entries
        loaded from the file are checked once, the first time their record is read)."""
        if not self.trusted or self.whole_log_checked or ref.seq in self.verified:
            return True
        stored = self.summaries.get(ref.seq)
        if stored != summarize({k: v for k, v in rec.items() if k != "more"}, ref.offset, ref.length):
            return False
        self.verified.add(ref.seq)
        return True

    # -- the last indexed record -------------------------------------------------------

    def note_last_crc(self, fd: int | None) -> None:
        """Remember the checksum digits of the last indexed record, read from ``fd``."""
        last = self.summaries.last_span()
        if last is not None and fd is not None:
            self.last_crc = files.os.pread(fd, 8, last[0] + last[1] - 11)

    def tail_unchanged(self, fd: int | None, size: int) -> bool:
        """Whether the last record the index holds is still there, byte for byte (a
        writer that abandoned a batch cuts the file back and may write another)."""
        last = self.summaries.last_span()
        if last is None or fd is None:
            return True
        if size < last[0] + last[1]:
            return False
        return files.os.pread(fd, 8, last[0] + last[1] - 11) == self.last_crc

    # -- writing -------------------------------------------------------------------

    def lag(self) -> int:
        """Records the log's index holds that the file does not cover yet."""
        return len(self.summaries) - 1 - max(self.written[1], self.file_covers)

    def write(
        self,
        identity: LogIdentity,
        temp_path: str,
        *,
        compact: bool = False,
        facts: dict[str, Any] | None = None,
    ) -> None:
        """Bring the file up to date with the index's summaries.

        Appends the new summaries when the file is exactly as this process last left
        it; otherwise rewrites it whole (temp file + rename). With ``compact`` (on
        close), a file of many short blocks is rewritten in long ones instead.
        ``facts`` (the index's :meth:`~.index.ThreadIndex.facts`) go into the last line.
        """
        # The header record is always read from the log itself, never from here.
        lazy = self._lazy
        if lazy is not None:
            self.summaries.settle()
            if not lazy.rescued:
                self.lines = lazy.lines
            self._lazy = None
        total = len(self.summaries) - 1
        known_size, known_count = self.written
        try:
            current_size = files.os.stat(self.path).st_size
        except FileNotFoundError:
            current_size = -1
        shortest = -(-total // sidecar.BLOCK_RECORDS)
        if compact and self.lines + 1 > 2 * shortest + 1:
            self.summaries.compact(facts)
        elif known_count and current_size == known_size and known_count <= total:
            data = self.summaries.encode_from(known_count, facts)
            if data is not None:
                fd = files.open_file(self.path, os.O_WRONLY | os.O_APPEND)
                try:
                    files.write_all(fd, data)
                finally:
                    files.os.close(fd)
                self.written = (known_size + len(data), total)
                self.lines += data.count(b"\n")
                return
        data = sidecar.header_line(identity.gen, identity.ino, identity.header_crc)
        data += self.summaries.encode_from(0, facts) or b""
        files.replace_derived(self.path, temp_path, data)
        self.written = (len(data), total)
        self.lines = data.count(b"\n") - 1


def _valid_prefix(
    lines: list[bytes], seq: int, offset: int,
    decode: Callable[[bytes, int, int], Block | None] = sidecar_checks.decode_block,
) -> tuple[list[Block], int]:
    """The blocks of a sidecar's lines (header first) that are whole and each start
    where the one before ended, the first at record ``seq``, byte ``offset``; and the
    last record they cover (0: none), the durable watermark."""
    blocks = []
    for line in lines[1:]:
        block = decode(line, seq, offset) if line else None
        if block is None:
            break
        blocks.append(block)
        offset, seq = block.end, seq + block.count
    return blocks, seq - 1 if blocks else 0


def head_blocks(lines: bytes, header_end: int, *, known: bool = False) -> list[Block]:
    """The blocks of a head file's index lines (see :mod:`.head_file`) that are whole
    and follow each other from the log's first record on (``known``: lines this process
    wrote or checked before, byte for byte: their columns are not checked again)."""
    decode = sidecar_checks.decode_known_block if known else sidecar_checks.decode_block
    return _valid_prefix([b"", *lines.split(b"\n")], 1, header_end, decode)[0]


def _last_claimed(lines: list[bytes]) -> int | None:
    """The last record the (whole, checksummed) lines after a sidecar's header cover."""
    last = None
    for e in map(framing.parse_line, lines[1:]):
        if e and type(e.get("s")) is int:  # a summary line (sidecars before 0.2)
            last = e["s"]
        elif e and type(e.get("s0")) is int and type(e.get("n")) is list and e["n"]:
            last = e["s0"] + len(e["n"]) - 1  # a block
    return last
