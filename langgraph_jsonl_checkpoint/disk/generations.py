"""Generations of a log file: a whole new file installed atomically, and deletion.

A rewrite (compact, prune, repair, delete_for_runs) never changes a log in place: the
new generation is written and fsynced under a temp name in the store's ``tmp/`` folder,
renamed over the log, and the directory is fsynced. A crash at any point leaves the old
or the new file, whole, and at most a temp file that the next writer sweeps. The new
file keeps the old one's modification time: a rewrite is not activity.

Deleting a thread removes its log, the files derived from it (sidecar, session memory,
head file) and its companion files (quarantine file, debug traces), and leaves a
tombstone (``<stem>.deleted``) naming the newest checkpoint id it held: a write
LangGraph was still sending for one of them (a run saving while the thread was deleted)
is refused instead of bringing the thread back. The lock file stays: another process
may hold it. Archiving (:mod:`.archive`) leaves the same tombstone and *moves* the log
instead of removing it: one rename, so the thread is in ``threads/`` or in
``archive/``, never in both and never in neither. It removes the derived files only:
the companion files are the archive's to carry (copied before the move, removed after).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import DurabilityError
from . import files, framing
from .header import new_header
from .paths import LogPaths


def numbered(records: list[dict[str, Any]], thread_id: str, gen: int) -> list[dict[str, Any]]:
    """The records of a new generation: its header, then ``records`` numbered from 1
    (batch marks dropped: a new file is one durable unit)."""
    body = [new_header(thread_id, gen)]
    for i, rec in enumerate(records, start=1):
        rec = dict(rec)
        framing.strip_batch_marks(rec)
        rec["seq"] = i
        body.append(rec)
    return body


def generation_size(records: list[dict[str, Any]], thread_id: str, gen: int) -> int:
    """The bytes of a new generation holding ``records`` (as :func:`numbered` numbers
    them), written nowhere: what a dry run says a rewrite would leave (exact but for the
    header's time, whose width may differ by its microseconds)."""
    return sum(len(framing.frame(r)) for r in numbered(records, thread_id, gen))


def install(paths: LogPaths, thread_id: str, records: list[dict[str, Any]]) -> None:
    """Replace the log by a file holding exactly ``records``, atomically.

    Raises:
        DurabilityError: The new file could not be written or made durable; the log
            is as it was (or, if only the directory sync failed, the new generation is
            in place but not acknowledged).
    """
    tmp = paths.temp("jsonl")
    data = b"".join(framing.frame(r) for r in records)
    try:
        fd = files.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            files.write_all(fd, data)
            files.os.fsync(fd)
        finally:
            files.os.close(fd)
        _keep_times(paths.log, tmp)
    except OSError as exc:
        files.unlink_quietly(tmp)
        gone = files.store_gone(tmp, thread_id, exc)
        if gone is not None:
            raise gone from exc
        raise DurabilityError(
            f"thread {thread_id!r}: could not write {tmp}: {exc}. The thread's log was "
            "not changed."
        ) from exc
    except BaseException:  # Ctrl-C: the log is as it was, and so is the rest of the store
        files.unlink_quietly(tmp)
        raise
    try:
        files.os.replace(tmp, paths.log)
        files.fsync_dir(paths.directory)
    except OSError as exc:
        files.unlink_quietly(tmp)
        gone = files.store_gone(tmp, thread_id, exc)
        if gone is not None:
            raise gone from exc
        raise DurabilityError(
            f"thread {thread_id!r}: could not make the new {paths.log} durable: {exc}. "
            "The operation was not acknowledged; retry it."
        ) from exc
    except BaseException:  # Ctrl-C before the rename: no temp file left (after it: none there)
        files.unlink_quietly(tmp)
        raise
    try:
        files.os.unlink(paths.index)  # it indexes the old generation
    except FileNotFoundError:
        pass


def _keep_times(log: str, new: str) -> None:
    """Give a new generation its log's access and modification times: a rewrite is
    maintenance, not activity (retention judges idleness by the modification time)."""
    try:
        st = files.os.stat(log, follow_symlinks=False)
    except FileNotFoundError:
        return  # a new log: its own times
    files.os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))


class Tombstone:
    """The tombstone of a thread's deleted logs: the newest checkpoint id they held.

    Args:
        paths: The thread's files.
        thread_id: Written into the tombstone.
    """

    def __init__(self, paths: LogPaths, thread_id: str) -> None:
        self.paths = paths
        self.thread_id = thread_id
        self._upto: str | None = None
        self._read = False

    def forget(self) -> None:
        """Read the file again on next use (the log vanished: maybe deleted elsewhere)."""
        self._read = False

    def deleted_up_to(self) -> str | None:
        """Newest checkpoint id of an earlier, deleted log of this thread (if any)."""
        if not self._read:
            try:
                rec = framing.parse_line(files.read_whole(self.paths.tombstone).rstrip(b"\n"))
                self._upto = rec.get("upto") if rec else None
            except FileNotFoundError:
                self._upto = None
            self._read = True
        return self._upto

    def delete_log(self, newest: str | None) -> None:
        """Write the tombstone (if ``newest`` is newer than what it says), then remove
        the log and what goes with it (sidecar, session memory, head file, quarantine
        file, debug traces), durably. Call under the writer lock."""
        self._mark(newest)
        _unlink_if_there(self.paths.log, *self.paths.derived_files(), *self.paths.companion_files())
        files.fsync_dir(self.paths.directory)

    def move_log(self, newest: str | None, destination: str) -> None:
        """Write the tombstone, then move the log to ``destination`` (another folder of
        the store: the rename is the one step that takes the thread away, so it is
        whole in exactly one place at every instant) and remove the files derived from
        it (sidecar, session memory, head file), durably. The companion files (quarantine
        file, debug traces) stay: the archive carries them. Call under the writer lock.

        Raises:
            OSError: The log could not be moved (it is still in place, with a tombstone
                that refuses nothing while the log exists).
        """
        self._mark(newest)
        files.os.rename(self.paths.log, destination)
        files.fsync_dir(os.path.dirname(destination))  # the new entry first: never in neither
        _unlink_if_there(*self.paths.derived_files())
        files.fsync_dir(self.paths.directory)

    def _mark(self, newest: str | None) -> None:
        """Write the tombstone if ``newest`` is newer than what it says."""
        upto = max(filter(None, (newest, self.deleted_up_to())), default=None)
        if upto is not None and upto != self.deleted_up_to():
            tmp = self.paths.temp("deleted")
            fd = files.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                record = {"t": "deleted", "seq": 0, "thread": self.thread_id, "upto": upto}
                files.write_all(fd, framing.frame(record))
                files.os.fsync(fd)
            finally:
                files.os.close(fd)
            files.os.replace(tmp, self.paths.tombstone)
        self._upto, self._read = upto, True


def _unlink_if_there(*paths: str) -> None:
    for p in paths:
        try:
            files.os.unlink(p)
        except FileNotFoundError:
            pass
