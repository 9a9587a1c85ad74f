"""The full power-loss battery (docs/reliability.md, "The batteries"): thousands of simulated power cuts.

Run it from the repository root, in the project's virtualenv:

    . .venv/bin/activate && python -m stress.powerloss --states 5000 --seed 1

An I/O shim (``tests/harness/powerloss_shim.py`` and ``powerloss_fs.py``) records every
file operation the package makes and models what a power cut right after it can leave on
disk (Linux ext4, ``data=ordered``, pessimistically): every 512-byte sector written since
the file's last fsync kept, lost, zeroed or garbled, file lengths anywhere between
durable and current, creates, renames and unlinks not yet made durable by a directory
fsync kept or undone.
Synced data is never altered. Rounds of real workloads run through it on fresh stores:
put and put_writes (multi-record batches, a snapshot every two checkpoints), LangGraph
agent runs with ``durability="sync"``, delete_thread, prune, compact, copy_thread,
delete_for_runs, torn tails and their repair, sidecar index rewrites, reopens. At random
operations crash images are drawn, and some images are recovered under a second shim
that draws crash images during the recovery too.

Every image must: open read-only and writable with no error (no false corruption
report) and change nothing when read-only; serve every checkpoint and write whose call
returned exactly once with its values, and nothing partial or never started (compared
with an InMemorySaver fed the acknowledged calls); keep deleted threads deleted (a late
write refused); keep bytes a durable tail repair cut in the quarantine file; take a
further put and serve it after a reopen; pass ``verify``; leave no temp files.

Prints progress, then: crash states checked (of which during recovery), rounds, file
operations recorded, states by operation, violations (each one listed), elapsed time.
Writes the same to ``stress/results/powerloss-<states>.txt`` (``--result``). Exit
status 1 on any violation. The CI subset is ``tests/test_crash_powerloss.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

from tests.harness.powerloss_rounds import RoundStats, run_battery
from tests.harness.scratch import fast_dir

HERE = os.path.dirname(os.path.abspath(__file__))


def _commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=5000, help="crash states to check (default 5000)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the first round (default: time)")
    parser.add_argument("--steps", type=int, default=40, help="workload steps per round (default 40)")
    parser.add_argument("--rate", type=float, default=0.3,
                        help="probability of crash images at each file operation (default 0.3)")
    parser.add_argument("--workdir", default=None,
                        help="scratch directory, kept (default: a temp dir on tmpfs, removed if clean)")
    parser.add_argument("--result", default=None,
                        help="result file (default stress/results/powerloss-<states>.txt; '-' for none)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    work = args.workdir or fast_dir(tempfile.gettempdir())
    os.makedirs(work, exist_ok=True)
    result_path = args.result or os.path.join(HERE, "results", f"powerloss-{args.states}.txt")
    # A crash image with a damaged record is logged by read-only opens; the battery
    # reports whatever matters as a violation.
    logging.getLogger("langgraph_jsonl_checkpoint").setLevel(logging.ERROR)
    lines: list[str] = []

    def out(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    started = datetime.now(UTC).isoformat(timespec="seconds")
    header = [f"# commit {_commit()}",
              (f"# command: python -m stress.powerloss --states {args.states} --seed {seed} "
               f"--steps {args.steps} --rate {args.rate}"),
              f"# started {started}, load {_load()}"]
    out(f"powerloss: {args.states} crash states, seed {seed}, workdir {work}")

    def progress(stats: RoundStats, elapsed: float) -> None:
        out(f"  {stats.rounds} rounds, {stats.states} states ({stats.recovery_states} during recovery), "
            f"{len(stats.violations)} violations, {elapsed:.0f} s")

    t0 = time.monotonic()
    stats = run_battery(args.states, seed, work, steps=args.steps, rate=args.rate, progress=progress)
    elapsed = time.monotonic() - t0
    out(f"crash states checked: {stats.states} ({stats.recovery_states} during recovery from a crash)")
    out(f"rounds: {stats.rounds}; workload steps: {stats.steps}; file operations recorded: {stats.ops}")
    out("states by operation: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.states_by_op.items())))
    out(f"violations: {len(stats.violations)}")
    for v in stats.violations:
        out(f"  {v}")
    out(f"seed: {seed}; elapsed: {elapsed:.0f} s")
    rc = 1 if stats.violations else 0
    if result_path != "-":
        finished = datetime.now(UTC).isoformat(timespec="seconds")
        os.makedirs(os.path.dirname(result_path), exist_ok=True)
        with open(result_path, "w", encoding="utf-8") as f:
            f.write("\n".join(header + lines + [f"# finished {finished}, rc {rc}, load {_load()}"]) + "\n")
        print(f"result written to {result_path}")
    if args.workdir is None and not stats.violations:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
