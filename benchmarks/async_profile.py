"""Where the time of ``micro.py``'s async case goes: 50 threads advanced concurrently with
``ainvoke``, each saver in a process of its own under ``py-spy record --gil``.

    python benchmarks/async_profile.py            # 50 threads x 20 ainvoke, each saver
    python benchmarks/async_profile.py --quick    # 20 threads x 5

For each saver (AsyncJsonlSaver, AsyncSqliteSaver, InMemorySaver): node steps per second,
the process's CPU seconds per wall second (1.0 = one core busy the whole time), the share
of wall time some thread held the GIL (py-spy's GIL samples ÷ rate × wall), and the GIL
holder's samples by part (checkpointer, LangGraph's loop, the graph's nodes, asyncio and
the rest). A case is bound by the GIL when the GIL is held nearly all the time: then
steps per second is one over the GIL time a step takes, and the parts say whose it is.
Results in ``results/async_profile.md`` (+ ``.json``). Needs py-spy (``pip install py-spy``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from micro import bench_async_one
from server_profile import read_folded

from _common import LABELS, Table, summary, write_results

NAME = "async_profile"
RATE = 200
KINDS = ("jsonl_async", "sqlite_async", "memory")
#: py-spy, beside this Python first (a virtualenv not activated), then on PATH.
PY_SPY = shutil.which("py-spy", path=os.pathsep.join([os.path.dirname(sys.executable),
                                                      os.environ.get("PATH", "")]))
#: Parts of the process, by the first match from the top (a saver's serializer calls count
#: as the saver's); frames are py-spy's ``function (path:line)``.
PARTS = (
    ("checkpointer (JsonlSaver)", ("langgraph_jsonl_checkpoint/",)),
    ("checkpointer (AsyncSqliteSaver, aiosqlite)", ("checkpoint/sqlite/", "aiosqlite/")),
    ("checkpointer (InMemorySaver)", ("checkpoint/memory/",)),
    ("graph nodes (micro.py's plan, act)", ("<locals>.plan (", "<locals>.act (")),
    ("LangGraph loop (pregel, channels, serde)", ("langgraph/pregel/", "langgraph/channels/",
                                                   "langgraph/_internal/", "checkpoint/serde/",
                                                   "checkpoint/base/", "langchain_core/")),
    ("asyncio event loop", ("asyncio/",)),
)


def part_of(stack: list[str]) -> str:
    joined = ";".join(stack)
    for part, marks in PARTS:
        if any(m in joined for m in marks):
            return part
    return "other"


def child(kind: str, threads: int, rounds: int) -> None:
    """The measured process: one saver's async case; prints its figures as JSON.

    Imports and a warm-up round come first; then it says ``ready`` and waits for a line on
    stdin, so the profiler attached in between sees only the timed part."""
    tmp = Path(tempfile.mkdtemp(prefix="async-profile-"))
    try:
        asyncio.run(bench_async_one(kind, 2, 2, tmp))
        print("ready", flush=True)
        sys.stdin.readline()
        before = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        r = asyncio.run(bench_async_one(kind, threads, rounds, tmp))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"saver": kind, "steps_per_s": r["steps_per_s"], "wall": r["wall"],
                      "cpu_per_wall": cpu / wall, "latency": summary(r["ainvoke_latency"])}),
          flush=True)


def profiled(kind: str, threads: int, rounds: int, out: Path) -> dict[str, Any]:
    """Run :func:`child` under py-spy; its figures plus the GIL holder's samples by part."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, "--threads", str(threads),
                             "--rounds", str(rounds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"{kind}: the measured process stopped before its timed part")
    spy = subprocess.Popen([str(PY_SPY), "record", "--pid", str(proc.pid), "--format", "raw",
                            "--rate", str(RATE), "--gil", "--nonblocking", "--output", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # py-spy attached
    proc.stdin.write("go\n")
    proc.stdin.flush()
    figures = json.loads(proc.stdout.readline())
    spy.send_signal(signal.SIGINT)
    spy.wait(timeout=60)
    proc.wait(timeout=60)
    rows = read_folded(out)
    total = sum(n for _, n in rows)
    parts: dict[str, int] = {}
    for stack, n in rows:
        parts[part_of(stack)] = parts.get(part_of(stack), 0) + n
    mine: dict[str, int] = {}
    for stack, n in rows:
        frames = [f.split(" (")[0] for f in stack if "langgraph_jsonl_checkpoint/" in f]
        if frames:
            mine[frames[-1]] = mine.get(frames[-1], 0) + n
    figures.update(gil_samples=total,
                   parts={k: v / total for k, v in parts.items()},
                   jsonl_deepest={k: v / total for k, v in sorted(mine.items(), key=lambda x: -x[1])[:15]})
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int)
    p.add_argument("--rounds", type=int)
    p.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = p.parse_args()
    threads = args.threads or (20 if args.quick else 50)
    rounds = args.rounds or (5 if args.quick else 20)
    if args.child:
        child(args.child, threads, rounds)
        return
    if PY_SPY is None:
        raise SystemExit("async_profile.py needs py-spy: pip install py-spy")
    tmp = Path(tempfile.mkdtemp(prefix="async-profile-"))
    try:
        results = [profiled(kind, threads, rounds, tmp / f"{kind}.folded") for kind in KINDS]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    case = f"{threads} threads x {rounds} ainvoke, under py-spy --gil ({RATE} Hz)"
    for r in results:
        held = r["gil_samples"] / RATE / r["wall"]
        table.add(case, "node steps/s (higher is better)", r["saver"], r["steps_per_s"], "/s")
        table.add(case, "CPU seconds per wall second", r["saver"], r["cpu_per_wall"], "")
        table.add(case, "share of wall time the GIL is held", r["saver"], held, "")
        for part, share in r["parts"].items():
            table.add(case, f"GIL samples: {part}", r["saver"], share, "")
    lines = []
    for r in results:
        parts = ", ".join(f"{share:.1%} {part}"
                          for part, share in sorted(r["parts"].items(), key=lambda x: -x[1]))
        lines.append(f"{LABELS.get(r['saver'], r['saver'])}: the GIL holder's samples by part: {parts}")
        if r["jsonl_deepest"]:
            deepest = ", ".join(f"`{fn}` {share:.1%}" for fn, share in r["jsonl_deepest"].items())
            lines.append(f"{LABELS.get(r['saver'], r['saver'])}: its deepest own frame, as a share of "
                         f"all GIL samples: {deepest}")
    write_results(NAME, {"results": results}, table,
                  header="Where the async case's time goes (`micro.py`'s async case, each saver in "
                  "a process of its own under `py-spy record --gil`).", notes=lines, quick=args.quick)
    print("\n".join(lines))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
