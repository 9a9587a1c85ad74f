"""Session memory upkeep per put at 10 and 1,000 turns, and the debug tracer's overhead.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/memory_upkeep.py            # full run: 10 and 1,000 turns; 200 traced turns
    python benchmarks/memory_upkeep.py --quick    # smoke test: 10 and 200 turns; 40 traced turns

The graph is the agent of ``_common.build_agent_graph`` (user message -> agent -> tool ->
agent: 4 checkpoints and 3 ``put_writes`` per turn, ``durability="sync"``).

Part 1, upkeep: a ``JsonlSaver`` keeps each thread's memory as records are appended
(``MemoryKeeper.appended``, after every durable append). The time of each call is
recorded over the last 10 turns of a thread of 10 and of 1,000 turns (each size in its
own fresh process): the claim is that it does not grow with the thread (ratio ~1).
For contrast, the same process then times a rebuild of the memory from the whole log
(a fresh builder fed every record), and a fresh process times ``session_memory()``
after the log's index is loaded: with the ``.mem`` file (loaded; the log read from
where it ends) and with it deleted (rebuilt from the whole log).

Part 2, overhead on whole turns: three threads in one process, their turns interleaved
(so the machine's noise hits all alike): a saver with ``session_memory=False``, the
default saver (memory kept), and the default saver with ``JsonlTracer`` in the run's
callbacks. Wall time per turn, median and p90, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph_jsonl_checkpoint import JsonlSaver, JsonlTracer
from langgraph_jsonl_checkpoint.memory import MemoryBuilder, MemoryKeeper

from _common import RESULTS, build_agent_graph, environment, quantile, run_worker, user_message

NAME = "memory_upkeep"
LAST = 10


def upkeep_worker(turns: int, tmp: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-memory-", dir=tmp))
    try:
        times: list[float] = []
        original = MemoryKeeper.appended
        measuring = [False]

        def timed(self: MemoryKeeper, log: Any) -> None:
            t0 = time.perf_counter()
            original(self, log)
            if measuring[0]:
                times.append(time.perf_counter() - t0)

        MemoryKeeper.appended = timed  # type: ignore[method-assign]
        cfg = {"configurable": {"thread_id": "conversation-1"}}
        with JsonlSaver(work / "store") as saver:
            graph = build_agent_graph(saver)
            seq_before = 0
            for turn in range(turns):
                measuring[0] = turn >= turns - LAST
                if turn == turns - LAST:
                    seq_before = saver.store.thread_log("conversation-1").index.last_seq
                graph.invoke({"messages": [user_message(1, turn)]}, cfg, durability="sync")
            records = list(saver.store.thread_log("conversation-1").iter_records())
            # The builder alone, away from LangGraph's heap and caches: the records of the
            # last turns fed to the builder's state as it was before them, many times.
            head = [r for r in records if r["seq"] <= seq_before]
            tail = [r for r in records if r["seq"] > seq_before and r["t"] != "snapshot"]
            before = MemoryBuilder("conversation-1", saver.codec.decode)
            for rec in head:
                before.feed(rec)
            state = json.dumps(before.state())
            isolated = []
            for _ in range(200):
                b = MemoryBuilder("conversation-1", saver.codec.decode, json.loads(state))
                t0 = time.perf_counter()
                for rec in tail:
                    b.feed(rec)
                isolated.append((time.perf_counter() - t0) / len(tail))
            t0 = time.perf_counter()
            builder = MemoryBuilder("conversation-1", saver.codec.decode)
            for rec in records:
                builder.feed(rec)
            rebuild = time.perf_counter() - t0
            assert builder.memory() == saver.session_memory("conversation-1", budget=None)
        # A fresh process: the log's index loaded first (what any first read pays), then
        # the memory: from the .mem file, and again with the file deleted (a rebuild).
        code = (
            "import os, sys, time, json\n"
            "from langgraph_jsonl_checkpoint import JsonlSaver\n"
            "out = {}\n"
            "for case in ('kept', 'deleted'):\n"
            "    s = JsonlSaver(sys.argv[1], read_only=True)\n"
            "    log = s.store.thread_log('conversation-1'); log.refresh()\n"
            "    if case == 'deleted': os.unlink(log.paths.memory)\n"
            "    t0 = time.perf_counter(); m = s.session_memory('conversation-1')\n"
            "    out[case] = time.perf_counter() - t0; out['turns'] = m.turns; s.close()\n"
            "print(json.dumps(out))\n"
        )
        out = subprocess.run([sys.executable, "-c", code, str(work / "store")], capture_output=True,
                             text=True, check=True, timeout=600)
        fresh = json.loads(out.stdout)
        assert fresh["turns"] == turns
        return {"turns": turns, "records": len(records), "upkeep_s": times, "rebuild_s": rebuild,
                "feed_isolated_s": isolated, "state_bytes": len(state),
                "fresh_process_s": fresh["kept"], "fresh_process_without_file_s": fresh["deleted"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def overhead_worker(turns: int, tmp: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-tracer-", dir=tmp))
    try:
        plain = JsonlSaver(work / "plain", session_memory=False)
        kept = JsonlSaver(work / "kept")
        tracer = JsonlTracer(kept)
        cases = {
            "no memory, no tracer": (build_agent_graph(plain), {"configurable": {"thread_id": "a"}}),
            "memory kept (default)": (build_agent_graph(kept), {"configurable": {"thread_id": "b"}}),
            "memory kept + JsonlTracer": (build_agent_graph(kept),
                                          {"configurable": {"thread_id": "c"}, "callbacks": [tracer]}),
        }
        walls: dict[str, list[float]] = {k: [] for k in cases}
        for turn in range(turns):
            for name, (graph, cfg) in cases.items():
                t0 = time.perf_counter()
                graph.invoke({"messages": [user_message(1, turn)]}, cfg, durability="sync")
                walls[name].append(time.perf_counter() - t0)
        tracer.close()
        trace_bytes = sum(p.stat().st_size for p in (work / "kept" / "traces").iterdir())
        plain.close()
        kept.close()
        return {"turns": turns, "wall_s": walls, "trace_bytes": trace_bytes}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _us(x: float) -> str:
    return f"{x * 1e6:.1f} µs" if x < 1e-5 else f"{x * 1e6:.0f} µs"


def _ms(x: float) -> str:
    return f"{x * 1e3:.2f} ms"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--worker", nargs=3, metavar=("PART", "TURNS", "TMP"))
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    if args.worker:
        part, turns, tmp = args.worker
        fn = upkeep_worker if part == "upkeep" else overhead_worker
        print(json.dumps(fn(int(turns), tmp)))
        return
    tmp = args.tmp or tempfile.gettempdir()
    sizes = (10, 200) if args.quick else (10, 1000)
    traced_turns = 40 if args.quick else 200
    script = Path(__file__).resolve()
    upkeep = [run_worker(script, ["upkeep", str(n), tmp]) for n in sizes]
    overhead = run_worker(script, ["overhead", str(traced_turns), tmp])

    md = [f"# {NAME}{' (quick)' if args.quick else ''}", "", (__doc__ or "").split("\n\n")[0], ""]
    env = environment()
    md.append(f"Run {env['when']} on {env['cpus']} CPUs (load avg at end {env['loadavg'][0]:.2f}), "
              f"Python {env['python']}, langgraph {env['versions'].get('langgraph')}, package git "
              f"{env['git']} (sources sha256 {env['package_sha256']}).")
    md += ["", "## Upkeep per append (MemoryKeeper.appended), last 10 turns", "",
           "| turns | records in log | appends timed | median | p90 | max | rebuild in process | "
           "fresh process: from .mem | fresh process: .mem deleted |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for u in upkeep:
        xs = u["upkeep_s"]
        md.append(f"| {u['turns']} | {u['records']} | {len(xs)} | {_us(statistics.median(xs))} | "
                  f"{_us(quantile(xs, 0.9))} | {_us(max(xs))} | {_ms(u['rebuild_s'])} | "
                  f"{_ms(u['fresh_process_s'])} | {_ms(u['fresh_process_without_file_s'])} |")
    small, large = (statistics.median(u["upkeep_s"]) for u in upkeep)
    md += ["", f"Ratio of medians, {sizes[1]} turns / {sizes[0]} turns: **{large / small:.2f}**.", ""]
    md += ["### The builder alone", "",
           "The non-snapshot records of the same last 10 turns, fed 200 times to the builder's "
           "state as it was before them (no file, no LangGraph work between calls); per record.", "",
           "| turns | builder state (JSON bytes) | median per record | p90 |", "|---:|---:|---:|---:|"]
    for u in upkeep:
        xs = u["feed_isolated_s"]
        md.append(f"| {u['turns']} | {u['state_bytes']:,} | {_us(statistics.median(xs))} | "
                  f"{_us(quantile(xs, 0.9))} |")
    a, b = (statistics.median(u["feed_isolated_s"]) for u in upkeep)
    md += ["", f"Ratio of medians, {sizes[1]} turns / {sizes[0]} turns: **{b / a:.2f}**.", ""]
    md += ["## Whole turns, interleaved in one process", "",
           f"{overhead['turns']} turns each; wall time per turn.", "",
           "| case | median | p90 | ratio to no memory, no tracer (median) |", "|---|---:|---:|---:|"]
    base = statistics.median(overhead["wall_s"]["no memory, no tracer"])
    for name, xs in overhead["wall_s"].items():
        med = statistics.median(xs)
        md.append(f"| {name} | {_ms(med)} | {_ms(quantile(xs, 0.9))} | {med / base:.3f} |")
    md += ["", f"Trace written for {overhead['turns']} turns: {overhead['trace_bytes']:,} bytes.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = NAME + ("-quick" if args.quick else "")
    (RESULTS / f"{stem}.md").write_text("\n".join(md) + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"benchmark": NAME, "quick": args.quick, "environment": env, "upkeep": upkeep, "overhead": overhead},
        indent=1) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
