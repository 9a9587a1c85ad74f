"""``langgraph-jsonl`` commands for retention: sweep, archived, restore.

Examples::

    langgraph-jsonl sweep ./checkpoints --ttl 10080 --strategy archive --dry-run
    LANGGRAPH_JSONL_TTL='{"default_ttl": 10080, "strategy": "archive"}' langgraph-jsonl sweep ./checkpoints
    langgraph-jsonl archived ./checkpoints
    langgraph-jsonl restore ./checkpoints --thread t-1 --dry-run
    langgraph-jsonl restore ./checkpoints --thread t-1

The policy comes from the variables the server factory reads, in its order
(``LANGGRAPH_JSONL_TTL``, the server's ``LANGGRAPH_THREAD_TTL``, the ``ttl`` block in
``LANGGRAPH_CHECKPOINTER``: a server and a cron job sweep alike), with ``--ttl``
(minutes) and ``--strategy`` each in place of its part of it (or the whole policy
without one); the output says where it came from.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import threading
from typing import TYPE_CHECKING, Any

from ..disk.archive import ThreadArchive
from ..errors import ConfigError, CorruptLogError, JsonlCheckpointError
from ..maintenance.restore import Restoration, RestoreInterrupted, listed_archives, restore
from ..maintenance.retention import STRATEGIES, TTL_VARIABLES, RetentionPolicy, configured_ttl
from .common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    StoppedSaying,
    UsageError,
    add_dry_run_accepted,
    add_store_argument,
    ctrl_c_stops,
    damage_stated_per_thread,
    describe,
    first_line,
    open_saver,
    print_json,
    print_table,
    shown,
    shown_id,
    thread_option,
    work_done,
)
from .progress import progress

if TYPE_CHECKING:
    from ..saver.jsonl_saver import JsonlSaver

#: What a second Ctrl-C says as it ends a sweep at once.
SWEEP_AGAIN = "interrupted: langgraph-jsonl sweep stopped; run it again to finish"


def _policy(args: argparse.Namespace) -> tuple[RetentionPolicy, str]:
    """The policy, and where it came from: --ttl and --strategy, each in place of its
    part of the policy the server's variables give (:func:`configured_ttl`): a TTL tried
    by hand keeps the variable's strategy (an "archive" does not become a "delete"), as
    --strategy keeps its TTL."""
    options = (("--ttl", args.ttl is not None), ("--strategy", bool(args.strategy)))
    given = [flag for flag, value in options if value]
    found = None if len(given) == 2 else configured_ttl(os.environ)
    if args.ttl is None and found is None:
        raise UsageError(_no_policy())
    if found is None:
        policy = RetentionPolicy.of({"default_ttl": args.ttl, "strategy": args.strategy or "delete"})
        return policy, " and ".join(given)
    policy, variable = found
    if given:
        variable += f", {' and '.join(given)} in its place"
    return RetentionPolicy(
        default_ttl=policy.default_ttl if args.ttl is None else args.ttl,
        strategy=args.strategy or policy.strategy, sweep_limit=policy.sweep_limit,
    ), variable


def _no_policy() -> str:
    """Why no policy was found, and how to give one: the variables (one set without a ttl
    block says so), and a ttl block in ./langgraph.json, which only the server reads."""
    said = ("say how long threads may stay idle: --ttl MINUTES, or set one of the variables the "
            f"server reads, {', '.join(TTL_VARIABLES[:-1])} or {TTL_VARIABLES[-1]} (the ttl block of "
            "langgraph.json's checkpointer, which the server passes in it)")
    said += ("; LANGGRAPH_CHECKPOINTER is set without a ttl block" if os.environ.get("LANGGRAPH_CHECKPOINTER")
             else "; none is set here")
    try:
        with open("langgraph.json", encoding="utf-8") as f:
            ttl = json.load(f)["checkpointer"]["ttl"]
        policy = RetentionPolicy.of(ttl)
    except (OSError, ValueError, LookupError, TypeError, ConfigError):
        return said
    return (f"{said}. ./langgraph.json's checkpointer has a ttl block, {json.dumps(ttl)}: the server "
            "sweeps by it, this command does not read the file; to apply it, run with --ttl "
            f"{policy.default_ttl:g} --strategy {policy.strategy}")


def _sweep(args: argparse.Namespace) -> int:
    policy, source = _policy(args)
    stop = threading.Event()
    if not args.dry_run:
        try:  # LangGraph, loaded with the saver (up to a second): a Ctrl-C in it touched nothing
            from ..saver import jsonl_saver  # noqa: F401
        except KeyboardInterrupt:
            raise StoppedSaying("interrupted: langgraph-jsonl sweep stopped before it finished; nothing "
                                "was changed (no thread was swept). Run it again to sweep.") from None
    with (open_saver(args, write=not args.dry_run) as saver, ctrl_c_stops(stop, again=SWEEP_AGAIN),
          damage_stated_per_thread()):  # a damaged thread: its line says so (read-only: the saver too)
        report = saver.sweep(policy, dry_run=args.dry_run, stop=stop)
        work_done()
    status = EXIT_INTERRUPTED if report.stopped else EXIT_PROBLEMS if report.errors else EXIT_OK
    if report.stopped:  # what was done is said as after a whole sweep, then how to finish
        untouched = not report.swept and not report.settled
        print(f"interrupted: langgraph-jsonl sweep stopped after {len(report.swept)} thread(s) "
              f"{'would be ' if report.dry_run else ''}swept; "
              + ("it changes nothing in the store." if report.dry_run else
                 "nothing was changed. Run it again to sweep." if untouched else
                 "the store is consistent (each thread's change is all or nothing). Run it again "
                 "to finish."), file=sys.stderr)
    if args.json:
        print_json({
            "dry_run": report.dry_run, "strategy": policy.strategy, "default_ttl": policy.default_ttl,
            "policy_from": source,
            "swept": [t for t, _ in report.swept], "pinned": report.pinned, "live": report.live,
            "active": report.active, "unchanged": report.unchanged, "limited": report.limited,
            "settled": report.settled, "errors": [{"what": w, "error": e} for w, e in report.errors],
            "stopped": report.stopped,
        })
        return status
    verb = {"delete": "deleted", "keep_latest": "pruned", "archive": "archived"}[policy.strategy]
    if report.dry_run:
        verb = f"would be {verb}"
    print(f"policy: {policy.strategy} threads idle {policy.default_ttl:g} minutes or more "
          f"(from {source})")
    for tid, _ in report.swept:
        print(f"{shown(tid)}\t{verb}")
    for tid in report.pinned:
        print(f"{shown(tid)}\tpinned: kept")
    for tid in report.live:
        print(f"{shown(tid)}\ta run is working on it: skipped")
    for what, error in report.errors:
        print(f"{shown(what)}\tcould not be swept: {error.splitlines()[0]}")
    print(
        f"{len(report.swept)} thread(s) {verb}, "
        + (f"{report.unchanged} pruned already, " if report.unchanged else "")
        + f"{len(report.pinned)} pinned, {len(report.live)} live, "
        f"{report.active} active (idle less than {policy.default_ttl:g} minutes)"
        + (f", {report.limited} expired thread(s) not looked at (sweep_limit {policy.sweep_limit} "
           "reached; the next sweep looks at them)" if report.limited else "")
        + (f", {len(report.errors)} error(s)" if report.errors else "")
        + (", the others not looked at (stopped)" if report.stopped else "")
    )
    return status


def _archived(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        entries = listed_archives(saver, args.thread)
        status = EXIT_PROBLEMS if any(e.problem for e in entries) else EXIT_OK
        if args.json:
            print_json([{"thread_id": e.thread_id, "archived_at": e.archived_at, "size": e.size,
                         "path": e.path, "problem": e.problem} for e in entries])
            return status
        if not entries:
            print(_none_archived(saver, args.thread))
            return EXIT_OK
    damaged = ["PROBLEM"] if status else []  # a column only when there is one to show
    print_table(
        ["THREAD", "ARCHIVED", "SIZE", "FILE", *damaged],
        [[shown_id(e.thread_id) if e.thread_id is not None else "?",
          e.archived_at.strftime("%Y-%m-%d %H:%M:%S"), f"{e.size} B", e.path,
          *([shown(e.problem) if e.problem else ""] if damaged else [])]
         for e in entries],
    )
    return status


def _none_archived(saver: JsonlSaver, thread_id: str | None) -> str:
    """What ``archived`` says when it lists nothing: with ``--thread``, whether the thread
    is in the store and how many other threads are archived (a mistyped id)."""
    if thread_id is None:
        return "no archived threads"
    said = f"no archive of thread {shown(thread_id)}"  # as other commands show an id
    if saver.store.has_thread(thread_id):
        return f"{said}: it is in the store ({saver.store.thread_log(thread_id).path}), not archived"
    others = {e.thread_id for e in ThreadArchive(saver.store).entries(unnamed=[])}  # heads only
    if not others:
        return f"{said}; no thread of this store is archived"
    return (f"{said}; {len(others)} archived thread(s) in all: `langgraph-jsonl archived "
            f"{shlex.quote(saver.store.path)}` lists them")


def _restore(args: argparse.Namespace) -> int:
    if args.dry_run and not args.thread:
        return _restore_each(args)
    thread_id = thread_option(args, "archived", "archived threads")
    with open_saver(args, write=not args.dry_run) as saver:
        try:
            done = restore(saver, thread_id, dry_run=args.dry_run)
        except RestoreInterrupted as exc:  # the thread is back: the restore's work is done
            done = exc.restoration
        except JsonlCheckpointError as exc:
            if not args.dry_run:
                raise
            print(f"thread {shown(thread_id)}: a restore would be refused; nothing was changed "
                  f"(--dry-run). It would say:\nerror: {exc}", file=sys.stderr)
            return EXIT_ERROR
    work_done()
    if args.json:
        print_json(_restoration(done))
        return EXIT_OK
    if not done.dry_run:
        print(f"thread {shown(thread_id)}: restored from {done.archive.path}")
        return EXIT_OK
    for path in (done.log, *done.companions):
        print(f"would restore {path}")
    print(f"thread {shown(thread_id)}: would be restored from {done.archive.path}; nothing was "
          "changed (--dry-run)")
    return EXIT_OK


def _restoration(done: Restoration) -> dict[str, Any]:
    """A restore (or its dry run) as ``--json`` prints it."""
    return {"thread_id": done.archive.thread_id, "restored_from": done.archive.path, "log": done.log,
            "companions": list(done.companions), "dry_run": done.dry_run}


def _restore_each(args: argparse.Namespace) -> int:
    """``restore --dry-run`` without ``--thread``: what restoring each archived thread
    (its newest archive) would do; exit status 1 if one would be refused."""
    rows: list[dict[str, Any]] = []
    with open_saver(args) as saver:
        unnamed: list[CorruptLogError] = []  # damaged where the thread is named: no thread to restore
        newest = {e.thread_id: e for e in ThreadArchive(saver.store).entries(unnamed=unnamed)}
        for thread_id, entry in progress(newest.items(), total=len(newest), what="threads"):
            try:
                rows.append({**_restoration(restore(saver, thread_id, dry_run=True)), "refused": None})
            except JsonlCheckpointError as exc:
                rows.append({"thread_id": thread_id, "restored_from": entry.path,
                             "log": saver.store.log_paths(thread_id).log, "companions": [],
                             "dry_run": True, "refused": str(exc)})
        rows += [{"thread_id": None, "restored_from": exc.path, "log": None, "companions": [],
                  "dry_run": True, "refused": str(exc)} for exc in unnamed]
    work_done()
    refused = sum(1 for r in rows if r["refused"])
    status = EXIT_PROBLEMS if refused else EXIT_OK
    if args.json:
        print_json(rows)
        return status
    if not rows:
        print("no archived threads: nothing to restore")
        return status
    for r in rows:
        if r["refused"]:
            print(f"{shown(r['thread_id']) if r['thread_id'] is not None else '?'}\twould be refused: "
                  f"{first_line(r['refused'])}")
        else:
            print(f"{shown(r['thread_id'])}\twould be restored from {r['restored_from']} to {r['log']}")
            for path in r["companions"]:  # its debug trace, quarantine file: as with --thread
                print(f"{shown(r['thread_id'])}\twould restore {path}")
    print(f"{len(rows)} archived thread(s): {len(rows) - refused} would be restored, {refused} would be "
          "refused; nothing was changed (--dry-run). A restore takes one: --thread THREAD")
    return status


def _minutes(text: str) -> float:
    """--ttl's value: minutes, 0 or more (said as the option, not the policy's field)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of minutes, 0 or more, not {text!r}")
    return value


