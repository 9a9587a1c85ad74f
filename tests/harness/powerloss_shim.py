"""Simulated power loss: the ``os`` proxy that records the package's file operations.

The proxy replaces the ``os`` module as ``langgraph_jsonl_checkpoint.disk.files`` sees it
(as ``test_crash_io_faults.py`` does) while a :func:`watching` block runs. An operation
on a path or file descriptor inside a tree some :class:`~tests.harness.powerloss_fs.PowerLossFS`
watches is done for real and recorded in that model; anything else passes through.
Blocks nest: several trees can be watched at once (a crash during recovery).

Temp files carry the pid of their writer, and after a power loss that process is gone,
so the proxy reports a pid that can never be alive (:data:`FAKE_PID`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import langgraph_jsonl_checkpoint.disk.files as files_module
from tests.harness.powerloss_fs import PowerLossFS, _Fd

#: The pid the proxy reports: above Linux's PID_MAX_LIMIT, so never a live process.
FAKE_PID = 4_194_304
_REAL_OS = os


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
