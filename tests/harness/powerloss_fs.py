"""Simulated power loss (RELIABILITY.md item 9): the durability model of a directory tree.

The model, after SQLite's crash-test VFS, keeps what a power cut can leave on disk.
Every file operation the package makes in a watched directory tree is done for real
*and* recorded here (by the ``os`` proxy of ``powerloss_shim``). The model keeps:

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

A sidecar index names its log's inode, which a copied image cannot keep, so
:meth:`CrashImage.write` rewrites that number to the new inode of the same file.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph_jsonl_checkpoint.disk import framing

# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------


#: Sector size of the simulated disk: the unit in which unsynced data survives or not.
SECTOR = 512
#: Namespace value of a directory (files are an ``int`` file id).
DIR = "<dir>"


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
