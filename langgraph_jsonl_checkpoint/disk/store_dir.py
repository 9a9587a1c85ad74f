"""The store directory itself: its marker (``STORE.json``), its folders and their
permissions, and the temp files of processes that are gone. :class:`~.store.Store` opens
a directory through :func:`open_directory`; the names of the layout live here.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import json
import logging
import os
import shlex
import stat

import orjson

from ..errors import ConfigError, FormatVersionError, StoreError
from . import files
from .files import fsync_dir
from .processes import pid_alive

#: The file that makes a directory a store (``{"store": ..., "format": N}``).
MARKER = "STORE.json"
#: Prefix of the marker's temp files (``STORE.json.tmp.<pid>-<thread>``): left behind
#: when a store's creation was cut short.
MARKER_TEMP = MARKER + ".tmp"
#: The layout of the store directory (the marker's ``format``); each log's header
#: carries the format of the log itself.
STORE_FORMAT = 1
THREADS_DIR = "threads"
TEMP_DIR = "tmp"
ARCHIVE_DIR = "archive"
logger = logging.getLogger(__name__)


def store_path(path: str | os.PathLike[str]) -> str:
    """A store directory as a person wrote it, made absolute: a leading ``~`` is the home
    directory, as the shell has it (a path from a ``.env`` file or a config is not
    expanded by anything else, and would make a directory named ``~``)."""
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def open_directory(path: str, *, read_only: bool) -> None:
    """Check ``path`` is a store of this package (making an empty or new directory one,
    unless ``read_only``), its folders private and present, and remove the temp files
    of processes that are gone.

    No ``OSError`` comes out of it: each the OS gives is said as one of the errors below,
    naming the path and what to do.

    Raises:
        ConfigError: ``path`` exists and is not a directory, or a file is in its way; it
            cannot be made where it is (under ``/proc``, too long a name, a symbolic
            link loop, a NUL character).
        StoreError: The directory is not a store of this package, or is unsafe, or
            (unless ``read_only``) this process cannot write it, or the file system
            refuses it (full, failing).
        FormatVersionError: The store was written by a newer release.
    """
    if "\0" in path:  # os.* would raise a bare ValueError ("embedded null byte")
        raise ConfigError(f"JsonlSaver path {path!r} holds a NUL character, which no file name can "
                          "hold. Pass the store's directory without it.")
    try:
        _open_directory(path, read_only=read_only)
    except NotADirectoryError as exc:
        in_the_way = next((p for p in _parents(path) if os.path.lexists(p) and not os.path.isdir(p)), None)
        if in_the_way is None:
            raise _cannot_open(path, exc, read_only) from exc
        raise ConfigError(f"JsonlSaver path {path} cannot be a directory: {in_the_way} is a file. "
                          "Pass a directory (it is created if missing) elsewhere.") from exc
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES) and not read_only and not os.path.isdir(path):
            raise _not_permitted_there(path, exc) from exc  # making it: not a read-only mount
        if exc.errno in files.NOT_WRITABLE and not read_only:
            raise _cannot_write(path, exc.filename or path, exc) from exc
        raise _cannot_open(path, exc, read_only) from exc


def _parents(path: str) -> list[str]:
    """``path``'s folders, the top one first."""
    parents = []
    while (up := os.path.dirname(path)) != path:
        parents.append(up)
        path = up
    return parents[::-1]


def _cannot_open(store: str, exc: OSError, read_only: bool) -> ConfigError | StoreError:
    """What an ``OSError`` from opening (or making) the store ``store`` means, and what to
    do; ``exc`` names the file it failed on, or not."""
    where = os.fsdecode(exc.filename) if exc.filename else store
    said = exc.strerror or str(exc)
    code = exc.errno
    if code == errno.ENOENT and not read_only:
        there = next((p for p in [*_parents(where), where][::-1] if os.path.isdir(p)), "/")
        return ConfigError(
            f"JsonlSaver path {store} cannot be created: making {where} failed ({said}), though "
            f"{there} exists: it takes no new directories (a virtual file system, as /proc and /sys "
            "are) or it was removed meanwhile. Pass a directory on an ordinary file system (it is "
            "created if missing)."
        )
    if code == errno.ENAMETOOLONG:
        return ConfigError(
            f"JsonlSaver path {store} is too long for the file system ({said}: a name in it over "
            "255 bytes, or the whole path over 4096, on most). Pass a shorter path."
        )
    if code == errno.ELOOP:
        return ConfigError(f"JsonlSaver path {store} runs through a loop of symbolic links ({where}: "
                           f"{said}). Fix the links, or pass the directory's real path.")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(
            f"store {store} cannot be {'opened' if read_only else 'made or opened'}: the file system "
            f"holding {where} is full ({said}). Free space (or inodes: `df -i`), or pass a "
            "directory on another file system."
        )
    if code in (errno.EACCES, errno.EPERM):  # read_only: a writer's are said by _cannot_write
        return _cannot_read(store, where)
    return StoreError(
        f"store {store} cannot be {'opened' if read_only else 'made or opened'}: {where}: {said}. "
        "Check the path, and that the file system holding it is mounted and healthy (dmesg "
        "says why a disk fails), then try again."
    )


