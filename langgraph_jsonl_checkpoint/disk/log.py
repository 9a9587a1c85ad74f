"""One thread's log file: open and index it, read records at offsets, append durably.

Files of a thread (see :class:`~.paths.LogPaths`)::

    <stem>.jsonl        the append-only log (header record first)
    <stem>.idx          sidecar index (derived data, :mod:`.sidecar_file`)
    <stem>.lock         writer lock, flock()ed; never renamed, so its inode is stable
    <stem>.quarantine   bytes cut from a torn tail (:mod:`.recovery`)
    <stem>.deleted      tombstone of deleted generations (:mod:`.generations`)

Appends: under an in-process lock *and* ``flock`` on the lock file, the writer brings its
index up to date with the file (another process may have appended), cuts a torn tail
(copying the bytes to the quarantine file first), writes the whole batch with one
``write``, ``fdatasync``\\ s, and only then updates the index and returns. A short write
or an fsync error truncates back, closes the handle and raises
:class:`~.errors.DurabilityError`: nothing is acknowledged.

Readers take no lock. They ``stat`` the log on every call, scan what was appended since,
and ignore an uncommitted tail (it may be a batch another process is writing right now).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..errors import CorruptLogError, DurabilityError
from . import files, framing, sidecar
from .entries import RecordRef, bulk_allocation
from .generations import Tombstone, install, numbered
from .header import check_header, is_torn_header, new_header
from .index import ThreadIndex
from .paths import LogPaths, repair_hint
from .recovery import Recovery
from .sidecar_file import LogIdentity, SidecarFile
from .summary import summarize

logger = logging.getLogger(__name__)

#: Update the sidecar index once this many records are past what it covers.
INDEX_REWRITE_RECORDS = 256
_HEADER_PROBE = 64 * 1024
#: read_records: records at most this far apart share one read, of at most _READ_SPAN.
_READ_GAP = 64 * 1024
_READ_SPAN = 4 * 1024 * 1024


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


class ThreadLog:
    """The log, index and lock of one thread.

    Args:
        paths: The thread's files.
        thread_id: The thread id, checked against the log's header.
        read_only: Never repair, create or rewrite.
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
        self._wfd: int | None = None
        self._lock_fd: int | None = None
        self._group: list[Any] | None = None  # inside group_commit(): start, seq, batches
        self._verified_for_writing = False  # checksums of the whole log checked
        #: Values a layer above rebuilt from this log (see :class:`DerivedCache`).
        self.derived: DerivedCache | None = None

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
            for attr in ("_rfd", "_wfd", "_lock_fd"):
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

    def repair_hint(self) -> str:
        """The sentence naming the repair command for this thread."""
        return repair_hint(os.path.dirname(self.paths.directory), self.thread_id)

    def _identity(self) -> LogIdentity:
        return LogIdentity(self.gen, self._ino, self._header_crc)

    def _drop_derived(self) -> None:
        if self.derived is not None:
            self.derived.clear()

    # -- indexing --------------------------------------------------------------

    def refresh(self) -> ThreadIndex:
        """Bring the in-memory index up to date with the file and return it.

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
            with bulk_allocation():
                if self._ino != st.st_ino or not self.sidecar.tail_unchanged(self._rfd, st.st_size):
                    # A new generation, or the end of the log was cut back and rewritten
                    # (a writer abandoning a batch whose fsync failed): index it afresh.
                    self._load(st.st_ino)
                    if self.recovery.torn_header is not None:
                        return self.index  # reads as an absent thread
                    st = files.os.fstat(self._rfd)  # type: ignore[arg-type]
                if st.st_size > self.index.committed_end:
                    self._scan_from(self.index.committed_end, st.st_size)
                self._size = st.st_size
            durable = self.sidecar.durable_seq
            if self.index.last_seq < durable and not self.read_only:
                raise CorruptLogError(
                    f"thread {self.thread_id!r}: log {self.path} holds committed records "
                    f"up to sequence {self.index.last_seq}, but its index says records up "
                    f"to {durable} were durable: the record at byte offset "
                    f"{self.index.committed_end} is damaged or the file was cut. Nothing "
                    f"was changed. {self.repair_hint()}",
                    path=self.path,
                    offset=self.index.committed_end,
                )
            return self.index

    def _reset(self) -> None:
        for attr in ("_rfd", "_wfd"):
            fd = getattr(self, attr)
            if fd is not None:
                files.os.close(fd)
                setattr(self, attr, None)
        self._ino = None
        self._size = None
        self._header_crc = ""
        self.gen = 0
        self.index = ThreadIndex()
        self._verified_for_writing = False
        self._drop_derived()
        self.sidecar.reset()
        self.recovery.reset()
        self.tombstone.forget()  # the log vanished: maybe deleted elsewhere

    def _load(self, ino: int, *, use_sidecar: bool = True) -> None:
        """Open a (new generation of the) log: check its header, load or rebuild the index."""
        self._reset()
        fd = files.open_refusing_links(self.path, os.O_RDONLY, self.thread_id)
        try:
            head = files.os.pread(fd, _HEADER_PROBE, 0)
            nl = head.find(b"\n")
            if nl < 0 and is_torn_header(head, self.thread_id):
                # Cut inside its header line. Unless its index says records were durable
                # (then data was lost: refuse), the thread reads as absent, and the next
                # writer sets the bytes aside.
                self._refuse_if_indexed(ino)
                files.os.close(fd)
                self.recovery.torn_header = head
                return
            header = check_header(framing.parse_line(head[:nl]) if nl > 0 else None, self.thread_id, self.path)
        except BaseException:
            files.os.close(fd)  # refused: stays refused on every later call
            raise
        self._rfd = fd
        self._ino = files.os.fstat(fd).st_ino
        self._header_crc = head[nl - 10 : nl - 2].decode("ascii")
        self.gen = header.get("gen", 1)
        self._apply(summarize(header, 0, nl + 1))
        self.sidecar.note_last_crc(self._rfd)
        if use_sidecar:
            self.sidecar.load(self.index, self._identity(), self._holds)
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

    def _apply(self, summary: dict[str, Any], crc: bytes | None = None) -> None:
        rewritten = self.index.rewritten_versions
        self.index.apply(summary)
        if self.index.rewritten_versions != rewritten:
            # A version was stored again with (maybe) another value: values cached
            # by version may be stale. A writer that did it fills them again after.
            self._drop_derived()
        self.sidecar.summaries.append(summary)
        self.sidecar.last_crc = crc

    def _scan_from(self, start: int, end: int) -> None:
        data = files.os.pread(self._rfd, end - start, start)  # type: ignore[arg-type]
        result = framing.ScanResult()
        records = framing.iter_records(data, start, expect_seq=self.index.last_seq + 1, result=result)
        del data  # the stream holds it
        if self.index.last_seq == 0:
            # Indexing the whole log: in columns, as if loaded from a sidecar.
            blocks = sidecar.blocks_of(records)
            self.index.load_blocks(blocks)
            self.sidecar.summaries.add_blocks(blocks)
        else:
            for rec, offset, length in records:
                self._apply(summarize(rec, offset, length))
        self.sidecar.note_last_crc(self._rfd)
        if result.corrupt_offset is None:
            return
        if self.read_only:
            if not self.recovery.damage_reported:
                logger.warning(
                    "thread %r: log %s is damaged at byte offset %d; serving the %d "
                    "records before it (read-only). %s",
                    self.thread_id, self.path, result.corrupt_offset,
                    self.index.last_seq, self.repair_hint(),
                )
                self.recovery.damage_reported = True
            return
        raise CorruptLogError(
            f"thread {self.thread_id!r}: log {self.path} has a damaged record at byte "
            f"offset {result.corrupt_offset}, followed by valid records. Nothing was "
            "changed. Records before it can be read with JsonlSaver(..., "
            f"read_only=True). {self.repair_hint()}",
            path=self.path,
            offset=result.corrupt_offset,
        )

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
        # Inside a group commit the write handle must outlive the reload: the group's
        # batches (written, indexed again by the scan below) are synced through it.
        wfd = self._wfd if self._group else None
        if wfd is not None:
            self._wfd = None
        try:
            self._load(files.os.fstat(self._rfd).st_ino, use_sidecar=False)  # type: ignore[arg-type]
        finally:
            if wfd is not None:
                if self._ino is not None and self._wfd is None and files.os.fstat(wfd).st_ino == self._ino:
                    self._wfd = wfd
                else:  # pragma: no cover - another file under the writer lock: impossible
                    files.os.close(wfd)
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
        refs = sorted(set(refs))
        group = [refs[0]]
        for ref in refs[1:] + [None]:
            if ref is not None:
                start, end = group[0].offset, group[-1].offset + group[-1].length
                if ref.offset - end <= _READ_GAP and ref.offset + ref.length - start <= _READ_SPAN:
                    group.append(ref)
                    continue
            start = group[0].offset
            data = files.os.pread(fd, max(r.offset + r.length for r in group) - start, start)
            for r in group:
                rec = self._checked(data[r.offset - start : r.offset - start + r.length], r)
                if rec is not None:
                    framing.strip_batch_marks(rec)
                    out[r.offset] = rec
            if ref is not None:
                group = [ref]
        return out

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every committed record of the log, header first (reads the whole file)."""
        return (r.record for r in self.scanned_records())

    def scanned_records(self) -> list[framing.ScannedRecord]:
        """Every committed record with its offset and length, header first."""
        with self.mutex:
            self.refresh()
            if self._rfd is None:
                return []
            data = files.os.pread(self._rfd, self.index.committed_end, 0)
        return framing.scan(data, 0).records

    # -- the writer's lock -----------------------------------------------------------

    @contextmanager
    def writer(self) -> Iterator[ThreadIndex]:
        """Hold the thread's writer lock, with the index current and any torn tail cut."""
        if self.read_only:
            raise DurabilityError(f"thread {self.thread_id!r}: the store was opened read-only")
        with self.locked():
            if not self.recovery.swept:
                self.recovery.sweep_temp_files()
            self.recovery.cut_abandoned()
            self.refresh()
            if self._ino is not None:
                if self.sidecar.trusted and not self._verified_for_writing:
                    self._verify_checksums()
                # refresh() just stat()ed the file under the writer lock: no one has
                # appended since.
                size = self._size if self._size is not None else files.os.fstat(self._rfd).st_size  # type: ignore[arg-type]
                if size > self.index.committed_end:
                    self.recovery.cut_tail(self._rfd, self._write_fd(), size, self.index.committed_end)  # type: ignore[arg-type]
            elif self.recovery.torn_header is not None:
                self.recovery.set_aside_torn_header()
            yield self.index

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the in-process lock and the cross-process writer lock (nothing else)."""
        with self.mutex:
            if self._lock_fd is None:
                self._lock_fd = files.open_refusing_links(
                    self.paths.lock, os.O_RDWR | os.O_CREAT, self.thread_id
                )
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _verify_checksums(self) -> None:
        """Before the first append: every committed record's checksum, once per load.

        Entries from the sidecar were never read; a writer must not append after damage
        it did not see (the log would look healthy up to its end). If the sidecar's
        offsets are what is wrong, the index is rebuilt by a full scan instead, which
        raises on real damage.
        """
        data = files.os.pread(self._rfd, self.index.committed_end, 0)  # type: ignore[arg-type]
        for o, n in self.sidecar.summaries.spans():
            if not framing.check_line(data[o : o + n - 1]):
                self._rebuild_without_sidecar()  # the scan checks every record
                break
        self._verified_for_writing = True

    def _write_fd(self) -> int:
        if self._wfd is None:
            self._wfd = files.open_file(self.path, os.O_WRONLY | os.O_APPEND)
        return self._wfd

    # -- appending ---------------------------------------------------------------

    def append(self, records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], RecordRef]]:
        """Append one batch durably. Call under :meth:`writer`.

        Args:
            records: Records without ``seq``; sequence numbers are assigned here.

        Returns:
            Each record with where it now lies.

        Raises:
            DurabilityError: The batch could not be written and synced; it is not
                acknowledged and the file is cut back to where it was.
        """
        if self._ino is None:
            self._install([new_header(self.thread_id, self.gen + 1 if self.gen else 1)])
        seq = self.index.last_seq + 1
        for i, rec in enumerate(records):
            rec["seq"] = seq + i
        group = self._group
        # A later batch of a group commit belongs to the group's sync unit (see framing).
        lines = framing.frame_batch_lines(records, unit=group[1] if group else None)
        data = b"".join(lines)
        start = self.index.committed_end
        fd = self._write_fd()
        try:
            files.write_all(fd, data)
            if group is None:
                files.os.fdatasync(fd)
        except OSError as exc:
            if group is None:
                self._abandon_write(start, data)
            else:  # the group's earlier batches are not durable either: cut them all
                self._abandon_group(group, data)
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not append to {self.path}: {exc}. "
                "Nothing was acknowledged; check free disk space and the file system, "
                "then retry the run."
            ) from exc
        placed = []
        offset = start
        for rec, line in zip(records, lines, strict=True):
            self._apply(summarize(rec, offset, len(line)), line[-11:-3])
            placed.append((rec, RecordRef(offset, len(line), rec["seq"])))
            offset += len(line)
        if group is not None:
            if not group:
                group += [start, seq]
            group.append(data)
            return placed
        self._after_durable_append()
        return placed

    def _after_durable_append(self) -> None:
        if self.sidecar_lag() >= INDEX_REWRITE_RECORDS:
            try:
                self.write_sidecar()
            except OSError:
                pass  # the sidecar is only a cache; the batch is durable and acknowledged

    @contextmanager
    def group_commit(self) -> Iterator[None]:
        """Make the appends inside the block durable together, with one ``fdatasync``.

        Call under :meth:`writer`, which must stay held until the block ends. Appends
        inside it are written and indexed at once (later appends of the block build on
        them) but are durable only when the block ends: until then nothing of them may
        be acknowledged. If the sync (or any write, or anything raised inside the block
        after a write) fails, every batch of the block is cut from the file, the
        in-memory index is dropped (the next call reloads it from the file), and the
        block raises: :class:`~.errors.DurabilityError` for an I/O error.
        """
        if self._group is not None:
            raise RuntimeError("group_commit blocks do not nest")
        group: list[Any] = []  # [start offset, first seq, batch bytes, batch bytes, ...]
        self._group = group
        try:
            try:
                yield
            except BaseException:
                if group:
                    self._abandon_group(group)
                raise
            if not group:
                return
            try:
                files.os.fdatasync(self._write_fd())
            except OSError as exc:
                self._abandon_group(group)
                raise DurabilityError(
                    f"thread {self.thread_id!r}: could not make {len(group) - 2} batches "
                    f"appended to {self.path} durable: {exc}. None of them was "
                    "acknowledged; check free disk space and the file system, then retry "
                    "the run."
                ) from exc
        finally:
            self._group = None
        self._after_durable_append()

    def _abandon_group(self, group: list[Any], failed: bytes = b"") -> None:
        """Cut every batch of a group commit (and a batch whose write failed) and forget
        the index, which holds the group's batches."""
        start = group[0] if group else self.index.committed_end
        self._abandon_write(start, b"".join(group[2:]) + failed)
        group.clear()
        self._reset()

    def _abandon_write(self, start: int, data: bytes) -> None:
        """After a failed write or fsync: cut back and never reuse the handle (if even
        the cut fails, the batch is cut before this process appends again)."""
        fd, self._wfd = self._wfd, None
        self.recovery.abandon_write(fd, start, data)

    # -- whole-file operations ---------------------------------------------------

    def rewrite(self, records: list[dict[str, Any]], *, gen: int | None = None) -> None:
        """Replace the log by a new generation holding ``records`` (header added here),
        crash-atomically (see :mod:`.generations`). Call under :meth:`writer` (or
        :meth:`locked`, with ``gen``, for a log that cannot be indexed: repair).

        Args:
            records: The records, without ``seq`` (numbered here).
            gen: The new generation's number (default: the indexed one's plus one).
        """
        self._install(numbered(records, self.thread_id, gen if gen is not None else self.gen + 1))

    def _install(self, records: list[dict[str, Any]]) -> None:
        try:
            install(self.paths, self.thread_id, records)
        finally:
            self._ino = None  # reload whatever is there now
        self.refresh()
        try:
            self.write_sidecar()
        except OSError:
            pass  # only a cache

    def remove(self) -> None:
        """Delete the log, sidecar and quarantine files, leaving a tombstone (see
        :mod:`.generations`). Call under :meth:`writer`."""
        newest = max((ids[-1] for ids in self.index.ordered_ids.values() if ids), default=None)
        self._reset()
        self.tombstone.delete_log(newest)

    def deleted_up_to(self) -> str | None:
        """Newest checkpoint id of an earlier, deleted log of this thread (if any)."""
        return self.tombstone.deleted_up_to()

    # -- the sidecar --------------------------------------------------------------

    def write_sidecar(self, *, compact: bool = False) -> None:
        """Bring the sidecar index up to date with the in-memory index (see
        :meth:`~.sidecar_file.SidecarFile.write`)."""
        if self._rfd is None or self.read_only:
            return
        self.sidecar.write(self._identity(), self.paths.temp("idx"), compact=compact)

    def sidecar_lag(self) -> int:
        """Records in the log that the sidecar file does not cover yet."""
        return self.sidecar.lag()
