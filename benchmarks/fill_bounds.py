"""What bounds the round-robin fill of ``many_threads.py``: the fill with every log kept
open beside the fill as shipped, in the same run, with the CPU each turn costs split into
user and system time.

    python benchmarks/fill_bounds.py                       # 1,000 threads x 10 turns, 2 rounds
    python benchmarks/fill_bounds.py --threads 200 --turns 5 --rounds 1

With more threads than ``max_open_threads`` (16), every JsonlSaver turn reopens its
thread's log (scan, index, the latest values rebuilt; the head file written as it is
let go). ``jsonl-every-log-open`` sets ``max_open_threads`` above the thread count, so no
log is ever reopened: what any way of making a reopen free (a parked index, an index
seeded from the head file) could at best give, and what is left of the gap without it.
It is not a setting to ship: every log keeps up to three descriptors (the worker raises
its descriptor limit to the hard limit) and its index, which the cyclic collector walks
(the slowest turns show it).

``--variants`` can add three fills that are not durable and only measure: JsonlSaver
with ``os.fdatasync`` made a no-op (shipped, and with every log open) and SqliteSaver
with ``PRAGMA synchronous=OFF``. Beside the durable fills they split each saver's turn
into its syncs and the rest (its own work: Python for one, C for the other)::

    python benchmarks/fill_bounds.py --rounds 1 --name fill_bounds-no-sync --variants \
        jsonl jsonl-every-log-open sqlite memory \
        jsonl-no-sync jsonl-every-log-open-no-sync sqlite-no-sync

Each saver fills a fresh store in a fresh process (durability "sync"); rounds alternate
the savers, so a busy spell of a shared machine falls on all of them. Per turn: wall
time; user and system CPU (``getrusage``, all threads of the process, over the whole
fill divided by the turns); ``fdatasync`` calls (Python's ``os.fdatasync``: SQLite's
own syncs are made in C and not counted here; ``sync_cost.py`` compares one durable
write of each). Results in ``results/fill_bounds.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from many_threads import thread_ids

from _common import (
    Table,
    build_agent_graph,
    open_saver,
    quantile,
    run_worker,
    summary,
    user_message,
    write_results,
)

NAME = "fill_bounds"
VARIANTS = ("jsonl", "jsonl-every-log-open", "sqlite", "memory")
#: Not durable, never shipped: what each saver's turn costs without its syncs (run with
#: ``--variants``; see the module docstring).
NO_SYNC = ("jsonl-no-sync", "jsonl-every-log-open-no-sync", "sqlite-no-sync")
LABELS = {"jsonl": "JsonlSaver", "jsonl-every-log-open": "JsonlSaver, every log open",
          "sqlite": "SqliteSaver", "memory": "InMemorySaver",
          "jsonl-no-sync": "JsonlSaver, no fdatasync",
          "jsonl-every-log-open-no-sync": "JsonlSaver, every log open, no fdatasync",
          "sqlite-no-sync": "SqliteSaver, synchronous=OFF"}


def worker(variant: str, threads: int, turns: int, workdir: Path) -> dict:
    """One fill in this process; its per-turn figures."""
    syncs = 0
    no_sync = variant.endswith("-no-sync")
    variant = variant.removesuffix("-no-sync")
    real_fdatasync = os.fdatasync

    def counting(fd: int) -> None:
        nonlocal syncs
        syncs += 1
        if not no_sync:
            real_fdatasync(fd)

    os.fdatasync = counting  # type: ignore[assignment]
    options = {}
    if variant == "jsonl-every-log-open":
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = 4 * threads + 256
        if hard != resource.RLIM_INFINITY and hard < need:
            raise SystemExit(f"every log open needs {need} descriptors; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        options = {"max_open_threads": threads + 1}
    h = open_saver("jsonl" if options else variant, workdir, **options)
    saver, close = h.saver, h.close
    if no_sync and variant == "sqlite":
        saver.conn.execute("PRAGMA synchronous=OFF")
    graph = build_agent_graph(saver)
    ids = thread_ids(threads)
    per_turn = []
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for t in range(turns):
        for i, tid in enumerate(ids):
            t0 = time.perf_counter()
            graph.invoke({"messages": [user_message(i, t)]}, {"configurable": {"thread_id": tid}},
                         durability="sync")
            per_turn.append(time.perf_counter() - t0)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    if close is not None:
        close()
    n = len(per_turn)
    return {"per_turn": per_turn, "user": (r1.ru_utime - r0.ru_utime) / n,
            "system": (r1.ru_stime - r0.ru_stime) / n, "fdatasync": syncs / n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1000)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS + NO_SYNC)
    p.add_argument("--tmp", default=None, help="where the stores are created (default: $TMPDIR)")
    p.add_argument("--name", default=NAME)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(args.variant, args.threads, args.turns, Path(args.workdir))))
        return
    runs: dict[str, list[dict]] = {v: [] for v in args.variants}
    for r in range(args.rounds):
        for variant in args.variants:
            tmp = Path(tempfile.mkdtemp(prefix="fill-bounds-", dir=args.tmp))
            try:
                out = run_worker(Path(__file__), ["--variant", variant, "--threads", str(args.threads),
                                                  "--turns", str(args.turns), "--workdir", str(tmp)])
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            runs[variant].append(out)
            pt = out["per_turn"]
            print(f"[{NAME}] round {r + 1} {variant}: median {quantile(pt, .5) * 1e3:.2f} ms, p99 "
                  f"{quantile(pt, .99) * 1e3:.2f} ms, max {max(pt) * 1e3:.1f} ms; user "
                  f"{out['user'] * 1e3:.2f} ms, system {out['system'] * 1e3:.2f} ms a turn", flush=True)
    table = Table()
    case = (f"{args.threads} threads x {args.turns} turns round-robin (durability sync), "
            f"{args.rounds} round(s)")
    results = {}
    for variant, outs in runs.items():
        label = variant if variant in ("jsonl", "sqlite", "memory") else LABELS[variant]
        turns = [x for o in outs for x in o["per_turn"]]
        table.add(case, "time per turn", label, summary(turns), "s")
        table.add(case, "p99 turn", label, quantile(turns, .99), "s")
        table.add(case, "user CPU per turn", label, summary([o["user"] for o in outs]), "s")
        table.add(case, "system CPU per turn", label, summary([o["system"] for o in outs]), "s")
        results[variant] = {
            "median": quantile(turns, .5), "p99": quantile(turns, .99), "max": max(turns),
            "per_round_median": [quantile(o["per_turn"], .5) for o in outs],
            "user": [o["user"] for o in outs], "system": [o["system"] for o in outs],
            "fdatasync": [o["fdatasync"] for o in outs],
        }
    notes = [
        "'JsonlSaver, every log open' is JsonlSaver with max_open_threads above the thread "
        "count: no turn reopens its log. Its gap to SqliteSaver is what is left once reopening "
        "costs nothing; the gap between it and JsonlSaver is all a reopen costs.",
        "The slowest turns with every log open are full passes of the cyclic collector, "
        "which then walk every open log's index entries (a 10-turn log written in this "
        "process holds about 460 tracked objects once its run ended).",
        "CPU is the process's (every thread), over the whole fill divided by its turns; "
        "rows of CPU have one sample per round.",
        "Variants ending in 'no-sync' are not durable and never shipped: JsonlSaver with "
        "os.fdatasync made a no-op, SqliteSaver with PRAGMA synchronous=OFF. A saver's "
        "durable turn minus its no-sync turn is what its syncs cost; its no-sync turn minus "
        "InMemorySaver's is its own work.",
        "fdatasync calls per turn (Python's os.fdatasync only): " + ", ".join(
            f"{LABELS[v]} {sum(r['fdatasync']) / len(r['fdatasync']):.2f}" for v, r in results.items()),
    ]
    write_results(args.name, {"threads": args.threads, "turns": args.turns, "rounds": args.rounds,
                              "results": results}, table,
                  header="What bounds the round-robin fill: the fill as shipped beside the same "
                  "fill with every log kept open (no reopening), SqliteSaver and InMemorySaver, "
                  "with each turn's CPU split into user and system time.", notes=notes)


if __name__ == "__main__":
    main()
