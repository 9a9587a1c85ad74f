"""The stress scripts' common frame (``stress.kill9``, ``stress.multiprocess``).

``stress_args`` adds ``--seed`` and ``--workdir`` and parses; ``stress_report`` prints
the violations, the seed and the elapsed time and gives the exit status.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any


def stress_args(parser: Any, name: str) -> tuple[Any, int, str]:
    """Add ``--seed`` and ``--workdir`` to a stress script's parser and parse.

    Returns:
        The arguments, the seed (from the clock when not given) and the work directory
        (a new temp dir unless ``--workdir`` is given).
    """
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--workdir", default=None,
                        help="keep the store and logs here (default: a temp dir, removed)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    work = args.workdir or tempfile.mkdtemp(prefix=f"{name}-")
    os.makedirs(work, exist_ok=True)
    return args, seed, work


def stress_report(violations: list[str], seed: int, t0: float, work: str, keep: bool) -> int:
    """Print the violations, seed and elapsed time; remove ``work`` unless kept or a
    violation needs it; return the exit status (1 on any violation)."""
    print(f"violations: {len(violations)}")
    for v in violations:
        print(f"  {v}")
    print(f"seed: {seed}; elapsed: {time.monotonic() - t0:.0f} s")
    if not keep and not violations:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if violations else 0
