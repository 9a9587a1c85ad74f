"""One long conversation with a tool-calling agent: JsonlSaver vs SqliteSaver vs InMemorySaver.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/agent_conversation.py            # full run: 20, 200, 1000 turns
    python benchmarks/agent_conversation.py --quick    # smoke test, < 60 s

The graph is ``MessagesState`` + a fake chat model (a ``BaseChatModel`` subclass that
alternates a tool call and a ~500-character answer) + ``langgraph.prebuilt.ToolNode``.
One turn is ``graph.invoke({"messages": [user message]}, durability="sync")``, i.e.
user message -> agent -> tool -> agent: 4 checkpoints and 3 ``put_writes`` per turn. All
savers use ``durability="sync"`` so every checkpoint is saved before the next step.

Every (saver, turns) configuration runs in a fresh subprocess (so peak RSS, from
``resource.getrusage().ru_maxrss``, is that configuration's alone); the parent runs them
interleaved (20 turns for each saver, then 200, ...) and aggregates. Reported:

- wall time per turn over the last 20 turns (median, p90, max);
- bytes on disk: the JsonlSaver store directory (logs, sidecar indexes, lock files) or
  the SQLite database file + its ``-wal`` file, both while open ("live") and after close;
- ``graph.get_state`` latency and ``list(graph.get_state_history(limit=20))`` latency,
  measured after the last turn in the same process (warm);
- peak RSS of the process and its RSS before the first turn (imports + graph).

SqliteSaver and InMemorySaver re-store the whole message list at every checkpoint, so
their cost grows quadratically; by default they stop at 200 turns (``--baseline-max``).

A fourth column, "LangGraph alone", is ``InMemorySaver`` with a serializer that keeps the
objects themselves: what a turn costs with (almost) no checkpointer work at all. It shows
how much of the growth from 20 to 1000 turns is LangGraph's own (``add_messages``, the
fake model and ``ToolNode`` see the whole conversation at every step).
The full run takes about 3-5 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    LABELS,
    RESULTS,
    SAVERS,
    Table,
    build_agent_graph,
    drawn,
    open_saver,
    peak_rss_mib,
    pyplot,
    run_worker,
    sqlite_pragmas,
    summary,
    timed,
    user_message,
    write_results,
)

NAME = "agent_conversation"
LAST = 20  # per-turn times are reported over the last LAST turns


def worker(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-agent-{args.saver}-", dir=args.tmp))
    try:
        h = open_saver(args.saver, workdir)
        graph = build_agent_graph(h.saver)
        config = {"configurable": {"thread_id": "conversation-1"}}
        extra = {}
        if args.saver == "sqlite":
            extra["sqlite"] = sqlite_pragmas(h.saver.conn)
        rss_before = peak_rss_mib()
        wall, cpu, disk = [], [], []
        for turn in range(args.turns):
            msg = user_message(1, turn)
            t0, c0 = time.perf_counter(), time.process_time()
            graph.invoke({"messages": [msg]}, config, durability="sync")
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            disk.append(h.bytes_on_disk())
        state = graph.get_state(config)
        n_messages = len(state.values["messages"])
        assert n_messages == 4 * args.turns, n_messages
        get_state = timed(lambda: graph.get_state(config), args.reads)
        history = timed(lambda: list(graph.get_state_history(config, limit=20)), args.reads)
        assert len(list(graph.get_state_history(config, limit=20))) == 20
        bytes_live = h.bytes_on_disk()
        h.close()
        bytes_closed = h.bytes_on_disk()
        out = {
            "saver": args.saver,
            "turns": args.turns,
            "messages": n_messages,
            "wall_per_turn": wall,
            "cpu_per_turn": cpu,
            "bytes_per_turn": disk,
            "get_state": get_state,
            "history20": history,
            "bytes_live": bytes_live,
            "bytes_closed": bytes_closed,
            "rss_before_mib": rss_before,
            "peak_rss_mib": peak_rss_mib(),
            **extra,
        }
        print(json.dumps(out))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def plot(runs: list[dict], path: Path) -> None:
    plt = pyplot(path)
    if plt is None:
        return

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    colors = {"jsonl": "tab:blue", "sqlite": "tab:orange", "memory": "tab:green", "floor": "tab:gray"}
    longest: dict[str, dict] = {}
    for r in runs:
        if r["turns"] > longest.get(r["saver"], {"turns": 0})["turns"]:
            longest[r["saver"]] = r
    ax = axes[0][0]
    for s, r in longest.items():
        if r["bytes_per_turn"][0] is None:
            continue
        ax.plot(range(1, r["turns"] + 1), [b / 2**20 for b in r["bytes_per_turn"]],
                label=LABELS[s], color=colors[s])
    ax.set(title="bytes on disk (live) vs turns", xlabel="turn", ylabel="MiB")
    ax.set_yscale("log")
    ax.legend()
    ax = axes[0][1]
    for s, r in longest.items():
        w = r["wall_per_turn"]
        k = 10
        smooth = [sorted(w[max(0, i - k):i + 1])[len(w[max(0, i - k):i + 1]) // 2] for i in range(len(w))]
        ax.plot(range(1, len(w) + 1), [x * 1e3 for x in smooth], label=LABELS[s], color=colors[s])
    ax.set(title="wall time per turn (running median of 11) vs turns", xlabel="turn", ylabel="ms")
    ax.set_yscale("log")
    ax.legend()
    for ax, key, title in ((axes[1][0], "get_state", "get_state latency (median) vs turns"),
                           (axes[1][1], "history20", "get_state_history(limit=20) (median) vs turns")):
        for s in colors:
            pts = sorted((r["turns"], r[key + "_stats"]["median"]) for r in runs if r["saver"] == s)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], "o-", label=LABELS[s],
                        color=colors[s])
        ax.set(title=title, xlabel="turns", ylabel="ms")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend()
    fig.suptitle("agent conversation: one thread, durability='sync'")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: 5 and 20 turns")
    p.add_argument("--turns", type=int, nargs="+", help="turn counts (default 20 200 1000)")
    p.add_argument("--baseline-max", type=int, default=200,
                   help="SqliteSaver/InMemorySaver stop after this many turns (default 200)")
    p.add_argument("--savers", nargs="+", default=[*SAVERS, "floor"], choices=[*SAVERS, "floor"])
    p.add_argument("--reads", type=int, help="repetitions of each read measurement")
    p.add_argument("--tmp", default=None, help="where the stores are created (default: $TMPDIR)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        args.turns = args.turns[0]
        worker(args)
        return

    turns = args.turns or ([5, 20] if args.quick else [20, 200, 1000])
    reads = args.reads or (5 if args.quick else 20)
    runs, skipped = [], []
    t_start = time.perf_counter()
    for n in sorted(turns):
        for s in args.savers:
            if s not in ("jsonl", "floor") and n > args.baseline_max:
                skipped.append(f"{LABELS[s]} @ {n} turns")
                print(f"[{NAME}] {LABELS[s]}: skipped at {n} turns (> --baseline-max "
                      f"{args.baseline_max}; its cost grows quadratically)", flush=True)
                continue
            t0 = time.perf_counter()
            wargs = ["--saver", s, "--turns", str(n), "--reads", str(reads)]
            if args.tmp:
                wargs += ["--tmp", args.tmp]
            r = run_worker(Path(__file__), wargs, timeout=3600)
            r["last"] = summary(r["wall_per_turn"][-LAST:])
            r["last_cpu"] = summary(r["cpu_per_turn"][-LAST:])
            r["get_state_stats"] = summary(r["get_state"])
            r["history20_stats"] = summary(r["history20"])
            runs.append(r)
            print(f"[{NAME}] {LABELS[s]:13s} {n:5d} turns in {time.perf_counter() - t0:6.1f}s: "
                  f"turn(last {LAST}) median {r['last']['median'] * 1e3:7.2f} ms, "
                  f"disk {(r['bytes_closed'] or 0) / 2**20:8.2f} MiB, get_state "
                  f"{r['get_state_stats']['median'] * 1e3:6.2f} ms, history20 "
                  f"{r['history20_stats']['median'] * 1e3:7.2f} ms, peak RSS "
                  f"{r['peak_rss_mib']:.0f} MiB", flush=True)

    table = Table()
    metrics = [
        (f"wall time per turn (last {LAST})", lambda r: r["last"], "s"),
        (f"CPU time per turn (last {LAST})", lambda r: r["last_cpu"], "s"),
        ("bytes on disk (open)", lambda r: r["bytes_live"], "B"),
        ("bytes on disk (closed)", lambda r: r["bytes_closed"], "B"),
        ("get_state", lambda r: r["get_state_stats"], "s"),
        ("get_state_history(limit=20)", lambda r: r["history20_stats"], "s"),
        ("peak RSS", lambda r: r["peak_rss_mib"], "MiB"),
        ("RSS before first turn", lambda r: r["rss_before_mib"], "MiB"),
    ]
    for n in sorted(turns):
        for metric, get, unit in metrics:
            for r in (r for r in runs if r["turns"] == n):
                if r["saver"] in ("memory", "floor") and unit == "B":
                    continue
                table.add(f"{n} turns", metric, r["saver"], get(r), unit)
    notes = [
        "durability='sync' for every saver; one turn = 4 checkpoints + 3 put_writes.",
        "SqliteSaver: sqlite3.connect(file, check_same_thread=False), its defaults "
        f"({next((r['sqlite'] for r in runs if 'sqlite' in r), {})}).",
        "Bytes: JsonlSaver = every file in the store directory; SqliteSaver = db file + -wal "
        "(SQLite folds the WAL into the db on close). InMemorySaver has none.",
        "Reads are measured warm, in the process that wrote the thread.",
        "Each row comes from one fresh subprocess; single runs on a shared 2-core machine, so "
        "treat differences under ~20% as noise. CPU time is less sensitive to other tenants.",
    ]
    if skipped:
        notes.append("Skipped (quadratic growth; raise --baseline-max to run them): "
                     + ", ".join(skipped) + ".")
    header = __doc__.split("\n\n")[0]
    payload = {"turns": turns, "baseline_max": args.baseline_max, "skipped": skipped,
               "runs": runs, "total_seconds": time.perf_counter() - t_start}
    jpath, mpath = write_results(NAME, payload, table, header=header, notes=notes,
                                 quick=args.quick)
    png = RESULTS / f"{NAME}{'-quick' if args.quick else ''}.png"
    pictures = drawn(png, lambda: plot(runs, png))
    print(f"[{NAME}] wrote {jpath}, {mpath}{pictures} ({time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
