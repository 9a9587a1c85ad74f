"""One thread's log, written: the writer lock, durable appends, group commit, rewrites.

Files of a thread (see :class:`~.paths.LogPaths`)::

    <stem>.jsonl        the append-only log (header record first)
    <stem>.idx          sidecar index (derived data, :mod:`.sidecar_file`)
    <stem>.lock         writer lock, flock()ed; never renamed, so its inode is stable
    <stem>.quarantine   bytes cut from a torn tail (:mod:`.recovery`)
    <stem>.deleted      tombstone of deleted generations (:mod:`.generations`)
    <stem>.mem          session memory (derived data, kept by a layer above)
    <stem>.head         latest checkpoint whole, of a short log (derived data, :mod:`.head_file`)

Appends: under an in-process lock *and* ``flock`` on the lock file, the writer brings its
index up to date with the file (another process may have appended), cuts a torn tail
(copying the bytes to the quarantine file first), writes the whole batch with one
``write``, ``fdatasync``\\ s, and only then updates the index and returns. A short write
or an fsync error truncates back, closes the handle and raises
:class:`~.errors.DurabilityError`: nothing is acknowledged. Readers (:mod:`.view`) take
no lock.
"""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..errors import ConfigError, DurabilityError, JsonlCheckpointError
from . import files, framing
from . import view as view_module
from .entries import RecordRef
from .generations import install, numbered
from .header import new_header
from .index import ThreadIndex
from .parked import Parked
from .paths import LogPaths
from .summary import summarize
from .view import LogView

#: Records just written, in file order: ``(record, offset, framed line)``.
Written = list[tuple[dict[str, Any], int, bytes]]

#: Update the sidecar index once this many records are past what it covers.
INDEX_REWRITE_RECORDS = 256


class AppendObserver(Protocol):
    """Derived data a layer above keeps up to date with a log (the session memory)."""

    def appended(self, log: ThreadLog) -> None:
        """Records were just made durable (called under the writer lock; must not raise).

        ``log.just_appended`` holds them, in file order: ``(record, offset, line)``, the
        record as the writer built it (without the batch marks; it may share objects with
        the caller: read it, never keep or change it) and its framed line."""
        ...

    def closing(self, log: ThreadLog) -> None:
        """The store is closing, or dropping the log from its open set: write down what
        is kept in memory (must not raise)."""
        ...


def read_only_error(thread_id: str) -> ConfigError:
    """What a write (or a graph run) on a store opened read-only raises."""
    return ConfigError(
        f"thread {thread_id!r}: the store was opened read-only (read_only=True), so nothing "
        "can be written to it: no run, no change. To run the graph or change the thread, "
        "open the store without read_only."
    )


