"""``langgraph-jsonl import`` and ``copy``: threads between checkpointers (and the
database side of ``export``).

Examples::

    langgraph-jsonl import sqlite:///app.db ./checkpoints
    langgraph-jsonl copy ./checkpoints postgresql://postgres@127.0.0.1:5432/app --setup
    langgraph-jsonl copy postgresql://postgres@127.0.0.1:5432/app ./laptop-copy --threads 'user-*'
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import threading
from functools import partial

from ..migrate.copy import copy_threads
from ..migrate.databases import is_sqlite_file
from ..migrate.report import CopyInterrupted
from ..migrate.urls import is_database_url
from ..saver.config import STORE_ENV
from .common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    UsageError,
    add_serde_option,
    count_argument,
    ctrl_c_stops,
    describe,
    print_json,
    serde_of,
    shown,
    work_done,
)
from .progress import progress

INTERRUPT_HELP = (
    "Ctrl-C stops it once the threads under way reach their next step (exit status 130; "
    "the same command again continues). "
)
ENDPOINTS_HELP = (
    "Endpoints: a store directory (a new one is created as a target; a source is only read: "
    "no lock taken, nothing written, a torn tail left as it is), sqlite:///relative.db "
    "or sqlite:////absolute.db (a SqliteSaver file, its SqliteStore journal if any), "
    "postgresql://user@host:port/database (PostgresSaver, with the replay journal in "
    "PostgresStore in the same database)."
)
COPY_JSON = (
    "{source, target, dry_run, verified, ok, threads, copied: threads something was (would be) put into, "
    "up_to_date: [thread_id] held whole already, refused: [thread_id], incomplete: [thread_id], "
    "checkpoints, present, "
    "writes, journal_records, bytes, creates, needs_setup, unmatched, seconds, "
    "problems: [{thread_id, problem}], "
    "mismatches: [{thread_id, mismatches}], ahead: [{thread_id, checkpoints, writes, journal_records}], "
    "per_thread: [{thread_id, checkpoints, present, writes, journal_records, problem, mismatches, refused, "
    "ahead_checkpoints, ahead_writes, ahead_journal_records, up_to_date}]}"
)


AGAIN = "interrupted; run the same command again to continue"
DRY_AGAIN = "interrupted (a dry run: nothing was written)"


def add_copy_options(parser: argparse.ArgumentParser) -> None:
    """The options every copy takes (``import``, ``copy``, ``export DATABASE``)."""
    parser.add_argument("--threads", nargs="+", metavar="ID", action="extend",
                        help="copy only these thread ids or shell globs ('user-*'); one that matches "
                        "no thread is a problem (exit status 1)")
    parser.add_argument("--dry-run", action="store_true",
                        help="read everything, write and create nothing (no store, file or table): "
                        "report what would be copied and created")
    parser.add_argument("--setup", action="store_true",
                        help="create the target's tables first (the saver's and store's setup())")
    parser.add_argument("--no-verify", action="store_true",
                        help="do not re-read and compare each thread after copying it")
    parser.add_argument("--no-journal", action="store_true",
                        help="leave the replay adapter's tool-call journal behind (a PostgreSQL "
                        "target then needs no PostgresStore tables)")
    parser.add_argument("--workers", type=partial(count_argument, least=1), default=4, metavar="N",
                        help="threads copied at once (default 4)")


def run_copy(args: argparse.Namespace, source: str, target: str) -> int:
    """Copy, print the report (or its JSON); exit 1 when a thread failed or differs, 130
    after Ctrl-C (one line: how far it got; the same command again continues)."""
    stop = threading.Event()
    again = DRY_AGAIN if args.dry_run else AGAIN
    with ctrl_c_stops(stop, again=again):
        try:
            report = copy_threads(
                source, target, threads=args.threads, dry_run=args.dry_run, verify=not args.no_verify,
                journal=not args.no_journal, setup=args.setup, workers=args.workers,
                track=lambda ids: progress(ids, total=len(ids), what="threads"), stop=stop,
                serde=serde_of(args),
            )
            work_done()
        except CopyInterrupted as stopped:
            print(stopped, file=sys.stderr)
            return EXIT_INTERRUPTED
        except KeyboardInterrupt:  # main() called off the main thread: no handler of ours
            print(again, file=sys.stderr)
            return EXIT_INTERRUPTED
    if args.json:
        print_json(report.to_json())
        return EXIT_OK if report.ok else EXIT_PROBLEMS
    for line in report.unreadable + report.unmatched_text():
        print(f"PROBLEM {line}", file=sys.stderr)
    for t in report.problems:
        print(f"PROBLEM thread {shown(t.thread_id)}: {t.problem}", file=sys.stderr)
    for t in report.mismatched:
        for m in t.mismatches:
            print(f"DIFFERS thread {shown(t.thread_id)}: {m}", file=sys.stderr)
    for t in report.ahead:
        print(f"AHEAD thread {shown(t.thread_id)}: {t.ahead_text()}")
    print(report.summary())
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _import(args: argparse.Namespace) -> int:
    store = args.store or os.environ.get(STORE_ENV)
    store = os.path.expanduser(store) if store else store
    if not store:
        raise UsageError(f"name the store directory to import into, or set {STORE_ENV}")
    if is_database_url(store) or (os.path.isfile(store) and is_sqlite_file(store)):
        # The operands swapped: copying the other way would write into the app's database.
        raise UsageError(
            f"langgraph-jsonl import imports into a store directory, and {store} is a database; "
            "nothing was read or written. The source comes first: `langgraph-jsonl import "
            f"{shlex.join([store, args.source])}` brings its threads into the store; `langgraph-jsonl "
            f"copy {shlex.join([args.source, store])}` copies the store's threads into it."
        )
    return run_copy(args, args.source, store)


def _copy(args: argparse.Namespace) -> int:
    return run_copy(args, args.source, args.target)


def define_import(p: argparse.ArgumentParser) -> None:
    """``import``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Copy every thread (or --threads) of a LangGraph checkpointer into a store: "
        "all namespaces, checkpoint ids, parents, metadata, versions, pending writes with their "
        "task paths, and the replay adapter's journal; then compare each thread on both sides. "
        "Running it again copies only what is missing (after a kill, too); a thread the app went on "
        "with in the store since is reported AHEAD, not as a difference. " + INTERRUPT_HELP
        + ENDPOINTS_HELP,
        examples=["langgraph-jsonl import sqlite:///app.db ./checkpoints",
                  "langgraph-jsonl import postgresql://postgres@127.0.0.1:5432/app ./checkpoints --json"],
        json_shape=COPY_JSON,
    )
    p.add_argument("source", metavar="SOURCE", help="sqlite:///app.db, postgresql://... or another store")
    p.add_argument("store", nargs="?", metavar="STORE",
                   help=f"the store to import into (default: ${STORE_ENV})")
    add_copy_options(p)
    add_serde_option(p)
    p.set_defaults(run=_import)


def define_copy(p: argparse.ArgumentParser) -> None:
    """``copy``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Copy threads from SOURCE to TARGET with everything LangGraph stores and the "
        "replay journal, idempotently (what the target has is left alone), then verify them. "
        + INTERRUPT_HELP + ENDPOINTS_HELP,
        examples=["langgraph-jsonl copy ./checkpoints postgresql://postgres@127.0.0.1:5432/app --setup",
                  "langgraph-jsonl copy postgresql://postgres@127.0.0.1:5432/app ./laptop --threads 'user-*'",
                  "langgraph-jsonl copy sqlite:///app.db ./checkpoints --dry-run"],
        json_shape=COPY_JSON,
    )
    p.add_argument("source", metavar="SOURCE", help="where from")
    p.add_argument("target", metavar="TARGET", help="where to")
    add_copy_options(p)
    add_serde_option(p)
    p.set_defaults(run=_copy)