def _not_permitted_there(store: str, exc: OSError) -> StoreError:
    """Making the store's directory was refused for want of permission (EPERM, EACCES:
    a virtual file system as /sys is, or a folder this user cannot write): not a
    read-only mount to remount, and no store yet whose owner could write it."""
    where = os.fsdecode(exc.filename) if exc.filename else store
    there = next((p for p in _parents(where)[::-1] if os.path.isdir(p)), "/")
    return StoreError(
        f"JsonlSaver path {store} cannot be created: making {where} failed ({exc.strerror or exc}): "
        f"{there} does not permit this process to make a directory in it (a virtual file system, "
        "as /sys is, or a folder this user cannot write). Pass a directory on a regular, writable "
        "file system (it is created if missing)."
    )


def _cannot_write(store: str, path: str, exc: OSError) -> StoreError:
    return StoreError(f"store {store} cannot be written: {files.not_writable(path, exc)}. "
                      f"{files.MAKE_WRITABLE}")


def check_readable(path: str) -> None:
    """Refuse a store directory this user cannot read (another user's store: a tarball
    extracted by root keeps its files' first owner), naming whose it is.

    Raises:
        StoreError: The directory, or its marker, exists and cannot be read.
    """
    if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
        raise _cannot_read(path, path)
    marker = os.path.join(path, MARKER)
    if os.path.isfile(marker) and not os.access(marker, os.R_OK):
        raise _cannot_read(path, marker)


def _cannot_read(store: str, path: str) -> StoreError:
    try:
        st = files.os.stat(path)
        whose = f"{path} belongs to uid {st.st_uid} (mode {stat.S_IMODE(st.st_mode):o})"
    except OSError:
        whose = f"{path} is not readable"
    return StoreError(
        f"store {store} cannot be read by this user (uid {os.geteuid()}): {whose}. Run as "
        f"the user who owns the store, or give it to this user (`chown -R {os.geteuid()} "
        f"{shlex.quote(store)}`, as root or its owner)."
    )


