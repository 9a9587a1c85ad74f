"""What reopening a let-go log costs, and what the ways around it would cost: the
measurements behind issue 28's missed fill and fresh-read targets.

    python benchmarks/reopen_parts.py                 # 8 threads x 10 turns, about 3 min
    python benchmarks/reopen_parts.py --turns 20

Stores are filled by the benchmark agent (``_common.build_agent_graph``, durability
"sync"), every saver with the same conversations. Each case runs in fresh processes:

1. **Reopen**, in process: the threads read in turn with ``max_open_threads=1``, so every
   ``get_tuple`` of the latest checkpoint reopens its log: as shipped (a log under
   ``LOADED_RECORDS_BYTES``, 1 MiB, is scanned: it has no sidecar beyond its header), with
   a sidecar written at every let-go and loaded at every reopen (that constant set to 0:
   the lead the issue named),
   and with every log open (the floor: no reopen); SqliteSaver's ``get_tuple`` of the
   same threads beside them.
2. **A parked index**: what keeping a let-go log's index and newest lists in memory
   would take instead of the scan: the log's record summaries as sidecar block lines
   and its kept lists in stored form (``ValueCache``), raw and zlib-compressed (level
   1), the time to compress them at let-go and decompress them at reopen, against the
   scan they would replace (a fresh view of the log indexed from scratch); and what
   that would hold over 1,000 threads.
3. **The snapshot policy**: bytes per thread and the reopen's ``get_tuple`` with
   ``snapshot_every`` 64 (the default), 16, 8 and 4 (a snapshot ends a delta chain).
4. **A fresh process's first ``get_state``** of one thread (imports and graph build not
   counted): its log scanned (the ``.idx`` removed), with the sidecar the previous
   process's ``close()`` wrote (since issue 28 a short log takes only its durable
   watermark and is scanned; before, its entries were loaded), and SqliteSaver;
   interleaved rounds.

Medians of many reads; the machine is shared, so read ratios within a case. Results in
``results/reopen_parts.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
from many_threads import thread_ids

from _common import Table, agent_round, build_agent_graph, open_saver, run_worker, summary, write_results

NAME = "reopen_parts"
MODES = ("shipped", "sidecar-at-let-go", "every-log-open")
EVERY = (64, 16, 8, 4)


def fill(kind: str, workdir: Path, threads: int, turns: int, snapshot_every: int | None = None) -> None:
    """``threads`` conversations of ``turns`` turns, round-robin, into a new store."""
    options: dict[str, Any] = {}
    if kind == "jsonl":
        options = {"max_open_threads": threads + 1}
        if snapshot_every:
            options["snapshot_every"] = snapshot_every
    handle = open_saver(kind, workdir, **options)
    saver, close = handle.saver, handle.close
    graph = build_agent_graph(saver)
    ids = thread_ids(threads)
    for turn in range(turns):
        agent_round(graph, ids, turn)
    close()


def _configs(threads: int) -> list[dict[str, Any]]:
    return [{"configurable": {"thread_id": t, "checkpoint_ns": ""}} for t in thread_ids(threads)]


def _timed_reads(saver: Any, threads: int, reads: int) -> list[float]:
    configs = _configs(threads)
    for c in configs:
        saver.get_tuple(c)
    times = []
    for r in range(reads):
        t0 = time.perf_counter()
        saver.get_tuple(configs[r % threads])
        times.append(time.perf_counter() - t0)
    return times


def _drop_sidecars(store: Path) -> None:
    for idx in (store / "threads").glob("*.idx"):
        idx.unlink()


def reopen_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Case 1 (and 3): reads of the latest checkpoint, each reopening its log."""
    workdir = Path(args.workdir)
    if args.saver == "sqlite":
        handle = open_saver("sqlite", workdir, create=False)
        try:
            return {"reads": _timed_reads(handle.saver, args.threads, args.reads)}
        finally:
            handle.close()
    from langgraph_jsonl_checkpoint import JsonlSaver
    from langgraph_jsonl_checkpoint.disk import view as disk_view

    store = workdir / "jsonl-store"
    _drop_sidecars(store)  # as a let-go short log leaves them: nothing past the header
    if args.mode == "sidecar-at-let-go":
        disk_view.LOADED_RECORDS_BYTES = 0  # what writing the sidecar at every let-go would do
    bound = args.threads + 1 if args.mode == "every-log-open" else 1
    with JsonlSaver(store, max_open_threads=bound) as saver:
        reads = _timed_reads(saver, args.threads, args.reads)
    size = sum(p.stat().st_size for p in (store / "threads").glob("*.jsonl")) / args.threads
    return {"reads": reads, "log_bytes_per_thread": size}


