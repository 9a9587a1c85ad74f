"""The full multi-process battery (docs/reliability.md, "The batteries"): writers and a reader, killed.

Run it from the repository root, in the project's virtualenv:

    . .venv/bin/activate && python -m stress.multiprocess --rounds 200

Each round starts ``--writers`` processes on one store (kept for ``--fresh-store-every``
rounds, so the logs grow and carry the torn tails of earlier rounds): each does ``put_writes`` on one base
checkpoint of a shared thread (distinct task ids), ``put``\\ s chaining onto the shared
thread's latest checkpoint, and puts + writes on a thread of its own. A reader process
tails every thread and records what it saw. Each writer is SIGKILLed at its own random
instant within ``--seconds`` while the others keep writing; the reader last.

Then the store must open; every acknowledged checkpoint must be listed exactly once (one
record in the raw log); every acknowledged write must be pending exactly once; nothing
the reader saw may have disappeared; every thread must take a new put and a reopen must
still satisfy all of that.

Prints per-round counts, then totals, violations (each listed) and the elapsed time.
Exit status 1 on any violation. The CI subset is tests/test_crash_multiprocess.py.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time

from stress.common import stress_args, stress_report
from tests.harness.children import mp_context
from tests.harness.rounds import mp_round


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds to run (default 200)")
    parser.add_argument("--writers", type=int, default=3, help="writer processes per round (default 3)")
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="kills fall within this many seconds (default 2)"
    )
    parser.add_argument("--fresh-store-every", type=int, default=10,
                        help="start a new store every N rounds, so checks stay fast (default 10)")
    args, seed, work = stress_args(parser, "multiprocess")
    print(
        f"multiprocess: {args.rounds} rounds x {args.writers} writers + 1 reader, seed {seed}, "
        f"workdir {work}",
        flush=True,
    )
    mp_context()
    rng = random.Random(seed)
    t0 = time.monotonic()
    violations: list[str] = []
    cps = writes = 0
    for r in range(args.rounds):
        store = os.path.join(work, f"store-{r // max(1, args.fresh_store_every)}")
        c, w, v = mp_round(store, os.path.join(work, f"round-{r}"), rng, writers=args.writers,
                              max_seconds=args.seconds)
        cps += c
        writes += w
        for x in v:
            violations.append(f"round {r}: {x}")
            print(f"VIOLATION round {r}: {x}", flush=True)
        if args.workdir is None:
            shutil.rmtree(os.path.join(work, f"round-{r}"), ignore_errors=True)
        if (r + 1) % 10 == 0:
            print(f"  {r + 1} rounds: {cps} checkpoints and {writes} writes acknowledged, "
                  f"{len(violations)} violations, {time.monotonic() - t0:.0f} s", flush=True)
    print(f"rounds: {args.rounds}; processes killed: {args.rounds * (args.writers + 1)}")
    print(f"acknowledged: {cps} checkpoints, {writes} writes")
    return stress_report(violations, seed, t0, work, keep=args.workdir is not None)


if __name__ == "__main__":
    sys.exit(main())
