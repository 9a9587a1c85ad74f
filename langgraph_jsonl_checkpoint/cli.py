"""``langgraph-jsonl``: inspect, verify, repair and compact a store from the shell.

A thin layer over :mod:`.maintenance` and the saver; every command takes the store
directory first. Examples::

    langgraph-jsonl threads ./checkpoints
    langgraph-jsonl verify ./checkpoints
    langgraph-jsonl verify ./checkpoints --thread t-1
    langgraph-jsonl repair ./checkpoints --thread t-1
    langgraph-jsonl compact ./checkpoints
    langgraph-jsonl compact ./checkpoints --thread t-1 --keep-latest

Exit status: 0 when all is well, 1 when a command found problems (a damaged thread,
``verify`` findings), 2 on bad usage or an error (printed without a traceback). One bad
thread is reported and the others are still served. Thread ids holding control
characters (a newline, say) are printed as JSON strings, so one id stays one row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from . import __version__
from .disk.store import MARKER
from .errors import JsonlCheckpointError
from .maintenance.repair import repair
from .maintenance.verify import verify
from .saver.jsonl_saver import JsonlSaver

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A command was given something it cannot work on (exit status 2)."""


def shown(text: str) -> str:
    """A thread id (or other text) for one line of output: as it is when printable,
    else as a JSON string literal (a newline or tab would split a row)."""
    if text and text.isprintable() and text.strip() == text:
        return text
    return json.dumps(text, ensure_ascii=False)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n", 1)[0]


@contextmanager
def _saver(store: str, *, write: bool = False) -> Iterator[JsonlSaver]:
    """Open an existing store (a typo must not create one), closed when done."""
    if not os.path.isfile(os.path.join(store, MARKER)):
        raise UsageError(
            f"{store} is not a langgraph-jsonl-checkpoint store (no {MARKER} in it). "
            "Pass the directory given to JsonlSaver(...)."
        )
    saver = JsonlSaver(store, read_only=not write)
    try:
        yield saver
    finally:
        saver.close()


def _known_thread(saver: JsonlSaver, thread_id: str) -> str:
    if not saver.store.has_thread(thread_id):
        raise UsageError(
            f"store {saver.store.path} has no thread {shown(thread_id)}; "
            f"`langgraph-jsonl threads {saver.store.path}` lists its threads."
        )
    return thread_id


def _threads(args: argparse.Namespace) -> int:
    status = EXIT_OK
    with _saver(args.store) as saver:
        for entry in saver.store.catalog():
            if entry.thread_id is None:
                print(f"{shown(os.path.basename(entry.path))}\tdamaged: {_first_line(entry.error)}")
                status = EXIT_PROBLEMS
                continue
            try:
                idx = saver.store.thread_log(entry.thread_id).refresh()
            except JsonlCheckpointError as exc:
                print(f"{shown(entry.thread_id)}\tdamaged: {_first_line(exc)}")
                status = EXIT_PROBLEMS
                continue
            count = sum(len(ids) for ids in idx.ordered_ids.values())
            latest = max((ids[-1] for ids in idx.ordered_ids.values() if ids), default="-")
            print(f"{shown(entry.thread_id)}\t{count} checkpoints\tlatest {latest}")
    return status


def _verify(args: argparse.Namespace) -> int:
    with _saver(args.store) as saver:
        threads = [_known_thread(saver, args.thread)] if args.thread else None
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
    with _saver(args.store, write=True) as saver:
        result = repair(saver, _known_thread(saver, args.thread))
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
    with _saver(args.store, write=True) as saver:
        if args.thread:
            threads = [_known_thread(saver, args.thread)]
        else:
            threads = []
            for entry in saver.store.catalog():
                if entry.thread_id is None:
                    print(f"file {entry.path}: skipped: {_first_line(entry.error)}", file=sys.stderr)
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
                print(f"thread {tid!r}: skipped: {_first_line(exc)}", file=sys.stderr)
                status = EXIT_PROBLEMS
                continue
            total_before += before
            total_after += after
            print(f"thread {tid!r}: {before} -> {after} bytes")
    print(f"compacted: {total_before} -> {total_after} bytes")
    return status


EXIT_STATUS_HELP = (
    "exit status: 0 all is well; 1 problems found (a damaged thread, verify findings); "
    "2 bad usage or an error"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (documented commands; tests check each has help)."""
    parser = argparse.ArgumentParser(
        prog="langgraph-jsonl",
        description="Inspect, verify, repair and compact a JsonlSaver store.",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("threads", help="list threads with their checkpoint counts",
                       description="List threads. Example: langgraph-jsonl threads ./checkpoints",
                       epilog=EXIT_STATUS_HELP)
    p.add_argument("store")
    p.set_defaults(run=_threads)
    p = sub.add_parser(
        "verify",
        help="check checksums, sequence numbers, deltas and snapshot hashes (read-only)",
        description="Check a store without changing it. Example: "
        "langgraph-jsonl verify ./checkpoints --thread t-1",
        epilog=EXIT_STATUS_HELP,
    )
    p.add_argument("store")
    p.add_argument("--thread", help="check only this thread id")
    p.set_defaults(run=_verify)
    p = sub.add_parser("repair", help="archive a damaged log, then keep every record that can still be read",
                       description="Repair one thread's log: the original is copied to "
                       "<store>/archive/ first; damaged lines, an unfinished final batch and "
                       "checkpoints whose values were in them are dropped, each listed. Example: "
                       "langgraph-jsonl repair ./checkpoints --thread t-1", epilog=EXIT_STATUS_HELP)
    p.add_argument("store")
    p.add_argument("--thread", required=True, help="the thread id to repair")
    p.set_defaults(run=_repair)
    p = sub.add_parser("compact", help="rewrite logs without superseded records (same answers)",
                       description="Rewrite thread logs atomically without snapshots, retried "
                       "or replaced writes and duplicates; every checkpoint stays unless "
                       "--keep-latest. Example: langgraph-jsonl compact ./checkpoints",
                       epilog=EXIT_STATUS_HELP)
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
    except (JsonlCheckpointError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
