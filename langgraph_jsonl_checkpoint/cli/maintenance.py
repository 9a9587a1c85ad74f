"""``langgraph-jsonl`` commands that look after a store: verify, repair, compact.

Examples::

    langgraph-jsonl verify ./checkpoints --thread t-1
    langgraph-jsonl repair ./checkpoints --thread t-1
    langgraph-jsonl compact ./checkpoints --thread t-1 --keep-latest
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

from ..errors import JsonlCheckpointError
from ..maintenance.compaction import CompactInterrupted, Compaction, compact_log, preview
from ..maintenance.repair import RepairInterrupted, repair
from ..maintenance.verify import verify
from ..memory.keeper import memory_file_problems
from ..saver.config import healing
from ..saver.heads import head_file_problems
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    StoppedSaying,
    add_dry_run_accepted,
    add_store_argument,
    damage_stated_per_thread,
    describe,
    first_line,
    known_thread,
    open_saver,
    print_json,
    thread_option,
    work_done,
)
from .progress import progress


def _verify(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        threads = [known_thread(saver, args.thread)] if args.thread else None
        count = 1 if args.thread else len(saver.store.log_names())
        memory_check = partial(memory_file_problems, codec=saver.codec)
        head_check = partial(head_file_problems, codec=saver.codec)
        report = verify(saver, threads, track=lambda ids: progress(ids, total=count, what="threads"),
                        derived=[memory_check, head_check])
    work_done()
    if args.json:
        print_json({
            "ok": report.ok, "threads": report.threads, "records": report.records,
            "snapshots_checked": report.snapshots_checked,
            "findings": [vars(f) for f in report.findings],
        })
        return EXIT_OK if report.ok else EXIT_PROBLEMS
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
    started, result = False, None
    try:
        with open_saver(args, write=not args.dry_run) as saver:
            thread = thread_option(args, "verify", "damaged threads")
            try:
                started = True
                result = repair(saver, known_thread(saver, thread), dry_run=args.dry_run)
            except RepairInterrupted as exc:  # the repaired log is in place: the work is done
                result = exc.result
    except KeyboardInterrupt as exc:  # the damaged log is still in place
        if args.dry_run or isinstance(exc, StoppedSaying) or result is not None:
            raise  # (the repair done: a Ctrl-C as the store closes is said as usual)
        raise _not_repaired(args.thread, started) from None
    work_done()
    if args.json:
        print_json(vars(result))
        return EXIT_PROBLEMS if result.dry_run and result.dropped else EXIT_OK
    name = repr(args.thread)
    if not result.dropped:
        print(f"thread {name}: nothing to repair")
    elif result.dry_run:
        for line in result.dropped:
            print(f"would drop {line}")
        print(
            f"thread {name}: a repair would keep {result.kept_records} records (about "
            f"{result.kept_bytes} bytes) and drop {len(result.dropped)}; nothing was changed "
            "(--dry-run)"
        )
        return EXIT_PROBLEMS
    else:
        for line in result.dropped:
            print(f"dropped {line}")
        print(
            f"thread {name}: kept {result.kept_records} records ({result.kept_bytes} "
            f"bytes), dropped {len(result.dropped)}; the original is in {result.archived_to}"
        )
    return EXIT_OK


def _compacted(saver: Any, thread_id: str, keep_latest: bool) -> Compaction:
    """Compact (or prune) one thread; its sizes and checkpoint counts before and after.

    Raises:
        CompactInterrupted: Ctrl-C once the new log was in place: the thread is done.
    """
    return healing(lambda: compact_log(saver, thread_id, keep_latest=keep_latest))


def _not_repaired(thread: str | None, started: bool) -> StoppedSaying:
    """The line for a Ctrl-C before the repaired log was in place (once the repair had
    started, a copy of the damaged log may be in the archive already)."""
    log = f"the log of thread {thread!r}" if thread else "no log"
    said = (f"{log} is as it was, not repaired" if started else
            f"nothing was changed ({log} is as it was)" if thread else "nothing was changed")
    return StoppedSaying(f"interrupted: langgraph-jsonl repair stopped before it finished; {said}. "
                         "Run it again to repair.")


def _nothing_changed(threads: list[str]) -> StoppedSaying:
    """The line for a Ctrl-C before the first thread's new log was in place."""
    which = f"the log of thread {threads[0]!r} is as it was" if len(threads) == 1 else "no log was compacted"
    return StoppedSaying(f"interrupted: langgraph-jsonl compact stopped before it finished; nothing was "
                         f"changed ({which}). Run it again to compact.")


