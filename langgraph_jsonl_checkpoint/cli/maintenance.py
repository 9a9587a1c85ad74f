"""``langgraph-jsonl`` commands that look after a store: threads, verify, repair, compact.

Examples::

    langgraph-jsonl threads ./checkpoints
    langgraph-jsonl verify ./checkpoints --thread t-1
    langgraph-jsonl repair ./checkpoints --thread t-1
    langgraph-jsonl compact ./checkpoints --thread t-1 --keep-latest
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import JsonlCheckpointError
from ..maintenance.repair import repair
from ..maintenance.verify import verify
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_STATUS_HELP,
    add_store_argument,
    first_line,
    known_thread,
    open_saver,
    shown,
)


def _threads(args: argparse.Namespace) -> int:
    status = EXIT_OK
    with open_saver(args) as saver:
        for entry in saver.store.catalog():
            if entry.thread_id is None:
                print(f"{shown(os.path.basename(entry.path))}\tdamaged: {first_line(entry.error)}")
                status = EXIT_PROBLEMS
                continue
            try:
                idx = saver.store.thread_log(entry.thread_id).refresh()
            except JsonlCheckpointError as exc:
                print(f"{shown(entry.thread_id)}\tdamaged: {first_line(exc)}")
                status = EXIT_PROBLEMS
                continue
            count = sum(len(ids) for ids in idx.ordered_ids.values())
            latest = max((ids[-1] for ids in idx.ordered_ids.values() if ids), default="-")
            print(f"{shown(entry.thread_id)}\t{count} checkpoints\tlatest {latest}")
    return status


def _verify(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        threads = [known_thread(saver, args.thread)] if args.thread else None
        report = verify(saver, threads)
    for f in report.findings:
        where = f" at byte {f.offset}" if f.offset is not None else ""
        who = f"thread {f.thread_id!r}" if f.thread_id is not None else "file"
        print(f"PROBLEM {who}: {f.path}{where}: {f.problem}")
    print(
        f"checked {report.threads} thread(s), {report.records} record(s), "
        f"{report.snapshots_checked} snapshot hash(es): "
        + ("ok" if report.ok else f"{len(report.findings)} problem(s)")
    )
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _repair(args: argparse.Namespace) -> int:
    with open_saver(args, write=True) as saver:
        result = repair(saver, known_thread(saver, args.thread))
    name = repr(args.thread)
    if result.archived_to is None:
        print(f"thread {name}: nothing to repair")
    else:
        for line in result.dropped:
            print(f"dropped {line}")
        print(
            f"thread {name}: kept {result.kept_records} records ({result.kept_bytes} "
            f"bytes), dropped {len(result.dropped)}; the original is in {result.archived_to}"
        )
    return EXIT_OK


def _compact(args: argparse.Namespace) -> int:
    status = EXIT_OK
    total_before = total_after = 0
    with open_saver(args, write=True) as saver:
        if args.thread:
            threads = [known_thread(saver, args.thread)]
        else:
            threads = []
            for entry in saver.store.catalog():
                if entry.thread_id is None:
                    print(f"file {entry.path}: skipped: {first_line(entry.error)}", file=sys.stderr)
                    status = EXIT_PROBLEMS
                else:
                    threads.append(entry.thread_id)
        for tid in threads:
            try:
                if args.keep_latest:
                    before = saver.store.thread_log(tid).refresh().committed_end
                    saver.prune([tid])
                    after = saver.store.thread_log(tid).refresh().committed_end
                else:
                    before, after = saver.compact(tid)
            except JsonlCheckpointError as exc:
                print(f"thread {tid!r}: skipped: {first_line(exc)}", file=sys.stderr)
                status = EXIT_PROBLEMS
                continue
            total_before += before
            total_after += after
            print(f"thread {tid!r}: {before} -> {after} bytes")
    print(f"compacted: {total_before} -> {total_after} bytes")
    return status


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this module's commands to the parser."""
    p = sub.add_parser("threads", help="list threads with their checkpoint counts",
                       description="List threads. Example: langgraph-jsonl threads ./checkpoints",
                       epilog=EXIT_STATUS_HELP)
    add_store_argument(p)
    p.set_defaults(run=_threads)
    p = sub.add_parser("verify",
                       help="check checksums, sequence numbers, deltas and snapshot hashes (read-only)",
                       description="Check a store without changing it. Example: "
                       "langgraph-jsonl verify ./checkpoints --thread t-1", epilog=EXIT_STATUS_HELP)
    add_store_argument(p)
    p.add_argument("--thread", help="check only this thread id")
    p.set_defaults(run=_verify)
    p = sub.add_parser("repair", help="archive a damaged log, then keep every record that can still be read",
                       description="Repair one thread's log: the original is copied to "
                       "<store>/archive/ first; damaged lines, an unfinished final batch and "
                       "checkpoints whose values were in them are dropped, each listed. Example: "
                       "langgraph-jsonl repair ./checkpoints --thread t-1", epilog=EXIT_STATUS_HELP)
    add_store_argument(p)
    p.add_argument("--thread", required=True, help="the thread id to repair")
    p.set_defaults(run=_repair)
    p = sub.add_parser("compact", help="rewrite logs without superseded records (same answers)",
                       description="Rewrite thread logs atomically without snapshots, retried "
                       "or replaced writes and duplicates; every checkpoint stays unless "
                       "--keep-latest. Example: langgraph-jsonl compact ./checkpoints",
                       epilog=EXIT_STATUS_HELP)
    add_store_argument(p)
    p.add_argument("--thread", help="compact only this thread id")
    p.add_argument("--keep-latest", action="store_true",
                   help="also drop old checkpoints: keep the latest per namespace (prune)")
    p.set_defaults(run=_compact)
