"""Simulated power loss (RELIABILITY.md item 9): an I/O shim and crash-state checks.

The shim, after SQLite's crash-test VFS, models what a power cut can leave on disk. It
replaces the ``os`` module as ``langgraph_jsonl_checkpoint.disk.log`` and ``.store`` see it
by a proxy (as ``test_crash_io_faults.py`` does). Every file operation the package makes
in a watched directory tree is done for real *and* recorded in a model that keeps:

- per file (an inode: it keeps its content across renames, and after an unlink, since
  the unlink may be undone): its **durable** content (as of its last ``fsync`` /
  ``fdatasync``), its **current** content, the byte ranges written or truncated since
  then, and the shortest length it had since then;
- per directory entry: the namespace operations (create, rename, unlink, mkdir) in
  order, each marked durable once a directory it touches was fsynced after it.

:meth:`PowerLossFS.crash_image` draws one state the disk could be in if the power went
now, pessimistic but fair for Linux ext4 (``data=ordered``) — it never changes a byte
that was synced:

- each file's length is anywhere between its durable length (or the shortest it was
  since its last sync) and its current length;
- every 512-byte sector holding bytes written since the file's last sync is,
  independently: kept, lost (the old content; zeros past the old end), zeroed, or
  garbled with random junk — only the unsynced bytes of the sector change (one image
  style keeps them all but one: a single sector in the middle of a write missing);
- a namespace operation not yet made durable is kept or undone (a created file missing,
  an unlinked file back, a rename reverted), each independently ("subset") or as a
  prefix of their order, as a journal would ("prefix"). A rename is atomic (one journal
  transaction on ext4): both names change or neither; it is durable once its source or
  target directory is fsynced.

Two details of the package are mapped so that a crash image behaves like the same disk
after a reboot: temp files carry the pid of their writer, and after a power loss that
process is gone, so the proxy reports a pid that can never be alive (:data:`FAKE_PID`);
and a sidecar index names its log's inode, which a copied image cannot keep, so
:meth:`CrashImage.write` rewrites that number to the new inode of the same file.

The second half of this module drives real workloads through the shim (see
:class:`PowerLossRound`) and checks every crash image (see :func:`check_image`). It is
used by ``tests/test_crash_powerloss.py`` (CI subset) and ``stress/powerloss.py``.
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import langgraph_jsonl_checkpoint.disk.files as files_module
import langgraph_jsonl_checkpoint.disk.log as log_module
from langgraph_jsonl_checkpoint import JsonlSaver, ThreadDeletedError
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.disk.store import THREADS_DIR, thread_file_stem
from langgraph_jsonl_checkpoint.maintenance.verify import verify
from tests.harness.answers import (
    answers,
    diff_answers,
    mem_copy_thread,
    mem_delete_for_runs,
    mem_prune_keep_latest,
)
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles, stray_temp_files
from tests.harness.scripted_agent import agent_input, build_agent

#: Sector size of the simulated disk: the unit in which unsynced data survives or not.
SECTOR = 512
#: The pid the proxy reports: above Linux's PID_MAX_LIMIT, so never a live process.
FAKE_PID = 4_194_304
#: Namespace value of a directory (files are an ``int`` file id).
DIR = "<dir>"

_REAL_OS = os


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------


@dataclass
class FileModel:
    """One inode: durable and current content, and what changed since its last sync."""

    fid: int
    durable: bytes = b""
    current: bytearray = field(default_factory=bytearray)
    dirty: list[tuple[int, int]] = field(default_factory=list)  # [start, end) ranges
    low: int = 0  # shortest length since the last sync

    def write(self, offset: int, data: bytes) -> None:
        """Record ``data`` written at ``offset`` (a hole before it reads as zeros)."""
        if offset > len(self.current):
            self.truncate(offset)
        self.current[offset : offset + len(data)] = data
        self.dirty.append((offset, offset + len(data)))

    def truncate(self, length: int) -> None:
        """Record ``ftruncate(length)``."""
        old = len(self.current)
        if length < old:
            del self.current[length:]
            self.low = min(self.low, length)
        elif length > old:
            self.current.extend(b"\0" * (length - old))
        if length != old:
            self.dirty.append((min(length, old), max(length, old)))

    def sync(self) -> bytes:
        """Record ``fsync``/``fdatasync``: the current content is durable.

        Returns:
            Durable bytes this sync cut from the end of the file (durably gone now).
        """
        cut = self.durable[len(self.current) :]
        self.durable = bytes(self.current)
        self.dirty = []
        self.low = len(self.current)
        return cut

    def crash_bytes(self, rng: random.Random, fates: tuple[float, float, float, float] | None) -> bytes:
        """Content after a power cut now.

        Args:
            rng: Source of every choice.
            fates: Weights of keep / lost / zero / junk for each unsynced sector; the
                length is anywhere from the durable (or shortest since) to the current
                one. ``None``: one bad sector - the current length, every unsynced
                sector kept but one, which is lost, zeroed or garbled.
        """
        d, c = self.durable, self.current
        if not self.dirty:
            return d
        lo, hi = min(self.low, len(c)), max(len(d), len(c))
        r = rng.random()
        length = hi if fates is None or r < 0.4 else lo if r < 0.55 else rng.randint(lo, hi)
        out = bytearray(c[: min(length, len(c))])
        if length > len(c):
            out += d[len(c) : length]  # a truncation that did not reach the disk
        sectors = []
        for start, end in _merged(self.dirty):
            pos, end = start, min(end, length)
            while pos < end:
                stop = min(end, (pos // SECTOR + 1) * SECTOR)
                sectors.append((pos, stop))
                pos = stop
        bad = rng.randrange(len(sectors)) if fates is None and sectors else -1
        for i, (pos, stop) in enumerate(sectors):
            if fates is None:
                fate = rng.choice(("lost", "zero", "junk")) if i == bad else "keep"
            else:
                fate = rng.choices(("keep", "lost", "zero", "junk"), fates)[0]
            if fate == "lost":
                old = d[pos:stop]
                out[pos:stop] = old + b"\0" * (stop - pos - len(old))
            elif fate == "zero":
                out[pos:stop] = b"\0" * (stop - pos)
            elif fate == "junk":
                out[pos:stop] = rng.randbytes(stop - pos)
        return bytes(out)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


@dataclass
class NsOp:
    """A namespace operation: entries it sets (``None`` removes) and the directories
    whose fsync makes it durable. Applied whole or not at all."""

    kind: str
    changes: list[tuple[str, Any]]
    dirs: frozenset[str]
    durable: bool = False


@dataclass
class _Fd:
    fid: int | None  # None for a directory
    dir: str | None
    append: bool
    ino: int


class PowerLossFS:
    """The durability model of one directory tree (see the module docstring).

    Args:
        root: The tree to watch. What it holds already counts as durable.

    Attributes:
        on_op: Called as ``on_op(fs, kind, relpath)`` after every recorded operation that
            changes the tree (the real operation done and the model updated), under
            the shim's lock: a crash image drawn there is a crash right after it.
        ops: Number of such operations so far.
        cuts: ``(path, bytes)`` of durable bytes a synced truncation removed from a file.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.files: dict[int, FileModel] = {}
        self.base: dict[str, Any] = {}  # namespace after the folded (durable) ops
        self.log: list[NsOp] = []  # ops not folded into base yet, in order
        self.cur: dict[str, Any] = {}  # namespace now
        self.fds: dict[int, _Fd] = {}
        self.live_ino: dict[int, int] = {}  # inode number in the live tree -> file id
        self.on_op: Callable[[PowerLossFS, str, str], None] | None = None
        self.ops = 0
        self.cuts: list[tuple[str, bytes]] = []
        self._next_fid = 1
        self._scan()

    # -- bookkeeping -------------------------------------------------------------

    def _scan(self) -> None:
        by_ino: dict[int, int] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = self.rel(dirpath)
            for name in dirnames:
                self.base[_join(rel_dir, name)] = DIR
            for name in filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                fid = by_ino.get(st.st_ino)
                if fid is None:
                    with open(path, "rb") as f:
                        data = f.read()
                    fid = self._new_file(data)
                    by_ino[st.st_ino] = fid
                    self.live_ino[st.st_ino] = fid
                self.base[_join(rel_dir, name)] = fid
        self.cur = dict(self.base)

    def _new_file(self, data: bytes = b"") -> int:
        fid = self._next_fid
        self._next_fid += 1
        self.files[fid] = FileModel(fid, bytes(data), bytearray(data), [], len(data))
        return fid

    def rel(self, path: str) -> str:
        """``path`` relative to the root ('' for the root itself)."""
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return "" if rel == "." else rel

    def contains(self, path: str) -> bool:
        p = os.path.abspath(path)
        return p == self.root or p.startswith(self.root + os.sep)

    def _op(self, kind: str, changes: list[tuple[str, Any]]) -> None:
        dirs = frozenset(os.path.dirname(p) for p, _ in changes)
        self.log.append(NsOp(kind, changes, dirs))
        for p, v in changes:
            if v is None:
                self.cur.pop(p, None)
            else:
                self.cur[p] = v

    def _fold(self) -> None:
        while self.log and self.log[0].durable:
            _apply(self.base, self.log.pop(0))

    def _notify(self, kind: str, rel: str) -> None:
        self.ops += 1
        if self.on_op is not None:
            self.on_op(self, kind, rel)

    # -- recorded operations (called by the proxy with the real call done) --------

    def opened(self, fd: int, rel: str, flags: int, existed: bool) -> None:
        ino = os.fstat(fd).st_ino
        if flags & os.O_DIRECTORY or self.cur.get(rel) == DIR:
            self.fds[fd] = _Fd(None, rel, False, ino)
            return
        changed = None
        if not existed:
            fid = self._new_file()
            self._op("create", [(rel, fid)])
            changed = "create"
        else:
            fid = self.cur[rel]
            if flags & os.O_TRUNC and self.files[fid].current:
                self.files[fid].truncate(0)
                changed = "open-truncate"
        self.fds[fd] = _Fd(fid, None, bool(flags & os.O_APPEND), ino)
        self.live_ino[ino] = fid
        if changed:
            self._notify(changed, rel)

    def fd_info(self, fd: int) -> _Fd | None:
        """The model's record of ``fd``, if it is one of ours and still the same file."""
        info = self.fds.get(fd)
        if info is None:
            return None
        try:
            if os.fstat(fd).st_ino == info.ino:
                return info
        except OSError:
            pass
        del self.fds[fd]  # closed behind the proxy's back; the number was reused
        return None

    def wrote(self, info: _Fd, offset: int, data: bytes) -> None:
        assert info.fid is not None
        self.files[info.fid].write(offset, data)
        self._notify("write", self._name_of(info.fid))

    def truncated(self, info: _Fd, length: int) -> None:
        assert info.fid is not None
        self.files[info.fid].truncate(length)
        self._notify("ftruncate", self._name_of(info.fid))

    def synced(self, info: _Fd, kind: str) -> None:
        if info.dir is not None:
            for op in self.log:
                if info.dir in op.dirs:
                    op.durable = True
            self._fold()
            self._notify("fsync-dir", info.dir)
        else:
            assert info.fid is not None
            cut = self.files[info.fid].sync()
            if cut:
                self.cuts.append((self._name_of(info.fid), cut))
            self._notify(kind, self._name_of(info.fid))

    def renamed(self, src: str, dst: str) -> None:
        self._op("rename", [(dst, self.cur[src]), (src, None)])
        self._notify("rename", dst)

    def unlinked(self, rel: str) -> None:
        self._op("unlink", [(rel, None)])
        self._notify("unlink", rel)

    def made_dir(self, rel: str) -> None:
        self._op("mkdir", [(rel, DIR)])
        self._notify("mkdir", rel)

    def _name_of(self, fid: int) -> str:
        return next((p for p, v in self.cur.items() if v == fid), f"<unlinked {fid}>")

    # -- crash images -------------------------------------------------------------

    def durable_content(self, rel: str) -> bytes | None:
        """What ``rel`` holds for sure after a power cut now: ``None`` if its name is not
        durable, else the file's durable content."""
        ns = dict(self.base)
        for op in self.log:
            if op.durable:
                _apply(ns, op)
        value = ns.get(rel)
        return None if value is None or value == DIR else self.files[value].durable

    def crash_image(self, rng: random.Random) -> CrashImage:
        """Draw one state the disk could be in after a power cut right now."""
        style = rng.choice(("subset", "subset", "prefix"))
        keep_p = rng.choice((0.0, 0.5, 0.9, 1.0))
        pending = [op for op in self.log if not op.durable]
        cut = rng.randint(0, len(pending))
        chosen = set()
        for i, op in enumerate(pending):
            if (style == "prefix" and i < cut) or (style == "subset" and rng.random() < keep_p):
                chosen.add(id(op))
        ns = dict(self.base)
        for op in self.log:
            if op.durable or id(op) in chosen:
                _apply(ns, op)
        fates = rng.choice((
            (1.0, 0.0, 0.0, 0.0),  # data in order, only the length varies
            (0.55, 0.15, 0.15, 0.15),
            (0.2, 0.3, 0.25, 0.25),
            (0.0, 0.4, 0.3, 0.3),  # nothing unsynced survives
            None,  # one bad sector
        ))
        contents: dict[int, bytes] = {}
        dirs, files = [], []
        for path in sorted(ns, key=lambda p: (p.count(os.sep), p)):
            parent = os.path.dirname(path)
            if parent and ns.get(parent) != DIR:
                continue  # its directory did not survive
            value = ns[path]
            if value == DIR:
                dirs.append(path)
            else:
                if value not in contents:
                    contents[value] = self.files[value].crash_bytes(rng, fates)
                files.append((path, value))
        ino_map = {ino: fid for ino, fid in self.live_ino.items()}
        desc = f"{style}(keep {keep_p}, cut {cut}/{len(pending)}) fates {fates or 'one bad sector'}"
        return CrashImage(dirs, files, contents, ino_map, self.ops, desc)

    # -- self-check ---------------------------------------------------------------

    def check_against_disk(self) -> list[str]:
        """Differences between the model's current state and the real tree (a shim bug)."""
        problems = []
        real: dict[str, Any] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = self.rel(dirpath)
            for name in dirnames:
                real[_join(rel_dir, name)] = DIR
            for name in filenames:
                with open(os.path.join(dirpath, name), "rb") as f:
                    real[_join(rel_dir, name)] = f.read()
        if set(real) != set(self.cur):
            problems.append(f"names differ: only on disk {sorted(set(real) - set(self.cur))}, "
                            f"only in the model {sorted(set(self.cur) - set(real))}")
        for path in set(real) & set(self.cur):
            want = real[path]
            got = self.cur[path]
            if (want == DIR) != (got == DIR) or (got != DIR and bytes(self.files[got].current) != want):
                problems.append(f"{path}: content differs from the model")
        return problems


