"""What each saver call leaves alive in the round-robin fill, by type: the objects that
push a turn over the cyclic collector's threshold.

    python benchmarks/alive_by_call.py                # 40 threads, turn 10 of 10 of them
    python benchmarks/alive_by_call.py --quick        # smoke test: 20 threads, turn 3

Each saver runs in a fresh process (``--worker``): the benchmark agent fills N threads
round-robin for T-1 turns (durability "sync", every JsonlSaver log reopened: N is above
its open-log bound), then turn T of the first ten threads runs with the collector paused
and every ``get_tuple``, ``put`` and ``put_writes`` wrapped: the tracked objects alive as
the call returns that were not as it began (``gc.get_objects()`` before and after), per
turn, by type. ``fill_parts.py`` counts the same objects without their types (and how
high a turn climbs: past 700 a youngest-generation pass runs); this names them.

The saves run in LangGraph's executor threads, so objects another thread made meanwhile
(its futures, locks, closures) land in whichever call returned first: compare the savers'
totals and the types where one saver has many more, not single counts. Object counts do
not move with the machine's load. Results in ``results/alive_by_call[-quick].{json,md}``.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from many_threads import thread_ids

from _common import (
    Table,
    agent_round,
    build_agent_graph,
    fill_turn_args,
    open_saver,
    run_worker,
    write_results,
)

NAME = "alive_by_call"
KINDS = ("jsonl", "sqlite", "memory")
METHODS = ("get_tuple", "put", "put_writes")
PROBED = 10


def worker(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"alive-{args.saver}-"))
    try:
        handle = open_saver(args.saver, workdir)
        saver = handle.saver
        graph = build_agent_graph(saver)
        ids = thread_ids(args.threads)
        for t in range(args.turns - 1):
            agent_round(graph, ids, t)
        alive: dict[str, collections.Counter[str]] = {m: collections.Counter() for m in METHODS}
        calls: collections.Counter[str] = collections.Counter()

        def wrapped(name: str, method: Any) -> Any:
            def call(*a: Any, **k: Any) -> Any:
                before = {id(o) for o in gc.get_objects()}
                try:
                    return method(*a, **k)
                finally:
                    for o in gc.get_objects():
                        if id(o) not in before:
                            alive[name][type(o).__qualname__] += 1
                    calls[name] += 1
            return call

        originals = {m: getattr(saver, m) for m in METHODS}
        for m, method in originals.items():
            setattr(saver, m, wrapped(m, method))
        probed = ids[:PROBED]
        gc.collect()
        gc.disable()
        try:
            before_turn = {id(o) for o in gc.get_objects()}
            agent_round(graph, probed, args.turns - 1)
            new = [o for o in gc.get_objects() if id(o) not in before_turn]
            turn = collections.Counter(type(o).__qualname__ for o in new)
            del new
        finally:
            gc.enable()
            for m, method in originals.items():
                setattr(saver, m, method)
        handle.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    n = len(probed)
    print(json.dumps({
        "calls_per_turn": {m: calls[m] / n for m in METHODS},
        "alive_per_turn": {m: sum(alive[m].values()) / n for m in METHODS} | {"turn": sum(turn.values()) / n},
        "by_type_per_turn": {m: {k: round(v / n, 1) for k, v in alive[m].most_common(12)} for m in METHODS},
    }))


def main() -> None:
    args = fill_turn_args(__doc__, NAME, KINDS, threads=40)
    if args.worker:
        worker(args)
        return
    results = {kind: run_worker(Path(__file__), ["--saver", kind, "--threads", str(args.threads),
                                                 "--turns", str(args.turns)]) for kind in args.savers}
    table = Table()
    case = f"{args.threads} threads round-robin, turn {args.turns} of {PROBED} of them, collector paused"
    notes = []
    for kind, r in results.items():
        for what, count in r["alive_per_turn"].items():
            label = "a whole turn" if what == "turn" else what
            note = "" if what == "turn" else f"{r['calls_per_turn'][what]:g} calls a turn"
            table.add(case, f"tracked objects left alive per turn: {label}", kind, count, "objects", note)
        for m, kinds in r["by_type_per_turn"].items():
            notes.append(f"{kind}, {m}, by type: {kinds}")
        counts = ", ".join(f"{k} {v:.0f}" for k, v in r["alive_per_turn"].items())
        print(f"[{NAME}] {kind:7s} {counts}", flush=True)
    write_results(args.name, {"threads": args.threads, "turns": args.turns, "results": results}, table,
                  header="What each saver call leaves alive in the round-robin fill, by type "
                  "(tracked objects alive after the call that were not before it, the collector paused).",
                  notes=notes, quick=args.quick)


if __name__ == "__main__":
    main()
