"""The full kill -9 battery (docs/reliability.md, "The batteries"): 1,000 SIGKILLs of real agent runs.

Run it from the repository root, in the project's virtualenv:

    . .venv/bin/activate && python -m stress.kill9 --rounds 1000

Each round forks a child that runs a LangGraph tool-calling agent (scripted fake chat
model, ``ToolNode``, ``durability="sync"``) on a new thread of one shared store, and
SIGKILLs it at a random instant of the run (uniform over an uninterrupted run's duration).
Every ``--resume-kill-every``-th round, the first resume is killed too (a crash during
recovery). After each kill the store must open, every checkpoint whose ``put`` returned
must be listed exactly once (one record in the raw log), every acknowledged write must be
pending on its checkpoint, and a fresh process running ``graph.invoke(None, config)``
must finish the run with exactly the messages of an uninterrupted run.

Prints progress, then: rounds, kills that hit a running writer, acknowledged checkpoints
checked, violations (each one listed) and the elapsed time. Exit status 1 on any
violation. The CI subset of this battery is tests/test_crash_kill9.py.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

from langgraph_jsonl_checkpoint import JsonlSaver
from stress.common import stress_args, stress_report
from tests.harness.rounds import kill_round, reference_agent_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000, help="kills to run (default 1000)")
    parser.add_argument("--resume-kill-every", type=int, default=3,
                        help="kill the first resume of every Nth round too (0: never; default 3)")
    args, seed, work = stress_args(parser, "kill9")
    store = os.path.join(work, "store")
    print(f"kill9: {args.rounds} rounds, seed {seed}, workdir {work}", flush=True)
    t0 = time.monotonic()
    reference, run_seconds = reference_agent_result(work)
    print(f"an uninterrupted agent run takes {run_seconds * 1000:.0f} ms", flush=True)
    rng = random.Random(seed)
    violations: list[str] = []
    mid_run = acked = resumes_killed = 0
    for r in range(args.rounds):
        kill_resume = bool(args.resume_kill_every) and r % args.resume_kill_every == 0
        kr = kill_round(store, work, f"agent-{r}", rng, run_seconds, reference, kill_resume=kill_resume)
        mid_run += kr.killed[0]
        resumes_killed += sum(kr.killed[1:])
        acked += kr.acked_before_kill
        for v in kr.violations:
            violations.append(f"round {r}: {v}")
            print(f"VIOLATION round {r}: {v}", flush=True)
        if (r + 1) % 50 == 0:
            print(
                f"  {r + 1} rounds, {len(violations)} violations, {time.monotonic() - t0:.0f} s", flush=True
            )
    try:
        n = len(list(JsonlSaver(store).store.thread_ids()))
        if n != args.rounds:
            violations.append(f"the store lists {n} threads, not {args.rounds}")
    except Exception as exc:  # noqa: BLE001
        violations.append(f"the store does not open at the end: {type(exc).__name__}: {exc}")
    print(f"rounds: {args.rounds}")
    print(f"kills that hit a running writer: {mid_run}; resumes killed: {resumes_killed}")
    print(f"acknowledged checkpoints checked after a kill: {acked}")
    return stress_report(violations, seed, t0, work, keep=args.workdir is not None)


if __name__ == "__main__":
    sys.exit(main())