def _join(rel_dir: str, name: str) -> str:
    return os.path.join(rel_dir, name) if rel_dir else name


def _apply(ns: dict[str, Any], op: NsOp) -> None:
    for p, v in op.changes:
        if v is None:
            ns.pop(p, None)
        else:
            ns[p] = v


@dataclass
class CrashImage:
    """One drawn crash state: directories, file names with their file ids, contents."""

    dirs: list[str]
    files: list[tuple[str, int]]
    contents: dict[int, bytes]
    live_ino: dict[int, int]  # inode number in the live tree -> file id
    at_op: int
    desc: str

    def write(self, target: str) -> None:
        """Create the state in the empty or missing directory ``target`` (names of one
        file become hard links), then point sidecar indexes at their logs' new inodes.

        A sidecar naming an inode that no longer exists gets the inode of the log now at
        its path if that log was created later: ext4 reuses freed inode numbers, so a
        stale sidecar can name a new log's inode (tmpfs, where the battery runs, does
        not reuse them)."""
        os.makedirs(target, mode=0o700, exist_ok=True)
        for d in self.dirs:
            os.mkdir(os.path.join(target, d), 0o700)
        first: dict[int, str] = {}
        for rel, fid in self.files:
            path = os.path.join(target, rel)
            if fid in first:
                os.link(first[fid], path)
                continue
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, self.contents[fid])
            finally:
                os.close(fd)
            first[fid] = path
        for rel, _ in self.files:
            if rel.endswith(".idx"):
                self._retarget_sidecar(os.path.join(target, rel), first)

    def _retarget_sidecar(self, path: str, first: dict[int, str]) -> None:
        with open(path, "rb") as f:
            data = f.read()
        nl = data.find(b"\n")
        head = framing.parse_line(data[:nl]) if nl > 0 else None
        if not head or head.get("t") != "index" or not isinstance(head.get("ino"), int):
            return
        fid = self.live_ino.get(head["ino"])
        if fid is None:
            return
        if fid not in first:
            log = path[: -len(".idx")] + ".jsonl"
            reused = next((f for f, p in first.items() if p == log and f > fid), None)
            if reused is None:
                return
            fid = reused
        head["ino"] = os.stat(first[fid]).st_ino
        with open(path, "wb") as f:
            f.write(framing.frame(head) + data[nl + 1 :])


