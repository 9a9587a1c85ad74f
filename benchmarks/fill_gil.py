"""Where the fill's CPU goes, saver against saver: samples of the thread holding the GIL.

    python benchmarks/fill_gil.py                                  # 1,000 threads x 10 turns
    python benchmarks/fill_gil.py --threads 200 --turns 5 --name fill_gil-small
    python benchmarks/fill_gil.py --quick                          # 20 threads x 3 turns

Runs ``profile_fill.py`` (the fill of ``many_threads.py``, durability "sync") once per
saver under ``py-spy record --gil`` (``pip install -r benchmarks/requirements.txt``):
py-spy samples, 250 times a second, the Python stack of whichever thread holds the GIL,
so a sample is CPU spent in Python (or in C called from it without releasing the GIL);
waits on locks, ``fdatasync`` and the queue of LangGraph's background executor are not
sampled. cProfile (``profile_fill.py --profile``) cannot tell those apart and slows every
call; this does neither.

Each sample is put in the *area* of the first frame of its stack that is a saver's: a
method the saver was called by (``get_tuple``, ``put``, ``put_writes``, ...), or a
JsonlSaver hook LangGraph calls otherwise (the end of a run); samples with no saver frame
are LangGraph's, the benchmark's and the interpreter's, which every saver pays alike
(the row says how alike). Per area, microseconds of CPU a turn = samples / 250 / turns;
for JsonlSaver, also the package functions that hold the most samples (inclusive).
Samples under an import count as "imports (once)"; the "outside the saver" rows also
hold the graph's building, once, the same for every saver.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import Table, write_results

NAME = "fill_gil"
RATE = 250
HERE = Path(__file__).resolve().parent
#: A frame's function as py-spy names it, with the file's path cut to what follows
#: site-packages (or the repository), and no line number.
_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<path>.*?)(?::\d+)?\)$")
_SAVER_FRAME = re.compile(r"^(JsonlSaver|SqliteSaver|InMemorySaver)\.(\w+)$")
PACKAGE = "langgraph_jsonl_checkpoint"


def _short(path: str) -> str:
    for cut in ("site-packages/", str(HERE.parent) + "/"):
        if cut in path:
            return path.split(cut, 1)[1]
    return path


def parse_frame(frame: str) -> tuple[str, str]:
    """``(function, short path)`` of one py-spy frame."""
    m = _FRAME.match(frame)
    return (m.group("fn"), _short(m.group("path"))) if m else (frame, "")


def area_of(frames: list[tuple[str, str]]) -> str:
    """The area a stack's samples count in (see the module's docstring)."""
    if any(fn.startswith("_find_and_load") for fn, _ in frames):
        return "imports (once)"
    for fn, path in frames:
        m = _SAVER_FRAME.match(fn)
        if m:
            return m.group(2)
        if path.startswith(PACKAGE):
            return fn  # a hook of the package called by LangGraph, not a saver method
    return "outside the saver"


def aggregate(raw: str) -> tuple[int, collections.Counter[str], collections.Counter[str]]:
    """Total samples, samples per area, and inclusive samples per package function."""
    total = 0
    areas: collections.Counter[str] = collections.Counter()
    functions: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack:
            continue
        n = int(count)
        total += n
        frames = [parse_frame(f) for f in stack.split(";")]
        areas[area_of(frames)] += n
        for key in {f"{fn} ({path})" for fn, path in frames if path.startswith(PACKAGE)}:
            functions[key] += n
    return total, areas, functions


def sample(kind: str, threads: int, turns: int, workdir: Path) -> tuple[str, str]:
    """py-spy's raw samples of one saver's fill, and the fill's own summary line."""
    out = workdir / f"{kind}.txt"
    cmd = ["py-spy", "record", "--gil", "--nonblocking", "-r", str(RATE), "-f", "raw", "-o", str(out),
           "--", sys.executable, str(HERE / "profile_fill.py"), "--threads", str(threads),
           "--turns", str(turns), "--savers", kind, "--tmp", str(workdir)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"py-spy of the {kind} fill failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    line = next((x for x in proc.stdout.splitlines() if "median" in x), "")
    return out.read_text(errors="replace"), line.strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1000)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--savers", nargs="+", default=["jsonl", "sqlite"])
    p.add_argument("--top", type=int, default=25, help="package functions listed (JsonlSaver)")
    p.add_argument("--quick", action="store_true", help="20 threads x 3 turns (a smoke test)")
    p.add_argument("--name", default=None)
    args = p.parse_args()
    if args.quick:
        args.threads, args.turns = 20, 3
    if shutil.which("py-spy") is None:
        sys.exit("fill_gil.py needs py-spy: pip install -r benchmarks/requirements.txt")
    n_turns = args.threads * args.turns
    case = f"{args.threads} threads x {args.turns} turns round-robin, CPU holding the GIL"
    table = Table()
    notes: list[str] = []
    payload: dict[str, Any] = {"threads": args.threads, "turns": args.turns, "rate": RATE, "savers": {}}
    workdir = Path(tempfile.mkdtemp(prefix="bench-gil-"))
    try:
        for kind in args.savers:
            raw, line = sample(kind, args.threads, args.turns, workdir)
            total, areas, functions = aggregate(raw)
            per_turn = {a: n / RATE / n_turns for a, n in areas.items()}
            in_saver = sum(v for a, v in per_turn.items() if a not in ("outside the saver", "imports (once)"))
            print(f"[fill_gil] {kind}: {line}", flush=True)
            print(f"[fill_gil] {kind}: {total} samples; in the saver {in_saver * 1e6:.0f} µs/turn; "
                  + ", ".join(f"{a} {v * 1e6:.0f}" for a, v in sorted(per_turn.items(), key=lambda x: -x[1])),
                  flush=True)
            table.add(case, "CPU per turn, all of it", kind, total / RATE / n_turns, "s")
            table.add(case, "CPU per turn in the saver's code", kind, in_saver, "s")
            for a, v in sorted(per_turn.items(), key=lambda x: -x[1]):
                table.add(case, f"CPU per turn: {a}", kind, v, "s")
            payload["savers"][kind] = {"fill": line, "samples": total, "areas": dict(areas),
                                       "functions": dict(functions.most_common(200))}
            if functions:
                top = ", ".join(f"{f.split(' (')[0]} {n / RATE / n_turns * 1e6:.0f}"
                                for f, n in functions.most_common(args.top))
                notes.append(f"{kind}, package functions by µs of CPU a turn (inclusive): {top}")
            notes.append(f"{kind}, the fill as profile_fill.py printed it under py-spy: {line}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cmd = (f"python benchmarks/fill_gil.py --threads {args.threads} --turns {args.turns} "
           f"--savers {' '.join(args.savers)}")
    _, md = write_results(args.name or NAME, payload, table, quick=args.quick, notes=notes,
                          header="Where the fill's CPU goes: py-spy samples of the thread holding "
                          f"the GIL, {RATE} a second, by the saver method each sample was "
                          f"under.\n\nReproduce: `{cmd}`")
    print("[fill_gil] wrote", md)


if __name__ == "__main__":
    main()
