"""Where a turn of the round-robin fill goes, saver by saver: what bounds the server shape.

    python benchmarks/fill_parts.py                 # 200 threads, turn 10
    python benchmarks/fill_parts.py --threads 40 --turns 5
    python benchmarks/fill_parts.py --quick         # smoke test: 20 threads, turn 3

Each saver runs in a fresh process (``--worker``): the benchmark agent fills N threads
round-robin for T-1 turns (durability "sync"), then round T is measured:

- CPU time per turn spent in each saver method (``time.thread_time`` of the calling
  thread around ``get_tuple``, ``put``, ``put_writes``): where the reopen of a let-go
  log lands (JsonlSaver with the default bound reopens every log when N > 16; the
  ``jsonl-open`` row keeps every log open, ``max_open_threads`` above N; the ``jsonl-1``
  row keeps one idle log, ``max_open_threads=1``, letting each go as its run ends);
- the cyclic garbage collector: passes per generation in the round and their time, and
  how many tracked objects each turn moved into the oldest generation (objects found
  there after each middle-generation pass that were not there before it; counted in
  round T+1, since listing the generation around each pass costs time), and their
  types (an index entry kept as a ``NamedTuple`` is moved however plain its fields:
  the collector untracks only exact tuples of untracked items). A full pass
  is due once a quarter as many objects as the oldest generation holds were moved
  there, and walks every tracked object of the process: the more a saver's objects
  outlive a turn, the more often a server pays a full pass (tens of milliseconds);
- tracked objects reachable from one idle open log (JsonlSaver only), by type;
- how many more tracked objects are alive after each saver method than before it
  (``gc.get_count()`` with the collector paused, one more round of 50 turns): what a
  turn adds towards the youngest generation's threshold (700 allocations), which a
  turn that leaves more alive crosses more often, each pass moving what is alive then
  into the middle generation (and every tenth into the oldest);
- in that same round, how high the count climbs above the turn's start (read as each
  saver call begins and ends; the median turn): a turn that climbs past 700 sets off a
  youngest-generation pass whatever it leaves alive at its end.

CPU times move with a shared machine's load; the object counts do not. Read the
instruction counts of ``fill_instructions.py`` beside it. Results in
``results/fill_parts[-quick].{json,md}`` (``--name`` names them otherwise).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import statistics
import sys
import tempfile
import time
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
    tracked_reachable,
    write_results,
)

NAME = "fill_parts"
KINDS = ("jsonl", "jsonl-open", "jsonl-1", "sqlite", "memory")
METHODS = ("get_tuple", "put", "put_writes")


def _saver(kind: str, workdir: Path, threads: int) -> Any:
    if kind in ("jsonl-open", "jsonl-1"):
        from langgraph_jsonl_checkpoint import JsonlSaver

        bound = threads + 1 if kind == "jsonl-open" else 1
        return JsonlSaver(workdir / "jsonl-store", max_open_threads=bound)
    return open_saver(kind, workdir).saver


def _timed_methods(saver: Any, cpu: collections.Counter[str], on: list[bool]) -> None:
    for name in METHODS:
        method = getattr(saver, name)

        def wrapper(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
            if not on[0]:
                return _method(*args, **kwargs)
            t0 = time.thread_time()
            try:
                return _method(*args, **kwargs)
            finally:
                cpu[_name] += time.thread_time() - t0

        setattr(saver, name, wrapper)


class Passes:
    """The collector's passes per generation and their time (cheap: no object listing)."""

    def __init__(self) -> None:
        self.passes: collections.Counter[int] = collections.Counter()
        self.seconds: collections.Counter[int] = collections.Counter()
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.passes[info["generation"]] += 1
            self.seconds[info["generation"]] += time.perf_counter() - self._t0


class Promotions:
    """Counts the tracked objects each middle-generation pass moves into the oldest, and
    their types (lists the oldest generation around each such pass: slow, so run on its
    own round). A tuple subclass (a ``NamedTuple``) is among them however plain its
    fields: the collector untracks only exact tuples whose items are untracked."""

    def __init__(self) -> None:
        self.moved = 0
        self.by_type: collections.Counter[str] = collections.Counter()
        self._before: set[int] | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 1:
            return
        if phase == "start":
            self._before = {id(o) for o in gc.get_objects(2)}
        elif self._before is not None:
            before = self._before
            for o in gc.get_objects(2):
                if id(o) not in before:
                    self.moved += 1
                    self.by_type[type(o).__name__] += 1
            self._before = None


def _idle_log_objects(saver: Any) -> dict[str, Any]:
    """Tracked objects reachable from the least recently used open log (not through
    the saver, the store, types, modules or functions)."""
    logs = list(saver.store._logs.values())
    if not logs:
        return {}
    kinds = tracked_reachable(logs[0], stop=(saver, saver.store), shared=False)
    return {"objects": 1 + sum(kinds.values()), "by_type": dict(kinds.most_common(8))}