# ---------------------------------------------------------------------------
# the os proxy
# ---------------------------------------------------------------------------


class _ShimOS:
    """``os`` as the package sees it: recorded in the :class:`PowerLossFS` watching the
    path or file descriptor, done for real either way."""

    def __init__(self) -> None:
        self.shims: list[PowerLossFS] = []
        self.lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        return getattr(_REAL_OS, name)

    def _shim_for(self, path: Any) -> PowerLossFS | None:
        if isinstance(path, int):
            return None
        p = os.fspath(path)
        for s in self.shims:
            if s.contains(p):
                return s
        return None

    def _fd(self, fd: int) -> tuple[PowerLossFS, _Fd] | tuple[None, None]:
        for s in self.shims:
            info = s.fd_info(fd)
            if info is not None:
                return s, info
        return None, None

    def getpid(self) -> int:
        return FAKE_PID

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
        with self.lock:
            s = self._shim_for(path)
            if s is None or dir_fd is not None:
                return _REAL_OS.open(path, flags, mode, dir_fd=dir_fd)
            rel = s.rel(os.fspath(path))
            existed = rel in s.cur
            fd = _REAL_OS.open(path, flags, mode)
            s.opened(fd, rel, flags, existed)
            return fd

    def close(self, fd: int) -> None:
        with self.lock:
            for s in self.shims:
                s.fds.pop(fd, None)
            _REAL_OS.close(fd)

    def write(self, fd: int, data: Any) -> int:
        with self.lock:
            s, info = self._fd(fd)
            if s is None:
                return _REAL_OS.write(fd, data)
            assert info is not None and info.fid is not None
            offset = len(s.files[info.fid].current) if info.append else _REAL_OS.lseek(fd, 0, os.SEEK_CUR)
            n = _REAL_OS.write(fd, data)
            s.wrote(info, offset, bytes(memoryview(data)[:n]))
            return n

    def ftruncate(self, fd: int, length: int) -> None:
        with self.lock:
            s, info = self._fd(fd)
            _REAL_OS.ftruncate(fd, length)
            if s is not None:
                s.truncated(info, length)  # type: ignore[arg-type]

    def fsync(self, fd: Any) -> None:
        self._sync(fd, "fsync", _REAL_OS.fsync)

    def fdatasync(self, fd: Any) -> None:
        self._sync(fd, "fdatasync", _REAL_OS.fdatasync)

    def _sync(self, fd: Any, kind: str, real: Callable[[Any], None]) -> None:
        with self.lock:
            if not isinstance(fd, int):
                fd = fd.fileno()
            s, info = self._fd(fd)
            real(fd)
            if s is not None:
                s.synced(info, kind)  # type: ignore[arg-type]

    def replace(self, src: Any, dst: Any, **kwargs: Any) -> None:
        self._rename(src, dst, _REAL_OS.replace, kwargs)

    def rename(self, src: Any, dst: Any, **kwargs: Any) -> None:
        self._rename(src, dst, _REAL_OS.rename, kwargs)

    def _rename(self, src: Any, dst: Any, real: Callable[..., None], kwargs: dict) -> None:
        with self.lock:
            s, t = self._shim_for(src), self._shim_for(dst)
            if s is not t or kwargs:
                raise NotImplementedError("powerloss shim: rename across watched trees")
            real(src, dst)
            if s is not None:
                s.renamed(s.rel(os.fspath(src)), s.rel(os.fspath(dst)))

    def unlink(self, path: Any, *, dir_fd: Any = None) -> None:
        with self.lock:
            s = self._shim_for(path)
            _REAL_OS.unlink(path, dir_fd=dir_fd)
            if s is not None:
                s.unlinked(s.rel(os.fspath(path)))

    remove = unlink

    def mkdir(self, path: Any, mode: int = 0o777, *, dir_fd: Any = None) -> None:
        with self.lock:
            s = self._shim_for(path)
            _REAL_OS.mkdir(path, mode, dir_fd=dir_fd)
            if s is not None:
                s.made_dir(s.rel(os.fspath(path)))

    def makedirs(self, name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
        name = os.fspath(name)
        parent = os.path.dirname(os.path.abspath(name))
        if not os.path.isdir(parent):
            self.makedirs(parent, mode, exist_ok=True)
        try:
            self.mkdir(name, mode)
        except FileExistsError:
            if not (exist_ok and os.path.isdir(name)):
                raise

    def _unsupported(self, name: str) -> Callable[..., Any]:
        def refuse(path: Any, *args: Any, **kwargs: Any) -> Any:
            if self._shim_for(path) is not None:
                raise NotImplementedError(f"powerloss shim: os.{name} is not modelled")
            return getattr(_REAL_OS, name)(path, *args, **kwargs)

        return refuse

    @property
    def link(self) -> Callable[..., Any]:
        return self._unsupported("link")

    @property
    def symlink(self) -> Callable[..., Any]:
        return self._unsupported("symlink")

    @property
    def rmdir(self) -> Callable[..., Any]:
        return self._unsupported("rmdir")

    @property
    def pwrite(self) -> Callable[..., Any]:
        def refuse(fd: int, *args: Any) -> Any:
            if self._fd(fd)[0] is not None:
                raise NotImplementedError("powerloss shim: os.pwrite is not modelled")
            return _REAL_OS.pwrite(fd, *args)

        return refuse


_PROXY = _ShimOS()
_PATCHED = (files_module,)


@contextmanager
def watching(fs: PowerLossFS) -> Iterator[PowerLossFS]:
    """Record the package's file operations under ``fs.root`` while the block runs.

    Nests: several trees can be watched at once (a crash during recovery).
    """
    with _PROXY.lock:
        if not _PROXY.shims:
            saved = [m.os for m in _PATCHED]  # type: ignore[attr-defined]
            for m in _PATCHED:
                m.os = _PROXY  # type: ignore[attr-defined]
            _PROXY.saved = saved  # type: ignore[attr-defined]
        _PROXY.shims.append(fs)
    try:
        yield fs
    finally:
        with _PROXY.lock:
            _PROXY.shims.remove(fs)
            if not _PROXY.shims:
                for m, real in zip(_PATCHED, _PROXY.saved, strict=True):  # type: ignore[attr-defined]
                    m.os = real  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# checking one crash image
# ---------------------------------------------------------------------------

EMPTY: dict = {"list": {}, "latest": {}}
#: Saver settings of the workload and the checks: snapshots (two-record batches) often.
SAVER_KWARGS: dict[str, Any] = {"snapshot_every": 2, "snapshot_ratio": 0.0}
#: Checkpoint ids of the workload sort after LangGraph's (uuid6, "1f0..."): a put after
#: a copy of an agent thread was deleted is newer than the tombstone.
ID_PREFIX = "2ef00000-0000-6000-8000"
PROBE_PREFIX = "fff00000-0000-6000-8000"  # a check's probe sorts after every other id
RECOVERY_PREFIX = "ffe00000-0000-6000-8000"  # ... and after the probes of a recovery


@dataclass
class Expected:
    """What a crash image may serve.

    Attributes:
        candidates: Per thread, the answers (``answers.answers``) it may serve: the
            acknowledged state, and the state with the call in flight done. Threads not
            named must serve nothing.
        tombstones: Deleted threads (``delete_thread`` returned) with the newest deleted
            checkpoint id: a late write for it must be refused.
        quarantined: ``(quarantine file, bytes)``: durable bytes a tail repair cut from a
            log (the cut is durable) that the thread's quarantine file must hold.
    """

    candidates: dict[str, list[dict]]
    tombstones: dict[str, str] = field(default_factory=dict)
    quarantined: list[tuple[str, bytes]] = field(default_factory=list)

    def allowed(self, thread_id: str) -> list[dict]:
        return self.candidates.get(thread_id, [EMPTY])


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _served(saver: JsonlSaver, exp: Expected, stage: str, problems: list[str]) -> dict[str, dict] | None:
    """Answers for every thread expected or present; problems if any is not allowed."""
    try:
        tids = sorted(set(exp.candidates) | set(saver.store.thread_ids()))
        got = {t: answers(saver, t) for t in tids}
    except Exception as exc:  # noqa: BLE001 - any failure to open or read is a violation
        problems.append(f"{stage}: the store does not open/read: {_describe(exc)}")
        return None
    for t, ans in got.items():
        allowed = exp.allowed(t)
        if not any(ans == a for a in allowed):
            diffs = " | or: ".join(diff_answers(ans, a) for a in allowed)
            problems.append(f"{stage}: thread {t!r} serves a state never acknowledged: {diffs}")
    return got


def check_image(
    image: CrashImage, target: str, exp: Expected, probe_id: str
) -> tuple[list[str], dict[str, dict] | None]:
    """Write ``image`` to ``target`` and check every invariant of a power loss there.

    1. A read-only open, then a writable one, serve for every thread one of the allowed
       states (no acknowledged checkpoint or write lost, each exactly once with its
       values, nothing partial, nothing never started) and raise nothing (no false
       corruption report). The read-only open changes no file.
    2. No temp files remain after the writable open; bytes cut from a log by a durable
       tail repair are in its quarantine file.
    3. A late write for a deleted thread is refused (its tombstone survived).
    4. A further ``put`` on every thread (deleted ones too: they come back) works, and
       a reopen serves it and everything served before.
    5. ``verify`` finds nothing wrong (torn tails were cut, snapshots rebuild).

    Returns:
        The problems found, and the answers the writable open served (``None`` if it
        failed).
    """
    image.write(target)
    problems: list[str] = []
    for rel, cut in exp.quarantined:
        try:
            with open(os.path.join(target, rel), "rb") as f:
                kept = cut in f.read()
        except FileNotFoundError:
            kept = False
        if not kept:
            problems.append(f"{len(cut)} durable bytes cut from a log are not in {rel}")
    before = _tree(target)
    try:
        ro = JsonlSaver(target, read_only=True)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"read-only open raised {_describe(exc)}")
    else:
        _served(ro, exp, "read-only open", problems)
        ro.close()
    if _tree(target) != before:
        problems.append("a read-only open changed files")
    try:
        saver = JsonlSaver(target, **SAVER_KWARGS)
    except Exception as exc:  # noqa: BLE001
        return problems + [f"writable open raised {_describe(exc)}"], None
    got = _served(saver, exp, "writable open", problems)
    stray = stray_temp_files(target)
    if stray:
        problems.append(f"temp files left after a writable open: {stray}")
    if got is None:
        return problems, None
    for t, upto in sorted(exp.tombstones.items()):
        if got.get(t, EMPTY) != EMPTY:
            continue
        try:
            saver.put_writes(config(t, "", upto), [("m", "late")], "late-task")
            problems.append(
                f"deleted thread {t!r} took a late write for its checkpoint {upto}: the tombstone is lost"
            )
        except ThreadDeletedError:
            pass
        except Exception as exc:  # noqa: BLE001
            problems.append(f"a late write for deleted thread {t!r} raised {_describe(exc)}")
    probes: dict[str, dict] = {}
    try:
        for t in sorted(set(saver.store.thread_ids()) | set(exp.candidates)):
            probes[t] = _put_probe(saver, t, probe_id)
        saver.close()
        reopened = JsonlSaver(target, **SAVER_KWARGS)
        for t, values in probes.items():
            after = answers(reopened, t)
            before = got.get(t, EMPTY)
            key = ("", probe_id)
            probe = after["list"].pop(key, None)
            if probe is None or probe.checkpoint["channel_values"] != values:
                problems.append(f"thread {t!r}: the put after recovery is not served as written")
            elif after["latest"].get("") != probe:
                problems.append(f"thread {t!r}: the put after recovery is not the latest checkpoint")
            if after["list"] != before["list"]:
                problems.append(f"thread {t!r}: after a put and reopen: {diff_answers(after, before)}")
        reopened.close()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"put after recovery / reopen raised {_describe(exc)}")
        return problems, got
    try:
        report = verify(JsonlSaver(target, read_only=True))
        problems += [f"verify: {f.path}@{f.offset}: {f.problem}" for f in report.findings]
    except Exception as exc:  # noqa: BLE001
        problems.append(f"verify raised {_describe(exc)}")
    stray = stray_temp_files(target)
    if stray:
        problems.append(f"temp files left after recovery: {stray}")
    return problems, got


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                out[os.path.join(dirpath, name)] = f.read()
    return out


