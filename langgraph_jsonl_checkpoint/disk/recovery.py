"""Recovering one log from a crash: torn tails, headers cut short, abandoned batches.

What a crash can leave, and what a writer does before its first append (under the
writer lock):

- **a torn tail** (a batch a killed writer did not finish, NULs or junk a power cut
  left): the bytes past the last committed batch are appended to the thread's
  ``.quarantine`` file (fsynced, and its directory entry) and then cut from the log;
- **a header line cut short** (outside damage only): its bytes are set aside the same
  way and the log is removed, so the thread starts afresh;
- **an abandoned batch**: a write or fsync failed and cutting it back failed too; it is
  cut before this process appends again (it was never acknowledged);
- **temp files** of a rewrite a crash interrupted: removed.

LevelDB once appended after a torn tail it had skipped, turning it into mid-log damage:
the tail is always repaired first.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from ..errors import DurabilityError
from . import files, framing
from .paths import LogPaths


class Recovery:
    """What one log's writer still has to clean up, and the clean-ups themselves.

    Args:
        paths: The thread's files.
        thread_id: For error messages.
    """

    def __init__(self, paths: LogPaths, thread_id: str) -> None:
        self.paths = paths
        self.thread_id = thread_id
        #: ``(start, bytes)`` of a batch whose write or fsync failed and could not be cut.
        self.abandoned: tuple[int, bytes] | None = None
        #: A header line cut short, found by the last load (set aside by the next writer).
        self.torn_header: bytes | None = None
        self.swept = False  # this thread's stale temp files removed (once per load)
        self.damage_reported = False  # a read-only open warned about mid-log damage

    def reset(self) -> None:
        """The log is reloaded: what a load found is found again."""
        self.torn_header = None

    def sweep_temp_files(self) -> None:
        """Remove this thread's temp files a crashed writer left (call under the lock)."""
        prefix = self.paths.name + "."
        try:
            entries = files.os.listdir(self.paths.temp_dir)
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if entry.startswith(prefix):
                files.unlink_quietly(os.path.join(self.paths.temp_dir, entry))
        self.swept = True

    def cut_abandoned(self) -> None:
        """Retry cutting a batch whose fsync failed and whose first cut failed too.

        Raises:
            DurabilityError: It still cannot be cut.
        """
        if self.abandoned is None:
            return
        start, data = self.abandoned
        try:
            fd = files.open_file(self.paths.log, os.O_RDWR)
        except FileNotFoundError:
            self.abandoned = None
            return
        try:
            if files.os.pread(fd, len(data), start) == data:
                files.os.ftruncate(fd, start)
                files.os.fsync(fd)
            self.abandoned = None
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: {self.paths.log} still holds a batch that was "
                f"never acknowledged (from byte offset {start}) and it cannot be cut: {exc}. "
                "Fix the file system, then retry."
            ) from exc
        finally:
            files.os.close(fd)

    def abandon_write(self, fd: int | None, start: int, data: bytes) -> None:
        """After a failed write or fsync through ``fd`` (which the caller stops using):
        cut back to ``start``; if even that fails, remember the batch for later."""
        try:
            if fd is not None:
                files.os.ftruncate(fd, start)
                files.os.fsync(fd)
        except OSError:
            self.abandoned = (start, data)
        finally:
            if fd is not None:
                files.os.close(fd)

    def cut_tail(self, rfd: int, wfd: int, size: int, end: int) -> None:
        """Move the bytes from ``end`` (the committed end) to ``size`` to the quarantine
        file, then cut them from the log through ``wfd``.

        Raises:
            DurabilityError: The bytes could not be set aside or cut; nothing changed.
        """
        if size <= end:
            return
        torn = files.os.pread(rfd, size - end, end)
        try:
            self.quarantine(end, torn)
            st = files.os.fstat(wfd)
            files.os.ftruncate(wfd, end)
            # Setting a crash's bytes aside is not activity: a sweep judges idleness by
            # the log's time, which stays that of the last write (the torn one).
            files.os.utime(wfd, ns=(st.st_atime_ns, st.st_mtime_ns))
            files.os.fsync(wfd)
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not set aside the torn tail of "
                f"{self.paths.log} (byte offset {end}, {len(torn)} bytes): {exc}. Nothing "
                "was written; check free space and the file system, then retry."
            ) from exc

    def set_aside_torn_header(self) -> None:
        """Move a header line cut short to the quarantine file and remove the log.

        Raises:
            DurabilityError: It could not be set aside; nothing changed.
        """
        torn = self.torn_header or b""
        try:
            self.quarantine(0, torn)
            files.os.unlink(self.paths.log)
            files.fsync_dir(self.paths.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise DurabilityError(
                f"thread {self.thread_id!r}: could not set aside {self.paths.log}, whose "
                f"header line was cut short ({len(torn)} bytes): {exc}. Nothing was "
                "written; check the file system, then retry."
            ) from exc
        self.torn_header = None

    def quarantine(self, offset: int, torn: bytes) -> None:
        """Append ``torn`` (cut from ``offset`` of the log) to the quarantine file, synced."""
        stamp = datetime.now(UTC).isoformat()
        note = framing.frame(
            {"t": "quarantine", "seq": 0, "at": stamp, "offset": offset, "bytes": len(torn)}
        )
        qfd = files.open_refusing_links(
            self.paths.quarantine, os.O_WRONLY | os.O_CREAT | os.O_APPEND, self.thread_id
        )
        try:
            files.write_all(qfd, note + torn + b"\n")
            files.os.fsync(qfd)
        finally:
            files.os.close(qfd)
        # The quarantine file may be new: its name must be durable before the cut is.
        files.fsync_dir(self.paths.directory)
