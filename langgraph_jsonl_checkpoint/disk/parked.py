"""What a store remembers of a log it let go of: a few packed bytes per thread."""

from __future__ import annotations

import struct
from typing import NamedTuple


class Parked(NamedTuple):
    """What a store remembers of a log it let go of (past its open-log bound), so that
    opening it again costs little: which generation of which file it was, how far its
    records' checksums were checked, and that the thread's stale temp files were swept.
    Used only if the file is still that generation (inode, generation and header
    checksum all match). Kept packed (:meth:`pack`): one ``bytes`` object per thread,
    which the cyclic collector never walks."""

    ino: int
    gen: int
    header_crc: str
    #: Every committed record before this byte offset had its checksum checked (by a
    #: scan, the first writer's check, or because this process wrote it).
    verified_end: int
    swept: bool
    #: The CRC-32 of the index lines of the thread's head file that this process wrote
    #: or checked last (``None``: none): lines of the same bytes are not checked again.
    head_index_crc: int | None = None

    def pack(self) -> bytes:
        """The values as bytes (see :meth:`unpack`)."""
        crc = self.header_crc.encode("ascii")
        index_crc = -1 if self.head_index_crc is None else self.head_index_crc
        return _PARKED.pack(self.ino, self.gen, self.verified_end, self.swept, crc, index_crc)

    @classmethod
    def unpack(cls, data: bytes) -> Parked:
        """The values :meth:`pack` packed."""
        ino, gen, verified_end, swept, crc, index_crc = _PARKED.unpack(data)
        return cls(ino, gen, crc.decode("ascii"), verified_end, swept, None if index_crc < 0 else index_crc)


_PARKED = struct.Struct("<QQQ?8sq")