def _paused_round(saver: Any, graph: Any, ids: list[str], turn: int) -> tuple[dict[str, float], float]:
    """One more turn of each of ``ids``, the collector paused (so its count only moves
    with allocations and frees). Per turn, summed over each method's calls: tracked
    objects alive after the call that were not before it; ``turn``: the whole turn. And
    the median over the turns of each turn's highest count above its start, read as each
    saver call begins and ends: a turn whose count climbs past the youngest generation's
    threshold (700) sets off a pass, which starts the count again from nothing (the
    turn's later frees are lost)."""
    left: collections.Counter[str] = collections.Counter()
    originals = {name: getattr(saver, name) for name in METHODS}
    highest = [0]

    def counting(name: str, method: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            c0 = gc.get_count()[0]
            highest[0] = max(highest[0], c0)
            try:
                return method(*args, **kwargs)
            finally:
                c1 = gc.get_count()[0]
                highest[0] = max(highest[0], c1)
                left[name] += c1 - c0
        return wrapper

    for name, method in originals.items():
        setattr(saver, name, counting(name, method))
    gc.collect()
    gc.disable()
    peaks = []
    try:
        for thread_id in ids:
            c0 = highest[0] = gc.get_count()[0]
            agent_round(graph, [thread_id], turn)
            left["turn"] += gc.get_count()[0] - c0
            peaks.append(highest[0] - c0)
    finally:
        gc.enable()
        for name, method in originals.items():
            setattr(saver, name, method)
    return {k: v / len(ids) for k, v in left.items()}, statistics.median(peaks)


def worker(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"fill-parts-{args.saver}-"))
    saver = _saver(args.saver, workdir, args.threads)
    cpu: collections.Counter[str] = collections.Counter()
    on = [False]
    _timed_methods(saver, cpu, on)
    graph = build_agent_graph(saver)
    ids = thread_ids(args.threads)

    def round_(t: int) -> None:
        agent_round(graph, ids, t)

    for t in range(args.turns - 1):
        round_(t)
    gc.collect()
    passes = Passes()
    gc.callbacks.append(passes)
    on[0] = True
    c0 = time.process_time()
    round_(args.turns - 1)
    process_cpu = time.process_time() - c0
    on[0] = False
    gc.callbacks.remove(passes)
    idle = _idle_log_objects(saver) if args.saver.startswith("jsonl") else None
    promotions = Promotions()  # one more round, counted on its own
    gc.callbacks.append(promotions)
    round_(args.turns)
    gc.callbacks.remove(promotions)
    left_alive, peak = _paused_round(saver, graph, ids[:50], args.turns + 1)
    n = args.threads
    print(json.dumps({
        "process_cpu_per_turn": process_cpu / n,
        "method_cpu_per_turn": {k: v / n for k, v in cpu.items()},
        "gc_passes": {str(g): passes.passes[g] for g in range(3)},
        "gc_seconds_per_turn": {str(g): passes.seconds[g] / n for g in range(3)},
        "moved_to_oldest_per_turn": promotions.moved / n,
        "moved_by_type_per_turn": {k: round(v / n, 2) for k, v in promotions.by_type.most_common(10)},
        "idle_log": idle,
        "left_alive_per_turn": left_alive,
        "turn_peak": peak,
    }))


def main() -> None:
    args = fill_turn_args(__doc__, NAME, KINDS, threads=200)
    if args.worker:
        worker(args)
        return
    results: dict[str, Any] = {}
    for kind in args.savers:
        r = results[kind] = run_worker(Path(__file__), ["--saver", kind, "--threads", str(args.threads),
                                                        "--turns", str(args.turns)])
        print(f"[{NAME}] {kind:10s} CPU {r['process_cpu_per_turn'] * 1e3:6.2f} ms/turn; "
              + ", ".join(f"{m} {v * 1e3:.2f}" for m, v in r["method_cpu_per_turn"].items())
              + f"; moved to the oldest generation {r['moved_to_oldest_per_turn']:.0f}/turn, "
              f"passes {r['gc_passes']}; left alive per turn "
              + ", ".join(f"{k} {v:.0f}" for k, v in r["left_alive_per_turn"].items())
              + f"; highest in a turn {r['turn_peak']:.0f}; idle log {r['idle_log']}", flush=True)
    label = {"jsonl": "jsonl", "jsonl-open": "jsonl (every log open)", "jsonl-1": "jsonl (one idle log open)",
             "sqlite": "sqlite", "memory": "memory"}
    table = Table()
    case = f"{args.threads} threads round-robin, turn {args.turns}"
    for kind, r in results.items():
        saver = label[kind]
        table.add(case, "process CPU per turn", saver, r["process_cpu_per_turn"], "s")
        for m in METHODS:
            table.add(case, f"{m}: CPU per turn", saver, r["method_cpu_per_turn"].get(m, 0.0), "s")
        for gen, what in (("0", "youngest-generation"), ("1", "middle-generation"), ("2", "full")):
            table.add(case, f"collector: {what} passes in the round", saver, r["gc_passes"][gen], "passes")
        table.add(case, "collector: time per turn, all passes", saver,
                  sum(r["gc_seconds_per_turn"].values()), "s")
        table.add(case, "tracked objects moved to the oldest generation per turn", saver,
                  r["moved_to_oldest_per_turn"], "objects")
        for what, count in r["left_alive_per_turn"].items():
            label_ = "a whole turn" if what == "turn" else what
            table.add(case, f"tracked objects left alive per turn: {label_}", saver, count, "objects")
        table.add(case, "tracked objects alive above a turn's start at its highest (saver calls' "
                  "ends; youngest pass at 700)", saver, r["turn_peak"], "objects")
        if r["idle_log"]:
            table.add(case, "tracked objects one idle open log holds", saver, r["idle_log"]["objects"],
                      "objects")
    notes = [f"idle open log, by type ({label[k]}): {r['idle_log']['by_type']}"
             for k, r in results.items() if r.get("idle_log")]
    notes += [f"moved to the oldest generation per turn, by type ({label[k]}): {r['moved_by_type_per_turn']}"
              for k, r in results.items()]
    write_results(args.name, {"threads": args.threads, "turns": args.turns, "results": results}, table,
                  header="Where a turn of the round-robin fill goes: CPU per saver method, and the "
                  "cyclic collector (what each saver's objects cost it).", notes=notes,
                  quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
