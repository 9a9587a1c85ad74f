"""Crash battery 6 (CI subset): several processes writing, one reading, killed at random.

Three writer processes share one store: each does ``put_writes`` on one base checkpoint
of a shared thread (distinct task ids), ``put``\\ s chaining onto the shared thread's
latest checkpoint, and puts + writes on a thread of its own. A reader process tails
every thread and records each checkpoint and shared write it saw. Each writer is
SIGKILLed at its own random instant while the others keep writing; the reader last.

Then: the store opens; every acknowledged checkpoint is listed exactly once (one
record in the raw log) in the thread it was written to; every acknowledged write is
pending exactly once; nothing the reader saw has disappeared; every thread takes a new
put (cutting any torn tail) and the same holds after a reopen.

The full battery is ``python -m stress.multiprocess --rounds 200``.
Environment: ``CRASH_MP_ROUNDS`` (default 4), ``CRASH_SEED``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from tests.harness.rounds import mp_round

ROUNDS = int(os.environ.get("CRASH_MP_ROUNDS", "4"))
SEED = int(os.environ.get("CRASH_SEED", "5"))


def test_concurrent_writers_and_a_reader_killed_at_random(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    rng = random.Random(SEED)
    violations: list[str] = []
    total_cps = total_writes = 0
    for r in range(ROUNDS):
        cps, writes, v = mp_round(store, str(tmp_path / f"round-{r}"), rng, writers=3, max_seconds=1.2)
        violations += [f"round {r} (seed {SEED}): {x}" for x in v]
        total_cps += cps
        total_writes += writes
    assert not violations, "\n".join(violations[:20])
    assert total_cps > 20 and total_writes > 20, (total_cps, total_writes)
