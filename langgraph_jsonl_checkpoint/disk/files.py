"""The disk layer's one door to the operating system, and the file primitives on it.

Every file-system call of ``disk/`` is made as ``files.os.<call>`` (``open``, ``pread``,
``write``, ``fdatasync``, ``ftruncate``, ``replace``, ``unlink``, ...), never through an
``os`` imported elsewhere. The crash batteries replace this one name to inject I/O
faults, to kill a process at its n-th file operation, or to record every operation for
the power-loss model; a call that went around it would silently escape them. Path
arithmetic (``os.path``) and flag constants need no door and use ``os`` directly.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os as os  # re-exported: disk/ calls `files.os.*`, the seam fault-injection tests patch
import stat
import threading

from ..errors import ForeignFileError, StoreError

logger = logging.getLogger(__name__)

#: Files of a store are private to their owner.
FILE_MODE = 0o600


def open_file(path: str, flags: int) -> int:
    """Open one of the store's files: close-on-exec, never through a symbolic link,
    never waiting (a FIFO's open would wait for the other end; on a regular file the
    flag changes nothing), created (with ``O_CREAT``) with mode ``0600``."""
    return os.open(path, flags | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)


def refuse_special_file(fd: int, path: str, thread_id: str | None = None) -> os.stat_result:
    """``fd``'s ``fstat`` (opened at ``path``); :class:`~..errors.ForeignFileError` if it
    is not a regular file (the caller closes it)."""
    st = os.fstat(fd)
    mode = st.st_mode
    if not stat.S_ISREG(mode):
        whose = f"thread {thread_id!r}: " if thread_id is not None else ""
        raise ForeignFileError(
            f"{whose}{path} is not a regular file ({file_kind(mode)}); the store only holds regular "
            "files it created. Move it out of the store directory."
        )
    return st


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for an error message."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((kind for test, kind in kinds if test(mode)), "a special file")


#: What ``open``, ``mkdir`` and the like fail with where a process may not write.
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)

#: The way out of a store this process cannot write, for every error that says so.
MAKE_WRITABLE = (
    "Make it writable (remount the file system read-write, or run as the user who owns "
    "the store), or open it for reading only: JsonlSaver(path, read_only=True), as the "
    "langgraph-jsonl commands that only read do."
)


def not_writable(path: str, exc: OSError) -> str:
    """Why ``path`` could not be written (``exc``: the error that said so), in words."""
    try:
        read_only_fs = bool(os.statvfs(path if os.path.exists(path) else os.path.dirname(path)).f_flag
                            & os.ST_RDONLY)
    except OSError:
        read_only_fs = exc.errno == errno.EROFS
    if read_only_fs:
        return f"{path} is on a read-only file system"
    return f"{path} is not writable by this user ({exc.strerror})"


def store_gone(path: str, thread_id: str, exc: OSError) -> StoreError | None:
    """The error to raise when ``exc`` (from opening ``path``, a file of one of the
    store's folders) says that folder is gone: the store was moved or deleted while this
    process had it open. None when the folder is still there."""
    folder = os.path.dirname(path)
    if exc.errno != errno.ENOENT or os.path.isdir(folder):
        return None
    return StoreError(
        f"thread {thread_id!r}: the store {os.path.dirname(folder)} is gone from where it "
        f"was opened ({folder} does not exist: moved or deleted while this process had it "
        "open). Nothing was written. Open JsonlSaver at the store's new place, or put it "
        "back, and run again."
    )


def open_refusing_links(path: str, flags: int, thread_id: str) -> int:
    """:func:`open_file`, with a clear error for a planted symbolic link, and for a
    file to be written that this process may not write.

    Raises:
        ForeignFileError: ``path`` is a symbolic link.
        StoreError: ``path`` is to be written and cannot be (a read-only file system,
            another user's store).
    """
    try:
        return open_file(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ForeignFileError(
                f"thread {thread_id!r}: {path} is a symbolic link; the store refuses "
                "links (one could redirect writes outside it). Remove it."
            ) from exc
        gone = store_gone(path, thread_id, exc)
        if gone is not None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise gone from exc
        if exc.errno in NOT_WRITABLE and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise StoreError(
                f"thread {thread_id!r}: the store is not writable: {not_writable(path, exc)}. "
                f"Nothing was written. {MAKE_WRITABLE}"
            ) from exc
        raise


def fsync_dir(path: str) -> None:
    """fsync a directory so a created, renamed or removed entry in it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """``write`` until every byte is written; a write of 0 bytes is an error."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]


def replace_derived(path: str, temp_path: str, data: bytes, *, unlink_first: bool = False) -> None:
    """Replace a derived file (sidecar index, catalog, session memory) with ``data``:
    written to ``temp_path``, then renamed over ``path``. Not fsynced: derived files are
    rebuilt from the logs whenever they are lost or wrong. The temp file is removed if
    anything fails.

    With ``unlink_first``, ``path`` is removed before the rename, for a file written
    often on the write path: ext4 (``auto_da_alloc``) starts writing the data out when
    a rename replaces a file, which costs about twice the whole write; a rename to a
    free name does not. Meanwhile (or after a crash in between) the file is missing,
    which for derived data means "rebuild it"."""
    if unlink_first:
        unlink_quietly(path)
    try:
        fd = open_file(temp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(temp_path, path)
    except OSError:
        unlink_quietly(temp_path)
        raise


def overwrite_derived(path: str, temp_path: str, data: bytes) -> None:
    """Write a derived file that checks itself (a checksummed record) over the one before,
    in place, and cut it to ``data``'s length: no file is created, renamed or removed, so
    the directory does not change (on ext4, next to logs being synced, each of those waits
    on the journal; a let-go log's head file cost 160 µs that way, in place 10 µs). Not
    fsynced, not atomic: a reader meanwhile, or after a crash, may find a mix of the two
    or the new record followed by the end of a longer old one; its checksum fails and the
    file is ignored, as a lost one is. Where ``path`` is not a regular file this process
    can write (a symbolic link, say), it is replaced as :func:`replace_derived` does,
    through ``temp_path``."""
    try:
        fd = open_file(path, os.O_WRONLY | os.O_CREAT)
    except OSError:
        fd = None
    if fd is not None:
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                view = memoryview(data)
                at = 0
                while at < len(data):
                    n = os.pwrite(fd, view[at:], at)
                    if n <= 0:
                        raise OSError(errno.EIO, "short write")
                    at += n
                os.ftruncate(fd, len(data))
                return
        finally:
            os.close(fd)
    replace_derived(path, temp_path, data, unlink_first=True)


def unlink_quietly(path: str) -> None:
    """Remove a file if it is there; say nothing either way."""
    try:
        os.unlink(path)
    except OSError:
        pass


def owner() -> str:
    """``<pid>-<thread>``: the tag of a temp file this process and thread own (a sweep
    tells a dead process's leftovers by the pid)."""
    return f"{os.getpid()}-{threading.get_ident()}"


def read_whole(path: str) -> bytes:
    """The bytes of a (small) file, through the door.

    Raises:
        OSError: It cannot be read, or it is not a regular file (a FIFO's open does not
            wait for a writer: it is refused at once).
    """
    fd = open_file(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        size = st.st_size
        chunks: list[bytes] = []
        offset = 0
        while True:
            chunk = os.pread(fd, max(size - offset, 65536), offset)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            offset += len(chunk)
    finally:
        os.close(fd)


#: Seconds a wait for a lock another process holds lasts before it is said (once).
LOCK_WAIT_NOTICE = 1.0


def lock_waiting(fd: int, what: str) -> None:
    """``flock(fd, LOCK_EX)``, waiting for whoever holds it (another process: a writer
    holds a thread's writer lock for one append, a compaction for one rewrite). A wait
    longer than :data:`LOCK_WAIT_NOTICE` is said once, in a warning naming ``what``."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    notice = threading.Timer(LOCK_WAIT_NOTICE, logger.warning, (
        "waiting for %s, which another process holds; going on when it is let go (Ctrl-C stops)", what,
    ))
    notice.daemon = True
    notice.start()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        notice.cancel()
