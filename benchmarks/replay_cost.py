"""What the replay adapter costs per tool call, under each durability mode.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/replay_cost.py            # full run, about 2 minutes
    python benchmarks/replay_cost.py --quick    # smoke test

One turn = a user message, the model asks for one tool, the tool answers, the model
answers (a scripted model: no network). Per durability mode (``sync``, ``async``,
``exit``) and tool kind (a side-effecting ``send_email``, an idempotent ``lookup``),
the median turn with ``JsonlSaver`` and a plain ``ToolNode`` is compared with the same
turn through ``ReplayAdapter.tool_node`` (the journal: ``requested``, ``started``
fsynced before the tool body, ``finished``; a side-effecting call under ``"async"``
also waits until the checkpoint its node runs from is saved). ``SqliteSaver`` and
``InMemorySaver`` with a plain ``ToolNode`` run the same turns, as references. Rounds are
interleaved case by case.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from _common import Table, summary, write_results

NAME = "replay_cost"
DURABILITY = ("sync", "async", "exit")
KINDS = ("side effect", "idempotent")


@tool
def send_email(to: str) -> str:
    """Send an email (a side effect)."""
    return f"sent to {to}"


@tool
def lookup(order_id: str) -> str:
    """Look up an order (read-only)."""
    return f"order {order_id}: shipped"


def build(checkpointer: Any, kind: str, adapter: Any = None):
    name = "send_email" if kind == "side effect" else "lookup"
    args = {"to": "bob"} if name == "send_email" else {"order_id": "42"}

    def agent(state: MessagesState) -> dict:
        msgs = state["messages"]
        n = len(msgs)
        if isinstance(msgs[-1], ToolMessage):
            return {"messages": [AIMessage(f"done: {msgs[-1].content}", id=f"ai-{n}")]}
        call = {"name": name, "args": args, "id": f"call-{n}", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call], id=f"ai-{n}")]}

    tools = [send_email, lookup]
    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", adapter.tool_node(tools) if adapter is not None else ToolNode(tools))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def open_savers(workdir: Path) -> dict[str, tuple[Any, Any, Any]]:
    """case saver name -> (checkpointer, adapter or None, close)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter

    plain = JsonlSaver(workdir / "plain")
    journaled = JsonlSaver(workdir / "journaled")
    conn = sqlite3.connect(str(workdir / "cp.sqlite"), check_same_thread=False)
    sqlite = SqliteSaver(conn)
    sqlite.setup()
    return {
        "jsonl": (plain, None, plain.close),
        "jsonl+adapter": (journaled, ReplayAdapter(journaled, idempotent=["lookup"]), journaled.close),
        "sqlite": (sqlite, None, conn.close),
        "memory": (InMemorySaver(), None, lambda: None),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, turns = (3, 10) if args.quick else (10, 30)
    workdir = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    table = Table()
    samples: dict[tuple[str, str, str], list[float]] = {}
    try:
        savers = open_savers(workdir)
        graphs = {
            (d, k, s): build(cp, k, adapter)
            for d in DURABILITY for k in KINDS for s, (cp, adapter, _) in savers.items()
        }
        for r in range(rounds):
            for (d, k, s), graph in graphs.items():
                cfg = {"configurable": {"thread_id": f"{d}-{k}-{s}"}}
                for t in range(turns):
                    msg = HumanMessage(f"turn {r}.{t}", id=f"user-{r}-{t}")
                    started = time.perf_counter()
                    graph.invoke({"messages": [msg]}, cfg, durability=d)
                    samples.setdefault((d, k, s), []).append(time.perf_counter() - started)
        for _, _, close in savers.values():
            close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    added: dict[str, float] = {}
    for (d, k, s), xs in samples.items():
        saver, note = ("jsonl", "with ReplayAdapter") if s == "jsonl+adapter" else (s, "")
        table.add(f"{d}, {k}", "turn", saver, summary(xs), "s", note)
    for d in DURABILITY:
        for k in KINDS:
            base = summary(samples[(d, k, "jsonl")])["median"]
            with_adapter = summary(samples[(d, k, "jsonl+adapter")])["median"]
            added[f"{d}, {k}"] = with_adapter - base
    def median(d: str, k: str, s: str) -> float:
        return summary(samples[(d, k, s)])["median"]

    notes = [
        f"Added per call by the adapter (median turn with it − without, JsonlSaver), {d}, {k}: "
        f"{added[f'{d}, {k}'] * 1e3:.2f} ms ({median(d, k, 'jsonl+adapter') / median(d, k, 'jsonl'):.2f}×)"
        for d in DURABILITY for k in KINDS
    ]
    header = __doc__.split("Reproduce", 1)[0].strip()
    _, mpath = write_results(NAME, {"rounds": rounds, "turns": turns, "added_s": added}, table,
                             header=header, notes=notes, quick=args.quick)
    print(mpath.read_text())


if __name__ == "__main__":
    main()