def _put_probe(saver: JsonlSaver, thread_id: str, probe_id: str) -> dict:
    """Put one checkpoint (a new channel ``pl``) after the thread's latest; its values."""
    latest = saver.get_tuple(config(thread_id))
    versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
    values = dict(latest.checkpoint["channel_values"]) if latest else {}
    nv = {"pl": saver.get_next_version(versions.get("pl"), None)}
    values["pl"] = [probe_id]
    saver.put(config(thread_id, "", latest.checkpoint["id"] if latest else None),
              make_checkpoint(probe_id, values, {**versions, **nv}), {"probe": True}, nv)
    return values


# ---------------------------------------------------------------------------
# the workload
# ---------------------------------------------------------------------------


@dataclass
class Call:
    """A saver call in flight: the threads it may change and their state before it."""

    label: str
    tids: tuple[str, ...]
    before: dict[str, dict]


class MirroredSaver(JsonlSaver):
    """A ``JsonlSaver`` whose ``put``/``put_writes`` run as calls of a
    :class:`PowerLossRound` and, once they returned, are applied to its
    ``InMemorySaver`` (what was acknowledged). LangGraph's graphs use it as is."""

    driver: PowerLossRound

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[override]
        tid = str(config["configurable"]["thread_id"])
        mirror = copy.deepcopy((checkpoint, metadata, new_versions))
        with self.driver.call("put", [tid]):
            out = super().put(config, checkpoint, metadata, new_versions)
            self.driver.mem.put(config, *mirror)
        return out

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        tid = str(config["configurable"]["thread_id"])
        mirror = copy.deepcopy(list(writes))
        with self.driver.call("put_writes", [tid]):
            super().put_writes(config, writes, task_id, task_path)
            self.driver.mem.put_writes(config, mirror, task_id, task_path)


