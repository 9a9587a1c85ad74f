"""What any process sees of one thread's log: open it, index it, read records.

A view takes no lock. It ``stat``\\ s the log on every :meth:`LogView.refresh`, scans what
was appended since (another process may be appending), and ignores an uncommitted tail
(it may be a batch being written right now). A new generation (a rewrite, a deletion
and re-creation) or a tail cut back and rewritten (a writer abandoning a batch) is
indexed afresh. The index comes from the sidecar where it can be trusted
(:mod:`.sidecar_file`), else from a scan; every entry the sidecar served is checked
against its record on first read, and a mismatch rebuilds the index from the log
(:class:`IndexRebuilt` tells the caller to retry).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from ..errors import CorruptLogError
from . import files, framing, head_file, sidecar
from .entries import RecordRef, bulk_allocation, read_groups
from .generations import Tombstone
from .header import check_header, is_torn_header, refuse_repairable_header
from .index import ThreadIndex
from .paths import LogPaths, repair_hint
from .recovery import Recovery
from .sidecar_file import LogIdentity, SidecarFile
from .summary import summarize

logger = logging.getLogger(__name__)

#: What a read-only view logs once as it serves the records before a log's damage.
SERVING_DAMAGED = "thread %r: log %s %s; serving the %d records it holds before that (read-only). %s"

_HEADER_PROBE = 64 * 1024
#: A short log (at most this many bytes) is scanned even if its sidecar is current (only its
#: watermark is taken), hands the caller its parsed records and is let go without a sidecar.
LOADED_RECORDS_BYTES = 1024 * 1024


class IndexRebuilt(Exception):
    """Internal: the index was found wrong and rebuilt from the log; retry the operation."""


class DerivedCache(Protocol):
    """What a layer above keeps per log (values rebuilt from it), dropped with the index."""

    def clear(self) -> None:
        """Forget everything (the log was reloaded, or a version was stored again)."""
        ...

    def held(self) -> int:
        """How many items it holds, for the store's memory budget."""
        ...

    def run_ended(self) -> None:
        """The run that held the thread ended: drop what only a run uses."""
        ...


