"""``langgraph-jsonl``: inspect, verify, repair and compact a store from the shell.

A thin layer over :mod:`.maintenance` and the saver; every command takes the store
directory first. Examples::

    langgraph-jsonl threads ./checkpoints
    langgraph-jsonl verify ./checkpoints
    langgraph-jsonl verify ./checkpoints --thread t-1
    langgraph-jsonl repair ./checkpoints --thread t-1
    langgraph-jsonl compact ./checkpoints
    langgraph-jsonl compact ./checkpoints --thread t-1 --keep-latest

Exit status: 0 when all is well, 1 when ``verify`` found problems, 2 on bad usage or an
error (printed without a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import JsonlCheckpointError
from .maintenance import repair, verify
from .saver import JsonlSaver


def _threads(args: argparse.Namespace) -> int:
    saver = JsonlSaver(args.store, read_only=True)
    for tid in saver.store.thread_ids():
        idx = saver.store.thread_log(tid).refresh()
        count = sum(len(ids) for ids in idx.ordered_ids.values())
        latest = max((ids[-1] for ids in idx.ordered_ids.values() if ids), default="-")
        print(f"{tid}\t{count} checkpoints\tlatest {latest}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    saver = JsonlSaver(args.store, read_only=True)
    report = verify(saver, [args.thread] if args.thread else None)
    for f in report.findings:
        where = f" at byte {f.offset}" if f.offset is not None else ""
        print(f"PROBLEM thread {f.thread_id!r}: {f.path}{where}: {f.problem}")
    print(
        f"checked {report.threads} thread(s), {report.records} record(s), "
        f"{report.snapshots_checked} snapshot hash(es): "
        + ("ok" if report.ok else f"{len(report.findings)} problem(s)")
    )
    return 0 if report.ok else 1


def _repair(args: argparse.Namespace) -> int:
    saver = JsonlSaver(args.store)
    result = repair(saver, args.thread)
    if result.archived_to is None:
        print(f"thread {args.thread!r}: nothing to repair")
    else:
        for line in result.dropped:
            print(f"dropped {line}")
        print(
            f"thread {args.thread!r}: kept {result.kept_records} records ({result.kept_bytes} "
            f"bytes), dropped {len(result.dropped)}; the original is in {result.archived_to}"
        )
    return 0


def _compact(args: argparse.Namespace) -> int:
    saver = JsonlSaver(args.store)
    total_before = total_after = 0
    for tid in [args.thread] if args.thread else list(saver.store.thread_ids()):
        if args.keep_latest:
            before = saver.store.thread_log(tid).refresh().committed_end
            saver.prune([tid])
            after = saver.store.thread_log(tid).refresh().committed_end
        else:
            before, after = saver.compact(tid)
        total_before += before
        total_after += after
        print(f"thread {tid!r}: {before} -> {after} bytes")
    print(f"compacted: {total_before} -> {total_after} bytes")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (documented commands; tests check each has help)."""
    parser = argparse.ArgumentParser(
        prog="langgraph-jsonl",
        description="Inspect, verify, repair and compact a JsonlSaver store."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("threads", help="list threads with their checkpoint counts",
                       description="List threads. Example: langgraph-jsonl threads ./checkpoints")
    p.add_argument("store")
    p.set_defaults(run=_threads)
    p = sub.add_parser("verify", help="check checksums, sequence numbers and snapshot hashes (read-only)",
                       description="Check a store without changing it. Example: "
                       "langgraph-jsonl verify ./checkpoints --thread t-1")
    p.add_argument("store")
    p.add_argument("--thread", help="check only this thread id")
    p.set_defaults(run=_verify)
    p = sub.add_parser("repair", help="archive a damaged log, then keep its valid prefix",
                       description="Repair one thread's log. Example: "
                       "langgraph-jsonl repair ./checkpoints --thread t-1")
    p.add_argument("store")
    p.add_argument("--thread", required=True, help="the thread id to repair")
    p.set_defaults(run=_repair)
    p = sub.add_parser("compact", help="rewrite logs without superseded records (same answers)",
                       description="Rewrite thread logs atomically without snapshots, retried "
                       "or replaced writes and duplicates; every checkpoint stays unless "
                       "--keep-latest. Example: langgraph-jsonl compact ./checkpoints")
    p.add_argument("store")
    p.add_argument("--thread", help="compact only this thread id")
    p.add_argument("--keep-latest", action="store_true",
                   help="also drop old checkpoints: keep the latest per namespace (prune)")
    p.set_defaults(run=_compact)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except JsonlCheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
