"""A directory made unwritable for this process, the way a user meets it: a read-only
mount (root: the directory bind-mounted over itself, then remounted read-only), or,
for a user who cannot mount, write permission taken away (which root would ignore).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*args: str) -> bool:
    return subprocess.run(args, capture_output=True, check=False).returncode == 0


@contextmanager
def unwritable(path: Path) -> Iterator[str]:
    """Make ``path`` (and everything under it) unwritable while the block runs; yields
    how (``"read-only mount"`` or ``"no write permission"``)."""
    if os.geteuid() == 0:
        if not _run("mount", "--bind", str(path), str(path)):
            pytest.skip("root without the right to mount: no way to make a directory unwritable")
        try:
            if not _run("mount", "-o", "remount,ro,bind", str(path)):
                pytest.skip("root without the right to remount read-only")
            yield "read-only mount"
        finally:
            _run("umount", str(path))
        return
    modes = {}
    for root, dirs, names in os.walk(path):
        for name in [*dirs, *names]:
            p = os.path.join(root, name)
            modes[p] = os.lstat(p).st_mode
        modes[root] = os.lstat(root).st_mode
    for p, mode in modes.items():
        if not os.path.islink(p):
            os.chmod(p, mode & ~0o222)
    try:
        yield "no write permission"
    finally:
        for p, mode in modes.items():
            if not os.path.islink(p):
                os.chmod(p, mode & 0o7777)
