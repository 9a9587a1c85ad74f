"""What one live run per thread costs: the live-run lock on every run, and how soon a
waiting run starts once the live one ended.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/busy_threads.py            # full run, about a minute
    python benchmarks/busy_threads.py --quick    # smoke test

Cases, rounds interleaved saver by saver:

- ``one-node run``: ``invoke`` of a graph with one trivial node on a thread of its own
  history (a new turn each time): the fixed cost of a run, where the lock shows most.
  ``JsonlSaver`` with ``concurrent_runs="refuse"`` (the default: the lock is taken and
  let go on every run), ``"allow"`` (the same checks at each put, no lock) and
  ``"unchecked"`` (neither), ``SqliteSaver``, ``InMemorySaver``.
- ``agent turn``: one user turn of the benchmark agent (model → tool → model), same
  savers: the cost in a realistic run.
- ``wait handoff``: ``concurrent_runs="wait"``; run A holds the thread for 20 ms, run B
  waits for it; the time from A's ``invoke`` returning to B's node starting (B's wait
  polls every 1 → 10 ms).
"""

from __future__ import annotations

import argparse
import operator
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from _common import Table, build_agent_graph, open_saver, summary, user_message, write_results

NAME = "busy_threads"


class Steps(TypedDict, total=False):
    steps: Annotated[list[int], operator.add]


def one_node_graph(saver, on_run=None):
    def node(state: Steps) -> dict:
        if on_run is not None:
            on_run()
        return {"steps": [len(state.get("steps", []))]}

    g = StateGraph(Steps)
    g.add_node("node", node)
    g.add_edge(START, "node")
    return g.compile(checkpointer=saver)


def open_case(kind: str, workdir: Path):
    """``(saver, close)`` for a case's saver kind."""
    if kind.startswith("jsonl"):
        from langgraph_jsonl_checkpoint import JsonlSaver

        mode = kind.split(":", 1)[1]
        saver = JsonlSaver(workdir / f"store-{mode}", concurrent_runs=mode)
        return saver, saver.close
    handle = open_saver(kind, workdir)
    return handle.saver, handle.close


KINDS = ("jsonl:refuse", "jsonl:allow", "jsonl:unchecked", "sqlite", "memory")
SAVER_LABEL = {k: k.split(":")[0] for k in KINDS}
NOTE = {"jsonl:refuse": "refuse: lock per run", "jsonl:allow": "allow: no lock, same put checks",
        "jsonl:unchecked": "unchecked: no lock, no checks"}


def run_costs(workdir: Path, rounds: int, per_round: int, agent_turns: int, table: Table) -> None:
    samples: dict[tuple[str, str], list[float]] = {}
    opened = {k: open_case(k, workdir) for k in KINDS}
    graphs = {k: (one_node_graph(s), build_agent_graph(s)) for k, (s, _) in opened.items()}
    for r in range(rounds):
        for kind in KINDS:
            small, agent = graphs[kind]
            cfg = {"configurable": {"thread_id": f"small-{kind}"}}
            for _ in range(per_round):
                t = time.perf_counter()
                small.invoke({"steps": []}, cfg)
                samples.setdefault(("one-node run", kind), []).append(time.perf_counter() - t)
            acfg = {"configurable": {"thread_id": f"agent-{kind}"}}
            for turn in range(agent_turns):
                t = time.perf_counter()
                agent.invoke({"messages": [user_message(7, r * agent_turns + turn)]}, acfg)
                samples.setdefault(("agent turn", kind), []).append(time.perf_counter() - t)
    for (case, kind), xs in samples.items():
        table.add(case, "invoke", SAVER_LABEL[kind], summary(xs), "s", NOTE.get(kind, ""))
    for _, close in opened.values():
        close()


def one_handoff(saver, cfg) -> float:
    """Seconds from run A's ``invoke`` returning to waiting run B's node starting."""
    inside, a_done, b_started = threading.Event(), [], []

    def hold() -> None:
        inside.set()
        time.sleep(0.02)

    a = one_node_graph(saver, on_run=hold)
    b = one_node_graph(saver, on_run=lambda: b_started.append(time.perf_counter()))

    def run_a() -> None:
        a.invoke({"steps": []}, cfg)
        a_done.append(time.perf_counter())

    ta = threading.Thread(target=run_a)
    ta.start()
    inside.wait(10)
    tb = threading.Thread(target=b.invoke, args=({"steps": []}, cfg))
    tb.start()
    ta.join()
    tb.join()
    return max(0.0, b_started[0] - a_done[0])


def wait_handoff(workdir: Path, n: int, table: Table) -> None:
    from langgraph_jsonl_checkpoint import JsonlSaver

    saver = JsonlSaver(workdir / "store-wait", concurrent_runs="wait", busy_timeout=30)
    cfg = {"configurable": {"thread_id": "handoff"}}
    delays = [one_handoff(saver, cfg) for _ in range(n)]
    saver.close()
    table.add("wait handoff", "A returned → B's node starts", "jsonl", summary(delays), "s", "wait")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, per_round, agent_turns, handoffs = (3, 30, 5, 10) if args.quick else (10, 60, 10, 50)
    workdir = Path(tempfile.mkdtemp(prefix="bench-busy-"))
    table = Table()
    try:
        run_costs(workdir, rounds, per_round, agent_turns, table)
        wait_handoff(workdir, handoffs, table)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    header = __doc__.split("Cases,", 1)[0].strip()
    jpath, mpath = write_results(NAME, {"rounds": rounds, "per_round": per_round}, table, header=header,
                                 quick=args.quick, notes=[
                                     "Ratios are to SqliteSaver in the same run; the lock's cost is "
                                     "JsonlSaver refuse vs allow (same checks at each put).",
                                 ])
    print(mpath.read_text())


if __name__ == "__main__":
    main()
