"""What one durable write costs the file system: an append made durable, against an
overwrite of bytes already written and against a SQLite commit.

    python benchmarks/sync_cost.py                    # 6,000 writes per case, in $TMPDIR (10 s)
    python benchmarks/sync_cost.py --dir /var/lib/app # on the file system of your store

A put or put_writes of JsonlSaver appends its record to the thread's log and calls
``fdatasync``: the file grows, so the sync must also commit the new size (on ext4, a
journal commit). SQLite in WAL mode (SqliteSaver's) writes its frames into a WAL file
that, once grown to its checkpoint size, is written over from the start: its sync
commits data only. Cases, each ``--writes`` writes of ``--bytes`` bytes (about one
record of the benchmark agent's turn), in interleaved rounds:

- **append**: ``write`` to one file opened ``O_APPEND``, then ``fdatasync``;
- **append, 200 files in turn**: the same over 200 files (many threads taking turns);
- **overwrite**: ``pwrite`` into bytes already written and synced, then ``fdatasync``;
- **SQLite commit**: an ``INSERT`` of a blob of that size, committed, in WAL mode with
  ``synchronous=FULL`` (Python's default, as SqliteSaver leaves it).

Results in ``results/sync_cost.{json,md}``. The benchmark agent's turn makes 9 durable
writes with either saver (``strace -c``; see docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Table, summary, write_results

NAME = "sync_cost"
CASES = ("append", "append, 200 files in turn", "overwrite", "SQLite commit")


class Case:
    """One way of making ``size``-byte writes durable, ready to time one write at a time."""

    def __init__(self, name: str, folder: Path, size: int, writes: int) -> None:
        self.name = name
        self.data = b"x" * (size - 1) + b"\n"
        self.i = 0
        self.fds: list[int] = []
        self.db: sqlite3.Connection | None = None
        if name == "append":
            self.fds = [os.open(folder / "append.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)]
        elif name.startswith("append, "):
            self.fds = [os.open(folder / f"rr-{k}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                        for k in range(200)]
        elif name == "overwrite":
            fd = os.open(folder / "over.log", os.O_RDWR | os.O_CREAT, 0o600)
            os.write(fd, b"\0" * (size * writes))
            os.fsync(fd)
            self.fds = [fd]
        else:
            self.db = sqlite3.connect(folder / "commits.sqlite")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
            self.db.commit()

    def write(self) -> float:
        i, self.i = self.i, self.i + 1
        t0 = time.perf_counter()
        if self.db is not None:
            self.db.execute("INSERT INTO t (v) VALUES (?)", (self.data,))
            self.db.commit()
        elif self.name == "overwrite":
            os.pwrite(self.fds[0], self.data, i * len(self.data))
            os.fdatasync(self.fds[0])
        else:
            fd = self.fds[i % len(self.fds)]
            os.write(fd, self.data)
            os.fdatasync(fd)
        return time.perf_counter() - t0

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        if self.db is not None:
            self.db.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", help="a folder on the file system to measure (default: $TMPDIR)")
    p.add_argument("--writes", type=int, default=6000, help="durable writes per case")
    p.add_argument("--bytes", type=int, default=700, help="bytes per write")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds (writes split among them)")
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sync-cost-", dir=args.dir))
    times: dict[str, list[float]] = {name: [] for name in CASES}
    try:
        cases = [Case(name, folder, args.bytes, args.writes) for name in CASES]
        per_round = args.writes // args.rounds
        for _ in range(args.rounds):
            for case in cases:
                times[case.name].extend(case.write() for _ in range(per_round))
        for case in cases:
            case.close()
        fs = os.statvfs(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    table = Table()
    label = f"{args.bytes}-byte writes made durable, {args.writes} per case"
    results: dict[str, Any] = {}
    for name in CASES:
        s = results[name] = summary(times[name])
        if name == "SQLite commit":  # the ratio column's baseline
            table.add(label, "time per durable write", "sqlite", s, "s",
                      note="not the saver: a bare INSERT + COMMIT, WAL, synchronous=FULL")
        else:
            table.add(label, "time per durable write", f"{name} + fdatasync", s, "s")
    results["block_size"] = fs.f_bsize
    notes = [
        f"Folder measured: a temporary folder under {args.dir or tempfile.gettempdir()} "
        f"(file system block size {fs.f_bsize}).",
        "Ratios are to the SQLite commit (WAL mode, synchronous=FULL), the comparator of "
        "SqliteSaver's puts.",
    ]
    write_results(NAME, results, table, notes=notes,
                  header="What one durable write costs the file system: an append made durable, "
                         "an overwrite, a SQLite commit (see the script's docstring).")
    for line in table.markdown().splitlines():
        print(line)


if __name__ == "__main__":
    main()
