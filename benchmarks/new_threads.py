"""A new thread's first turn: what a server of many short conversations pays each time
one starts, saver by saver.

    python benchmarks/new_threads.py                  # 300 threads, 3 rounds
    python benchmarks/new_threads.py --threads 1000 --rounds 1 --name new_threads-1000

Each round, each saver in turn (JsonlSaver, SqliteSaver, InMemorySaver, in a fresh
store of a fresh temporary folder): the benchmark agent's first turn on N threads never
seen (durability "sync"), each turn timed, then their second turn; and a bare ``put`` of
an empty checkpoint on N more new threads (the first write alone, no graph). CPU is the
process's over each phase (all threads), divided by its turns.

A JsonlSaver thread is files (its log, its writer and live-run locks; the head file
once it is let go), so its first turn makes them; a SqliteSaver thread is rows. On ext4,
making a file allocates an inode, which skips those freed in the last half minute or so:
a folder where many files were just removed (a test run, a benchmark's cleanup) makes
it cost more. Rounds alternate the savers so each sees the same; ``--keep-stores``
removes the stores only at the end, so no file this run removed is freed while it makes
files (started a minute after the machine last removed many: what a fresh disk gives).
Results in ``results/<name>.{json,md}`` (default ``new_threads``).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import LABELS, Table, build_agent_graph, open_saver, summary, user_message, write_results

SAVERS = ("jsonl", "sqlite", "memory")


#: (metric, saver) -> samples over every round: times per turn, or CPU per turn of each round.
Samples = dict[tuple[str, str], list[float]]


def one_round(kind: str, threads: int, samples: Samples, kept: list[Path] | None) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    tmp = Path(tempfile.mkdtemp(prefix="bench-new-"))
    try:
        h = open_saver(kind, tmp)
        graph = build_agent_graph(h.saver)
        for turn, metric in ((0, "first turn"), (1, "second turn")):
            times = []
            cpu0 = time.process_time()
            for i in range(threads):
                cfg = {"configurable": {"thread_id": f"new-{i}"}}
                t0 = time.perf_counter()
                graph.invoke({"messages": [user_message(i, turn)]}, cfg, durability="sync")
                times.append(time.perf_counter() - t0)
            cpu = (time.process_time() - cpu0) / threads
            samples.setdefault((f"time per turn, {metric}", kind), []).extend(times)
            samples.setdefault((f"process CPU per turn, {metric}", kind), []).append(cpu)
        times = []
        cpu0 = time.process_time()
        for i in range(threads):
            cfg = {"configurable": {"thread_id": f"bare-{i}", "checkpoint_ns": ""}}
            t0 = time.perf_counter()
            h.saver.put(cfg, empty_checkpoint(), {"source": "input", "step": -1}, {})
            times.append(time.perf_counter() - t0)
        samples.setdefault(("first put of a new thread (no graph)", kind), []).extend(times)
        samples.setdefault(("process CPU per first put", kind), []).append(
            (time.process_time() - cpu0) / threads)
        h.close()
    finally:
        if kept is None:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            kept.append(tmp)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--savers", nargs="+", default=list(SAVERS), choices=SAVERS)
    p.add_argument("--name", default="new_threads")
    p.add_argument("--keep-stores", action="store_true",
                   help="remove each round's stores only at the end (no file the run removed "
                   "is freed while it makes files; start it a minute after the last removal)")
    args = p.parse_args()
    samples: Samples = {}
    kept: list[Path] | None = [] if args.keep_stores else None
    try:
        for r in range(args.rounds):
            order = args.savers if r % 2 == 0 else list(reversed(args.savers))
            for kind in order:
                one_round(kind, args.threads, samples, kept)
                print(f"[new_threads] round {r + 1}: {LABELS[kind]} done", flush=True)
    finally:
        for tmp in kept or []:
            shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    case = f"{args.threads} new threads, {args.rounds} round(s)"
    for (metric, kind), xs in sorted(samples.items(), key=lambda kv: (kv[0][0], SAVERS.index(kv[0][1]))):
        table.add(case, metric, kind, summary(xs), "s")
    cmd = (f"python benchmarks/new_threads.py --threads {args.threads} --rounds {args.rounds} "
           f"--savers {' '.join(args.savers)} --name {args.name}"
           + (" --keep-stores" if args.keep_stores else ""))
    _, md = write_results(
        args.name, {"threads": args.threads, "rounds": args.rounds}, table,
        header=f"A new thread's first turn (and its second, and a bare first put), every saver "
               f"in one process, rounds alternating their order.\n\nReproduce: `{cmd}`")
    print(md.read_text())


if __name__ == "__main__":
    main()