@dataclass
class RoundStats:
    """Figures of one round (or of a whole battery, summed)."""

    rounds: int = 0
    ops: int = 0
    steps: int = 0
    states: int = 0
    recovery_states: int = 0
    states_by_op: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def add(self, other: RoundStats) -> None:
        self.rounds += other.rounds
        self.ops += other.ops
        self.steps += other.steps
        self.states += other.states
        self.recovery_states += other.recovery_states
        for k, v in other.states_by_op.items():
            self.states_by_op[k] = self.states_by_op.get(k, 0) + v
        self.violations += other.violations


RUNS = ("run-a", "run-b", "run-c")
DELETING = ("delete", "delete_for_runs")  # call labels that may delete a thread's files
THREADS = ("t0", "t1", "t2")

#: Workload steps and their weights.
STEPS: dict[str, int] = {
    "put": 30, "put_big": 8, "put_writes": 16, "agent": 5, "agent_continue": 2,
    "delete": 4, "prune": 4, "prune_delete": 1, "compact": 3, "copy": 3, "delete_for_runs": 3,
    "torn_tail": 5, "reopen": 4, "reopen_without_close": 2, "other_writer": 5,
}


class PowerLossRound:
    """One workload on a fresh store under the shim, with crash images checked as it goes.

    After every operation the shim records, with probability ``rate``, ``per_point``
    crash images are drawn; they are checked when the call in flight returns (so both
    the state before it and after it are known). With probability ``recovery_rate`` a
    checked image is also *recovered under the shim*: opened writable and given a put on
    every thread, with crash images drawn during that recovery and checked the same way.

    Args:
        workdir: Scratch directory (tmpfs is best); the round uses ``<workdir>/r<seed>``.
        seed: Seeds the workload and every image.
        steps: Workload steps.
        rate, per_point, recovery_rate: See above.
        recovery_op_rate: Probability of an image at each operation of a recovery (at
            most 4 pending at once).
        max_states: Stop drawing images after this many (the workload still finishes).
        stop_after: Stop drawing images after this many violations.
    """

    def __init__(self, workdir: str, seed: int, *, steps: int = 40, rate: float = 0.3,
                 per_point: int = 2, recovery_rate: float = 0.15, recovery_op_rate: float = 0.25,
                 max_states: int | None = None, stop_after: int = 10) -> None:
        self.dir = os.path.join(workdir, f"r{seed}")
        self.live = os.path.join(self.dir, "live")
        os.makedirs(self.live)
        self.seed = seed
        self.rng = random.Random(seed)
        self.image_rng = random.Random(seed * 7919 + 1)
        self.steps, self.rate, self.per_point = steps, rate, per_point
        self.recovery_rate, self.recovery_op_rate = recovery_rate, recovery_op_rate
        self.max_states = max_states
        self.stop_after = stop_after
        self.fs = PowerLossFS(self.live)
        self.fs.on_op = self._on_op
        self.mem = InMemorySaver()
        self.expected: dict[str, dict] = {}
        self.tombstones: dict[str, str] = {}
        self.cuts_seen = 0  # of self.fs.cuts, folded into self.quarantined
        self.quarantined: dict[str, list[tuple[str, bytes]]] = {}  # thread stem -> cuts
        self.lock = threading.RLock()
        self.in_flight: Call | None = None
        self.pending: list[tuple[CrashImage, Call | None, str, list]] = []
        self.stats = RoundStats(rounds=1)
        self.threads = list(THREADS)
        self.agents: list[str] = []
        self.n = 0
        self.saver: MirroredSaver | None = None
        self.other: MirroredSaver | None = None  # a second instance, as another process
        self.step = ""

    # -- calls and crash images -----------------------------------------------------

    @contextmanager
    def call(self, label: str, tids: list[str] | tuple[str, ...]) -> Iterator[Call]:
        """Run a saver call: images drawn meanwhile may show it done or not done."""
        with self.lock:
            self._settle({})
            c = Call(label, tuple(tids), {t: self.expected.get(t, EMPTY) for t in tids})
            self.in_flight = c
            try:
                yield c
            finally:
                self.in_flight = None
                after = {t: answers(self.mem, t) for t in c.tids}
                self._settle(after)
                for t, ans in after.items():
                    if c.before[t]["list"] and not ans["list"] and label in DELETING:
                        newest = max(cid for _, cid in c.before[t]["list"])
                        self.tombstones[t] = max(newest, self.tombstones.get(t, newest))
                        self.quarantined.pop(thread_file_stem(t), None)  # deleted with the log
                    self.expected[t] = ans

    def _budget_left(self) -> bool:
        if len(self.stats.violations) >= self.stop_after:
            return False
        return self.max_states is None or self.stats.states + len(self.pending) < self.max_states

    def _on_op(self, fs: PowerLossFS, kind: str, rel: str) -> None:
        self.stats.ops += 1
        # Every kind of operation gets images the first time it happens (rare ones, like
        # the tail repair's cut, would otherwise depend on the draw); then at ``rate``.
        first = kind not in self.stats.states_by_op
        if (self.rng.random() >= self.rate and not first) or not self._budget_left():
            return
        where = f"{self.step} / {kind} {rel} (op {fs.ops})"
        required = self._required_quarantine()
        for _ in range(self.per_point):
            self.pending.append((fs.crash_image(self.image_rng), self.in_flight, where, required))
        self.stats.states_by_op[kind] = self.stats.states_by_op.get(kind, 0) + self.per_point

    def _required_quarantine(self) -> list[tuple[str, bytes]]:
        """Quarantine contents an image drawn now must have (see :func:`quarantine_of`)."""
        for q in quarantine_of(self.fs.cuts[self.cuts_seen :]):
            stem = os.path.basename(q[0])[: -len(".quarantine")]
            self.quarantined.setdefault(stem, []).append(q)
        self.cuts_seen = len(self.fs.cuts)
        c = self.in_flight
        skip = {thread_file_stem(t) for t in c.tids} if c is not None and c.label in DELETING else set()
        return [q for stem, qs in self.quarantined.items() if stem not in skip for q in qs]

    def _expected_for(self, c: Call | None, after: dict[str, dict], quarantined: list) -> Expected:
        cands = {t: [a] for t, a in self.expected.items()}
        if c is not None:
            for t in c.tids:
                cands[t] = [c.before[t], after[t]]
        # deleted and not written again since (a late write may then be refused)
        tombs = {t: u for t, u in self.tombstones.items() if cands.get(t, [EMPTY]) == [EMPTY]}
        return Expected(cands, tombs, quarantined)

    def _settle(self, after: dict[str, dict]) -> None:
        """Check the images drawn so far; ``after``: states once the call in flight returned."""
        pending, self.pending = self.pending, []
        for image, c, where, quarantined in pending:
            exp = self._expected_for(c, after, quarantined)
            problems, served = self._check(image, exp, where)
            if not problems and served is not None and self.image_rng.random() < self.recovery_rate:
                self._recover(image, served, exp, where)

    def _check(
        self, image: CrashImage, exp: Expected, where: str, recovery: bool = False
    ) -> tuple[list[str], Any]:
        self.stats.states += 1
        self.stats.recovery_states += recovery
        target = os.path.join(self.dir, f"crash-{self.stats.states}")
        probe = cp_id(self.stats.states, PROBE_PREFIX)
        try:
            problems, served = check_image(image, target, exp, probe)
        except Exception:  # noqa: BLE001 - a bug of the battery itself: report it
            problems, served = [f"the check crashed: {traceback.format_exc()}"], None
        if problems:
            self.stats.violations.append(
                f"seed {self.seed}, {'recovery of ' if recovery else ''}crash at {where}, image "
                f"{image.desc}: " + "; ".join(problems) + f" [kept in {target}]")
        else:
            shutil.rmtree(target, ignore_errors=True)
        return problems, served

    def _recover(self, image: CrashImage, served: dict[str, dict], exp: Expected, where: str) -> None:
        """Recover a crash image under a second shim, with crashes during the recovery."""
        b = os.path.join(self.dir, f"recovery-{self.stats.states}")
        image.write(b)
        fs = PowerLossFS(b)
        expected = {t: a for t, a in served.items()}
        state: dict[str, Any] = {"tids": (), "before": {}}
        drawn: list[tuple[CrashImage, dict, str, list]] = []

        def on_op(f: PowerLossFS, kind: str, rel: str) -> None:
            if len(drawn) < 4 and self.rng.random() < self.recovery_op_rate and self._budget_left():
                cands = {t: [a] for t, a in expected.items()}
                for t in state["tids"]:
                    cands[t] = [state["before"][t], None]  # None: filled in once the put returned
                drawn.append((f.crash_image(self.image_rng), cands, f"{where} -> recovery {kind} {rel}",
                              list(f.cuts)))
                key = f"recovery {kind}"
                self.stats.states_by_op[key] = self.stats.states_by_op.get(key, 0) + 1

        def settle(after: dict[str, dict]) -> None:
            for img, cands, w, cuts in drawn:
                cands = {t: [a if a is not None else after[t] for a in v] for t, v in cands.items()}
                quarantined = exp.quarantined + quarantine_of(cuts)
                tombs = {t: u for t, u in exp.tombstones.items() if cands.get(t, [EMPTY]) == [EMPTY]}
                self._check(img, Expected(cands, tombs, quarantined), w, recovery=True)
            drawn.clear()

        fs.on_op = on_op
        with watching(fs):
            saver = JsonlSaver(b, **SAVER_KWARGS)
            settle({})
            for t in sorted(set(saver.store.thread_ids()) | set(served)):
                state["tids"], state["before"] = (t,), {t: expected.get(t, EMPTY)}
                probe_id = cp_id(self.stats.states, RECOVERY_PREFIX)
                _put_probe(saver, t, probe_id)
                after = answers(JsonlSaver(b, read_only=True), t)
                state["tids"] = ()
                if set(after["list"]) != set(expected.get(t, EMPTY)["list"]) | {("", probe_id)}:
                    self.stats.violations.append(f"seed {self.seed}, recovery of crash at {where}: "
                                                 f"thread {t!r} after a put serves {sorted(after['list'])}")
                settle({t: after})
                expected[t] = after
            saver.close()
            settle({})
        problems = fs.check_against_disk()
        if problems:
            self.stats.violations.append(f"seed {self.seed}: shim model out of step (recovery): {problems}")
        shutil.rmtree(b, ignore_errors=True)

    # -- the workload ----------------------------------------------------------------

    def run(self) -> RoundStats:
        """Run the workload; returns the round's figures (violations included)."""
        saved_rewrite = log_module.INDEX_REWRITE_RECORDS
        log_module.INDEX_REWRITE_RECORDS = 3  # sidecar rewrites every few records
        try:
            with watching(self.fs):
                self._open()
                for _ in range(self.steps):
                    self.step = self.rng.choices(list(STEPS), list(STEPS.values()))[0]
                    getattr(self, "_" + self.step)()
                    self.stats.steps += 1
                self.step = "close"
                with self.call("close", ()):
                    self.saver.close()  # type: ignore[union-attr]
                with self.lock:
                    self._settle({})
        finally:
            log_module.INDEX_REWRITE_RECORDS = saved_rewrite
        problems = self.fs.check_against_disk()
        if problems:
            self.stats.violations.append(f"seed {self.seed}: shim model out of step: {problems}")
        if not self.stats.violations:
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.stats

    def _next_id(self) -> str:
        self.n += 1
        return cp_id(self.n, ID_PREFIX)

    def _open(self) -> None:
        with self.call("open", ()):
            saver = MirroredSaver(self.live, **SAVER_KWARGS)
            saver.driver = self
            self.saver = saver

    def _reopen(self) -> None:
        with self.call("close", ()):
            self.saver.close()  # type: ignore[union-attr]
        self._open()

    def _reopen_without_close(self) -> None:
        self._open()

    def _other_writer(self) -> None:
        """A put or put_writes through a second saver instance on the same store."""
        main = self.saver
        if self.other is None or self.rng.random() < 0.3:
            self._open()
            self.other = self.saver
        self.saver = self.other
        try:
            self._put() if self.rng.random() < 0.6 else self._put_writes()
        finally:
            self.saver = main

    def _latest(self, tid: str, ns: str) -> Any:
        return self.mem.get_tuple(config(tid, ns))

    def _put(self, tid: str | None = None, big: bool = False) -> None:
        rng = self.rng
        tid = tid or rng.choice(self.threads)
        ns = "" if rng.random() < 0.8 else "child:1"
        latest = self._latest(tid, ns)
        versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
        values = dict(latest.checkpoint["channel_values"]) if latest else {}
        cid = self._next_id()
        item = f"{tid}-{self.n}" + ("x" * rng.randint(600, 4000) if big else "")
        items = list(values.get("m", []))[-6:] + [item]
        changes: dict[str, Any] = {"m": items}
        if rng.random() < 0.3:
            changes["n"] = self.n
        new_versions = {ch: self.saver.get_next_version(versions.get(ch), None) for ch in changes}  # type: ignore[union-attr]
        versions.update(new_versions)
        values.update(changes)
        md = {"run_id": rng.choice(RUNS), "step": self.n}
        self.saver.put(config(tid, ns, latest.checkpoint["id"] if latest else None),  # type: ignore[union-attr]
                       make_checkpoint(cid, values, versions), md, new_versions)

    def _put_big(self) -> None:
        self._put(big=True)

    def _put_writes(self) -> None:
        rng = self.rng
        tid = rng.choice(self.threads)
        ns = "" if rng.random() < 0.8 else "child:1"
        ids = sorted(self.mem.storage.get(tid, {}).get(ns, {}))
        if not ids:
            self._put(tid)
            return
        cid = ids[-1] if rng.random() < 0.7 else rng.choice(ids)
        task = f"task-{rng.randrange(6)}" if rng.random() < 0.3 else f"task-{self.n}"  # some retried slots
        self.n += 1
        writes = [
            ("m", [f"w-{self.n}-{j}" + "y" * rng.choice((0, 0, 700))]) for j in range(rng.randint(1, 3))
        ]
        if rng.random() < 0.2:
            writes.append(("__error__", {"error": f"boom {self.n}"}))
        self.saver.put_writes(config(tid, ns, cid), writes, task, f"~path, {self.n}")  # type: ignore[union-attr]

    def _agent(self) -> None:
        tid = f"agent-{len(self.agents)}"
        self.agents.append(tid)
        graph = build_agent(self.saver, rounds=self.rng.randint(1, 2))
        graph.invoke(agent_input(), {"configurable": {"thread_id": tid}}, durability="sync")

    def _agent_continue(self) -> None:
        if not self.agents:
            self._agent()
            return
        tid = self.rng.choice(self.agents)
        self.n += 1
        graph = build_agent(self.saver, rounds=1)
        graph.invoke({"messages": [HumanMessage(content="and again", id=f"human-{self.n}")]},
                     {"configurable": {"thread_id": tid}}, durability="sync")

    def _delete(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("delete", [tid]):
            self.saver.delete_thread(tid)  # type: ignore[union-attr]
            self.mem.delete_thread(tid)

    def _prune(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("prune", [tid]):
            self.saver.prune([tid])  # type: ignore[union-attr]
            mem_prune_keep_latest(self.mem, tid)

    def _compact(self) -> None:
        tid = self.rng.choice(self.threads + self.agents)
        with self.call("compact", [tid]):
            self.saver.compact(tid)  # type: ignore[union-attr]  # answers do not change

    def _prune_delete(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("delete", [tid]):
            self.saver.prune([tid], strategy="delete")  # type: ignore[union-attr]
            self.mem.delete_thread(tid)

    def _copy(self) -> None:
        src = self.rng.choice(self.threads + self.agents)
        dst = f"copy-{self.n}"
        self.n += 1
        with self.call("copy", [dst]):
            self.saver.copy_thread(src, dst)  # type: ignore[union-attr]
            mem_copy_thread(self.mem, src, dst)
        if len(self.threads) < 5:
            self.threads.append(dst)

    def _delete_for_runs(self) -> None:
        run = self.rng.choice(RUNS)
        tids = sorted(set(self.expected) | set(self.threads) | set(self.agents))
        with self.call("delete_for_runs", tids):
            self.saver.delete_for_runs([run])  # type: ignore[union-attr]
            mem_delete_for_runs(self.mem, {run})

    def _torn_tail(self) -> None:
        """A writer killed mid-batch left a torn tail (written through the shim, so it is
        modelled); the next put must set it aside and cut it before appending."""
        tid = self.rng.choice(self.threads)
        path = ThreadFiles.of(self.live, tid).log
        if not os.path.exists(path):
            self._put(tid)
            return
        with open(path, "rb") as f:
            scanned = framing.scan(f.read())
        seq = scanned.records[-1].record["seq"] + 1 if scanned.records else 1
        kind = self.rng.choice(("batch-prefix", "nul", "junk"))
        if kind == "batch-prefix":
            rec = {
                "t": "writes",
                "ns": "",
                "cp": "torn",
                "task": "torn",
                "path": "",
                "w": [[0, "m", {"json": "t"}]],
            }
            data = framing.frame({**rec, "seq": seq, "more": 1}) + framing.frame({**rec, "seq": seq + 1})
            data = data[: self.rng.randint(len(data) // 2, len(data) - 1)]
        elif kind == "nul":
            data = b'{"t":"checkpoint","part' + b"\0" * self.rng.randint(1, 3000)
        else:
            data = self.rng.randbytes(self.rng.randint(1, 1500))
        with self.call("torn tail", ()):
            px = files_module.os
            fd = px.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                px.write(fd, data)
                if self.rng.random() < 0.5:
                    px.fdatasync(fd)
            finally:
                px.close(fd)
        self._put(tid)


def quarantine_of(cuts: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``(quarantine file, bytes)`` for the durable cuts of thread logs among ``cuts``."""
    out = []
    for path, cut in cuts:
        if path.endswith(".jsonl") and os.path.dirname(path) == THREADS_DIR:
            out.append((path[: -len(".jsonl")] + ".quarantine", cut))
    return out


# ---------------------------------------------------------------------------
# the battery
# ---------------------------------------------------------------------------


def run_battery(states: int, seed: int, workdir: str, *, steps: int = 40, rate: float = 0.3,
                per_point: int = 2, recovery_rate: float = 0.15, stop_after: int = 20,
                progress: Callable[[RoundStats, float], None] | None = None) -> RoundStats:
    """Run rounds (seeds ``seed``, ``seed + 1``, ...) until ``states`` crash images were checked.

    Returns:
        The summed figures; ``violations`` lists every problem found.
    """
    total = RoundStats()
    t0 = time.monotonic()
    r = 0
    while total.states < states and len(total.violations) < stop_after:
        rnd = PowerLossRound(workdir, seed + r, steps=steps, rate=rate, per_point=per_point,
                             recovery_rate=recovery_rate, max_states=states - total.states,
                             stop_after=stop_after - len(total.violations))
        try:
            total.add(rnd.run())
        except Exception:  # noqa: BLE001 - the live workload itself failed: report it
            total.add(rnd.stats)
            total.violations.append(f"seed {seed + r}: the workload failed at step "
                                    f"{rnd.step}: {traceback.format_exc()}")
        r += 1
        if progress is not None:
            progress(total, time.monotonic() - t0)
    return total
