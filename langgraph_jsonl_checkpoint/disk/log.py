"""One thread's log file: create, lock, append with fsync, read at offsets, rewrite.

Files of a thread (``<name>`` comes from ``store.py``)::

    <name>.jsonl        the append-only log (header record first)
    <name>.idx          sidecar index: record summaries up to a "covered" offset
    <name>.lock         writer lock, flock()ed; never renamed, so its inode is stable
    <name>.quarantine   bytes cut from a torn tail, kept for inspection

Appends: under an in-process lock *and* ``flock`` on the lock file, the writer brings its
index up to date with the file (another process may have appended), cuts a torn tail
(copying the bytes to the quarantine file first), writes the whole batch with one
``write``, ``fdatasync``\\ s, and only then updates the index and returns. A short write
or an fsync error truncates back, closes the handle and raises
:class:`~.errors.DurabilityError`: nothing is acknowledged.

Readers take no lock. They ``stat`` the log on every call, scan what was appended since,
and ignore an uncommitted tail (it may be a batch another process is writing right now).

The sidecar index is rewritten whole (temp file + rename) every few hundred records and
on close; the log past its covered offset is scanned on open, so the sidecar is never
needed for correctness and never trusted beyond a check of its last record.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shlex
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import orjson

from ..errors import CorruptLogError, DurabilityError, ForeignFileError, FormatVersionError
from . import framing, sidecar
from .index import RecordRef, ThreadIndex, bulk_allocation, summarize

FORMAT_VERSION = 1
logger = logging.getLogger(__name__)


class IndexRebuilt(Exception):
    """Internal: the index was found wrong and rebuilt from the log; retry the operation."""

#: Update the sidecar index once this many records are past its covered offset.
INDEX_REWRITE_RECORDS = 256
_HEADER_PROBE = 64 * 1024
#: read_records: records at most this far apart share one read, of at most _READ_SPAN.
_READ_GAP = 64 * 1024
_READ_SPAN = 4 * 1024 * 1024


def _open_mode(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600)


def fsync_dir(path: str) -> None:
    """fsync a directory so a created, renamed or removed entry in it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ThreadLog:
    """The log, index and lock of one thread.

    Args:
        directory: Folder holding the thread's files.
        name: File stem for this thread (from the store's naming).
        thread_id: The thread id, checked against the log's header.
        read_only: Never repair, create or rewrite.
        temp_dir: Folder for temp files of rewrites (same file system as ``directory``).
    """

    def __init__(
        self,
        directory: str,
        name: str,
        thread_id: str,
        *,
        read_only: bool = False,
        temp_dir: str | None = None,
    ) -> None:
        self.directory = directory
        self.temp_dir = temp_dir or directory
        self.name = name
        self.thread_id = thread_id
        self.read_only = read_only
        self.path = os.path.join(directory, name + ".jsonl")
        self.index_path = os.path.join(directory, name + ".idx")
        self.lock_path = os.path.join(directory, name + ".lock")
        self.quarantine_path = os.path.join(directory, name + ".quarantine")
        self.mutex = threading.RLock()
        self.index = ThreadIndex()
        self.gen = 0
        self._ino: int | None = None
        #: The log's size as the last refresh saw it (under the writer lock: its size now).
        self._size: int | None = None
        self._header_crc = ""  # checksum of the log's header line: names this very file
        self._rfd: int | None = None
        self._wfd: int | None = None
        self._lock_fd: int | None = None
        self._summaries = sidecar.Summaries()  # what the sidecar holds or would
        # (size in bytes, summaries) of the sidecar as this process last saw/wrote it
        self._sidecar_state = (0, 0)
        self._sidecar_lines = 0  # block lines in the sidecar file, as of _sidecar_state
        self._durable_seq = 0  # highest seq the sidecar says was fsynced
        self._torn_header: bytes | None = None  # a header line cut short (see _load)
        self._last_crc: bytes | None = None  # checksum digits of the last indexed record
        self._abandoned: tuple[int, bytes] | None = None  # batch a failed fsync left behind
        self._group: list[Any] | None = None  # inside group_commit(): start, seq, batches
        self._swept = False  # stale temp files removed (once per load, under the lock)
        self._verified_for_writing = False  # checksums of the whole log checked
        self._damage_reported = False
        self._tombstone: str | None = None  # newest checkpoint id of a deleted log
        self._tombstone_read = False
        self._from_sidecar = False  # index entries not verified by a scan of the log
        self._verified: set[int] = set()  # sidecar entries checked against their record
        #: Scratch space for the saver (list fingerprints); dropped on reload.
        self.cache: dict[Any, Any] = {}

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close file handles (the in-memory index stays)."""
        with self.mutex:
            for attr in ("_rfd", "_wfd", "_lock_fd"):
                fd = getattr(self, attr)
                if fd is not None:
                    setattr(self, attr, None)
                    try:
                        os.close(fd)
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

    # -- reading ---------------------------------------------------------------

    def refresh(self) -> ThreadIndex:
        """Bring the in-memory index up to date with the file and return it.

        Raises:
            CorruptLogError: A committed record is damaged, or the log is shorter than
                what was already indexed.
            ForeignFileError: The file is not this thread's log.
        """
        with self.mutex:
            try:
                st = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                self._reset()
                return self.index
            with bulk_allocation():
                if self._ino != st.st_ino or not self._tail_unchanged(st.st_size):
                    # A new generation, or the end of the log was cut back and rewritten
                    # (a writer abandoning a batch whose fsync failed): index it afresh.
                    self._load(st.st_ino)
                    if self._torn_header is not None:
                        return self.index  # reads as an absent thread
                    st = os.fstat(self._rfd)  # type: ignore[arg-type]
                if st.st_size > self.index.committed_end:
                    self._scan_from(self.index.committed_end, st.st_size)
                self._size = st.st_size
            if self.index.last_seq < self._durable_seq and not self.read_only:
                raise CorruptLogError(
                    f"thread {self.thread_id!r}: log {self.path} holds committed records "
                    f"up to sequence {self.index.last_seq}, but its index says records up "
                    f"to {self._durable_seq} were durable: the record at byte offset "
                    f"{self.index.committed_end} is damaged or the file was cut. Nothing "
                    f"was changed. {self.repair_hint()}",
                    path=self.path,
                    offset=self.index.committed_end,
                )
            return self.index

    def _tail_unchanged(self, size: int) -> bool:
        """Whether the last record this index holds is still there, byte for byte."""
        last = self._summaries.last_span()
        if last is None or self._rfd is None:
            return True
        if size < last[0] + last[1]:
            return False
        crc = os.pread(self._rfd, 8, last[0] + last[1] - 11)
        return crc == self._last_crc

    def _reset(self) -> None:
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None
        if self._wfd is not None:
            os.close(self._wfd)
            self._wfd = None
        self._ino = None
        self._size = None
        self._header_crc = ""
        self.index = ThreadIndex()
        self.cache.clear()
        self._summaries = sidecar.Summaries()
        self._tombstone_read = False  # the log vanished: maybe deleted elsewhere
        self._verified = set()
        self._verified_for_writing = False
        self._sidecar_state = (0, 0)
        self._sidecar_lines = 0
        self._durable_seq = 0
        self._torn_header = None
        self.gen = 0

    def _load(self, ino: int, *, use_sidecar: bool = True) -> None:
        """Open a (new generation of the) log: check its header, load or rebuild the index."""
        self._reset()
        fd = _open_refusing_links(self, self.path, os.O_RDONLY)
        try:
            head = os.pread(fd, _HEADER_PROBE, 0)
            nl = head.find(b"\n")
            if nl < 0 and self._is_torn_header(head):
                # Cut inside its header line. Unless its index says records were durable
                # (then data was lost: refuse), the thread reads as absent, and the next
                # writer sets the bytes aside (_set_aside_torn_header).
                self._refuse_if_indexed(ino)
                os.close(fd)
                self._torn_header = head
                return
            header = self._check_header(framing.parse_line(head[:nl]) if nl > 0 else None, head)
        except BaseException:
            os.close(fd)  # refused: stays refused on every later call
            raise
        self._rfd = fd
        self._ino = os.fstat(fd).st_ino
        self._header_crc = head[nl - 10 : nl - 2].decode("ascii")
        self.gen = header.get("gen", 1)
        self._apply(summarize(header, 0, nl + 1))
        self._remember_last_crc()
        self._from_sidecar = False
        if use_sidecar:
            self._load_sidecar()

    def _is_torn_header(self, head: bytes) -> bool:
        """Whether ``head`` (no newline in it) is this thread's header line, cut short.

        The header is created atomically, so only outside damage (a copy or restore cut
        short, a file system losing an unsynced rename's data) leaves one. It counts as
        torn only if its bytes are what this package writes for this thread: an empty
        file, or a prefix of the header's fixed part, or that fixed part followed by
        the generation and creation time, cut anywhere.
        """
        fixed = orjson.dumps(
            {"t": "header", "seq": 0, "format": FORMAT_VERSION, "thread": self.thread_id}
        )[:-1] + b',"gen":'  # as create() writes it, up to the generation
        if len(head) <= len(fixed):
            return fixed.startswith(head)
        return head.startswith(fixed) and _is_cut_header_rest(head[len(fixed):])

    def _read_sidecar(self) -> tuple[bytes, list[bytes], dict[str, Any] | None] | None:
        """The sidecar's bytes, its lines and its parsed header line (``None``: no file)."""
        try:
            with open(self.index_path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        lines = data.split(b"\n")
        return data, lines, framing.parse_line(lines[0])

    def _refuse_if_indexed(self, ino: int) -> None:
        """Raise if this file's sidecar says records past the header were durable."""
        found = self._read_sidecar()
        if found is None:
            return
        _, lines, head = found
        if head is None or head.get("ino") != ino:
            return  # another generation's index, or none
        last = None
        for e in map(framing.parse_line, lines[1:]):
            if e and type(e.get("s")) is int:  # a summary line (sidecars before 0.2)
                last = e["s"]
            elif e and type(e.get("s0")) is int and type(e.get("n")) is list and e["n"]:
                last = e["s0"] + len(e["n"]) - 1  # a block
        if last is not None:
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} was cut inside its header "
                f"line, but its index says records up to sequence {last} were "
                f"durable: the file lost data. Nothing was changed. {self.repair_hint()}",
                path=self.path,
                offset=0,
            )

    def _check_header(self, header: dict[str, Any] | None, head: bytes) -> dict[str, Any]:
        if header is None:
            raise ForeignFileError(
                f"thread {self.thread_id!r}: {self.path} does not start with a "
                "langgraph-jsonl-checkpoint header record. It is not a log this package "
                "wrote; move it out of the store directory."
            )
        if header.get("t") != "header":
            raise ForeignFileError(
                f"thread {self.thread_id!r}: first record of {self.path} is not a header."
            )
        fmt = header.get("format")
        if fmt != FORMAT_VERSION:
            raise FormatVersionError(
                f"thread {self.thread_id!r}: log {self.path} has format version {fmt!r}; "
                f"this version of langgraph-jsonl-checkpoint reads format "
                f"{FORMAT_VERSION}. Upgrade the package to read it."
            )
        if header.get("thread") != self.thread_id:
            raise ForeignFileError(
                f"thread {self.thread_id!r}: log {self.path} belongs to another thread. "
                "Files in the store must not be renamed or copied by hand; use "
                "copy_thread()."
            )
        return header

    def _apply(self, summary: dict[str, Any], crc: bytes | None = None) -> None:
        rewritten = self.index.rewritten_versions
        self.index.apply(summary)
        if self.index.rewritten_versions != rewritten:
            # A version was stored again with (maybe) another value: values cached
            # by version may be stale. A writer that did it fills them again after.
            self.cache.clear()
        self._summaries.append(summary)
        self._last_crc = crc

    def _load_sidecar(self) -> None:
        """Load the sidecar's longest valid prefix of blocks that matches this log.

        A partial or damaged block ends the usable prefix (the sidecar may be being
        appended to by another process); the log past it is scanned instead.
        """
        found = self._read_sidecar()
        if found is None:
            return
        data, lines, head = found
        # Generation and inode number alone can match another log: a thread deleted and
        # created again starts over at generation 1, and ext4 reuses a freed inode
        # number. A stale sidecar left by a power cut would then claim records durable
        # that the new log never had. The header's checksum (its "created" stamp) tells.
        # A sidecar of another format (no "v": one summary per line) is rebuilt.
        if (
            not head
            or head.get("v") != sidecar.SIDECAR_VERSION
            or head.get("gen") != self.gen
            or head.get("ino") != self._ino
            or head.get("log") != self._header_crc
        ):
            return
        blocks = []
        offset, seq = self.index.committed_end, self.index.last_seq + 1
        for line in lines[1:]:
            block = sidecar.decode_block(line, seq, offset) if line else None
            if block is None:
                break
            blocks.append(block)
            offset, seq = block.end, seq + block.count
        # The sidecar is written only after the records it covers were fsynced: the
        # log must hold at least that many records, whatever else is wrong with it.
        self._durable_seq = seq - 1 if blocks else 0
        # Trust the prefix only if the log really holds the record it ends with.
        used = len(blocks)
        if blocks:
            o, n = blocks[-1].span(blocks[-1].count - 1)
            if not self._record_matches(RecordRef(o, n, seq - 1)):
                blocks = []  # inconsistent with the log: rebuild from the log
            else:
                blocks = [sidecar.merge(blocks)]
        self.index.load_blocks(blocks)
        self._summaries.add_blocks(blocks)
        self._from_sidecar = bool(blocks)
        self._remember_last_crc()
        if (blocks or not used) and used == len(lines[1:]) - (1 if lines[-1] == b"" else 0):
            self._sidecar_state = (len(data), blocks[0].count if blocks else 0)
            self._sidecar_lines = used

    def _record_matches(self, ref: RecordRef) -> bool:
        data = os.pread(self._rfd, ref.length, ref.offset)  # type: ignore[arg-type]
        if len(data) != ref.length or not data.endswith(b"\n"):
            return False
        rec = framing.parse_line(data[:-1])
        return rec is not None and rec.get("seq") == ref.seq

    def _remember_last_crc(self) -> None:
        last = self._summaries.last_span()
        if last is not None and self._rfd is not None:
            self._last_crc = os.pread(self._rfd, 8, last[0] + last[1] - 11)

    def _scan_from(self, start: int, end: int) -> None:
        data = os.pread(self._rfd, end - start, start)  # type: ignore[arg-type]
        result = framing.ScanResult()
        records = framing.iter_records(data, start, expect_seq=self.index.last_seq + 1, result=result)
        del data  # the stream holds it
        if self.index.last_seq == 0:
            # Indexing the whole log: in columns, as if loaded from a sidecar.
            blocks = sidecar.blocks_of(records)
            self.index.load_blocks(blocks)
            self._summaries.add_blocks(blocks)
            self._last_crc = None
        else:
            for rec, offset, length in records:
                self._apply(summarize(rec, offset, length))
        self._remember_last_crc()
        if result.corrupt_offset is not None:
            if self.read_only:
                if not self._damage_reported:
                    logger.warning(
                        "thread %r: log %s is damaged at byte offset %d; serving the %d "
                        "records before it (read-only). %s",
                        self.thread_id, self.path, result.corrupt_offset,
                        self.index.last_seq, self.repair_hint(),
                    )
                    self._damage_reported = True
                return
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} has a damaged record at byte "
                f"offset {result.corrupt_offset}, followed by valid records. Nothing was "
                "changed. Records before it can be read with JsonlSaver(..., "
                f"read_only=True). {self.repair_hint()}",
                path=self.path,
                offset=result.corrupt_offset,
            )

    def repair_hint(self) -> str:
        """The sentence naming the repair command for this thread."""
        store = os.path.dirname(self.directory)
        return (
            f"To keep every record that can still be read, run `langgraph-jsonl repair "
            f"{shlex.quote(store)} --thread {shlex.quote(self.thread_id)}` (it archives "
            "the original first), or restore the file from a backup."
        )

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
        data = os.pread(fd, ref.length, ref.offset)
        rec = self._checked(data, ref)
        if rec is None:
            if self._from_sidecar:
                # The sidecar lied (stale, tampered): rebuild from the log, then retry.
                self._rebuild_without_sidecar()
                raise IndexRebuilt()
            raise CorruptLogError(
                f"thread {self.thread_id!r}: log {self.path} has no valid record "
                f"{ref.seq} at byte offset {ref.offset}. Delete {self.index_path} to "
                "rebuild the index; if this persists, the log itself is damaged.",
                path=self.path,
                offset=ref.offset,
            )
        framing.strip_batch_marks(rec)
        return rec

    def _checked(self, data: bytes, ref: RecordRef) -> dict[str, Any] | None:
        """The record in ``data`` (read at ``ref``) if it is the one the index expects."""
        rec = framing.parse_line(data[:-1]) if data.endswith(b"\n") else None
        if rec is None or rec.get("seq") != ref.seq or (
            # Entries loaded from the sidecar are checked against the record the first
            # time it is read: every field the index served must come from the log.
            self._from_sidecar
            and ref.seq not in self._verified
            and not self._summary_matches(rec, ref)
        ):
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
            data = os.pread(fd, max(r.offset + r.length for r in group) - start, start)
            for r in group:
                rec = self._checked(data[r.offset - start : r.offset - start + r.length], r)
                if rec is not None:
                    framing.strip_batch_marks(rec)
                    out[r.offset] = rec
            if ref is not None:
                group = [ref]
        return out

    def distrust_sidecar(self) -> None:
        """A lookup found the index inconsistent with the log: if the index came from the
        sidecar, rebuild it by a scan and raise :class:`IndexRebuilt` (retry the call);
        otherwise return (the log itself is at fault)."""
        if self._from_sidecar:
            self._rebuild_without_sidecar()
            raise IndexRebuilt()

    def _summary_matches(self, rec: dict[str, Any], ref: RecordRef) -> bool:
        stored = self._summaries.get(ref.seq)
        if stored != summarize({k: v for k, v in rec.items() if k != "more"}, ref.offset, ref.length):
            return False
        self._verified.add(ref.seq)
        return True

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """Every committed record of the log, header first (reads the whole file)."""
        return (r.record for r in self.scanned_records())

    def scanned_records(self) -> list[framing.ScannedRecord]:
        """Every committed record with its offset and length, header first."""
        with self.mutex:
            self.refresh()
            if self._rfd is None:
                return []
            data = os.pread(self._rfd, self.index.committed_end, 0)
        return framing.scan(data, 0).records

    # -- writing ---------------------------------------------------------------

    @contextmanager
    def writer(self) -> Iterator[ThreadIndex]:
        """Hold the thread's writer lock, with the index current and any torn tail cut."""
        if self.read_only:
            raise DurabilityError(f"thread {self.thread_id!r}: the store was opened read-only")
        with self.locked():
            if not self._swept:
                self._sweep_temp_files()
            self._cut_abandoned()
            self.refresh()
            if self._ino is not None:
                if self._from_sidecar and not self._verified_for_writing:
                    self._verify_checksums()
                self._repair_tail()
            elif self._torn_header is not None:
                self._set_aside_torn_header()
            yield self.index

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the in-process lock and the cross-process writer lock (nothing else)."""
        with self.mutex:
            if self._lock_fd is None:
                self._lock_fd = _open_refusing_links(self, self.lock_path, os.O_RDWR | os.O_CREAT)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _temp_path(self, kind: str) -> str:
        # In the store's tmp/ folder, named by pid, so a sweep can tell whose it is.
        return os.path.join(self.temp_dir, f"{self.name}.{kind}.{os.getpid()}-{threading.get_ident()}")

    def _sweep_temp_files(self) -> None:
        """Remove this thread's temp files a crashed writer left (we hold the lock)."""
        prefix = self.name + "."
        try:
            entries = os.listdir(self.temp_dir)
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if entry.startswith(prefix):
                _unlink_quietly(os.path.join(self.temp_dir, entry))
        self._swept = True

    def _verify_checksums(self) -> None:
        """Before the first append: every committed record's checksum, once per load.

        Entries from the sidecar were never read; a writer must not append after damage
        it did not see (the log would look healthy up to its end). If the sidecar's
        offsets are what is wrong, the index is rebuilt by a full scan instead, which
        raises on real damage.
        """
        end = self.index.committed_end
        data = os.pread(self._rfd, end, 0)  # type: ignore[arg-type]
        for o, n in self._summaries.spans():
            if not framing.check_line(data[o : o + n - 1]):
                self._rebuild_without_sidecar()  # the scan checks every record
                break
        self._verified_for_writing = True

    def _rebuild_without_sidecar(self) -> None:
        """Re-index this generation by scanning the log, keeping the durable watermark."""
        durable = self._durable_seq
        # Inside a group commit the write handle must outlive the reload: the group's
        # batches (written, indexed again by the scan below) are synced through it.
        wfd = self._wfd if self._group else None
        if wfd is not None:
            self._wfd = None
        try:
            self._load(os.fstat(self._rfd).st_ino, use_sidecar=False)  # type: ignore[arg-type]
        finally:
            if wfd is not None:
                if self._ino is not None and self._wfd is None and os.fstat(wfd).st_ino == self._ino:
                    self._wfd = wfd
                else:  # pragma: no cover - another file under the writer lock: impossible
                    os.close(wfd)
        self._durable_seq = durable
        self.refresh()

    def _cut_abandoned(self) -> None:
        """Retry cutting a batch whose fsync failed and whose first cut failed too."""
        if self._abandoned is None:
            return
        start, data = self._abandoned
        try:
            fd = _open_mode(self.path, os.O_RDWR)
        except FileNotFoundError:
            self._abandoned = None
            return
        try:
            if os.pread(fd, len(data), start) == data:
                os.ftruncate(fd, start)
                os.fsync(fd)
            self._abandoned = None
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: {self.path} still holds a batch that was never "
                f"acknowledged (from byte offset {start}) and it cannot be cut: {exc}. "
                "Fix the file system, then retry."
            ) from exc
        finally:
            os.close(fd)

    def _repair_tail(self) -> None:
        """Move bytes past the last committed batch to the quarantine file, then cut them."""
        # refresh() just stat()ed the file under the writer lock: no one has appended since.
        size = self._size
        if size is None:
            size = os.fstat(self._rfd).st_size  # type: ignore[arg-type]
        end = self.index.committed_end
        if size <= end:
            return
        torn = os.pread(self._rfd, size - end, end)  # type: ignore[arg-type]
        try:
            self._quarantine(end, torn)
            wfd = self._write_fd()
            os.ftruncate(wfd, end)
            os.fsync(wfd)
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not set aside the torn tail of "
                f"{self.path} (byte offset {end}, {len(torn)} bytes): {exc}. Nothing was "
                "written; check free space and the file system, then retry."
            ) from exc

    def _set_aside_torn_header(self) -> None:
        """Move a header line cut short to the quarantine file and remove the log."""
        torn = self._torn_header or b""
        try:
            self._quarantine(0, torn)
            os.unlink(self.path)
            fsync_dir(self.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not set aside {self.path}, whose header "
                f"line was cut short ({len(torn)} bytes): {exc}. Nothing was written; check "
                "the file system, then retry."
            ) from exc
        self._torn_header = None

    def _quarantine(self, offset: int, torn: bytes) -> None:
        """Append ``torn`` (cut from ``offset`` of the log) to the quarantine file, synced."""
        stamp = datetime.now(timezone.utc).isoformat()
        note = framing.frame(
            {"t": "quarantine", "seq": 0, "at": stamp, "offset": offset, "bytes": len(torn)}
        )
        qfd = _open_refusing_links(self, self.quarantine_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            _write_all(qfd, note + torn + b"\n")
            os.fsync(qfd)
        finally:
            os.close(qfd)
        # The quarantine file may be new: its name must be durable before the cut is.
        fsync_dir(self.directory)

    def _write_fd(self) -> int:
        if self._wfd is None:
            self._wfd = _open_mode(self.path, os.O_WRONLY | os.O_APPEND)
        return self._wfd

    def create(self) -> None:
        """Create the log with its header (atomically). Call under :meth:`writer`."""
        header = {
            "t": "header",
            "seq": 0,
            "format": FORMAT_VERSION,
            "thread": self.thread_id,
            "gen": self.gen + 1 if self.gen else 1,
            "created": datetime.now(timezone.utc).isoformat(),
        }
        self._install([header])

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
            self.create()
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
            _write_all(fd, data)
            if group is None:
                os.fdatasync(fd)
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
            ref = RecordRef(offset, len(line), rec["seq"])
            self._apply(summarize(rec, offset, len(line)), line[-11:-3])
            placed.append((rec, ref))
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
                os.fdatasync(self._write_fd())
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
        """After a failed write or fsync: cut back and never reuse the handle.

        If even the cut fails, the (possibly complete) batch is remembered and cut before
        this process appends again; it was never acknowledged.
        """
        fd, self._wfd = self._wfd, None
        try:
            if fd is not None:
                os.ftruncate(fd, start)
                os.fsync(fd)
        except OSError:
            self._abandoned = (start, data)
        finally:
            if fd is not None:
                os.close(fd)

    # -- whole-file operations ---------------------------------------------------

    def rewrite(self, records: list[dict[str, Any]], *, gen: int | None = None) -> None:
        """Replace the log by a new generation holding ``records`` (header added here).

        Crash-atomic: the new file is written and synced under a temporary name, renamed
        over the log, and the directory synced. Call under :meth:`writer` (or
        :meth:`locked`, with ``gen``, for a log that cannot be indexed: repair).

        Args:
            records: The records, without ``seq`` (numbered here).
            gen: The new generation's number (default: the indexed one's plus one).
        """
        header = {
            "t": "header",
            "seq": 0,
            "format": FORMAT_VERSION,
            "thread": self.thread_id,
            "gen": gen if gen is not None else self.gen + 1,
            "created": datetime.now(timezone.utc).isoformat(),
        }
        body = [header]
        for i, rec in enumerate(records, start=1):
            rec = dict(rec)
            framing.strip_batch_marks(rec)
            rec["seq"] = i
            body.append(rec)
        self._install(body)

    def _install(self, records: list[dict[str, Any]]) -> None:
        tmp = self._temp_path("jsonl")
        data = b"".join(framing.frame(r) for r in records)
        try:
            fd = _open_mode(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            _unlink_quietly(tmp)
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not write {tmp}: {exc}. The thread's "
                "log was not changed."
            ) from exc
        try:
            os.replace(tmp, self.path)
            fsync_dir(self.directory)
        except OSError as exc:
            _unlink_quietly(tmp)
            self._ino = None
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not make the new {self.path} durable: "
                f"{exc}. The operation was not acknowledged; retry it."
            ) from exc
        self._ino = None  # force a reload of the new generation
        try:
            os.unlink(self.index_path)
        except FileNotFoundError:
            pass
        self.refresh()
        try:
            self.write_sidecar()
        except OSError:
            pass  # only a cache

    def write_sidecar(self, *, compact: bool = False) -> None:
        """Bring the sidecar index up to date with the in-memory index.

        Appends the new summaries when the file is exactly as this process last left
        it; otherwise rewrites it whole (temp file + rename). Not fsynced: it is derived
        data, checked against the log on every open. With ``compact`` (on close), a
        file of many short blocks is rewritten in long ones instead of appended to.
        """
        if self._rfd is None or self.read_only:
            return
        # The header record is always read from the log itself, never from here.
        total = len(self._summaries) - 1
        known_size, known_count = self._sidecar_state
        try:
            current_size = os.stat(self.index_path).st_size
        except FileNotFoundError:
            current_size = -1
        shortest = -(-total // sidecar.BLOCK_RECORDS)
        if compact and self._sidecar_lines + 1 > 2 * shortest + 1:
            self._summaries.compact()
        elif known_count and current_size == known_size and known_count <= total:
            data = self._summaries.encode_from(known_count)
            if data is not None:
                fd = _open_mode(self.index_path, os.O_WRONLY | os.O_APPEND)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                self._sidecar_state = (known_size + len(data), total)
                self._sidecar_lines += data.count(b"\n")
                return
        data = sidecar.header_line(self.gen, self._ino, self._header_crc)
        data += self._summaries.encode_from(0) or b""
        tmp = self._temp_path("idx")
        try:
            fd = _open_mode(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, self.index_path)
        except OSError:
            _unlink_quietly(tmp)
            raise
        self._sidecar_state = (len(data), total)
        self._sidecar_lines = data.count(b"\n") - 1

    def sidecar_lag(self) -> int:
        """Records in the log that the sidecar file does not cover yet."""
        return len(self._summaries) - 1 - self._sidecar_state[1]

    @property
    def tombstone_path(self) -> str:
        return os.path.join(self.directory, self.name + ".deleted")

    def remove(self) -> None:
        """Delete the log, sidecar and quarantine files. Call under :meth:`writer`.

        Leaves a small tombstone naming the newest checkpoint id that was deleted, so a
        write LangGraph was still sending for it cannot bring the thread back.
        """
        newest = max(
            (ids[-1] for ids in self.index.ordered_ids.values() if ids), default=None
        )
        newest = max(filter(None, (newest, self.deleted_up_to())), default=None)
        if newest is not None:
            tmp = self._temp_path("deleted")
            fd = _open_mode(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                _write_all(fd, framing.frame({"t": "deleted", "seq": 0, "thread": self.thread_id, "upto": newest}))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.tombstone_path)
        for p in (self.path, self.index_path, self.quarantine_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        fsync_dir(self.directory)
        self._reset()
        self._tombstone, self._tombstone_read = newest, True

    def deleted_up_to(self) -> str | None:
        """Newest checkpoint id of an earlier, deleted log of this thread (if any)."""
        if not self._tombstone_read:
            try:
                with open(self.tombstone_path, "rb") as f:
                    rec = framing.parse_line(f.read().rstrip(b"\n"))
                self._tombstone = rec.get("upto") if rec else None
            except FileNotFoundError:
                self._tombstone = None
            self._tombstone_read = True
        return self._tombstone


def _is_cut_header_rest(rest: bytes) -> bool:
    """Whether ``rest`` is ``<gen>,"created":"<time>","c":"<crc>"}`` cut anywhere."""
    digits = len(rest) - len(rest.lstrip(b"0123456789"))
    if not 1 <= digits <= 12:
        return False
    rest = rest[digits:]
    for literal, allowed in ((b',"created":"', b"0123456789T:.+-"), (b'","c":"', b"0123456789abcdef")):
        if len(rest) <= len(literal):
            return literal.startswith(rest)
        if not rest.startswith(literal):
            return False
        rest = rest[len(literal):]
        field = len(rest) - len(rest.lstrip(allowed))
        if field > 40:
            return False
        rest = rest[field:]
    return b'"}'.startswith(rest)


def _write_all(fd: int, data: bytes) -> None:
    """``write`` until every byte is written; a write of 0 bytes is an error."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _open_refusing_links(log: ThreadLog, path: str, flags: int) -> int:
    """Open one of a thread's files, refusing symbolic links with a clear error."""
    try:
        return _open_mode(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ForeignFileError(
                f"thread {log.thread_id!r}: {path} is a symbolic link; the store refuses "
                "links (one could redirect writes outside it). Remove it."
            ) from exc
        raise