def parked_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Case 2: what a parked index and kept lists would weigh, and cost to pack."""
    from langgraph_jsonl_checkpoint import JsonlSaver
    from langgraph_jsonl_checkpoint.disk.view import LogView

    store = Path(args.workdir) / "jsonl-store"
    out: dict[str, list[float]] = {k: [] for k in (
        "index_raw", "kept_raw", "packed", "compress", "decompress", "scan")}
    with JsonlSaver(store, max_open_threads=args.threads + 1) as saver:
        for config in _configs(args.threads):
            saver.get_tuple(config)  # fills the log's kept lists (stored form)
            tid = config["configurable"]["thread_id"]
            log = saver.store.thread_log(tid)
            index = log.sidecar.summaries.encode_from(0, log.index.facts()) or b""
            # The kept lists are the value cache's own (no public view of all of them).
            kept_items = log.derived._kept.items() if log.derived is not None else ()  # type: ignore[attr-defined]
            kept = orjson.dumps([[ns, ch, v[0], v[1], v[2]] for (ns, ch), v in kept_items])
            raw = index + kept
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                packed = zlib.compress(raw, 1)
                t1 = time.perf_counter()
                zlib.decompress(packed)
                t2 = time.perf_counter()
                view = LogView(log.paths, tid, read_only=True)
                t3 = time.perf_counter()
                view.refresh()  # no sidecar beyond the header: the scan a reopen does
                t4 = time.perf_counter()
                view.close()
                out["compress"].append(t1 - t0)
                out["decompress"].append(t2 - t1)
                out["scan"].append(t4 - t3)
            out["index_raw"].append(len(index))
            out["kept_raw"].append(len(kept))
            out["packed"].append(len(packed))
    return out


def fresh_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Case 4: one fresh process's first ``get_state`` (after imports and graph build)."""
    handle = open_saver(args.saver, Path(args.workdir), create=False)
    graph = build_agent_graph(handle.saver)
    t0 = time.perf_counter()
    state = graph.get_state({"configurable": {"thread_id": thread_ids(args.threads)[0]}})
    took = time.perf_counter() - t0
    assert len(state.values["messages"]) == 4 * args.turns, len(state.values["messages"])
    handle.close()  # JsonlSaver: writes the log's sidecar (the next "sidecar" round reads it)
    return {"first_get_state": took}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--reads", type=int, default=400, help="timed reads per reopen case")
    p.add_argument("--repeat", type=int, default=20, help="pack/unpack/scan repetitions per log")
    p.add_argument("--fresh", type=int, default=7, help="fresh-process rounds")
    p.add_argument("--worker", choices=["reopen", "parked", "fresh"], help=argparse.SUPPRESS)
    p.add_argument("--saver", default="jsonl", help=argparse.SUPPRESS)
    p.add_argument("--mode", default="shipped", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        work = {"reopen": reopen_worker, "parked": parked_worker, "fresh": fresh_worker}[args.worker]
        print(json.dumps(work(args)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="reopen-parts-"))
    shape = ["--threads", str(args.threads), "--turns", str(args.turns)]
    me = Path(__file__)
    table = Table()
    results: dict[str, Any] = {}
    try:
        for kind in ("jsonl", "sqlite"):
            (tmp / kind).mkdir()
            fill(kind, tmp / kind, args.threads, args.turns)
        case = f"{args.threads} threads x {args.turns} turns, each read reopens its log"
        reopen = results["reopen"] = {}
        for mode in MODES:
            work = tmp / f"copy-{mode}"
            shutil.copytree(tmp / "jsonl", work)
            r = reopen[mode] = run_worker(me, ["reopen", "--mode", mode, "--workdir", str(work),
                                               "--reads", str(args.reads), *shape])
            table.add(case, "get_tuple of the latest checkpoint", f"jsonl ({mode})", summary(r["reads"]), "s")
            shutil.rmtree(work)
        r = reopen["sqlite"] = run_worker(me, ["reopen", "--saver", "sqlite", "--workdir",
                                               str(tmp / "sqlite"), "--reads", str(args.reads), *shape])
        table.add(case, "get_tuple of the latest checkpoint", "sqlite", summary(r["reads"]), "s")
        print(f"[{NAME}] reopen: " + ", ".join(
            f"{m} {statistics.median(v['reads']) * 1e6:.0f} us" for m, v in reopen.items()), flush=True)

        parked = results["parked"] = run_worker(me, ["parked", "--workdir", str(tmp / "jsonl"),
                                                     "--repeat", str(args.repeat), *shape])
        case = f"{args.threads} threads x {args.turns} turns: a parked index instead of the scan"
        for key, unit, what in (("index_raw", "B", "record summaries as sidecar block lines, per thread"),
                                ("kept_raw", "B", "newest lists in stored form, per thread"),
                                ("packed", "B", "both, zlib level 1, per thread"),
                                ("compress", "s", "compress them (at let-go)"),
                                ("decompress", "s", "decompress them (at reopen, before decoding)"),
                                ("scan", "s", "the scan they would replace (a fresh view indexing the log)")):
            table.add(case, what, "jsonl", summary(parked[key]), unit)
        per_thread = statistics.median(parked["packed"])
        print(f"[{NAME}] parked: {statistics.median(parked['index_raw']):.0f} + "
              f"{statistics.median(parked['kept_raw']):.0f} bytes raw, {per_thread:.0f} packed; "
              f"1,000 threads: {per_thread * 1000 / 2**20:.1f} MiB", flush=True)

        case = f"{args.threads} threads x {args.turns} turns, snapshot_every N, each read reopens its log"
        snapshots = results["snapshot_every"] = {}
        for every in EVERY:
            work = tmp / f"every-{every}"
            work.mkdir()
            fill("jsonl", work, args.threads, args.turns, snapshot_every=every)
            r = snapshots[every] = run_worker(me, ["reopen", "--workdir", str(work),
                                                   "--reads", str(args.reads), *shape])
            table.add(case, "get_tuple of the latest checkpoint", f"jsonl (snapshot_every={every})",
                      summary(r["reads"]), "s")
            table.add(case, "log bytes per thread", f"jsonl (snapshot_every={every})",
                      r["log_bytes_per_thread"], "B")
            shutil.rmtree(work)

        case = f"{args.threads} threads x {args.turns} turns: a fresh process's first get_state"
        fresh: dict[str, list[float]] = {"jsonl (log scanned)": [], "jsonl (sidecar from the last close)": [],
                                         "sqlite": []}
        store = tmp / "jsonl" / "jsonl-store"
        for _ in range(args.fresh):
            for label in fresh:
                kind = "sqlite" if label == "sqlite" else "jsonl"
                if label == "jsonl (log scanned)":
                    _drop_sidecars(store)
                r = run_worker(me, ["fresh", "--saver", kind, "--workdir", str(tmp / kind), *shape])
                fresh[label].append(r["first_get_state"])
        results["fresh"] = fresh
        for label, xs in fresh.items():
            table.add(case, "first get_state", label, summary(xs), "s")
        print(f"[{NAME}] fresh: " + ", ".join(
            f"{k} {statistics.median(v) * 1e3:.2f} ms" for k, v in fresh.items()), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    notes = [
        "Reopen modes: 'shipped' scans a short log (its sidecar holds only the header, as a let-go "
        "short log leaves it); 'sidecar-at-let-go' writes the sidecar whenever the log is let go and "
        "loads it at reopen (its last block decoded, every record read checked against its summary); "
        "'every-log-open' never reopens (max_open_threads above the threads).",
        f"A parked index for 1,000 threads would hold {per_thread * 1000 / 2**20:.1f} MiB of compressed "
        "bytes (the packed median times 1,000); issue 28's memory target leaves JsonlSaver about 7.5 MiB "
        "above its resident memory after the 1,000 x 10 fill (benchmarks/results/memory.md: SqliteSaver's "
        "+ 10%).",
        "Fresh rounds are interleaved; the 'sidecar' round reads the sidecar the round before it wrote "
        "at close() (as the many_threads.py fresh samples after the first do).",
        f"os.cpu_count() = {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.2f}.",
    ]
    write_results(NAME, {"threads": args.threads, "turns": args.turns, "results": results}, table,
                  header="What reopening a let-go log costs in a read of the latest checkpoint, and what "
                  "the ways around it (a sidecar at let-go, a parked index, more snapshots) would cost.",
                  notes=notes)


if __name__ == "__main__":
    sys.exit(main())