def _compact(args: argparse.Namespace) -> int:
    status = EXIT_OK
    done: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    would = " (would be)" if args.dry_run else ""

    def skip(thread_id: str | None, path: str, exc: BaseException) -> None:
        skipped.append({"thread_id": thread_id, "path": path, "problem": first_line(exc)})
        if not args.json:
            who = f"thread {thread_id!r}" if thread_id is not None else f"file {path}"
            print(f"{who}: skipped: {first_line(exc)}", file=sys.stderr)

    if not args.dry_run:
        try:  # LangGraph, loaded with the saver (up to a second): a Ctrl-C in it touched nothing
            from ..saver import jsonl_saver  # noqa: F401
        except KeyboardInterrupt:
            raise _nothing_changed([args.thread] if args.thread else []) from None
    # A damaged thread is said once, by its `skipped` line (read-only, --dry-run: the saver too)
    with open_saver(args, write=not args.dry_run) as saver, damage_stated_per_thread():
        if args.thread:
            threads = [known_thread(saver, args.thread)]
        else:
            threads = []
            for entry in saver.store.catalog():
                if entry.thread_id is None:
                    skip(None, entry.path, entry.error or ValueError("unreadable"))
                    status = EXIT_PROBLEMS
                else:
                    threads.append(entry.thread_id)
        for n, tid in enumerate(progress(threads, total=len(threads), what="threads"), start=1):
            stopped = False
            try:
                if args.dry_run:
                    result = preview(saver, tid, keep_latest=args.keep_latest)
                else:
                    result = _compacted(saver, tid, args.keep_latest)
            except CompactInterrupted as exc:  # its new log is in place: this thread is done
                result, stopped = exc.compaction, True
            except KeyboardInterrupt:  # its log is as it was
                if not args.dry_run and not done:
                    raise _nothing_changed(threads) from None
                raise
            except JsonlCheckpointError as exc:
                skip(tid, saver.store.thread_log(tid).path, exc)
                status = EXIT_PROBLEMS
                continue
            if n == len(threads):
                work_done()  # the last thread is done: what is left is saying so
            done.append({"thread_id": tid, **result._asdict()})
            if not args.json:
                dropped = result.checkpoints_before - result.checkpoints_after
                verb = "would drop" if args.dry_run else "dropped"
                gone = f"; {verb} {dropped} of {result.checkpoints_before} checkpoints" if dropped else ""
                print(f"thread {tid!r}: {result.before} -> {result.after} bytes{would}{gone}")
            if stopped and n < len(threads):
                raise KeyboardInterrupt  # threads left to do: stopped part way (said as such)
    work_done()
    total_before = sum(d["before"] for d in done)
    total_after = sum(d["after"] for d in done)
    if args.json:
        print_json({"threads": done, "skipped": skipped, "before": total_before, "after": total_after,
                    "dry_run": args.dry_run})
    elif args.dry_run:
        print(f"would compact: {total_before} -> {total_after} bytes; nothing was changed (--dry-run)")
    else:
        print(f"compacted: {total_before} -> {total_after} bytes")
    return status


def define_verify(p: argparse.ArgumentParser) -> None:
    """``verify``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Check a store without changing it: every record's checksum and sequence "
        "number, each header, that every delta can be rebuilt, and each snapshot's state hash.",
        examples=["langgraph-jsonl verify ./checkpoints",
                  "langgraph-jsonl verify ./checkpoints --thread t-1"],
        json_shape="{ok, threads, records, snapshots_checked, "
        "findings: [{thread_id, path, offset, problem}]}",
    )
    add_store_argument(p)
    p.add_argument("--thread", help="check only this thread id")
    add_dry_run_accepted(p, "verify")
    p.set_defaults(run=_verify)


def define_repair(p: argparse.ArgumentParser) -> None:
    """``repair``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Repair one thread's log: the original is copied to <store>/archive/ "
        "first; damaged lines, an unfinished final batch and checkpoints whose values were "
        "in them are dropped, each listed, and so are records the index says were durable "
        "that a cut log no longer holds. --dry-run lists them and changes nothing (exit "
        "status 1 if a repair would drop anything).",
        examples=["langgraph-jsonl repair ./checkpoints --thread t-1 --dry-run",
                  "langgraph-jsonl repair ./checkpoints --thread t-1"],
        json_shape="{thread_id, archived_to, kept_bytes, dropped_bytes, kept_records, dropped: [str], "
        "dry_run}",
    )
    add_store_argument(p)
    p.add_argument("--thread", help="the thread id to repair (required; `verify` names the damaged ones)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what a repair would drop and keep; change nothing")
    p.set_defaults(run=_repair)


def define_compact(p: argparse.ArgumentParser) -> None:
    """``compact``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Rewrite thread logs atomically without snapshots, retried or replaced "
        "writes and duplicates; every checkpoint stays unless --keep-latest. --dry-run says "
        "what each log would shrink to, and how many checkpoints --keep-latest would drop, "
        "and changes nothing.",
        examples=["langgraph-jsonl compact ./checkpoints --dry-run",
                  "langgraph-jsonl compact ./checkpoints",
                  "langgraph-jsonl compact ./checkpoints --thread t-1 --keep-latest"],
        json_shape="{threads: [{thread_id, before, after, checkpoints_before, checkpoints_after}], "
        "skipped: [{thread_id, path, problem}], before, after, dry_run} (sizes in bytes)",
    )
    add_store_argument(p)
    p.add_argument("--thread", help="compact only this thread id")
    p.add_argument("--keep-latest", action="store_true",
                   help="also drop old checkpoints: keep the latest per namespace (prune)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what compacting would leave; change nothing")
    p.set_defaults(run=_compact)
