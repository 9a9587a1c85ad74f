"""The round-robin fill of ``many_threads.py`` counted in CPU instructions, not seconds:
``valgrind --tool=callgrind`` counts the same total for the same program and inputs
whatever else the machine is doing, so this ratio does not move with a shared machine's
load (the wall-clock ratios of ``many_threads.py`` do, by tens of percent).

    python benchmarks/fill_instructions.py                # 24 threads, turn 10
    python benchmarks/fill_instructions.py --threads 40 --turns 5

For each saver, one run of the benchmark agent in a fresh process under callgrind, with
instrumentation off: N threads filled round-robin for T-1 turns (durability "sync");
then ``callgrind_control`` turns it on for round T alone and dumps the count, over N the
instructions of one turn at turn T. A round is counted whole, so the cyclic collector's
passes that fall in it are too: with few threads a full pass more or less moves the
figure (more threads, steadier). With N above ``max_open_threads`` (16) every JsonlSaver turn reopens
its thread's log, as in a server with more threads than the open bound. Instructions are
not time (a system call, an fsync or a cache miss counts little), so read this beside
``many_threads.py``'s wall times. Needs valgrind. Results in ``results/fill_instructions.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from many_threads import thread_ids

from _common import Table, agent_round, build_agent_graph, open_saver, write_results

NAME = "fill_instructions"
SAVERS = ("jsonl", "sqlite", "memory")
#: The counted process's environment: fixed hashing; PYTHONPATH kept, so another
#: checkout's package can be counted with these scripts (an A/B of two commits).
CHILD_ENV = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin",
             **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})}


def child(kind: str, threads: int, turns: int, workdir: Path) -> None:
    """The counted process: fill ``threads`` x ``turns - 1`` round-robin, say ``ready`` and
    wait for a line; then round ``turns``, say ``done`` and wait for a line."""
    workdir.mkdir(parents=True, exist_ok=True)
    h = open_saver(kind, workdir)
    graph = build_agent_graph(h.saver)
    ids = thread_ids(threads)

    def round_(t: int) -> None:
        agent_round(graph, ids, t)

    for t in range(turns - 1):
        round_(t)
    print("ready", flush=True)
    sys.stdin.readline()
    round_(turns - 1)
    print("done", flush=True)
    sys.stdin.readline()
    h.close()


def instructions(kind: str, threads: int, turns: int, tmp: Path) -> int:
    """Callgrind's instruction count of round ``turns`` of one :func:`child` run."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=tmp))
    out = workdir / "callgrind.out"
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             f"--callgrind-out-file={out}", sys.executable, __file__, "--child", kind,
                             "--threads", str(threads), "--turns", str(turns),
                             "--workdir", str(workdir / "store")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=CHILD_ENV)
    assert proc.stdin is not None and proc.stdout is not None

    def control(*flags: str) -> None:
        subprocess.run(["callgrind_control", *flags, str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def step(expected: str) -> None:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if line != expected:
            proc.kill()
            raise SystemExit(f"{kind}: the counted process said {line!r}, not {expected!r}")

    step("ready")
    control("--instr=on")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    step("done")
    control("--dump=round")
    control("--instr=off")
    proc.stdin.write("end\n")
    proc.stdin.flush()
    proc.wait(timeout=3600)
    dumps = sorted(workdir.glob("callgrind.out*"))
    for dump in dumps:
        text = dump.read_text(errors="replace")
        if "round" in text.split("\nevents:", 1)[0]:
            m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if m:
                return int(m.group(1))
    raise SystemExit(f"{kind}: no dump of the counted round among {[d.name for d in dumps]}")


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
            count = instructions(kind, args.threads, args.turns, tmp)
            per_turn = count / args.threads
            results.append({"saver": kind, "instructions_round": count, "per_turn": per_turn})
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
