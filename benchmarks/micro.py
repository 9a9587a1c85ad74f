"""Micro benchmarks of the checkpointer API: durable put/put_writes, get_tuple, filtered list,
and concurrent async graph runs. JsonlSaver vs SqliteSaver vs InMemorySaver.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/micro.py            # full run
    python benchmarks/micro.py --quick    # smoke test, < 60 s
    python benchmarks/micro.py --only async --repeats 5   # some cases (put, history,
                                                          # async), in micro-async.*

Cases (all savers in this one invocation, interleaved where it matters):

1. ``put`` then ``put_writes`` on one thread, ``--ops`` times (full 2,000, quick 200),
   each timed separately: a checkpoint whose ``messages`` channel grows by one ~200-char
   message per put (plus a ``step`` channel), and one pending write of that message.
   Both calls are durable (JsonlSaver fdatasyncs; SqliteSaver commits in WAL mode with
   ``synchronous=FULL``; InMemorySaver is the no-I/O floor).
2. A thread of ``--history`` checkpoints (full 5,000, quick 500; each with one pending
   write; the message list grows by one per checkpoint and is replaced by a summary every
   200, as a summarising agent would): ``get_tuple`` of the latest checkpoint, and
   ``list(config, filter={"step": 42})`` consumed (one match), in the writing process.
3. Async: ``--threads`` threads (50) advanced concurrently with ``ainvoke`` of a small
   two-node graph (``durability="sync"``), ``--rounds`` invocations each (full 20, quick
   4), repeated ``--repeats`` times per saver with a fresh store (full 3, quick 1).
   Throughput in node steps/s (2 per ``ainvoke``; 3 checkpoints per ``ainvoke``).
   Savers: ``AsyncJsonlSaver.from_conn_string``, ``AsyncSqliteSaver.from_conn_string``,
   ``InMemorySaver``.

The full run takes about 2 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import (
    LABELS,
    RESULTS,
    SAVERS,
    CheckpointStream,
    Table,
    drawn,
    open_saver,
    pyplot,
    summary,
    text,
    timed,
    write_results,
)

NAME = "micro"


# ---------------------------------------------------------------------------------------
# 1. put + put_writes
# ---------------------------------------------------------------------------------------


def bench_put(kind: str, ops: int, tmp: Path) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"put-{kind}-", dir=tmp))
    h = open_saver(kind, workdir)
    stream = CheckpointStream(h.saver, "put-thread")
    put_t, writes_t = [], []
    try:
        for _ in range(ops):
            config, cp, md, nv, msg = stream.next()
            t0 = time.perf_counter()
            out = h.saver.put(config, cp, md, nv)
            t1 = time.perf_counter()
            h.saver.put_writes(out, [("messages", [msg])], str(uuid.uuid4()))
            t2 = time.perf_counter()
            stream.parent_id = cp["id"]
            put_t.append(t1 - t0)
            writes_t.append(t2 - t1)
        tup = h.saver.get_tuple({"configurable": {"thread_id": "put-thread"}})
        assert len(tup.checkpoint["channel_values"]["messages"]) == ops
        assert len(tup.pending_writes) == 1
        bytes_live = h.bytes_on_disk()
    finally:
        h.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return {"saver": kind, "put": put_t, "put_writes": writes_t, "bytes_live": bytes_live}


# ---------------------------------------------------------------------------------------
# 2. long thread: get_tuple latest, list with a metadata filter
# ---------------------------------------------------------------------------------------


def bench_history(kind: str, n: int, reads: int, tmp: Path) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"hist-{kind}-", dir=tmp))
    h = open_saver(kind, workdir)
    tid = "long-thread"
    cfg = {"configurable": {"thread_id": tid}}
    try:
        stream = CheckpointStream(h.saver, tid, compact_every=200)
        t0 = time.perf_counter()
        for _ in range(n):
            out, msg = stream.put()
            h.saver.put_writes(out, [("messages", [msg])], str(uuid.uuid4()))
        build = time.perf_counter() - t0
        expect = len(stream.messages)

        def get_latest() -> None:
            tup = h.saver.get_tuple(cfg)
            assert tup.checkpoint["id"] == stream.parent_id
            assert len(tup.checkpoint["channel_values"]["messages"]) == expect

        def list_filtered() -> None:
            res = list(h.saver.list(cfg, filter={"step": 42}))
            assert len(res) == 1 and res[0].metadata["step"] == 42, len(res)

        get_t = timed(get_latest, reads)
        list_t = timed(list_filtered, max(3, reads // 5))
        bytes_live = h.bytes_on_disk()
    finally:
        h.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return {"saver": kind, "checkpoints": n, "build_seconds": build, "get_tuple": get_t,
            "list_filter_step42": list_t, "bytes_live": bytes_live}


# ---------------------------------------------------------------------------------------
# 3. async: many threads at once
# ---------------------------------------------------------------------------------------


def small_graph(checkpointer: Any):
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def plan(state: MessagesState) -> dict:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=text(n, 100), id=f"plan-{n}")]}

    def act(state: MessagesState) -> dict:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=text(n, 100), id=f"act-{n}")]}

    b = StateGraph(MessagesState)
    b.add_node("plan", plan)
    b.add_node("act", act)
    b.add_edge(START, "plan")
    b.add_edge("plan", "act")
    return b.compile(checkpointer=checkpointer)


async def _drive(graph: Any, threads: int, rounds: int) -> tuple[float, list[float]]:
    from langchain_core.messages import HumanMessage

    latencies: list[float] = []

    async def one(i: int) -> None:
        cfg = {"configurable": {"thread_id": f"async-{i}"}}
        for r in range(rounds):
            t = time.perf_counter()
            await graph.ainvoke({"messages": [HumanMessage(content=text(i * 1000 + r, 100),
                                                           id=f"u-{i}-{r}")]},
                                cfg, durability="sync")
            latencies.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(threads)))
    wall = time.perf_counter() - t0
    # sanity: every thread has its messages
    st = await graph.aget_state({"configurable": {"thread_id": "async-0"}})
    assert len(st.values["messages"]) == 3 * rounds, len(st.values["messages"])
    return wall, latencies


async def bench_async_one(kind: str, threads: int, rounds: int, tmp: Path) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"async-{kind}-", dir=tmp))
    try:
        if kind == "jsonl_async":
            from langgraph_jsonl_checkpoint import AsyncJsonlSaver

            async with AsyncJsonlSaver.from_conn_string(str(workdir / "store")) as saver:
                wall, lat = await _drive(small_graph(saver), threads, rounds)
        elif kind == "sqlite_async":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            async with AsyncSqliteSaver.from_conn_string(str(workdir / "db.sqlite")) as saver:
                wall, lat = await _drive(small_graph(saver), threads, rounds)
        else:
            from langgraph.checkpoint.memory import InMemorySaver

            wall, lat = await _drive(small_graph(InMemorySaver()), threads, rounds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    invokes = threads * rounds
    return {"saver": kind, "wall": wall, "ainvoke_latency": lat,
            "steps_per_s": 2 * invokes / wall, "ainvokes_per_s": invokes / wall}


# ---------------------------------------------------------------------------------------


def plot(put_runs: list[dict], async_runs: list[dict], path: Path) -> None:
    plt = pyplot(path)
    if plt is None:
        return

    colors = {"jsonl": "tab:blue", "sqlite": "tab:orange", "memory": "tab:green",
              "jsonl_async": "tab:blue", "sqlite_async": "tab:orange"}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, key in zip(axes[:2], ("put", "put_writes")):
        for r in put_runs:
            xs = r[key]
            k = 25
            smooth = [sorted(xs[max(0, i - k):i + 1])[len(xs[max(0, i - k):i + 1]) // 2]
                      for i in range(len(xs))]
            ax.plot(range(1, len(xs) + 1), [x * 1e3 for x in smooth], label=LABELS[r["saver"]],
                    color=colors[r["saver"]])
        ax.set(
            title=f"durable {key} latency (running median of 26)",
            xlabel="operation (= messages in state)",
            ylabel="ms",
        )
        ax.set_yscale("log")
        if put_runs:
            ax.legend()
    ax = axes[2]
    kinds = []
    for r in async_runs:
        if r["saver"] not in kinds:
            kinds.append(r["saver"])
    for i, k in enumerate(kinds):
        vals = [r["steps_per_s"] for r in async_runs if r["saver"] == k]
        ax.bar(i, sorted(vals)[len(vals) // 2], color=colors[k])
        ax.plot([i] * len(vals), vals, "k.", alpha=0.6)
    ax.set_xticks(range(len(kinds)), [LABELS[k] for k in kinds], rotation=15)
    ax.set(title="async: node steps/s, 50 threads concurrently", ylabel="steps/s")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--ops", type=int, help="put+put_writes operations (full 2000)")
    p.add_argument("--history", type=int, help="checkpoints in the long thread (full 5000)")
    p.add_argument("--reads", type=int, help="get_tuple repetitions (full 50)")
    p.add_argument("--threads", type=int, default=50)
    p.add_argument("--rounds", type=int, help="ainvoke calls per thread (full 20)")
    p.add_argument("--repeats", type=int, help="async repetitions per saver (full 3)")
    p.add_argument("--savers", nargs="+", default=list(SAVERS), choices=SAVERS)
    p.add_argument("--only", nargs="+", choices=("put", "history", "async"),
                   default=["put", "history", "async"], help="cases to run (default: all)")
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    ops = args.ops or (200 if args.quick else 2000)
    hist = args.history or (500 if args.quick else 5000)
    reads = args.reads or (10 if args.quick else 50)
    rounds = args.rounds or (4 if args.quick else 20)
    repeats = args.repeats or (1 if args.quick else 3)

    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-micro-", dir=args.tmp))
    table = Table()
    try:
        put_runs = []
        for kind in args.savers if "put" in args.only else ():
            r = bench_put(kind, ops, tmp)
            put_runs.append(r)
            print(f"[{NAME}] put {LABELS[kind]:13s} median {summary(r['put'])['median'] * 1e3:.3f} ms, "
                  f"put_writes {summary(r['put_writes'])['median'] * 1e3:.3f} ms", flush=True)
        case = f"put+put_writes x {ops}"
        for metric, get in (
            ("put (all)", lambda r: r["put"]),
            ("put (last 100)", lambda r: r["put"][-100:]),
            ("put_writes (all)", lambda r: r["put_writes"]),
            ("put + put_writes (all)", lambda r: [a + b for a, b in zip(r["put"], r["put_writes"])]),
        ):
            for r in put_runs:
                table.add(case, metric, r["saver"], summary(get(r)), "s")
        for r in put_runs:
            if r["saver"] != "memory":
                table.add(case, "bytes on disk (open)", r["saver"], r["bytes_live"], "B")

        hist_runs = []
        for kind in args.savers if "history" in args.only else ():
            r = bench_history(kind, hist, reads, tmp)
            hist_runs.append(r)
            print(f"[{NAME}] {hist} checkpoints {LABELS[kind]:13s} built in {r['build_seconds']:.1f} s, "
                  f"get_tuple {summary(r['get_tuple'])['median'] * 1e3:.3f} ms, list filter "
                  f"{summary(r['list_filter_step42'])['median'] * 1e3:.2f} ms", flush=True)
        case = f"thread of {hist} checkpoints"
        for metric, key in (("get_tuple (latest)", "get_tuple"),
                            ("list(filter={'step': 42})", "list_filter_step42")):
            for r in hist_runs:
                table.add(case, metric, r["saver"], summary(r[key]), "s")
        for r in hist_runs:
            table.add(case, "build: put + put_writes per checkpoint", r["saver"],
                      r["build_seconds"] / hist, "s")
        for r in hist_runs:
            if r["saver"] != "memory":
                table.add(case, "bytes on disk (open)", r["saver"], r["bytes_live"], "B")

        async_kinds = [k for k, base in (("jsonl_async", "jsonl"), ("sqlite_async", "sqlite"),
                                         ("memory", "memory")) if base in args.savers]
        async_runs = []
        for rep in range(repeats if "async" in args.only else 0):
            for kind in async_kinds:
                r = asyncio.run(bench_async_one(kind, args.threads, rounds, tmp))
                async_runs.append(r)
                print(f"[{NAME}] async {LABELS.get(kind, kind):16s} rep {rep}: "
                      f"{r['steps_per_s']:.0f} steps/s", flush=True)
        case = f"async: {args.threads} threads x {rounds} ainvoke"
        for kind in async_kinds:
            rs = [r for r in async_runs if r["saver"] == kind]
            table.add(case, "throughput (node steps/s)", kind,
                      summary([r["steps_per_s"] for r in rs]), "/s")
        for kind in async_kinds:
            rs = [r for r in async_runs if r["saver"] == kind]
            table.add(case, "ainvoke latency (all reps)", kind,
                      summary([x for r in rs for x in r["ainvoke_latency"]]), "s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    notes = [
        "Times are per call, in the process that wrote the data (warm caches, in-memory "
        "index for JsonlSaver).",
        "put+put_writes: the message list is never trimmed, so SqliteSaver/InMemorySaver "
        "serialise ever larger states; 'last 100' shows the end of that curve.",
        "Async: for throughput, higher is better, so a ratio > 1 means faster than "
        "AsyncSqliteSaver. 1 node step = 1 checkpoint + 1 put_writes; each ainvoke also saves "
        "the input checkpoint.",
        "Shared 2-core machine; treat differences under ~20% as noise.",
    ]
    payload = {"ops": ops, "history": hist, "threads": args.threads, "rounds": rounds,
               "repeats": repeats, "put_runs": put_runs, "history_runs": hist_runs,
               "async_runs": async_runs, "total_seconds": time.perf_counter() - t_start}
    # A run of some cases only gets its own files, never overwriting a full run's.
    name = NAME if len(args.only) == 3 else "-".join([NAME, *args.only])
    jpath, mpath = write_results(name, payload, table, header=__doc__.split("\n\n")[0],
                                 notes=notes, quick=args.quick)
    png = RESULTS / f"{name}{'-quick' if args.quick else ''}.png"
    pictures = drawn(png, lambda: plot(put_runs, async_runs, png))
    print(f"[{NAME}] wrote {jpath}, {mpath}{pictures} ({time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
