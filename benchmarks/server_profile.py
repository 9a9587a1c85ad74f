"""The ``--profile`` part of ``benchmarks/server.py`` (not a benchmark itself): ``py-spy``
attached to a running server, and its folded stacks summarised.

The summary counts the samples of the thread holding the GIL (``py-spy record --gil``):
the server is one Python process, so where the GIL goes is where its Python time goes
(system calls that let the GIL go, and waits, are not in it; a GIL holder the OS has
descheduled on a busy machine is). Each stack is put in one part of the server, the first of
:data:`PARTS` that any of its frames matches, so a checkpointer's serializer calls count as
the checkpointer's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from _common import LABELS, RESULTS

#: py-spy samples per second.
PROFILE_RATE = 200
#: Each checkpointer's frames, by a fragment of their file paths.
MARKS = {"jsonl": "langgraph_jsonl_checkpoint/", "sqlite_async": "sqlite/"}
#: Parts of the server, by the first match from the top of this list anywhere in a stack
#: (a saver's serializer calls count as the saver's).
PARTS = (
    ("checkpointer (JsonlSaver)", ("langgraph_jsonl_checkpoint/",)),
    ("checkpointer (AsyncSqliteSaver, aiosqlite)", ("sqlite/",)),
    ("graph nodes (fake model, tool)", ("_common.py",)),
    ("LangGraph loop (pregel, channels)", ("(pregel/", "(langgraph/pregel/", "(channels/",
                                           "(langgraph/channels/")),
    ("server: runs, threads, API (langgraph_api, runtime)", ("langgraph_api/", "langgraph_runtime")),
    ("server: HTTP (uvicorn, starlette)", ("uvicorn/", "starlette/")),
)


def read_folded(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw output: one ``frame;frame;... count`` line per distinct stack."""
    rows = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            rows.append((stack.split(";"), int(count)))
    return rows


#: Frames at the root of the main thread's every stack (the server's start), left out
#: when a stack is put in a part.
ROOT_FRAMES = ("(langgraph:", "(langgraph_cli/", "(langgraph_api/cli.py:")


def part_of(stack: list[str]) -> str:
    joined = ";".join(f for f in stack if not any(r in f for r in ROOT_FRAMES))
    for part, marks in PARTS:
        if any(m in joined for m in marks):
            return part
    return "other (the event loop, asyncio, threads, logging)"


def profile_summary(rows: list[tuple[list[str], int]], marks: dict[str, int]) -> list[str]:
    """The GIL holder's samples by part; then, for each ``mark`` (a path fragment, with
    how many functions to show), the functions of its frames: inclusive (a sample counts
    once for every such function on its stack) and deepest (the last such frame, with the
    function it was in)."""
    total = sum(n for _, n in rows) or 1
    parts: dict[str, int] = {}
    for stack, n in rows:
        part = part_of(stack)
        parts[part] = parts.get(part, 0) + n
    out = [f"{total} samples of the thread holding the GIL", "", "by part:"]
    out += [f"  {n / total:6.1%}  {part}" for part, n in sorted(parts.items(), key=lambda x: -x[1])]
    for mark, top in marks.items():
        inclusive: dict[str, int] = {}
        deepest: dict[str, int] = {}
        for stack, n in rows:
            names = [f.split(" (")[0] for f in stack]
            mine = [i for i, f in enumerate(stack) if mark in f]
            for name in {names[i] for i in mine}:
                inclusive[name] = inclusive.get(name, 0) + n
            if mine:
                i = mine[-1]
                leaf = names[i] if i == len(stack) - 1 else f"{names[i]} -> {names[-1]}"
                deepest[leaf] = deepest.get(leaf, 0) + n
        out += ["", f"functions of {mark} (inclusive):"]
        out += [f"  {n / total:6.1%}  {k}" for k, n in sorted(inclusive.items(), key=lambda x: -x[1])[:top]]
        out += ["", f"deepest frame of {mark} -> the function it was in:"]
        out += [f"  {n / total:6.1%}  {k}" for k, n in sorted(deepest.items(), key=lambda x: -x[1])[:top]]
    return out


def write_profile(name: str, profile_dir: Path, results: list[dict[str, Any]], header: str) -> Path:
    """``results/<name>-profile.txt``: each checkpointer's servers (repeats pooled)."""
    lines = [header, ""]
    for kind, mark in MARKS.items():
        files = sorted(profile_dir.glob(f"{kind}-rep*.folded"))
        if not files:
            continue
        rows = [row for f in files for row in read_folded(f)]
        rs = [r for r in results if r["saver"] == kind]
        cpu_per_run = sum(r["server_cpu"] for r in rs) / sum(r["runs"] for r in rs)
        lines += [f"== {LABELS[kind]}: {len(files)} server(s); runs/s while profiled, one a server: "
                  + ", ".join(f"{r['runs_per_s']:.1f}" for r in rs)
                  + f"; server CPU {cpu_per_run * 1e3:.1f} ms per run", ""]
        lines += profile_summary(rows, {mark: 25, "langgraph_runtime_inmem/": 12}) + [""]
    path = RESULTS / f"{name}-profile.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def start_profiler(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """``py-spy record`` of process ``pid`` until SIGINT: the GIL holder's stacks, folded.

    ``--nonblocking``: py-spy's default pauses the whole process for every sample, which
    costs more the more OS threads it has (JsonlSaver's server has its saver's worker
    threads besides the server's): in a trial with pauses JsonlSaver's server ran 0.85x
    AsyncSqliteSaver's runs/s, against 1.16-1.23x unprofiled."""
    if shutil.which("py-spy") is None:
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    return subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw",
                             "--rate", str(PROFILE_RATE), "--threads", "--gil", "--nonblocking",
                             "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
