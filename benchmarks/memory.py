"""What a saver keeps in memory: tracked objects and resident memory after many short
threads, and after one long thread.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/memory.py            # full run: 1,000 threads x 10 turns; one 1,000-turn thread
    python benchmarks/memory.py --quick    # smoke test: 100 threads x 3 turns; one 100-turn thread

Each case runs in a fresh subprocess per saver (JsonlSaver, SqliteSaver; InMemorySaver
keeps every checkpoint, so it is reported for scale only in the long thread). The agent
graph of ``agent_conversation.py``, ``durability="sync"``. After the fill, with the saver
still open and after ``gc.collect()``:

- objects the cyclic collector tracks, in the whole process, minus the count before the
  fill (graph built, saver open): what the fill left behind;
- objects reachable from the saver object (``gc.get_referents``, tracked ones only),
  minus those reachable before the fill (its serializer reaches whole modules): what
  the saver itself holds — what the collector walks on every full pass because of it;
- the types of the new tracked objects (the eight most common);
- resident memory (``/proc/self/statm``) and peak RSS (``ru_maxrss``).

Writes ``results/memory[-quick].{json,md}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    LABELS,
    Table,
    agent_round,
    build_agent_graph,
    open_saver,
    tracked_reachable,
    write_results,
)

NAME = "memory"


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def reachable(root: object) -> int:
    """Tracked objects reachable from ``root`` (itself included)."""
    return 1 + sum(tracked_reachable(root).values())


def worker(args: argparse.Namespace) -> None:
    workdir = Path(args.workdir)
    h = open_saver(args.saver, workdir)
    graph = build_agent_graph(h.saver)
    ids = [f"t{i}" for i in range(args.threads)]
    gc.collect()
    before_ids = {id(o) for o in gc.get_objects()}
    before = len(before_ids)
    reach_before = reachable(h.saver)
    rss_before = rss_mib()
    t0 = time.perf_counter()
    for t in range(args.turns):
        agent_round(graph, ids, t)
    seconds = time.perf_counter() - t0
    gc.collect()
    objects = gc.get_objects()
    after = len(objects)
    kinds: dict[str, int] = {}
    for o in objects:
        if id(o) not in before_ids:
            name = type(o).__qualname__
            kinds[name] = kinds.get(name, 0) + 1
    del objects
    out = {
        "tracked_delta": after - before,
        "reachable_from_saver": reachable(h.saver) - reach_before,
        "new_by_type": dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:8]),
        "rss_mib": rss_mib(),
        "rss_delta_mib": rss_mib() - rss_before,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "fill_seconds": seconds,
    }
    h.close()
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--savers", nargs="+", default=["jsonl", "sqlite", "memory"])
    p.add_argument("--tmp", default=None)
    p.add_argument("--many", type=int, help="threads of the many-threads case (full 1000)")
    p.add_argument("--long", type=int, help="turns of the long thread (full 1000)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    p.add_argument("--turns", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    cases = [(100, 3), (1, 100)] if args.quick else [(args.many or 1000, 10), (1, args.long or 1000)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-", dir=args.tmp))
    table = Table()
    results = []
    try:
        for threads, turns in cases:
            case = f"{threads} threads x {turns} turns"
            for kind in args.savers:
                if kind == "memory" and threads > 1:
                    continue  # keeps every checkpoint: not a bounded-memory saver
                workdir = tmp / f"{kind}-{threads}-{turns}"
                workdir.mkdir()
                proc = subprocess.run(
                    [sys.executable, __file__, "--worker", "--saver", kind, "--workdir", str(workdir),
                     "--threads", str(threads), "--turns", str(turns)],
                    capture_output=True, text=True, timeout=3600,
                )
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr[-3000:])
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                shutil.rmtree(workdir, ignore_errors=True)
                results.append({"case": case, "saver": kind, **r})
                print(f"[{NAME}] {case:24s} {LABELS[kind]:13s} tracked +{r['tracked_delta']:>8d}, "
                      f"reachable from saver {r['reachable_from_saver']:>8d}, RSS {r['rss_mib']:7.1f} MiB "
                      f"(+{r['rss_delta_mib']:.1f}), peak {r['peak_rss_mib']:7.1f} MiB; "
                      f"new: {r['new_by_type']}", flush=True)
                for metric, key, unit in (
                    ("tracked objects left by the fill", "tracked_delta", "objects"),
                    ("tracked objects reachable from the saver (added by the fill)",
                     "reachable_from_saver", "objects"),
                    ("resident memory after the fill", "rss_mib", "MiB"),
                    ("peak RSS", "peak_rss_mib", "MiB"),
                ):
                    v = float(r[key])
                    table.add(case, metric, kind, {"n": 1, "median": v, "p90": v, "max": v}, unit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    notes = [
        "One fresh subprocess per saver and case; counts after gc.collect() with the saver open.",
        "'reachable from the saver' counts tracked objects (the ones the cyclic collector walks) "
        "reachable from the saver object; SqliteSaver keeps its data in the database file.",
    ]
    jpath, mpath = write_results(NAME, {"results": results}, table, header=__doc__.split("\n\n")[0],
                                 notes=notes, quick=args.quick)
    print(f"[{NAME}] wrote {jpath}, {mpath}")


if __name__ == "__main__":
    main()
