"""The fill of ``many_threads.py`` alone, per saver: time per turn (median, p90, p99, max),
fdatasync / fsync calls per turn, and optionally a cProfile including LangGraph's
background threads (where ``put``/``put_writes`` run).

Reproduce (from the repository root, with the venv active)::

    python benchmarks/profile_fill.py --threads 300 --turns 10            # jsonl and sqlite
    python benchmarks/profile_fill.py --threads 300 --savers jsonl --profile
    python benchmarks/profile_fill.py --threads 1000 --turns 3 --savers jsonl --max-open 2000
    python benchmarks/profile_fill.py --threads 1000 --turns 10 --savers jsonl sqlite memory \
        --collector off --name fill_collector_off

Prints one line per saver and, with ``--profile``, writes
``results/issue17-profile-fill-<saver>-<threads>x<turns>.txt``; with ``--name``, the lines'
figures as ``results/<name>.md``/``.json``. ``--collector off`` runs each fill with the
cyclic garbage collector disabled (collected once before): set beside a run with it on,
it tells how much of a turn the collector's passes take, which ``fill_parts.py`` counts.
``many_threads.py`` is the benchmark of record; this is for finding where a turn goes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import shutil
import tempfile
import threading
import time
from pathlib import Path

from fill_parts import Passes  # the collector's passes per generation, one mechanism
from many_threads import thread_ids
from profile_agent import _profiles, _thread_start  # per-thread profilers, one mechanism

from _common import (
    LABELS,
    RESULTS,
    Table,
    build_agent_graph,
    open_saver,
    quantile,
    summary,
    user_message,
    write_results,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=300)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--savers", nargs="+", default=["jsonl", "sqlite"])
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=45)
    p.add_argument("--max-open", type=int, default=None,
                   help="JsonlSaver's max_open_threads (default: the saver's, 16); a bound above "
                   "--threads keeps every log open (no reopening)")
    p.add_argument("--tmp", default=None)
    p.add_argument("--collector", choices=("on", "off"), default="on",
                   help="off: the cyclic garbage collector disabled during each fill")
    p.add_argument("--name", default=None, help="also write results/<name>.md and .json")
    args = p.parse_args()
    table = Table()
    case = f"{args.threads} threads x {args.turns} turns round-robin, collector {args.collector}"
    counts = {"fdatasync": 0, "fsync": 0}
    for name in counts:
        real = getattr(os, name)

        def counting(fd, _real=real, _name=name):  # noqa: ANN001, ANN202
            counts[_name] += 1
            return _real(fd)

        setattr(os, name, counting)
    for kind in args.savers:
        tmp = Path(tempfile.mkdtemp(prefix="bench-fill-", dir=args.tmp))
        try:
            h = open_saver(kind, tmp)
            if kind == "jsonl" and args.max_open is not None:
                h.close()
                from langgraph_jsonl_checkpoint import JsonlSaver

                saver = JsonlSaver(tmp / "jsonl-store", max_open_threads=args.max_open)
                h = type(h)(kind, saver, [tmp / "jsonl-store"], saver.close)
            graph = build_agent_graph(h.saver)
            ids = thread_ids(args.threads)
            per_turn = []
            for k in counts:
                counts[k] = 0
            main_prof = cProfile.Profile()
            if args.profile:
                _profiles.clear()
                threading.setprofile(_thread_start)
                main_prof.enable()
            gc.collect()
            if args.collector == "off":
                gc.disable()
            passes = Passes()
            gc.callbacks.append(passes)
            t_fill = time.perf_counter()
            cpu0 = time.process_time()
            for t in range(args.turns):
                for i in range(args.threads):
                    cfg = {"configurable": {"thread_id": ids[i]}}
                    t0 = time.perf_counter()
                    graph.invoke({"messages": [user_message(i, t)]}, cfg, durability="sync")
                    per_turn.append(time.perf_counter() - t0)
            wall = time.perf_counter() - t_fill
            cpu = time.process_time() - cpu0
            gc.callbacks.remove(passes)
            gc.enable()
            if args.profile:
                main_prof.disable()
                threading.setprofile(None)
            h.close()
            n = len(per_turn)
            bound = f" max_open_threads={args.max_open}" if kind == "jsonl" and args.max_open else ""
            print(f"{LABELS[kind]:12s} {args.threads}x{args.turns}{bound}: median "
                  f"{quantile(per_turn, .5)*1e3:6.2f} ms "
                  f"mean {wall/n*1e3:6.2f} p90 {quantile(per_turn, .9)*1e3:6.2f} p99 "
                  f"{quantile(per_turn, .99)*1e3:7.2f} max {max(per_turn)*1e3:7.2f} ms; cpu/turn "
                  f"{cpu/n*1e3:5.2f} ms; fdatasync/turn {counts['fdatasync']/n:.2f} "
                  f"fsync/turn {counts['fsync']/n:.2f}", flush=True)
            table.add(case, "time per turn", kind, summary(per_turn), "s")
            table.add(case, "time per turn, p99", kind, quantile(per_turn, .99), "s")
            table.add(case, "process CPU per turn", kind, cpu / n, "s")
            seconds = sum(passes.seconds.values())
            print(f"   collector: {passes.passes[0]}/{passes.passes[1]}/{passes.passes[2]} passes "
                  f"(youngest/middle/full), {seconds * 1e3:.0f} ms in all, "
                  f"{seconds / n * 1e6:.0f} µs a turn", flush=True)
            table.add(case, "collector: full passes in the fill", kind, passes.passes[2], "passes")
            table.add(case, "collector: time per turn, all passes", kind, seconds / n, "s")
            rounds = [quantile(per_turn[r * args.threads:(r + 1) * args.threads], .5)
                      for r in range(args.turns)]
            print("   median turn by round (ms):", " ".join(f"{m * 1e3:.2f}" for m in rounds))
            slow = sorted(range(n), key=lambda j: -per_turn[j])[:8]
            print("   slowest turns (index: ms):", ", ".join(f"{j}: {per_turn[j]*1e3:.0f}" for j in slow))
            if args.profile:
                out = io.StringIO()
                merged = pstats.Stats(main_prof)
                for prof in _profiles:
                    merged.add(prof)
                merged.stream = out
                out.write(f"# python benchmarks/profile_fill.py --threads {args.threads} --turns "
                          f"{args.turns} --savers {kind} --profile\n")
                for sort in ("cumulative", "tottime"):
                    out.write(f"\n===== merged, by {sort} =====\n")
                    merged.sort_stats(sort)
                    merged.print_stats(args.top)
                out.write("\n===== merged, package functions by cumulative =====\n")
                merged.sort_stats("cumulative")
                merged.print_stats("langgraph_jsonl_checkpoint", args.top)
                out.write("\n===== merged, package functions by tottime =====\n")
                merged.sort_stats("tottime")
                merged.print_stats("langgraph_jsonl_checkpoint", args.top)
                path = RESULTS / f"issue17-profile-fill-{kind}-{args.threads}x{args.turns}.txt"
                path.write_text(out.getvalue())
                print("   wrote", path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.name:
        cmd = (f"python benchmarks/profile_fill.py --threads {args.threads} --turns {args.turns} "
               f"--savers {' '.join(args.savers)} --collector {args.collector} --name {args.name}")
        _, md = write_results(args.name, {"threads": args.threads, "turns": args.turns,
                                          "collector": args.collector}, table,
                              header=f"The fill of `many_threads.py` alone, durability \"sync\", "
                              f"every saver in one process, one after another.\n\nReproduce: `{cmd}`")
        print("   wrote", md)


if __name__ == "__main__":
    main()
