"""What a log's let-go costs the run that ends as the round-robin fill goes round: the
pieces of the work a JsonlSaver does at a run's end when the open set is over its bound.

    python benchmarks/letgo_parts.py                  # 24 threads, bound 16, turns 10-12
    python benchmarks/letgo_parts.py --threads 40 --rounds 5

The benchmark agent fills N threads round-robin (durability "sync") with
``max_open_threads`` below N, so every run's end lets the least recently used log go
(``Store.unpin``); then R more rounds are timed in place (``time.perf_counter`` around
each call, wrapped): the whole ``unpin``, the head file's pieces (``head_source``: the
log's bytes read and their CRC-32; ``head_body``: the latest tuple in stored cells;
``write_head``: framed and written; ``files.overwrite_derived``: the write alone) and
``LogView.idle`` (the ended run's log folded). Only JsonlSaver has a let-go; SqliteSaver
is not run. Wall times on a shared machine: compare medians of one run with another run
of the same command (the package at two commits, ``PYTHONPATH``). Results in
``results/letgo_parts.{json,md}``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from many_threads import thread_ids

from _common import Table, agent_round, build_agent_graph, write_results

NAME = "letgo_parts"


def _timed(owner: Any, name: str, samples: dict[str, list[float]], label: str) -> None:
    """Replace ``owner.name`` by a wrapper adding each call's wall time to ``samples``
    (nothing if there is no such name: an older package, run with ``PYTHONPATH``)."""
    real: Callable[..., Any] | None = getattr(owner, name, None)
    if real is None:
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            samples.setdefault(label, []).append(time.perf_counter() - t0)

    setattr(owner, name, timed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=24)
    p.add_argument("--bound", type=int, default=16, help="max_open_threads (below --threads)")
    p.add_argument("--turns", type=int, default=10, help="rounds filled before timing")
    p.add_argument("--rounds", type=int, default=3, help="rounds timed")
    args = p.parse_args()
    from langgraph_jsonl_checkpoint import JsonlSaver
    from langgraph_jsonl_checkpoint.disk import files, view
    from langgraph_jsonl_checkpoint.disk.store import Store
    from langgraph_jsonl_checkpoint.saver import heads

    tmp = Path(tempfile.mkdtemp(prefix="letgo-parts-"))
    samples: dict[str, list[float]] = {}
    try:
        saver = JsonlSaver(tmp / "store", max_open_threads=args.bound)
        graph = build_agent_graph(saver)
        ids = thread_ids(args.threads)
        for t in range(args.turns):
            agent_round(graph, ids, t)
        for owner, name, label in [
            (Store, "unpin", "unpin (the run's end)"), (heads, "head_source", "head_source"),
            (heads, "head_body", "head_body"), (heads, "write_head", "write_head"),
            (files, "overwrite_derived", "overwrite_derived"), (view.LogView, "idle", "LogView.idle"),
        ]:
            _timed(owner, name, samples, label)
        for t in range(args.turns, args.turns + args.rounds):
            agent_round(graph, ids, t)
        saver.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    case = (f"{args.threads} threads round-robin, max_open_threads {args.bound}, "
            f"turns {args.turns + 1}-{args.turns + args.rounds}")
    for label, values in samples.items():
        table.add(case, label, "jsonl", {"n": len(values), "median": statistics.median(values),
                                         "p90": sorted(values)[int(len(values) * 0.9)],
                                         "max": max(values)}, "s")
        print(f"[{NAME}] {label:24s} n={len(values):4d} median {statistics.median(values) * 1e6:7.1f} µs",
              flush=True)
    write_results(NAME, {"threads": args.threads, "bound": args.bound, "turns": args.turns,
                         "rounds": args.rounds, "samples": samples}, table,
                  header="What a log's let-go costs the run that ends, in the round-robin fill: "
                  "the run's end (`Store.unpin`) and its pieces, timed in place.")


if __name__ == "__main__":
    main()
