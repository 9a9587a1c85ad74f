"""Cold open of a long thread: the first get_tuple in a fresh process, with and without
JsonlSaver's sidecar index, vs SqliteSaver.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/cold_open.py            # full run: a thread of 10,000 checkpoints
    python benchmarks/cold_open.py --quick    # smoke test: 1,000 checkpoints, < 60 s

The thread is written once per saver with direct ``put`` + ``put_writes`` calls (the
message list grows by one ~200-char message per checkpoint and is replaced by a summary
every 200 checkpoints; one pending write per checkpoint), then the saver is closed (which
leaves JsonlSaver's ``*.idx`` up to date). Each sample is a fresh subprocess that, after
its imports, opens the saver and calls ``get_tuple`` for the thread's latest checkpoint.
Cases, interleaved sample by sample:

- ``jsonl, idx present``   — the sidecar index covers the whole log;
- ``jsonl, idx deleted``   — every ``*.idx`` removed before the sample: the log is scanned
  to rebuild the index; rebuild speed = log bytes / time of that first ``get_tuple``;
- ``sqlite``               — ``SqliteSaver(sqlite3.connect(file))``.

By default each case runs with the OS page cache warm (files just written/read) and cold
(the parent evicts the store's files with ``posix_fadvise(POSIX_FADV_DONTNEED)`` first;
no root needed, no other files touched). The full run takes about 1.5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import (
    RESULTS,
    CheckpointStream,
    Table,
    drawn,
    open_saver,
    path_bytes,
    pyplot,
    run_worker,
    summary,
    write_results,
)

NAME = "cold_open"
THREAD = "long-thread"


def worker(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    h = open_saver(args.saver, Path(args.workdir))
    t1 = time.perf_counter()
    tup = h.saver.get_tuple({"configurable": {"thread_id": THREAD}})
    t2 = time.perf_counter()
    assert tup is not None and tup.checkpoint["channel_values"]["step"] == args.n - 1
    # Do not close: JsonlSaver.close() would write a fresh sidecar (not timed anyway,
    # but the next "idx deleted" sample removes it again). Close the sqlite connection.
    if args.saver == "sqlite":
        h.close()
    print(json.dumps({"open": t1 - t0, "get_tuple": t2 - t1, "total": t2 - t0}))


def build(kind: str, workdir: Path, n: int) -> float:
    h = open_saver(kind, workdir)
    stream = CheckpointStream(h.saver, THREAD, compact_every=200)
    t0 = time.perf_counter()
    for _ in range(n):
        out, msg = stream.put()
        h.saver.put_writes(out, [("messages", [msg])], str(uuid.uuid4()))
    h.close()
    return time.perf_counter() - t0


def files_of(kind: str, workdir: Path) -> list[Path]:
    if kind == "jsonl":
        return [Path(dp) / f for dp, _, fs in os.walk(workdir / "jsonl-store") for f in fs]
    return [p for p in workdir.iterdir() if p.name.startswith("checkpoints.sqlite")]


def evict(paths: list[Path]) -> None:
    """Drop these files' pages from the page cache (they are clean: fsynced or closed)."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--checkpoints", type=int, help="checkpoints in the thread (full 10000)")
    p.add_argument("--samples", type=int, help="fresh processes per case (full 7, quick 3)")
    p.add_argument("--no-cold", action="store_true", help="skip the evicted-page-cache cases")
    p.add_argument("--tmp", default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    n = args.checkpoints or (1000 if args.quick else 10_000)
    samples = args.samples or (3 if args.quick else 7)
    cold_modes = [False] if args.no_cold or not hasattr(os, "posix_fadvise") else [False, True]

    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cold-", dir=args.tmp))
    try:
        dirs = {k: tmp / k for k in ("jsonl", "sqlite")}
        build_s = {}
        for k, d in dirs.items():
            d.mkdir()
            build_s[k] = build(k, d, n)
            print(f"[{NAME}] built {n} checkpoints with {k} in {build_s[k]:.1f} s", flush=True)
        threads_dir = dirs["jsonl"] / "jsonl-store" / "threads"
        logs = list(threads_dir.glob("*.jsonl"))
        idxs = list(threads_dir.glob("*.idx"))
        assert len(logs) == 1 and len(idxs) == 1, (logs, idxs)
        log_bytes = logs[0].stat().st_size
        idx_bytes = idxs[0].stat().st_size
        idx_copy = tmp / "saved.idx"
        shutil.copy2(idxs[0], idx_copy)
        sqlite_bytes = sum(path_bytes(f) for f in files_of("sqlite", dirs["sqlite"]))

        cases = []
        for cold in cold_modes:
            cases += [("jsonl", "idx present", cold), ("jsonl", "idx deleted", cold),
                      ("sqlite", "", cold)]
        samples_by_case: dict[tuple, list[dict]] = {c: [] for c in cases}
        for _rep in range(samples):
            for case in cases:
                kind, variant, cold = case
                if kind == "jsonl":
                    for f in threads_dir.glob("*.idx"):
                        f.unlink()
                    if variant == "idx present":
                        shutil.copy2(idx_copy, idxs[0])
                if cold:
                    evict(files_of(kind, dirs[kind]))
                r = run_worker(Path(__file__), ["--saver", kind, "--workdir", str(dirs[kind]),
                                                "--n", str(n)], timeout=600)
                samples_by_case[case].append(r)
        for case, rs in samples_by_case.items():
            kind, variant, cold = case
            print(f"[{NAME}] {kind:6s} {variant:12s} {'cold' if cold else 'warm'}: first get_tuple "
                  f"median {summary([r['get_tuple'] for r in rs])['median'] * 1e3:.2f} ms", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    table = Table()
    case_name = f"{n} checkpoints"
    results = []
    for (kind, variant, cold), rs in samples_by_case.items():
        cache = "cold cache" if cold else "warm cache"
        label = kind if not variant else kind
        note = f"{variant + ', ' if variant else ''}{cache}"
        first = summary([r["get_tuple"] for r in rs])
        total = summary([r["total"] for r in rs])
        table.add(f"{case_name}, {cache}", "fresh process: first get_tuple", label, first, "s", note)
        table.add(f"{case_name}, {cache}", "fresh process: open + first get_tuple", label, total, "s", note)
        if kind == "jsonl" and variant == "idx deleted":
            mbps = [log_bytes / 1e6 / r["get_tuple"] for r in rs]
            table.add(f"{case_name}, {cache}", "index rebuild speed (log MB / first get_tuple s)",
                      "jsonl", summary(mbps), "MB/s", note)
        results.append({"saver": kind, "variant": variant, "cold_cache": cold, "samples": rs,
                        "first_get_tuple": first, "open_and_first_get_tuple": total})
    table.add(case_name, "bytes on disk (closed)", "jsonl", log_bytes + idx_bytes, "B",
              f"log {log_bytes / 2**20:.1f} MiB + idx {idx_bytes / 2**20:.1f} MiB")
    table.add(case_name, "bytes on disk (closed)", "sqlite", sqlite_bytes, "B")
    table.add(case_name, "build: put + put_writes per checkpoint", "jsonl", build_s["jsonl"] / n, "s")
    table.add(case_name, "build: put + put_writes per checkpoint", "sqlite", build_s["sqlite"] / n, "s")
    notes = [
        "Ratios compare to SqliteSaver in the same cache state. Each sample is a fresh "
        "subprocess timed after its imports; samples of all cases are interleaved.",
        "Cold cache = the parent called posix_fadvise(DONTNEED) on the store's files just "
        "before the sample (only those files are evicted; the venv stays cached).",
        "InMemorySaver has no cold-open case (nothing survives the process).",
    ]
    payload = {"checkpoints": n, "samples": samples, "log_bytes": log_bytes,
               "idx_bytes": idx_bytes, "sqlite_bytes": sqlite_bytes, "build_seconds": build_s,
               "results": results, "total_seconds": time.perf_counter() - t_start}
    jpath, mpath = write_results(NAME, payload, table, header=__doc__.split("\n\n")[0],
                                 notes=notes, quick=args.quick)
    png = RESULTS / f"{NAME}{'-quick' if args.quick else ''}.png"
    pictures = drawn(png, lambda: plot(results, png, n))
    print(f"[{NAME}] wrote {jpath}, {mpath}{pictures} ({time.perf_counter() - t_start:.0f} s)")


def plot(results: list[dict], path: Path, n: int) -> None:
    plt = pyplot(path)
    if plt is None:
        return

    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels, meds, p90s, colors = [], [], [], []
    for r in results:
        name = "JsonlSaver" if r["saver"] == "jsonl" else "SqliteSaver"
        labels.append(f"{name}\n{r['variant'] + ', ' if r['variant'] else ''}"
                      f"{'cold' if r['cold_cache'] else 'warm'}")
        meds.append(r["first_get_tuple"]["median"] * 1e3)
        p90s.append(r["first_get_tuple"]["p90"] * 1e3)
        colors.append("tab:blue" if r["saver"] == "jsonl" else "tab:orange")
    ax.bar(range(len(labels)), meds, color=colors,
           yerr=[[0] * len(meds), [b - a for a, b in zip(meds, p90s)]])
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set(title=f"first get_tuple in a fresh process, thread of {n} checkpoints",
           ylabel="ms (median, bar to p90)")
    ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
