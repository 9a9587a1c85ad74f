"""``langgraph-jsonl threads``: one row per thread, with its status.

Examples::

    langgraph-jsonl threads ./checkpoints
    langgraph-jsonl threads ./checkpoints --status waiting --sort updated
    langgraph-jsonl threads --since 2h --json        # store from $LANGGRAPH_JSONL_STORE
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime

from ..disk.store import ThreadFile
from ..inspection.checkpoints import StoreReader
from ..inspection.listing import listed_summaries
from ..inspection.status import DAMAGED, INTERRUPTED, RUNNING, STATUSES, WAITING
from ..inspection.threads import (
    SORT_KEYS,
    ThreadSummary,
    first_page,
    logless_runs,
    reads_first_page_only,
    select_threads,
    summary_of,
)
from ..inspection.times import parse_since, shown_time
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    UsageError,
    add_store_argument,
    count_argument,
    damage_stated_per_thread,
    describe,
    open_store,
    print_json,
    print_table,
    serde_of,
    shown,
    shown_id,
)
from .progress import progress


def size_text(n: int) -> str:
    """Bytes for people: ``812 B``, ``12.3 KiB``, ``4.0 MiB``."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def since_argument(text: str | None) -> datetime | None:
    """``--since`` read, or a usage error naming what is accepted."""
    if text is None:
        return None
    try:
        return parse_since(text)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from None


def detail(s: ThreadSummary) -> str:
    """The last column: what is waiting, what is left to run, or what is wrong."""
    if s.status == WAITING:
        return "waiting for: " + ", ".join(s.waiting_for)
    if s.status == DAMAGED:
        return s.problem or ""
    if s.status == RUNNING and s.run:
        who = f"run by pid {s.run.get('pid')} since {s.run.get('since')}"
        return f"{who}; next: " + (", ".join(s.next) or "-")
    if s.status == INTERRUPTED:
        text = "next: " + ", ".join(s.next)
        return text + (f"; failed: {s.problem}" if s.problem else "")
    return ""


def _threads(args: argparse.Namespace) -> int:
    since = since_argument(args.since)
    with damage_stated_per_thread():  # a damaged thread's row says so
        summaries, store_path = _summaries(args, since)
    damaged = any(s.status == DAMAGED for s in summaries)
    try:
        rows = select_threads(summaries, status=args.status, since=since, sort=args.sort, limit=args.limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json([s.as_json() for s in rows], plain=True)  # as_json: plain JSON by construction
    elif not rows:  # a sentence, not a header over nothing (as `archived` does)
        print(_none_listed(args, summaries, store_path))
    else:
        print_table(
            ["THREAD", "STATUS", "CHECKPOINTS", "CREATED", "UPDATED", "SIZE", "DETAIL"],
            [
                [
                    shown_id(s.thread_id if s.thread_id is not None else s.path.rsplit("/", 1)[-1]),
                    s.status, str(s.checkpoints), shown_time(s.created_at), shown_time(s.updated_at),
                    size_text(s.size), shown(detail(s).split("\n", 1)[0]) if detail(s) else "",
                ]
                for s in rows
            ],
        )
    return EXIT_PROBLEMS if damaged else EXIT_OK


def _none_listed(args: argparse.Namespace, summaries: list[ThreadSummary], store_path: str) -> str:
    """What ``threads`` says when it lists no row: that the store has no thread, or
    that none matches the filters given, with how many threads of each status it has."""
    if args.limit == 0:  # the first page of no rows: the store is not read
        return "--limit 0 lists no thread"
    if not summaries:
        return f"no threads in store {store_path}"
    given = [f"--status {s}" for s in args.status or ()]
    given += [f"--since {args.since}"] if args.since is not None else []
    counts = [f"{sum(s.status == status for s in summaries)} {status}" for status in STATUSES
              if any(s.status == status for s in summaries)]
    return (f"no thread matches {' '.join(given)}; the store has {len(summaries)} thread(s): "
            + ", ".join(counts))


def _summaries(args: argparse.Namespace, since: datetime | None) -> tuple[list[ThreadSummary], str]:
    """Every thread's row (or the first page's), each log read once; and the store's path."""
    # Logs are read through the store alone, never a saver: a saver imports LangGraph's
    # graph runtime, most of a second of a fresh process.
    reader = StoreReader(open_store(args), serde_of(args))
    store_path = str(reader.store.path)
    try:
        if reads_first_page_only(status=args.status, since=since, sort=args.sort, limit=args.limit):
            page = first_page(reader, status=args.status, since=since, sort=args.sort, limit=args.limit) or []
            summaries = list(progress((summary_of(reader, e) for e in page), total=len(page), what="threads"))
            summaries += logless_runs(reader.store)  # sorted in and cut with the page's rows
        else:
            # Every row, from the listing cache where a log did not change.

            def summarise(logs: list[ThreadFile]) -> Iterator[ThreadSummary]:
                for entry in progress(logs, total=len(logs), what="threads") if logs else ():
                    yield summary_of(reader, entry)

            summaries = listed_summaries(reader.store, summarise)
    finally:
        reader.store.close()
    return summaries, store_path


def define_threads(p: argparse.ArgumentParser) -> None:
    """``threads``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description=(
            "List the store's threads, one row each: id, checkpoints (all namespaces), "
            "when its first and latest checkpoints were made (UTC), bytes on disk, and its "
            "status: done; running (a run holds the thread now, in a process alive on this "
            "host); interrupted (tasks left to run and no run going: a crash, a failed node, "
            "a breakpoint); waiting (an interrupt() waits for an "
            "answer, with its type, e.g. uncertain_tool_calls); damaged (the log cannot "
            "be read whole; see `langgraph-jsonl verify`); empty (no checkpoint). Reads "
            "each log's index and two records, never the whole conversation; with --limit, "
            "sorted by id or size and no --status or --since, only the threads shown are read "
            "(and the exit status covers those)."
        ),
        examples=[
            "langgraph-jsonl threads ./checkpoints",
            "langgraph-jsonl threads ./checkpoints --status waiting --status interrupted",
            "langgraph-jsonl threads ./checkpoints --since 2h --sort updated --limit 20",
        ],
        json_shape=(
            "a list of {thread_id, status, checkpoints, created_at, updated_at, size, latest, "
            "next, waiting_for, problem, run: {pid, host, run, since, thread_id} | null, path}; "
            "a thread a run holds before its first checkpoint is stored (durability=\"exit\") "
            "is running with 0 checkpoints, no times, and the path of its log (which it may not have yet)"
        ),
    )
    add_store_argument(p)
    p.add_argument("--status", action="append", choices=STATUSES,
                   help="only threads with this status (repeat for several)")
    p.add_argument("--since", help="only threads updated since then: 30m, 2h, 7d, or a date/time")
    p.add_argument("--sort", default="id", choices=SORT_KEYS,
                   help="order: id (default, ascending); updated, created, size, checkpoints: "
                   "newest/largest first; status: grouped")
    p.add_argument("--limit", type=count_argument, help="at most this many rows (after sorting); with --sort "
                   "id or size and no filter, only those threads are read")
    p.set_defaults(run=_threads)