class ThreadLog(LogView):
    """The log, index and lock of one thread: a :class:`~.view.LogView` that can write.

    Args:
        paths: The thread's files.
        thread_id: The thread id, checked against the log's header.
        read_only: Never repair, create or rewrite.
        parked: What an earlier object of this log left (see :class:`Parked`).
    """

    def __init__(
        self, paths: LogPaths, thread_id: str, *, read_only: bool = False, parked: Parked | None = None
    ) -> None:
        super().__init__(paths, thread_id, read_only=read_only)
        self._parked = parked
        if parked is not None:
            self.head_index_crc = parked.head_index_crc
        self._verified_end = 0  # committed records before this offset were checked
        self._wfd: int | None = None
        self._lock_fd: int | None = None
        self._lock_pid = 0  # the process that opened _lock_fd
        self._group: list[Any] | None = None  # inside group_commit(): start, seq, batches
        self._group_lines: Written = []  # the group's records
        #: During the observers' call: each record just made durable, with its offset
        #: and framed line (see :class:`AppendObserver`); ``None`` otherwise.
        self.just_appended: Written | None = None
        self._verified_for_writing = False  # checksums of the whole log checked
        #: ``(end, CRC-32)`` of the log's bytes up to ``end``, kept as this object appends
        #: (known from a head file's index, see :meth:`indexed_crc`); ``None``: unknown.
        self._crc: tuple[int, int] | None = None
        #: Told after every durable append (see :class:`AppendObserver`).
        self.observers: list[AppendObserver] = []

    def close(self) -> None:
        """Close file handles, the lock's too (the in-memory index stays)."""
        with self.mutex:
            self._close_quietly("_wfd")
            self._close_quietly("_lock_fd")
            super().close()

    def _reset(self) -> None:
        self._close_quietly("_wfd")  # forgotten before it is closed: a Ctrl-C cannot leave it stale
        self._verified_for_writing = False
        self._verified_end = 0
        self._crc = None
        super()._reset()

    def _load(self, ino: int, *, use_sidecar: bool = True) -> None:
        super()._load(ino, use_sidecar=use_sidecar)
        parked, self._parked = self._parked, None
        if (
            parked is not None and self._ino == parked.ino and self.gen == parked.gen
            and self._header_crc == parked.header_crc
        ):
            self._verified_end = min(parked.verified_end, self.index.committed_end)
            self.recovery.swept = self.recovery.swept or parked.swept
        if self.loaded_head is not None:  # indexed from its head (see LogView._load_head)
            self._verified_end = self.index.committed_end  # what the head's CRC-32 covers
            self._crc = (self.loaded_head["size"], int(self.loaded_head["crc"], 16))

    def indexed_crc(self) -> tuple[int, str] | None:
        """The size and CRC-32 (8 hex digits) of the committed bytes as of the last
        refresh, from the CRC this object kept as it appended, while the log's path still
        names this file and it still ends them with the record the index holds last;
        else ``None`` (:meth:`~.view.LogView.indexed_bytes` reads them instead)."""
        with self.mutex:
            crc, end = self._crc, self.index.committed_end
            if crc is None or crc[0] != end or not self._tail_unchanged(end):
                return None
            try:
                if files.os.stat(self.path, follow_symlinks=False).st_ino != self._ino:
                    return None  # deleted or replaced by another process
            except FileNotFoundError:
                return None
            return end, f"{crc[1]:08x}"

    def parked(self) -> Parked | None:
        """What to remember of this log once it is let go (``None``: no log)."""
        with self.mutex:
            if self._ino is None:
                return None
            checked = self._verified_for_writing or not self.sidecar.trusted
            verified = self.index.committed_end if checked else self._verified_end
            return Parked(
                self._ino, self.gen, self._header_crc, verified, self.recovery.swept, self.head_index_crc
            )

    def let_go(self) -> Parked | None:
        """The store lets this log go: bring its sidecar up to date, so that the next
        open (in this process or another) loads the index instead of scanning the log,
        if the log is longer than :data:`~.view.LOADED_RECORDS_BYTES` (a shorter one is
        scanned faster than its sidecar is loaded and its entries checked: measured on
        10-turn agent threads, writing the sidecar on every let-go cost more than the
        scans it saved) and no one is using the log right now (never waits: a log in use, or whose
        writer lock another process holds, is left as it is); and say what to
        remember of it (``None``: nothing, it is in use or has no file)."""
        if not self.mutex.acquire(blocking=False):
            return None
        try:
            if (
                not self.read_only and self._ino is not None and self.sidecar_lag() > 0
                and self.index.committed_end > view_module.LOADED_RECORDS_BYTES
            ):
                self._write_sidecar_unless_locked()
            return self.parked()
        finally:
            self.mutex.release()

    def _write_sidecar_unless_locked(self) -> None:
        try:
            lock_fd = self._writer_lock_fd(os.O_RDWR)
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # another process is appending: it writes the sidecar in time
            try:
                self.refresh()
                if self._ino is not None and self.sidecar_lag() > 0:
                    # Compact: a log let go after every turn would otherwise gain a short
                    # line each time, and its next open decode them one by one.
                    self.write_sidecar(compact=True)
            finally:
                fcntl.flock(lock_fd, fcntl.LOCK_UN)
        except (OSError, JsonlCheckpointError):
            pass  # only a cache: the next open scans the log

    def _rebuild_without_sidecar(self) -> None:
        # Inside a group commit the write handle must outlive the reload: the group's
        # batches (written, indexed again by the scan) are synced through it.
        wfd = self._wfd if self._group else None
        if wfd is not None:
            self._wfd = None
        try:
            super()._rebuild_without_sidecar()
        finally:
            if wfd is not None:
                if self._ino is not None and self._wfd is None and files.os.fstat(wfd).st_ino == self._ino:
                    self._wfd = wfd
                else:  # pragma: no cover - another file under the writer lock: impossible
                    files.os.close(wfd)

    # -- the writer's lock -----------------------------------------------------------

    @contextmanager
    def writer(self) -> Iterator[ThreadIndex]:
        """Hold the thread's writer lock, with the index current and any torn tail cut."""
        if self.read_only:
            raise read_only_error(self.thread_id)
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
        """Hold the in-process lock and the cross-process writer lock (nothing else).

        Raises:
            ConfigError: The store was opened read-only (taking the lock would create
                its file, and whoever holds it means to write).
        """
        if self.read_only:
            raise read_only_error(self.thread_id)
        with self.mutex:
            lock_fd = self._writer_lock_fd(os.O_RDWR | os.O_CREAT)
            try:  # (from the wait on: a Ctrl-C as it returns must not leave the lock held)
                what = f"the writer lock of thread {self.thread_id!r} ({self.paths.lock})"
                files.lock_waiting(lock_fd, what)
                yield
            finally:
                fcntl.flock(lock_fd, fcntl.LOCK_UN)

    def _writer_lock_fd(self, flags: int) -> int:
        """This process's descriptor on the writer lock file. One inherited through a
        fork (a saver that wrote, then forked into workers) is the parent's open file,
        whose flock parent and children would all hold at once: the child closes its
        copy (which never lets the parent's lock go) and opens its own."""
        if self._lock_fd is not None and self._lock_pid != os.getpid():
            self._close_quietly("_lock_fd")
        if self._lock_fd is None:
            self._lock_fd = files.open_refusing_links(self.paths.lock, flags, self.thread_id)
            self._lock_pid = os.getpid()
        return self._lock_fd

    def _verify_checksums(self) -> None:
        """Before the first append: every committed record's checksum, once per load
        (past what this process already checked of this very file, see :class:`Parked`).

        Entries from the sidecar were never read; a writer must not append after damage
        it did not see (the log would look healthy up to its end). If the sidecar's
        offsets are what is wrong, the index is rebuilt by a full scan instead, which
        raises on real damage.
        """
        start, end = self._verified_end, self.index.committed_end
        if start < end:
            data = files.os.pread(self._rfd, end - start, start)  # type: ignore[arg-type]
            for o, n in self.sidecar.summaries.spans():
                if o >= start and not framing.check_line(data[o - start : o - start + n - 1]):
                    self._rebuild_without_sidecar()  # the scan checks every record
                    break
        self._verified_for_writing = True
        self._verified_end = self.index.committed_end

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
        written = []
        offset = start
        for rec, line in zip(records, lines, strict=True):
            self._apply(summarize(rec, offset, len(line)), line[-11:-3])
            placed.append((rec, RecordRef(offset, len(line), rec["seq"])))
            written.append((rec, offset, line))
            offset += len(line)
        if group is not None:
            if not group:
                group += [start, seq]
            group.append(data)
            self._group_lines += written  # told to the observers once the group is durable
            return placed
        self._after_durable_append(start, data, written)
        return placed

    def _after_durable_append(
        self, start: int, data: bytes, written: Written
    ) -> None:
        self._own_durable_end = self.index.committed_end
        crc = self._crc  # (kept only while this object's appends follow each other)
        self._crc = (start + len(data), zlib.crc32(data, crc[1])) if crc and crc[0] == start else None
        self._just_appended = (start, data)
        self.just_appended = written
        try:
            for observer in self.observers:
                observer.appended(self)
        finally:
            self._just_appended = None
            self.just_appended = None
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
        self._group_lines = []
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
            written, self._group_lines = self._group_lines, []
        self._after_durable_append(group[0], b"".join(group[2:]), written)

    def _abandon_group(self, group: list[Any], failed: bytes = b"") -> None:
        """Cut every batch of a group commit (and a batch whose write failed) and forget
        the index, which holds the group's batches."""
        start = group[0] if group else self.index.committed_end
        self._abandon_write(start, b"".join(group[2:]) + failed)
        group.clear()
        self._group_lines = []
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
            if len(records) > 1:
                self.write_sidecar()
            else:
                # A header alone (a new thread) indexes nothing: no sidecar, which cost each
                # new thread a file made and renamed; one left by an earlier log goes.
                files.unlink_quietly(self.paths.index)
        except OSError:
            pass  # only a cache

    def remove(self) -> None:
        """Delete the log, the files derived from it and its companion files (quarantine
        file, debug traces), leaving a tombstone (see :mod:`.generations`). Call under
        :meth:`writer`."""
        newest = max((ids[-1] for ids in self.index.ordered_ids.values() if ids), default=None)
        self._reset()
        self.tombstone.delete_log(newest)

    def move_out(self, destination: str) -> None:
        """Move the log to ``destination`` (the store's archive), leaving a tombstone
        and removing the files derived from it (see :mod:`.generations`; the companion
        files are the archive's to carry). Call under :meth:`writer`."""
        newest = max((ids[-1] for ids in self.index.ordered_ids.values() if ids), default=None)
        self._reset()
        self.tombstone.move_log(newest, destination)

    def deleted_up_to(self) -> str | None:
        """Newest checkpoint id of an earlier, deleted log of this thread (if any)."""
        return self.tombstone.deleted_up_to()

    # -- the sidecar --------------------------------------------------------------

    def write_sidecar(self, *, compact: bool = False) -> None:
        """Bring the sidecar index up to date with the in-memory index (see
        :meth:`~.sidecar_file.SidecarFile.write`)."""
        if self._rfd is None or self.read_only:
            return
        self.sidecar.write(
            self.identity(), self.paths.temp("idx"), compact=compact, facts=self.index.facts()
        )

    def sidecar_lag(self) -> int:
        """Records in the log that the sidecar file does not cover yet."""
        return self.sidecar.lag()
