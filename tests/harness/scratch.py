"""Scratch directories on tmpfs, for the loops that test recovery logic, not the disk."""

from __future__ import annotations

import os
from typing import Any


def fast_dir(fallback: str | os.PathLike) -> str:
    """A scratch directory on tmpfs when there is one (fsync is free there), else under
    ``fallback``. The every-byte loops test recovery logic, not the disk."""
    import tempfile

    for base in ("/dev/shm",):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            try:
                return tempfile.mkdtemp(prefix="crashkit-", dir=base)
            except OSError:
                pass
    return tempfile.mkdtemp(prefix="crashkit-", dir=os.fspath(fallback))


def file_snapshot(store: str) -> dict[str, tuple[str, int]]:
    """Every file under ``store``: its content hash and modification time, by relative
    path (what a dry run must leave exactly as it was, times included)."""
    import hashlib

    out = {}
    for dirpath, _, names in os.walk(store):
        for name in names:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(p, store)] = (digest, os.stat(p).st_mtime_ns)
    return out


class CutShort:
    """``open`` for a module under test: a file whose write is cut short by a Ctrl-C,
    half of its text written (what an export stopped mid-write leaves)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.file = open(*args, **kwargs)  # noqa: SIM115 - closed in __exit__

    def __enter__(self) -> CutShort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def write(self, text: str) -> int:
        self.file.write(text[: len(text) // 2])
        raise KeyboardInterrupt
