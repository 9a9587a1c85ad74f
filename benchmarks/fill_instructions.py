"""The round-robin fill of ``many_threads.py`` counted in CPU instructions, not seconds:
``valgrind --tool=callgrind`` counts the same total for the same program and inputs
whatever else the machine is doing, so this ratio does not move with a shared machine's
load (the wall-clock ratios of ``many_threads.py`` do, by tens of percent).

    python benchmarks/fill_instructions.py                # 24 threads, turn 10
    python benchmarks/fill_instructions.py --threads 40 --turns 5

For each saver, two runs of the benchmark agent in a fresh process under callgrind: N
threads filled round-robin for T-1 turns, and for T turns (durability "sync"). The
difference of their totals over N is the instructions of one turn at turn T, imports and
set-up cancelled out. With N above ``max_open_threads`` (16) every JsonlSaver turn reopens
its thread's log, as in a server with more threads than the open bound. Instructions are
not time (a system call, an fsync or a cache miss counts little), so read this beside
``many_threads.py``'s wall times. Needs valgrind. Results in ``results/fill_instructions.md``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from many_threads import thread_ids

from _common import Table, build_agent_graph, open_saver, user_message, write_results

NAME = "fill_instructions"
SAVERS = ("jsonl", "sqlite", "memory")


def child(kind: str, threads: int, turns: int, workdir: Path) -> None:
    """The counted process: fill ``threads`` x ``turns`` round-robin."""
    workdir.mkdir(parents=True, exist_ok=True)
    h = open_saver(kind, workdir)
    graph = build_agent_graph(h.saver)
    ids = thread_ids(threads)
    for t in range(turns):
        for i in range(threads):
            graph.invoke({"messages": [user_message(i, t)]}, {"configurable": {"thread_id": ids[i]}},
                         durability="sync")
    h.close()


def instructions(kind: str, threads: int, turns: int, tmp: Path) -> int:
    """Callgrind's total instruction count of one :func:`child` run."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{kind}-{turns}-", dir=tmp))
    out = workdir / "callgrind.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    sys.executable, __file__, "--child", kind, "--threads", str(threads),
                    "--turns", str(turns), "--workdir", str(workdir / "store")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"})
    m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(errors="replace"), re.M)
    if m is None:
        raise SystemExit(f"{out}: no instruction total")
    return int(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=24)
    p.add_argument("--turns", type=int, default=10, help="the turn counted (T)")
    p.add_argument("--savers", nargs="+", default=list(SAVERS), choices=SAVERS)
    p.add_argument("--child", choices=SAVERS, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.threads, args.turns, Path(args.workdir))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("fill_instructions.py needs valgrind (apt-get install valgrind)")
    tmp = Path(tempfile.mkdtemp(prefix="fill-instructions-"))
    results = []
    try:
        for kind in args.savers:
            # once outside valgrind first: modules compiled to .pyc, so neither counted run
            # pays for compiling (the first would, and the difference would be off by that)
            warm = Path(tempfile.mkdtemp(prefix=f"{kind}-warm-", dir=tmp))
            subprocess.run([sys.executable, __file__, "--child", kind, "--threads", "2", "--turns", "2",
                            "--workdir", str(warm / "store")], check=True, stdout=subprocess.DEVNULL)
            before = instructions(kind, args.threads, args.turns - 1, tmp)
            after = instructions(kind, args.threads, args.turns, tmp)
            per_turn = (after - before) / args.threads
            results.append({"saver": kind, "instructions_before": before, "instructions_after": after,
                            "per_turn": per_turn})
            print(f"[{NAME}] {kind}: {per_turn / 1e6:.2f} M instructions per turn at turn {args.turns}",
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    case = f"{args.threads} threads round-robin, turn {args.turns} (durability sync)"
    for r in results:
        table.add(case, "CPU instructions per turn (callgrind)", r["saver"], r["per_turn"], "")
    write_results(NAME, {"threads": args.threads, "turns": args.turns, "results": results}, table,
                  header="The round-robin fill counted in CPU instructions (valgrind --tool=callgrind): "
                  "the same count on a busy machine as on a quiet one.")


if __name__ == "__main__":
    main()