class LogView:
    """One thread's log as a reader sees it: its index, its records.

    Args:
        paths: The thread's files.
        thread_id: The thread id, checked against the log's header.
        read_only: Serve a damaged log's valid prefix (with a warning) instead of
            refusing it; never repair, create or rewrite.
    """

    def __init__(self, paths: LogPaths, thread_id: str, *, read_only: bool = False) -> None:
        self.paths = paths
        self.thread_id = thread_id
        self.read_only = read_only
        self.mutex = threading.RLock()
        self.sidecar = SidecarFile(paths.index)
        self.recovery = Recovery(paths, thread_id)
        self.tombstone = Tombstone(paths, thread_id)
        self.index = ThreadIndex()
        self.gen = 0
        self._ino: int | None = None
        #: The log's size as the last refresh saw it (under the writer lock: its size now).
        self._size: int | None = None
        self._header_crc = ""  # checksum of the log's header line: names this very file
        self._rfd: int | None = None
        #: Where the index ends if this object wrote and synced its last record itself
        #: (then no one can have cut that record back and written another in its place:
        #: a writer cuts only its own batch that it never acknowledged).
        self._own_durable_end: int | None = None
        #: While append observers run: where the batch just made durable starts, and its
        #: bytes (what :meth:`records_from` would read back from the file).
        self._just_appended: tuple[int, bytes] | None = None
        #: Values a layer above rebuilt from this log (see :class:`DerivedCache`).
        self.derived: DerivedCache | None = None
        #: Read-only views only: damage indexing found, as the error a writable view raises
        #: (a dry run refuses the log as a real run would); ``None`` while it reads whole.
        self.damage: CorruptLogError | None = None
        self.head_index_crc: int | None = None  #: of head index lines this process wrote or checked
        #: The head record the index was just loaded from (:meth:`_load_head`), until a
        #: layer above takes it (it holds the latest values whole).
        self.loaded_head: dict[str, Any] | None = None

    @property
    def damaged_at(self) -> int | None:
        """The byte offset of :attr:`damage` (``None`` while the log reads whole)."""
        return self.damage.offset if self.damage is not None else None

    @property
    def path(self) -> str:
        """The log file."""
        return self.paths.log

    @property
    def name(self) -> str:
        """The thread's file stem."""
        return self.paths.name

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close file handles (the in-memory index stays)."""
        with self.mutex:
            self._close_quietly("_rfd")

    def _close_quietly(self, attr: str) -> None:
        fd = getattr(self, attr)
        if fd is not None:
            setattr(self, attr, None)
            try:
                files.os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def generation_token(self) -> tuple[int | None, int]:
        """Changes whenever offsets read earlier may no longer be valid (rewrite, delete)."""
        return (self._ino, self.gen)

    def exists(self) -> bool:
        """Whether the log file exists (after :meth:`refresh`)."""
        return self._ino is not None

    def modified_at(self) -> float:
        """When the log was last appended to or rewritten (epoch s); FileNotFoundError if none."""
        return files.os.stat(self.path, follow_symlinks=False).st_mtime

    def repair_hint(self) -> str:
        """The sentence naming the repair command for this thread."""
        return repair_hint(os.path.dirname(self.paths.directory), self.thread_id, self.paths)

    def identity(self) -> LogIdentity:
        """What names this generation of this log file (as of the last refresh): data
        derived from another generation must not be used for this one."""
        return LogIdentity(self.gen, self._ino, self._header_crc)

    def idle(self) -> None:
        """The run that held the thread ended: hold what the log keeps in its fewest
        objects (the summaries appended one at a time folded into a packed block, the
        index's cache of entries looked up on the way dropped), unless the log is in use
        right now (never waits)."""
        if not self.mutex.acquire(blocking=False):
            return
        try:
            self.sidecar.summaries.fold(self.sidecar.written[1])
            self.index.forget_lookups()
        finally:
            self.mutex.release()

    def _drop_derived(self) -> None:
        if self.derived is not None:
            self.derived.clear()

    # -- indexing --------------------------------------------------------------

    def refresh(self, records: dict[int, dict[str, Any]] | None = None) -> ThreadIndex:
        """Bring the in-memory index up to date with the file and return it.

        Args:
            records: If given and this refresh scans a short log whole (one of at most
                :data:`LOADED_RECORDS_BYTES` not indexed yet), every record the scan
                parsed is put in it by byte offset, as :meth:`read_record` returns it:
                the read that follows need not read and parse them again. The records
                are the caller's (nothing here keeps them).

        Raises:
            CorruptLogError: A committed record is damaged, or the log is shorter than
                what was already indexed.
            ForeignFileError: The file is not this thread's log.
        """
        with self.mutex:
            try:
                st = files.os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                self._reset()
                return self.index
            reload = self._rfd is None or self._ino != st.st_ino or not self._tail_unchanged(st.st_size)
            if reload or st.st_size > self.index.committed_end:
                with bulk_allocation():  # (not for the usual refresh, which finds nothing new)
                    if reload:  # a new generation, its end cut back and rewritten (a batch
                        # whose fsync failed), or this view closed mid-listing: index afresh
                        self._load(st.st_ino)
                        if self.recovery.torn_header is not None:
                            return self.index  # reads as an absent thread
                        st = files.os.fstat(self._rfd)  # type: ignore[arg-type]
                    if st.st_size > self.index.committed_end:
                        self._scan_from(self.index.committed_end, st.st_size, records)
            self._size = st.st_size
            durable, end = self.sidecar.durable_seq, self.index.committed_end
            if self.index.last_seq < durable:
                short = (f"holds committed records up to sequence {self.index.last_seq}, but its index "
                         f"says records up to {durable} were durable")
                cause = f"the record at byte offset {end} is damaged or the file was cut"
                said = f"thread {self.thread_id!r}: log {self.path} {short}: {cause}. Nothing was changed."
                self._damaged(CorruptLogError(f"{said} {self.repair_hint()}", path=self.path, offset=end),
                              f"{short} ({cause})")
            return self.index

    def _tail_unchanged(self, size: int) -> bool:
        """Whether the last indexed record is still there (a read of its checksum digits,
        spared when this object made it durable and the file still reaches its end)."""
        end = self._own_durable_end
        if end is not None and end == self.index.committed_end:
            return size >= end
        return self.sidecar.tail_unchanged(self._rfd, size)

    def _reset(self) -> None:
        """Forget this generation (its handle, index and what was derived from it)."""
        self._own_durable_end = None
        self._close_quietly("_rfd")  # forgotten before it is closed: a Ctrl-C cannot leave it stale
        self._ino = None
        self._size = None
        self._header_crc = ""
        self.gen = 0
        self.damage = None
        self.index = ThreadIndex()
        self.loaded_head = None
        self._drop_derived()
        self.sidecar.reset()
        self.recovery.reset()
        self.tombstone.forget()  # the log vanished: maybe deleted elsewhere

    def _load(self, ino: int, *, use_sidecar: bool = True) -> None:
        """Open a (new generation of the) log: check its header, load or rebuild the index."""
        self._reset()
        fd = files.open_refusing_links(self.path, os.O_RDONLY, self.thread_id)
        try:
            st = files.refuse_special_file(fd, self.path, self.thread_id)  # a FIFO, say: reads fail
            head = files.os.pread(fd, _HEADER_PROBE, 0)
            nl = head.find(b"\n")
            if nl < 0 and is_torn_header(head, self.thread_id):
                # Cut inside its header line. Unless its index says records were durable (data
                # lost: refuse), the thread reads as absent; the next writer sets it aside.
                self._refuse_if_indexed(ino)
                files.os.close(fd)
                self.recovery.torn_header = head
                return
            first = framing.parse_line(head[:nl]) if nl > 0 else None
            if first is None:
                refuse_repairable_header(head, self.thread_id, self.path, self.repair_hint())
            header = check_header(first, self.thread_id, self.path)
        except BaseException:
            files.os.close(fd)  # refused: stays refused on every later call
            raise
        self._rfd = fd
        self._ino = st.st_ino
        self._header_crc = framing.checksum_digits(head[:nl])
        self.gen = header.get("gen", 1)
        self._apply(summarize(header, 0, nl + 1))
        self.sidecar.note_last_crc(self._rfd)
        if use_sidecar and st.st_size <= LOADED_RECORDS_BYTES:  # scanned: faster
            self.sidecar.load_watermark(self.index, self.identity())
            self._load_head(st.st_size)
        elif use_sidecar:
            self.sidecar.load(self.index, self.identity(), self._holds, self._scan_blocks)
            self.sidecar.note_last_crc(self._rfd)

    def _load_head(self, size: int) -> None:
        """Index the log from its head file if that indexes exactly its bytes, else scan it."""
        end, known = self.index.committed_end, self.head_index_crc
        found = head_file.head_index(self.paths, self.thread_id, self._rfd, size, end, known)  # type: ignore[arg-type]
        if found is not None:
            self.loaded_head, blocks, self.head_index_crc = found
            self.index.load_blocks(blocks)
            self.sidecar.add_checked_blocks(blocks)
            self.sidecar.note_last_crc(self._rfd)

    def _refuse_if_indexed(self, ino: int) -> None:
        """Raise if this file's sidecar says records past the header were durable."""
        last = self.sidecar.claimed_last_seq(ino)
        if last is not None:
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} was cut inside its header "
                f"line, but its index says records up to sequence {last} were "
                f"durable: the file lost data. Nothing was changed. {self.repair_hint()}",
                path=self.path,
                offset=0,
            )

    def _holds(self, ref: RecordRef) -> bool:
        """Whether the log holds a whole record with this ``seq`` at ``ref``."""
        data = files.os.pread(self._rfd, ref.length, ref.offset)  # type: ignore[arg-type]
        if len(data) != ref.length or not data.endswith(b"\n"):
            return False
        rec = framing.parse_line(data[:-1])
        return rec is not None and rec.get("seq") == ref.seq

    def _scan_blocks(self, start: int, end: int) -> list[sidecar.Block]:
        """The records between two byte offsets of the log, as blocks (their first is
        record 1); a lazily loaded sidecar's older blocks were found damaged."""
        data = files.os.pread(self._rfd, end - start, start)  # type: ignore[arg-type]
        result = framing.ScanResult()
        with bulk_allocation():
            blocks = sidecar.blocks_of(framing.iter_records(data, start, expect_seq=1, result=result))
        if result.corrupt_offset is not None or not blocks or blocks[-1].end != end:
            at = result.corrupt_offset if result.corrupt_offset is not None else start
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} does not hold the records its "
                f"index says were durable (damage at or after byte offset {at}). Nothing "
                f"was changed. {self.repair_hint()}",
                path=self.path,
                offset=at,
            )
        return blocks

    def _apply(self, summary: dict[str, Any], crc: bytes | None = None) -> None:
        rewritten = self.index.rewritten_versions
        self.index.apply(summary)
        if self.index.rewritten_versions != rewritten:
            # A version was stored again with (maybe) another value: values cached
            # by version may be stale. A writer that did it fills them again after.
            self._drop_derived()
        self.sidecar.note(summary)
        self.sidecar.last_crc = crc

    def _scan_from(self, start: int, end: int, keep: dict[int, dict[str, Any]] | None = None) -> None:
        data = files.os.pread(self._rfd, end - start, start)  # type: ignore[arg-type]
        result = framing.ScanResult()
        records = framing.iter_records(data, start, expect_seq=self.index.last_seq + 1, result=result)
        del data  # the stream holds it
        if self.index.last_seq == 0:
            # Indexing the whole log: in columns, as if loaded from a sidecar.
            if keep is not None and end <= LOADED_RECORDS_BYTES:
                records = framing.kept_by_offset(records, keep)
            blocks = sidecar.blocks_of(records)
            self.index.load_blocks(blocks)
            self.sidecar.summaries.add_blocks(blocks)
        else:
            for rec, offset, length in records:
                self._apply(summarize(rec, offset, length))
        self.sidecar.note_last_crc(self._rfd)
        if result.corrupt_offset is None:
            return
        at = result.corrupt_offset
        self._damaged(CorruptLogError(
            f"thread {self.thread_id!r}: log {self.path} has a damaged record at byte offset {at}, "
            "followed by valid records. Nothing was changed. Records before it can be read with "
            f"JsonlSaver(..., read_only=True). {self.repair_hint()}", path=self.path, offset=at,
        ), f"is damaged at byte offset {at}")

    def _damaged(self, error: CorruptLogError, what: str) -> None:
        """A writable view raises ``error``; a read-only one keeps it and serves the
        records before the damage, saying so once per log (``what``: what is wrong); the
        first damage found is kept, as a writable view raises the first."""
        if not self.read_only:
            raise error
        self.damage = self.damage or error
        if not self.recovery.damage_reported:
            logger.warning(SERVING_DAMAGED, self.thread_id, self.path, what, self.index.last_seq,
                           self.repair_hint())
            self.recovery.damage_reported = True

    def distrust_sidecar(self) -> None:
        """A lookup found the index inconsistent with the log: if the index came from the
        sidecar, rebuild it by a scan and raise :class:`IndexRebuilt` (retry the call);
        otherwise return (the log itself is at fault)."""
        if self.sidecar.trusted:
            self._rebuild_without_sidecar()
            raise IndexRebuilt()

    def _rebuild_without_sidecar(self) -> None:
        """Re-index this generation by scanning the log, keeping the durable watermark."""
        durable = self.sidecar.durable_seq
        self._load(files.os.fstat(self._rfd).st_ino, use_sidecar=False)  # type: ignore[arg-type]
        self.sidecar.durable_seq = durable
        self.refresh()

    # -- reading ---------------------------------------------------------------

    def read_record(self, ref: RecordRef) -> dict[str, Any]:
        """Read and check the record at ``ref``.

        Raises:
            CorruptLogError: The bytes there are not the record the index expects.
        """
        fd = self._rfd
        if fd is None:
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} disappeared while reading.",
                path=self.path,
                offset=ref.offset,
            )
        rec = self._checked(files.os.pread(fd, ref.length, ref.offset), ref)
        if rec is None:
            # The sidecar lied (stale, tampered): rebuild from the log, then retry.
            self.distrust_sidecar()
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} has no valid record "
                f"{ref.seq} at byte offset {ref.offset}. Delete {self.paths.index} to "
                "rebuild the index; if this persists, the log itself is damaged.",
                path=self.path,
                offset=ref.offset,
            )
        framing.strip_batch_marks(rec)
        return rec

    def _checked(self, data: bytes, ref: RecordRef) -> dict[str, Any] | None:
        """The record in ``data`` (read at ``ref``) if it is the one the index expects:
        every field the index served from the sidecar must come from the log."""
        rec = framing.parse_line(data[:-1]) if data.endswith(b"\n") else None
        if rec is None or rec.get("seq") != ref.seq or not self.sidecar.matches(rec, ref):
            return None
        return rec

    def read_records(self, refs: list[RecordRef]) -> dict[int, dict[str, Any]]:
        """Read several records with few system calls: neighbours share one ``pread``.

        Returns:
            The records that are what the index expects, by offset. Any other is left
            out, for :meth:`read_record` to read (and report) on its own.
        """
        fd = self._rfd
        out: dict[int, dict[str, Any]] = {}
        if fd is None or not refs:
            return out
        for group in read_groups(refs):
            start = group[0].offset
            data = files.os.pread(fd, max(r.offset + r.length for r in group) - start, start)
            for r in group:
                rec = self._checked(data[r.offset - start : r.offset - start + r.length], r)
                if rec is not None:
                    framing.strip_batch_marks(rec)
                    out[r.offset] = rec
        return out

    def committed_bytes(self) -> bytes:
        """The log's committed bytes as of the last :meth:`refresh` (its valid prefix,
        for a damaged log opened read-only), in one read; ``b""`` if it has none."""
        with self.mutex:
            if self._rfd is None:
                return b""
            return files.os.pread(self._rfd, self.index.committed_end, 0)

    def indexed_bytes(self) -> bytes | None:
        """The committed bytes as of the last :meth:`refresh`, in one read, while the
        log's path still names this file and it still ends them with the record the
        index holds last; else (or if there are none) ``None``. What a layer above
        derives from the index is derived from these bytes (see :mod:`.head_file`)."""
        with self.mutex:
            try:
                if files.os.stat(self.path, follow_symlinks=False).st_ino != self._ino:
                    return None  # deleted or replaced by another process
            except FileNotFoundError:
                return None
            data = self.committed_bytes()
            return data if data and self._tail_unchanged(len(data)) else None

    def records_from(self, offset: int, *, skip: tuple[str, ...] = ()) -> framing.ScanResult:
        """The committed records from byte ``offset`` (a record's start) to the end the
        last refresh saw, in one read; what a reader that stopped at ``offset`` missed.
        Records of the kinds in ``skip`` are checked but not parsed (``{"t", "seq"}``
        only). An ``offset`` that is not a record's start shows as damage in the result."""
        with self.mutex:
            end = self.index.committed_end
            if self._rfd is None or offset >= end:
                return framing.ScanResult(committed_end=offset)
            recent = self._just_appended
            if recent is not None and recent[0] == offset and offset + len(recent[1]) == end:
                data = recent[1]  # the bytes just written and synced: no read back
            else:
                data = files.os.pread(self._rfd, end - offset, offset)
        return framing.scan_committed(data, offset, skip)

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every committed record of the log, header first (reads the whole file)."""
        return (r.record for r in self.scanned_records())

    def scanned_records(self) -> list[framing.ScannedRecord]:
        """Every committed record with its offset and length, header first."""
        with self.mutex:
            self.refresh()
            data = self.committed_bytes()
        return framing.scan(data, 0).records if data else []