def _open_directory(path: str, *, read_only: bool) -> None:
    threads_path = os.path.join(path, THREADS_DIR)
    temp_path = os.path.join(path, TEMP_DIR)
    if os.path.lexists(path) and not os.path.isdir(path):
        sqlite = sqlite_file_advice(path)
        raise ConfigError(
            f"JsonlSaver path {path} exists and is not a directory" + (f"; {sqlite}." if sqlite else
            ". Pass a directory (it is created if missing); each thread gets its own file in it.")
        )
    marker = os.path.join(path, MARKER)
    check_readable(path)
    if not os.path.isdir(path):
        if read_only:
            raise StoreError(f"store {path} does not exist (opened read-only). Pass the "
                             f"directory your app's JsonlSaver writes.{_near_note(path)}")
        files.os.makedirs(path, mode=0o700, exist_ok=True)
    if not os.path.exists(marker):
        _become_store(path, marker, read_only)
    if os.path.exists(marker):
        _check_marker(path, marker)
    if read_only:
        if os.path.isdir(threads_path):
            _check_permissions(path, threads_path, temp_path)
        return
    for sub in (threads_path, temp_path):
        if not os.path.isdir(sub):
            files.os.makedirs(sub, mode=0o700, exist_ok=True)
            files.os.chmod(sub, 0o700)
            fsync_dir(path)
    _check_permissions(path, threads_path, temp_path)
    for sub in (path, threads_path, temp_path):
        if not os.access(sub, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
            raise _cannot_write(path, sub, PermissionError(errno.EACCES, os.strerror(errno.EACCES)))
    _check_file_locks(path, marker)
    _sweep_dead_temp_files(path, temp_path)


#: What ``flock`` fails with on a file system that has no file locks.
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


def _check_file_locks(path: str, marker: str) -> None:
    """A writer needs ``flock`` (writers and runs of one thread are kept apart with it):
    refuse a store on a file system without it now, not at the first put."""
    try:
        fd = files.os.open(marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # the marker checks above said what was wrong, or will
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        if exc.errno in _NO_LOCKS:
            raise StoreError(
                f"store {path} is on a file system without file locks (flock: {exc.strerror}). "
                "JsonlSaver locks each thread's files to keep writers and runs apart, in this "
                "process and others. Put the store on a local file system (ext4, xfs, btrfs, "
                "APFS, tmpfs); read_only=True opens it as it is (a reader takes no lock)."
            ) from exc
    finally:
        files.os.close(fd)

def marker_content() -> bytes:
    """The marker of a store of this release's layout, as written (one JSON line)."""
    return json.dumps({"store": "langgraph-jsonl-checkpoint", "format": STORE_FORMAT}).encode() + b"\n"


def lost_marker_advice(path: str) -> str | None:
    """What to do about a store directory whose marker is gone or unreadable while its
    thread logs are still there (a deleted or cut ``STORE.json``); None when ``path``
    holds no thread logs (then it is not taken for a store)."""
    try:
        logs = [e for e in files.os.listdir(os.path.join(path, THREADS_DIR)) if e.endswith(".jsonl")]
    except OSError:
        return None
    if not logs:
        return None
    marker = os.path.join(path, MARKER)
    content = marker_content().decode().strip()
    return (
        f"but its {THREADS_DIR}/ holds {len(logs)} thread log{'s' if len(logs) != 1 else ''}. "
        f"If this is your store, write the marker back: echo '{content}' > {shlex.quote(marker)} "
        f"(then `langgraph-jsonl verify {shlex.quote(path)}` checks every thread); otherwise point "
        "JsonlSaver at an empty or new directory."
    )


#: The first bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_file_advice(path: str) -> str | None:
    """What to do with an SQLite database given where a store directory belongs (an
    app's ``SqliteSaver`` file, its name left as it was): the command that imports its
    threads into a store; None when ``path`` is not one."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_HEADER))
    except OSError:
        return None
    if head != _SQLITE_HEADER:
        return None
    # The path as an sqlite:/// URL reads it (percent-decoded, no query): a % ? # encoded.
    url_path = path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    return (f"it is an SQLite database (a SqliteSaver's?): bring its threads into a store "
            f"with `langgraph-jsonl import {shlex.quote(f'sqlite:///{url_path}')} ./checkpoints`, "
            "then give ./checkpoints to JsonlSaver")


def _stores_in(folder: str, names_like: str | None = None) -> str | None:
    """A store directly in ``folder`` (the first by name, or the closest to ``names_like``)."""
    try:
        names = sorted(files.os.listdir(folder))[:1000] if os.path.isdir(folder) else []
    except OSError:
        names = []
    if names_like is not None:
        names = difflib.get_close_matches(names_like, names, n=3, cutoff=0.75)
    return next((os.path.join(folder, n) for n in names
                 if os.path.isfile(os.path.join(folder, n, MARKER))), None)


def store_near(path: str) -> str | None:
    """The store a mistaken path is inside (its ``threads/``, a log file), holds one level
    down (the project folder) or misspells beside it (``checkpoint`` for
    ``checkpoints``), written as the path was (relative or not)."""
    full = os.path.abspath(path)
    found = None
    for up in (os.path.dirname(full), os.path.dirname(os.path.dirname(full))):
        if os.path.isfile(os.path.join(up, MARKER)):
            found = up
            break
    else:
        found = _stores_in(full) or _stores_in(os.path.dirname(full), os.path.basename(full))
    if found is None:
        return None
    return found if os.path.isabs(path) else os.path.relpath(found)


def _near_note(path: str) -> str:
    """A sentence naming the store a mistaken path is next to, or nothing."""
    near = store_near(path)
    return f" It is next to one: did you mean {near}?" if near else ""


def _become_store(path: str, marker: str, read_only: bool) -> None:
    """Make an empty directory a store (several processes may do it at once).

    The marker is written before anything else, so a directory holding anything but
    marker temp files and no marker is not a store; entries seen while another
    process is creating the store are only taken as foreign if the marker is still
    missing after they were listed.
    """
    entries = [
        e for e in files.os.listdir(path)
        if not e.startswith(".") and e != MARKER and not e.startswith(MARKER_TEMP)
    ]
    if os.path.exists(marker):
        return  # another process finished creating it meanwhile
    if entries:
        lost = lost_marker_advice(path)
        if lost:
            raise StoreError(f"store {path} has no {MARKER} (deleted?), {lost}")
        raise StoreError(
            f"directory {path} is not empty and is not a "
            f"langgraph-jsonl-checkpoint store (no {MARKER}). Point JsonlSaver at "
            f"an empty or new directory.{_near_note(path)}"
        )
    if read_only:
        return
    # An empty directory becomes a store: private first, whatever umask or mount
    # it was created under.
    mode = stat.S_IMODE(files.os.stat(path).st_mode)
    if mode != 0o700:
        logger.info("store %s: changing the directory's mode from %o to 700", path, mode)
        files.os.chmod(path, 0o700)
    _write_marker(path, marker)

def _sweep_dead_temp_files(path: str, temp_path: str) -> None:
    """Remove temp files of processes that are gone (a crash mid-rewrite)."""
    for entry in files.os.listdir(temp_path):
        pid_part = entry.rsplit(".", 1)[-1].split("-", 1)[0]
        if pid_part.isdigit() and not pid_alive(int(pid_part)):
            try:
                files.os.unlink(os.path.join(temp_path, entry))
            except FileNotFoundError:
                pass
    for entry in files.os.listdir(path):  # marker temp files of creations cut short
        pid_part = entry[len(MARKER_TEMP) + 1 :].split("-", 1)[0]
        if entry.startswith(MARKER_TEMP) and not (pid_part.isdigit() and pid_alive(int(pid_part))):
            try:
                files.os.unlink(os.path.join(path, entry))
            except FileNotFoundError:
                pass

def _write_marker(path: str, marker: str) -> None:
    """Write the marker under a temp name of this process and thread, then rename it
    in place: creators racing each other rename identical markers, and no one's temp
    file is another's."""
    tmp = os.path.join(path, f"{MARKER_TEMP}.{files.owner()}")
    fd = files.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        files.os.write(fd, marker_content())
        files.os.fsync(fd)
    finally:
        files.os.close(fd)
    files.os.replace(tmp, marker)
    fsync_dir(path)

def _check_marker(path: str, marker: str) -> None:
    try:
        with open(marker, "rb") as f:
            raw = f.read()
        data = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError) as exc:
        lost = lost_marker_advice(path)
        if lost:
            raise StoreError(f"store marker {marker} is unreadable ({exc}), {lost}") from exc
        raise StoreError(
            f"store marker {marker} is unreadable ({exc}); restore it or point "
            "JsonlSaver at another directory."
        ) from exc
    fmt = data.get("format") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("store") != "langgraph-jsonl-checkpoint"
            or type(fmt) is not int or fmt < 1):
        said = raw.decode("utf-8", "replace").strip()[:200]
        lost = lost_marker_advice(path)
        if lost:
            raise StoreError(f"store marker {marker} holds {said}, not a marker (edited?), {lost}")
        raise StoreError(f"{marker} is not a langgraph-jsonl-checkpoint store marker (it holds "
                         f"{said}); point JsonlSaver at another directory.")
    if fmt > STORE_FORMAT:
        raise FormatVersionError(
            f"store {path}: {marker} says store format {fmt!r}, but this version "
            f"of langgraph-jsonl-checkpoint reads store format {STORE_FORMAT}. The "
            "store was written by a newer release: upgrade the package "
            "(pip install -U langgraph-jsonl-checkpoint) to open it."
        )

def _check_permissions(path: str, threads_path: str, temp_path: str) -> None:
    loose: list[tuple[str, int]] = []  # every folder writable by others, named at once
    for p in (path, threads_path, temp_path):
        if not os.path.lexists(p):
            continue
        st = files.os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            raise StoreError(f"store directory {p} is a symbolic link; refusing it.")
        if st.st_mode & 0o022:
            loose.append((p, stat.S_IMODE(st.st_mode)))
    if loose:
        named = ", ".join(f"{p} (mode {mode:o})" for p, mode in loose)
        raise StoreError(
            f"store director{'ies' if len(loose) > 1 else 'y'} {named} "
            f"{'are' if len(loose) > 1 else 'is'} writable by other users; anyone could "
            f"plant records. Run `chmod 700 {' '.join(shlex.quote(p) for p, _ in loose)}` "
            "and check who else wrote to it."
        )
