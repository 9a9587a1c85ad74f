"""Scratch directories on tmpfs, for the loops that test recovery logic, not the disk."""

from __future__ import annotations

import os


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
