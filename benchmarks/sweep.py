"""Retention over a store of 10,000 threads: how long a sweep takes, and what archiving
saves on disk.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/sweep.py              # 10,000 threads, about 3 minutes
    python benchmarks/sweep.py --quick      # 1,000 threads

The store: one agent conversation of five turns (the benchmark agent, 500-character
answers, about 20 checkpoints) copied into every thread with ``copy_thread``; 1% of the
threads pinned; half the threads idle for eight days (their logs' modification time).
Each case runs on a fresh copy of that store, with a 7-day TTL:

- ``scan, none expired``: ``sweep(dry_run=True)`` with a TTL nothing reaches: the cost
  of looking (one ``stat`` per thread);
- ``dry run``: half expired: their headers read, pinned ones recognised;
- ``delete`` / ``keep_latest`` / ``archive``: the sweep that changes them;
- ``restore``: 100 archived threads brought back, time per thread.

The same-run reference is SqliteSaver holding the same 10,000 threads (copied inside
the database), and what an app does there today: ``delete_thread`` for each expired
thread id it already knows (finding them is extra work, not timed: SQLite stores no
per-thread activity time). The bytes rows compare the archive with the logs it replaced
and with gzip (level 6) of the same logs.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint import JsonlSaver

from _common import Table, build_agent_graph, path_bytes, user_message, write_results

NAME = "sweep"
DAY = 24 * 3600.0
TTL = {"default_ttl": 7 * 24 * 60}


def fill_jsonl(path: Path, threads: int) -> tuple[list[str], list[str]]:
    """The store; returns (expired ids, fresh ids)."""
    with JsonlSaver(path) as saver:
        graph = build_agent_graph(saver)
        for template, metadata in (("template", {}), ("template-pinned", {"pinned": True})):
            for turn in range(5):
                graph.invoke({"messages": [user_message(7, turn)]},
                             {"configurable": {"thread_id": template}, "metadata": metadata})
        ids = [f"thread-{i:05d}" for i in range(threads)]
        for i, tid in enumerate(ids):
            saver.copy_thread("template-pinned" if i % 100 == 0 else "template", tid)
        for template in ("template", "template-pinned"):
            saver.delete_thread(template)
        idle = time.time() - 8 * DAY
        for tid in ids[::2]:
            os.utime(saver.store.thread_log(tid).path, (idle, idle))
    return ids[::2], ids[1::2]


def fill_sqlite(path: Path, ids: list[str]) -> None:
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = build_agent_graph(saver)
        for turn in range(5):
            graph.invoke({"messages": [user_message(7, turn)]}, {"configurable": {"thread_id": "template"}})
    conn = sqlite3.connect(path)
    with conn:
        for tid in ids:
            conn.execute("INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, "
                         "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                         "WHERE thread_id = ?", (tid, "template"))
            conn.execute("INSERT INTO writes SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, "
                         "idx, channel, type, value FROM writes WHERE thread_id = 'template'", (tid,))
        conn.execute("DELETE FROM checkpoints WHERE thread_id = 'template'")
        conn.execute("DELETE FROM writes WHERE thread_id = 'template'")
    conn.close()


def timed_sweep(base: Path, work: Path, name: str, **kwargs) -> tuple[float, JsonlSaver, object]:
    store = work / name
    shutil.copytree(base, store)
    saver = JsonlSaver(store)
    started = time.perf_counter()
    report = saver.sweep(**kwargs)
    return time.perf_counter() - started, saver, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 threads")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tmp", default=None, help="where the stores go (default $TMPDIR)")
    args = parser.parse_args()
    n = args.threads or (1_000 if args.quick else 10_000)
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-", dir=args.tmp))
    table = Table()
    raw: dict[str, object] = {"threads": n}
    try:
        base = work / "base"
        started = time.perf_counter()
        expired, fresh = fill_jsonl(base, n)
        print(f"filled {n} threads in {time.perf_counter() - started:.1f} s")
        log_bytes = sum(p.stat().st_size for p in (base / "threads").glob("*.jsonl"))
        raw["log_bytes"] = log_bytes

        secs, saver, report = timed_sweep(base, work, "scan", ttl={**TTL, "default_ttl": 365 * 24 * 60},
                                          dry_run=True)
        assert report.active == n, report
        table.add(f"{n:,} threads, none expired", "scan (dry run)", "jsonl", secs, "s")
        saver.close()
        secs, saver, report = timed_sweep(base, work, "dry", ttl={**TTL, "strategy": "delete"}, dry_run=True)
        assert len(report.swept) + len(report.pinned) == len(expired), report
        table.add(f"{n:,} threads, half expired", "dry run", "jsonl", secs, "s")
        saver.close()
        for strategy in ("delete", "keep_latest", "archive"):
            secs, saver, report = timed_sweep(base, work, strategy, ttl={**TTL, "strategy": strategy})
            swept = len(report.swept)
            assert swept + len(report.pinned) == len(expired) and not report.errors, report
            case = f"{n:,} threads, half expired"
            table.add(case, f"sweep {strategy} ({swept:,} threads)", "jsonl", secs, "s")
            table.add(f"{n:,} threads, half expired", f"sweep {strategy}, per thread", "jsonl",
                      secs / swept * 1000, "ms")
            raw[f"bytes_after_{strategy}"] = path_bytes(work / strategy / "threads") + (
                path_bytes(work / strategy / "archive") if (work / strategy / "archive").exists() else 0
            )
            if strategy == "archive":
                archived = saver.archived()
                zst = sum(a.size for a in archived)
                moved = {a.thread_id for a in archived}
                raw_logs = [p for p in (base / "threads").glob("*.jsonl")
                            if saver.store.thread_id_at(str(p)) in moved]
                plain = sum(p.stat().st_size for p in raw_logs)
                gz = sum(len(gzip.compress(p.read_bytes(), 6)) for p in raw_logs)
                table.add("archived logs", "bytes: logs / zstd archive", "jsonl", plain / zst, "×")
                table.add("archived logs", "bytes: gzip-6 / zstd archive", "jsonl", gz / zst, "×")
                raw.update(archived_log_bytes=plain, zstd_bytes=zst, gzip6_bytes=gz)
                started = time.perf_counter()
                for a in archived[:100]:
                    saver.restore(a.thread_id)
                table.add("restore", "per thread (100 threads)", "jsonl",
                          (time.perf_counter() - started) / min(100, len(archived)) * 1000, "ms")
            saver.close()
            shutil.rmtree(work / strategy)

        db = work / "sqlite.db"
        fill_sqlite(db, expired + fresh)
        bytes_before = path_bytes(db)
        with SqliteSaver.from_conn_string(str(db)) as sq:
            doomed = [t for i, t in enumerate(expired) if (2 * i) % 100 != 0]  # not the pinned ones
            started = time.perf_counter()
            for tid in doomed:
                sq.delete_thread(tid)
            secs = time.perf_counter() - started
        table.add(f"{n:,} threads, half expired", f"delete_thread of each expired ({len(doomed):,} threads)",
                  "sqlite", secs, "s")
        table.add(f"{n:,} threads, half expired", "sweep delete, per thread", "sqlite",
                  secs / len(doomed) * 1000, "ms", note="delete_thread per known id")
        raw.update(sqlite_bytes_before=bytes_before, sqlite_bytes_after_delete=path_bytes(db))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    notes = [
        f"Logs of all {n:,} threads: {raw['log_bytes'] / 2**20:.1f} MiB; after the archive sweep "
        f"{raw['bytes_after_archive'] / 2**20:.1f} MiB (threads/ + archive/); after delete "
        f"{raw['bytes_after_delete'] / 2**20:.1f} MiB; "
        "after keep_latest "
        f"{raw['bytes_after_keep_latest'] / 2**20:.1f} MiB.",
        f"SQLite file with the same threads: {raw['sqlite_bytes_before'] / 2**20:.1f} MiB; after deleting "
        f"the expired threads {raw['sqlite_bytes_after_delete'] / 2**20:.1f} MiB (SQLite reuses the pages; "
        "the file shrinks only with VACUUM).",
        "One sample per case (a sweep of thousands of threads is its own average); the machine is shared.",
    ]
    command = "python benchmarks/sweep.py" + (" --quick" if args.quick else "")
    header = __doc__.split("\n\n")[0] + f"\n\nCommand: `{command}`"
    _, md = write_results(NAME, {"raw": raw}, table, header=header, notes=notes, quick=args.quick)
    print(md.read_text())


if __name__ == "__main__":
    main()
