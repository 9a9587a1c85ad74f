"""Many short conversations in one store: listing threads and a fresh process's first read.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/many_threads.py            # full run: 1,000 threads x 10 turns
    python benchmarks/many_threads.py --quick    # smoke test: 100 threads x 3 turns, < 60 s

The store is filled with the agent graph of ``agent_conversation.py`` (one turn = user
message -> agent -> tool -> agent, ``durability="sync"``), round-robin: turn 1 of every
thread, then turn 2 of every thread, ... (as a server with many open conversations would;
``--order sequential`` fills one thread after the other). Then, per saver:

- time to list every thread id, natively — JsonlSaver ``len(list(saver.store.thread_ids()))``
  (the store's catalog ``CATALOG.idx``, else each log's header), SqliteSaver
  ``SELECT DISTINCT thread_id FROM checkpoints``,
  InMemorySaver ``len(saver.storage)`` — and generically, ``saver.list(None)`` consumed
  with the distinct thread ids counted (every checkpoint of every thread is loaded);
- ``list(saver.list(None, limit=100))``;
- in a fresh process (after the saver was closed): open the saver and
  ``graph.get_state`` of a random thread, timed from after the imports; one subprocess
  per sample, a different random thread each time. InMemorySaver has nothing to reopen.
- listing a large store (``--listing-threads``, 10,000 full, 1,000 quick): a store of
  that many threads, one checkpoint and one pending write each (direct ``put`` /
  ``put_writes``), closed; then in a fresh process: every thread id natively (JsonlSaver
  ``store.thread_ids()``, which the store's catalog answers without opening a log, and
  counts the logs it opened), and ``list(None, limit=100)``.

All savers run in this one invocation, one after the other. The full run takes about
12-13 minutes on a 2-core machine: filling 3 x 10,000 turns (~8 min) and the two
``list(None)`` scans of 40,000 checkpoints per saver (~3.5 min; ``--full-list-reps 1``
halves that) dominate; ``--savers`` picks a subset.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import (
    LABELS,
    RESULTS,
    SAVERS,
    Table,
    build_agent_graph,
    drawn,
    open_saver,
    pyplot,
    quantile,
    run_worker,
    summary,
    timed,
    user_message,
    write_results,
)

NAME = "many_threads"


def thread_ids(n: int) -> list[str]:
    rng = random.Random(1234)
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n)]


def native_thread_count(kind: str, saver) -> int:
    if kind == "jsonl":
        return len(list(saver.store.thread_ids()))
    if kind == "sqlite":
        with saver.cursor(transaction=False) as cur:
            return len(cur.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall())
    return len(saver.storage)


def worker(args: argparse.Namespace) -> None:
    """Fresh process: open the saver, then the first get_state of one thread."""
    t0 = time.perf_counter()
    h = open_saver(args.saver, Path(args.workdir))
    graph = build_agent_graph(h.saver)
    # Time spent in the cyclic collector during the read: which call pays a collection
    # depends on the collector's counts left by the imports and the graph build (a pass
    # over what they left, ~1.5 ms), not only on what the read allocates.
    in_gc, started = [0.0], [0.0]

    def gc_timer(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            in_gc[0] += time.perf_counter() - started[0]

    counts = gc.get_count()
    gc.callbacks.append(gc_timer)
    t1 = time.perf_counter()
    state = graph.get_state({"configurable": {"thread_id": args.thread}})
    t2 = time.perf_counter()
    gc.callbacks.remove(gc_timer)
    assert len(state.values["messages"]) == 4 * args.turns, len(state.values["messages"])
    h.close()
    print(json.dumps({"open": t1 - t0, "first_get_state": t2 - t1, "total": t2 - t0,
                      "first_get_state_gc": in_gc[0], "gc_counts_before": list(counts)}))


def listing_worker(args: argparse.Namespace) -> None:
    """Fresh process: list every thread id of a large store, then list(None, limit=100)."""
    h = open_saver(args.saver, Path(args.workdir), create=False)
    opened = []
    if args.saver == "jsonl":
        from langgraph_jsonl_checkpoint.disk.store import Store

        original = Store._read_thread_id

        def counting(self, path, entry):  # noqa: ANN001, ANN202
            opened.append(entry)
            return original(self, path, entry)

        Store._read_thread_id = counting  # type: ignore[method-assign]
    t0 = time.perf_counter()
    count = native_thread_count(args.saver, h.saver)
    t1 = time.perf_counter()
    got = list(h.saver.list(None, limit=100))
    t2 = time.perf_counter()
    assert count == args.n and len(got) == 100, (count, len(got))
    if args.saver == "sqlite":
        h.close()
    print(json.dumps({"list_ids": t1 - t0, "limit100": t2 - t1, "headers_read": len(opened)}))


def listing_case(kind: str, n: int, samples: int, tmp: Path) -> dict:
    workdir = tmp / f"listing-{kind}"
    workdir.mkdir()
    h = open_saver(kind, workdir)
    t0 = time.perf_counter()
    for k in range(n):
        tid = f"listing-{k:06d}"
        cp = {"v": 4, "id": f"1ef00000-0000-6000-8000-{k:012d}", "ts": "2026-01-01T00:00:00+00:00",
              "channel_values": {"x": k}, "channel_versions": {"x": 1}, "versions_seen": {},
              "updated_channels": ["x"]}
        cfg = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        out = h.saver.put(cfg, cp, {"step": 0}, {"x": 1})
        h.saver.put_writes(out, [("x", k + 1)], "task")
    h.close()
    print(f"[{NAME}] {LABELS[kind]}: {n} threads for the listing in {time.perf_counter() - t0:.1f} s",
          flush=True)
    runs = [run_worker(Path(__file__), ["--listing", "--saver", kind, "--workdir", str(workdir),
                                        "--n", str(n)], timeout=600) for _ in range(samples)]
    shutil.rmtree(workdir, ignore_errors=True)
    return {"saver": kind, "threads": n, "runs": runs}


def run_saver(kind: str, args: argparse.Namespace, n_threads: int, n_turns: int,
              tmp: Path) -> dict:
    workdir = tmp / kind
    workdir.mkdir()
    ids = thread_ids(n_threads)
    h = open_saver(kind, workdir)
    graph = build_agent_graph(h.saver)
    order = ([(t, i) for t in range(n_turns) for i in range(n_threads)]
             if args.order == "round-robin" else
             [(t, i) for i in range(n_threads) for t in range(n_turns)])
    per_turn = []
    t_fill = time.perf_counter()
    for t, i in order:
        cfg = {"configurable": {"thread_id": ids[i]}}
        t0 = time.perf_counter()
        graph.invoke({"messages": [user_message(i, t)]}, cfg, durability="sync")
        per_turn.append(time.perf_counter() - t0)
    fill_seconds = time.perf_counter() - t_fill
    print(f"[{NAME}] {LABELS[kind]}: filled {n_threads} x {n_turns} turns in {fill_seconds:.1f} s",
          flush=True)

    reps = args.reads
    native_count = native_thread_count(kind, h.saver)
    assert native_count == n_threads, native_count
    native = timed(lambda: native_thread_count(kind, h.saver), reps)

    generic_counts = []

    def generic() -> None:
        generic_counts.append(len({t.config["configurable"]["thread_id"]
                                   for t in h.saver.list(None)}))

    generic_times = timed(generic, args.full_list_reps)
    assert all(c == n_threads for c in generic_counts), generic_counts

    def limit100() -> None:
        assert len(list(h.saver.list(None, limit=100))) == 100

    limit_times = timed(limit100, reps)
    h.close()
    bytes_closed = h.bytes_on_disk()

    fresh = []
    if kind != "memory":
        rng = random.Random(99)
        for _ in range(args.fresh):
            tid = ids[rng.randrange(n_threads)]
            fresh.append(run_worker(Path(__file__), ["--saver", kind, "--workdir", str(workdir),
                                                     "--thread", tid, "--turns", str(n_turns)],
                                    timeout=600))
    return {
        "saver": kind,
        "fill_seconds": fill_seconds,
        "fill_per_turn": summary(per_turn),
        "fill_per_turn_samples": per_turn,
        "fill_per_turn_last_round": summary(per_turn[-n_threads:]),
        "native_list_threads": native,
        "generic_list_threads": generic_times,
        "list_none_limit100": limit_times,
        "fresh_process": fresh,
        "bytes_closed": bytes_closed,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: 100 threads x 3 turns")
    p.add_argument("--threads", type=int)
    p.add_argument("--turns", type=int)
    p.add_argument("--order", choices=["round-robin", "sequential"], default="round-robin")
    p.add_argument("--savers", nargs="+", default=list(SAVERS), choices=SAVERS)
    p.add_argument("--reads", type=int, help="repetitions of the in-process list measurements")
    p.add_argument("--full-list-reps", type=int, default=None,
                   help="repetitions of the generic list(None) scan (default 3 quick, 2 full)")
    p.add_argument("--fresh", type=int, help="fresh-process samples per saver")
    p.add_argument("--tmp", default=None, help="where the stores are created (default: $TMPDIR)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--thread", help=argparse.SUPPRESS)
    p.add_argument("--listing-threads", type=int, help="threads of the listing case (full 10000, quick 1000)")
    p.add_argument("--listing", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--skip-fill", action="store_true", help="only the listing case")
    p.add_argument("--skip-listing", action="store_true", 
                   help="no listing case (the fill and its reads only)")
    p.add_argument("--name", default=NAME, help="results/<name>.* (default many_threads)")
    args = p.parse_args()
    if args.worker and args.listing:
        listing_worker(args)
        return
    if args.worker:
        worker(args)
        return
    n_threads = args.threads or (100 if args.quick else 1000)
    n_turns = args.turns or (3 if args.quick else 10)
    args.reads = args.reads or (5 if args.quick else 10)
    args.full_list_reps = args.full_list_reps or (3 if args.quick else 2)
    args.fresh = args.fresh or (3 if args.quick else 7)

    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-many-", dir=args.tmp))
    results = []
    listing_n = args.listing_threads or (1000 if args.quick else 10_000)
    listings = []
    try:
        for kind in args.savers:
            if kind == "memory" or args.skip_listing:
                continue
            listings.append(listing_case(kind, listing_n, 3 if args.quick else 5, tmp))
            lr = listings[-1]["runs"]
            print(f"[{NAME}] {LABELS[kind]:13s} listing {listing_n} threads (fresh process): ids "
                  f"{summary([r['list_ids'] for r in lr])['median'] * 1e3:8.2f} ms "
                  f"({lr[0]['headers_read']} headers read), list(None, limit=100) "
                  f"{summary([r['limit100'] for r in lr])['median'] * 1e3:8.2f} ms", flush=True)
        for kind in ([] if args.skip_fill else args.savers):
            r = run_saver(kind, args, n_threads, n_turns, tmp)
            results.append(r)
            fp = summary([f["first_get_state"] for f in r["fresh_process"]])
            print(
                f"[{NAME}] {LABELS[kind]:13s} native list "
                f"{summary(r['native_list_threads'])['median'] * 1e3:8.2f} ms, "
                f"list(None) all {summary(r['generic_list_threads'])['median']:7.2f} s, "
                f"limit=100 {summary(r['list_none_limit100'])['median'] * 1e3:8.2f} ms, "
                f"fresh first get_state {fp['median'] * 1e3:7.2f} ms",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    table = Table()
    lcase = f"{listing_n} threads, fresh process"
    for metric, key in (("list thread ids, native", "list_ids"), ("list(None, limit=100)", "limit100")):
        for lr in listings:
            table.add(lcase, metric, lr["saver"], summary([r[key] for r in lr["runs"]]), "s")
    case = f"{n_threads} threads x {n_turns} turns"
    rows = [
        ("fill: wall time per turn (all)", lambda r: r["fill_per_turn"], "s"),
        ("fill: wall time per turn (last round)", lambda r: r["fill_per_turn_last_round"], "s"),
        ("fill: p99 of wall time per turn (all; ratio = p99 / SqliteSaver's p99)",
         lambda r: quantile(r["fill_per_turn_samples"], 0.99), "s"),
        ("fill: slowest turn (ratio = max / SqliteSaver's max)", lambda r: r["fill_per_turn"]["max"], "s"),
        ("bytes on disk (closed)", lambda r: r["bytes_closed"] if r["saver"] != "memory" else None, "B"),
        ("list thread ids, native", lambda r: summary(r["native_list_threads"]), "s"),
        ("list thread ids via list(None)", lambda r: summary(r["generic_list_threads"]), "s"),
        ("list(None, limit=100)", lambda r: summary(r["list_none_limit100"]), "s"),
        (
            "fresh process: open saver + build graph",
            lambda r: summary([f["open"] for f in r["fresh_process"]]) if r["fresh_process"] else None,
            "s",
        ),
        (
            "fresh process: first get_state",
            lambda r: (
                summary([f["first_get_state"] for f in r["fresh_process"]]) if r["fresh_process"] else None
            ),
            "s",
        ),
        (
            "fresh process: first get_state, outside the cyclic collector",
            lambda r: (
                summary([f["first_get_state"] - f.get("first_get_state_gc", 0.0) for f in r["fresh_process"]])
                if r["fresh_process"] else None
            ),
            "s",
        ),
    ]
    for metric, get, unit in rows:
        for r in results:
            v = get(r)
            if v is None:
                continue
            table.add(case, metric, r["saver"], v, unit)
    notes = [
        f"Filled {args.order}, durability='sync', agent graph as in agent_conversation.py.",
        "Native thread listing: JsonlSaver len(list(saver.store.thread_ids())) (the store's "
        "catalog, else one header read per log), SqliteSaver SELECT DISTINCT thread_id FROM checkpoints, "
        "InMemorySaver len(saver.storage).",
        "Fresh-process numbers are timed after imports; the OS page cache is warm (files "
        "were just written). InMemorySaver has no fresh-process case. The 'outside the cyclic "
        "collector' row subtracts the time of collections during the read (gc.callbacks): "
        "whether the first call pays one depends on the collector's counts left by the imports "
        "and the graph build as much as on the read.",
        "One run per saver on a shared 2-core machine; treat differences under ~20% as noise.",
    ]
    if listings:
        notes.append("Listing case: JsonlSaver read "
                     + ", ".join(str(lr["runs"][0]["headers_read"])
                                 for lr in listings if lr["saver"] == "jsonl")
                     + f" log headers to list {listing_n} thread ids (the store's catalog answers the rest).")
    payload = {"threads": n_threads, "turns": n_turns, "order": args.order, "results": results,
               "listing": listings,
               "total_seconds": time.perf_counter() - t_start}
    jpath, mpath = write_results(args.name, payload, table, header=__doc__.split("\n\n")[0],
                                 notes=notes, quick=args.quick)
    png = RESULTS / f"{args.name}{'-quick' if args.quick else ''}.png"
    pictures = drawn(png, lambda: plot(results, table, png, case)) if results else ""
    print(f"[{NAME}] wrote {jpath}, {mpath}{pictures} ({time.perf_counter() - t_start:.0f} s)")


def plot(results: list[dict], table: Table, path: Path, case: str) -> None:
    plt = pyplot(path)
    if plt is None:
        return

    metrics = ["list thread ids, native", "list thread ids via list(None)",
               "list(None, limit=100)", "fresh process: first get_state"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 4))
    colors = {"jsonl": "tab:blue", "sqlite": "tab:orange", "memory": "tab:green"}
    for ax, m in zip(axes, metrics):
        rows = [r for r in table.rows if r["metric"] == m]
        ax.bar([LABELS[r["saver"]] for r in rows], [r["median"] * 1e3 for r in rows],
               yerr=[[0] * len(rows), [(r["p90"] - r["median"]) * 1e3 for r in rows]],
               color=[colors[r["saver"]] for r in rows])
        ax.set(title=m, ylabel="ms (median, bar to p90)")
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"many threads: {case}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