def define_sweep(p: argparse.ArgumentParser) -> None:
    """``sweep``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Apply a retention policy: every thread idle (no write) for the TTL is "
        "deleted, pruned to its latest checkpoints (keep_latest) or archived (compressed into "
        "<store>/archive/), unless pinned (\"pinned\": true in its latest checkpoint's metadata) "
        "or a run is working on it. The policy: the first of the variables the LangGraph "
        f"server factory reads that is set, {', '.join(TTL_VARIABLES)} (the ttl block of "
        "langgraph.json's checkpointer, as the server passes it), with --ttl and --strategy "
        "each in place of its part; the output says which it came from.",
        examples=["langgraph-jsonl sweep ./checkpoints --ttl 10080 --strategy archive --dry-run",
                  "langgraph-jsonl sweep ./checkpoints --ttl 1440 --strategy keep_latest"],
        json_shape="{dry_run, strategy, default_ttl, policy_from, swept: [thread_id], pinned: [thread_id], "
        "live: [thread_id], active, unchanged, limited, settled: [path], errors: [{what, error}]}",
    )
    add_store_argument(p)
    p.add_argument("--ttl", type=_minutes, metavar="MINUTES",
                   help="minutes of inactivity after which a thread expires "
                   "(default: from the variable the policy comes from)")
    p.add_argument("--strategy", choices=STRATEGIES,
                   help="what happens to an expired thread (default: from the variable, else delete)")
    p.add_argument("--dry-run", action="store_true", help="list what would be done; change nothing")
    p.set_defaults(run=_sweep)


def define_archived(p: argparse.ArgumentParser) -> None:
    """``archived``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="List the threads a sweep archived, oldest first. Each archive is read "
        "whole: a damaged one (which restore refuses) is listed with the restore's refusal, "
        "saying what to do (exit status 1); its thread is ? (null) when it cannot be told.",
        examples=["langgraph-jsonl archived ./checkpoints",
                  "langgraph-jsonl archived ./checkpoints --thread t-1"],
        json_shape="[{thread_id, archived_at, size, path, problem}] (problem: null, or why a "
        "restore of it is refused)",
    )
    add_store_argument(p)
    p.add_argument("--thread", help="only this thread id's archives")
    add_dry_run_accepted(p, "archived")
    p.set_defaults(run=_archived)


def define_restore(p: argparse.ArgumentParser) -> None:
    """``restore``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Move a thread's newest archive back into the store, its debug trace "
        "and quarantine file included; the thread then reads as it did when it was archived. "
        "--dry-run says which archive would come back to which files, or the refusal a "
        "restore would give (exit status 2, as the restore's), and changes nothing; without "
        "--thread it says so for every archived thread (exit status 1 if one would be refused).",
        examples=["langgraph-jsonl restore ./checkpoints --thread t-1 --dry-run",
                  "langgraph-jsonl restore ./checkpoints --thread t-1",
                  "langgraph-jsonl restore ./checkpoints --dry-run"],
        json_shape="{thread_id, restored_from, log, companions: [path], dry_run}; --dry-run without "
        "--thread: [{thread_id (null: an archive damaged where it names its thread), restored_from, log, "
        "companions: [path], dry_run, refused}]",
    )
    add_store_argument(p)
    p.add_argument("--thread",
                   help="the thread id to restore (required but with --dry-run; `archived` lists them)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what a restore would bring back, or why it would be refused; change nothing")
    p.set_defaults(run=_restore)
