"""The live-run lock of a thread: held by the one run working on it, released by the
kernel if that run's process dies.

A run takes an exclusive ``flock`` on ``<stem>.run`` (a file of its own, never renamed
or removed while in use) through a descriptor it alone holds, and writes who it is into
the file (pid, host, run, since, thread_id) for the error another run gets and for a
listing of the store's threads (a run's first checkpoint may come only when it ends:
the thread id names a thread that has no log yet; a record an older release wrote has
no ``thread_id``). ``flock`` locks belong
to open file descriptions: two runs of one process conflict like runs of two processes,
and a process killed with SIGKILL releases its lock at once. The file's content may be
stale (a dead holder's); only the lock says whether a run is live.

Runs that wait for the lock (``concurrent_runs="wait"``) say so with a shared ``flock``
on ``<stem>.wait``; a run that has not waited yet lets them go first (it sees them by
failing to take that file exclusively, for an instant), so a worker that starts run
after run on a thread cannot starve the runs queued behind it.
"""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import UTC, datetime
from typing import Any

import orjson

from . import files
from .paths import LogPaths
from .processes import pid_alive

#: What a sweep or a restore records as its ``run`` while it holds a thread's lock: it
#: holds it for one file operation or a few, so a run that finds it waits instead of
#: being refused (see ``saver/liveness.py``).
MAINTENANCE = "maintenance"

#: What a state update made outside a run (``update_state``) records as its ``run``: it
#: too holds the thread only while a few records are written, and is waited for.
STATE_UPDATE = "update_state"

#: Holders that let a thread go within moments: waited for, never refused for.
BRIEF_HOLDS = frozenset({MAINTENANCE, STATE_UPDATE})

#: This host's name, recorded by every holder (asked once: a system call per run was
#: measurable with many short runs).
HOST = socket.gethostname()


class RunLock:
    """One run's attempt at a thread's live-run lock (one descriptor for the lock, one
    for its place among the waiters).

    Args:
        paths: The thread's files.
        thread_id: For error messages.
    """

    def __init__(self, paths: LogPaths, thread_id: str) -> None:
        self.paths = paths
        self.thread_id = thread_id
        self._fd: int | None = None
        self._waiting_fd: int | None = None
        self._pid = 0  # the process that opened the descriptors

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def try_acquire(self, run: str) -> bool:
        """Take the lock if no other run holds it (never waits); record who holds it."""
        if self._fd is not None:
            return True
        try:  # (a Ctrl-C from the flock on: the caller never got the lock to let go)
            fd = self._try_flock(self.paths.run, fcntl.LOCK_EX, "_fd")
            if fd is None:
                return False
            holder = {
                "pid": os.getpid(),
                "host": HOST,
                "run": run,
                "since": datetime.now(UTC).isoformat(timespec="seconds"),
                "thread_id": self.thread_id,
            }
            try:
                files.os.ftruncate(fd, 0)
                files.write_all(fd, orjson.dumps(holder) + b"\n")  # a fresh descriptor: at offset 0
            except OSError:
                pass  # only what an error message shows; the lock is what counts
        except BaseException:
            self.release()
            raise
        return True

    def release(self) -> None:
        """Let the lock go (the file stays, for the next run); leave the waiters too."""
        self.stop_waiting()
        fd = self._fd
        if fd is None:
            return
        try:
            if self._pid == os.getpid():  # (a copy a fork left: the record is the parent's)
                files.os.ftruncate(fd, 0)
        except OSError:
            pass
        finally:  # (a Ctrl-C before this point leaves _fd set: a later release lets it go)
            self._let_go("_fd")

    def seems_held(self) -> bool:
        """Whether the holder's record names a live process of this host (the lock is
        never taken, so a look never gets in a run's way; a record can be stale for an
        instant around a run's start or end: use :meth:`try_acquire` to be sure)."""
        if self._fd is not None:
            return True
        holder = self.holder()
        if not holder or holder.get("host") != HOST:
            return bool(holder)
        pid = holder.get("pid")
        return isinstance(pid, int) and pid_alive(pid)

    def holder(self) -> dict[str, Any] | None:
        """Who the holder recorded it is, if it can be read (maybe a dead holder's)."""
        try:
            data = files.read_whole(self.paths.run)
            found = orjson.loads(data) if data.strip() else None
        except (OSError, orjson.JSONDecodeError):
            return None
        return found if isinstance(found, dict) else None

    # -- the queue of waiting runs ----------------------------------------------------

    def others_waiting(self) -> bool:
        """Whether other runs are waiting for the lock (never waits itself)."""
        if self._waiting_fd is not None:
            return False  # this run is one of them: it competes with the others
        try:  # (recorded as this run's place among them, for a Ctrl-C meanwhile)
            if self._try_flock(self.paths.waiters, fcntl.LOCK_EX, "_waiting_fd") is None:
                return True
        finally:
            self.stop_waiting()
        return False

    def start_waiting(self) -> bool:
        """Join the runs waiting for the lock (``False``: not now, try again later)."""
        if self._waiting_fd is None:
            try:
                self._try_flock(self.paths.waiters, fcntl.LOCK_SH, "_waiting_fd")
            except BaseException:
                self.stop_waiting()
                raise
        return self._waiting_fd is not None

    def stop_waiting(self) -> None:
        """Leave the waiting runs (idempotent)."""
        self._let_go("_waiting_fd")

    def _try_flock(self, path: str, how: int, into: str) -> int | None:
        """A new descriptor on ``path`` holding ``flock(how)``, recorded in attribute
        ``into`` before anything else can happen (a Ctrl-C as the flock returns finds it
        there, for the caller to let go), or ``None`` if taken."""
        fd = files.open_refusing_links(path, os.O_RDWR | os.O_CREAT, self.thread_id)
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            self._pid = os.getpid()
            setattr(self, into, fd)
        except BlockingIOError:
            files.os.close(fd)
            return None
        except BaseException:
            if getattr(self, into) != fd:  # not recorded: no one else can let it go
                files.os.close(fd)
            raise
        return fd

    def _let_go(self, into: str) -> None:
        """Let the lock held through the descriptor in attribute ``into`` go, close the
        descriptor and forget it (nothing if there is none). Closing alone does not let
        the lock go while a process forked meanwhile (a ``multiprocessing`` pool a node
        started) has a copy of the descriptor: the thread would stay busy for as long as
        that child lives. A forked child only closes its copy: the lock is its parent's.

        A Ctrl-C lands where Python starts a function or a C call returns: the
        descriptor is forgotten and closed with no function started between the two, so
        an interrupt finds it either still recorded (a later call lets it go) or closed."""
        fd = self._waiting_fd if into == "_waiting_fd" else self._fd
        if fd is None:
            return
        try:
            if self._pid == os.getpid():
                fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            pass
        finally:
            if into == "_waiting_fd":
                self._waiting_fd = None
            else:
                self._fd = None
            files.os.close(fd)

