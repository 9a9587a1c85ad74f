"""SQLite files written by real graphs, and what LangGraph reads back, for the migration tests.

:func:`build_sqlite_app` runs the reference graphs on ``SqliteSaver`` (a tool-calling
agent with a fork by time travel, a review waiting on an interrupt, nested subgraphs
with an interrupt inside, a fan-out with ``Send`` (parallel tasks, distinct task paths),
a DeltaChannel graph, an ``update_state``). :func:`histories` is the oracle: what
LangGraph itself reads of each thread through a checkpointer (``get_state_history``,
subgraph states, and every raw tuple with its pending writes), so two stores compare
equal exactly when a graph could not tell them apart.
"""

from __future__ import annotations

import queue
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph
from langgraph.types import Command

from tests.harness.flow_graphs import (
    build_agent_graph,
    build_fanout_graph,
    build_nested_subgraph_graph,
    build_review_graph,
)
from tests.harness.state_graphs import build_counter_graph, build_delta_graph

#: thread id -> the graph builder it was run with.
GRAPHS: dict[str, Callable[[], StateGraph]] = {
    "agent": build_agent_graph,
    "review": build_review_graph,
    "nested": lambda: build_nested_subgraph_graph(with_interrupt=True),
    "fan": build_fanout_graph,
    "delta": build_delta_graph,
    "counter": build_counter_graph,
}


def cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def build_sqlite_app(path: Path) -> Path:
    """Write the reference threads into a new SQLite file with ``SqliteSaver``."""
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    try:
        agent = build_agent_graph().compile(checkpointer=saver)
        agent.invoke({"messages": [HumanMessage("add 2 3", id="h1")]}, cfg("agent"))
        agent.invoke({"messages": [HumanMessage("both 4 5", id="h2")]}, cfg("agent"))
        # time travel: fork from the end of the first turn
        first_turn = [s for s in agent.get_state_history(cfg("agent")) if len(s.values["messages"]) == 4][0]
        agent.invoke({"messages": [HumanMessage("mul 6 7", id="h3")]}, first_turn.config)

        review = build_review_graph().compile(checkpointer=saver)
        review.invoke({"topic": "tea"}, cfg("review"))
        review.invoke(Command(resume="shorter"), cfg("review"))  # waits again

        nested = GRAPHS["nested"]().compile(checkpointer=saver)
        nested.invoke({"trail": []}, cfg("nested"))  # waits inside the leaf subgraph

        build_fanout_graph().compile(checkpointer=saver).invoke({"items": ["a", "b", "c"]}, cfg("fan"))
        build_delta_graph().compile(checkpointer=saver).invoke({"target": 20}, cfg("delta"))

        counter = build_counter_graph().compile(checkpointer=saver)
        counter.invoke({"n": 1}, cfg("counter"))
        counter.update_state(cfg("counter"), {"n": 100}, as_node="double")
    finally:
        conn.close()
    return path


def record_uncertain_call(saver: Any, cid: str) -> None:
    """Journal, on thread ``agent``'s checkpoint ``cid``, a ``send_email`` call that was
    requested and started by a process that is gone: a call whose outcome is unknown."""
    saver.record_tool_events("agent", [
        {"ev": "requested", "ns": "tools:x", "cp": cid, "call": "k1", "at": "2026-01-01T00:00:00+00:00",
         "name": "send_email", "args": saver.codec.encode({"to": "bob"}, "args")},
        {"ev": "started", "ns": "tools:x", "cp": cid, "call": "k1", "at": "2026-01-01T00:00:01+00:00",
         "proc": {"host": "gone", "pid": 1}},
    ])


def copy_of(path: Path, to: Path) -> Path:
    """A copy of an SQLite file (so a test may resume threads without touching the shared one)."""
    shutil.copyfile(path, to)
    return to


def go_on(saver: Any) -> dict[str, Any]:
    """Go on with the threads :func:`build_sqlite_app` left waiting or done, as the app
    would (answer the review and the nested interrupt, a new agent turn); returns what
    each then holds."""
    out = {}
    review = GRAPHS["review"]().compile(checkpointer=saver)
    review.invoke(Command(resume="yes"), cfg("review"))
    out["review"] = review.get_state(cfg("review")).values
    nested = GRAPHS["nested"]().compile(checkpointer=saver)
    nested.invoke(Command(resume="42"), cfg("nested"))
    out["nested"] = nested.get_state(cfg("nested")).values
    agent = GRAPHS["agent"]().compile(checkpointer=saver)
    agent.invoke({"messages": [("user", "add 1 1")]}, cfg("agent"))
    out["agent"] = [(m.type, m.content) for m in agent.get_state(cfg("agent")).values["messages"]]
    return out


def _task(t: Any) -> tuple[Any, ...]:
    return (t.id, t.name, t.path, repr(t.error), tuple(i.value for i in t.interrupts), t.result)


def histories(saver: Any, thread_ids: Any = GRAPHS) -> dict[str, Any]:
    """What LangGraph reads of each thread through ``saver`` (see the module docstring)."""
    out: dict[str, Any] = {}
    for thread_id in thread_ids:
        graph = GRAPHS[thread_id]().compile(checkpointer=saver)
        snaps = [
            (s.config["configurable"]["checkpoint_id"],
             s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None,
             s.values, s.next, s.metadata, s.created_at, tuple(_task(t) for t in s.tasks))
            for s in graph.get_state_history(cfg(thread_id))
        ]
        latest = graph.get_state(cfg(thread_id), subgraphs=True)
        sub = [(_task(t), t.state.values if t.state is not None and hasattr(t.state, "values") else None)
               for t in latest.tasks]
        raw = [
            (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"],
             t.checkpoint["channel_versions"], t.metadata, t.pending_writes)
            for t in saver.list(cfg(thread_id))
        ]
        out[thread_id] = {"history": snaps, "subgraphs": sub, "raw": sorted(raw, key=lambda r: (r[0], r[1]))}
    return out


def sqlite_write_slots(path: Path) -> list[tuple[Any, ...]]:
    """Every write's (thread, namespace, checkpoint, task, task_path, idx, channel) in the file."""
    with closing(sqlite3.connect(path)) as conn, conn:
        return sorted(conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel FROM writes"
        ).fetchall())


class HeldRun(NamedTuple):
    """What :func:`run_cli_while_held` saw."""

    status: int
    first: str  # the first line the CLI said on stderr ("" if none in 60 s)
    rest: str  # the rest of stderr
    out: str
    running: bool  # whether the CLI was still running when it said its first line


def run_cli_while_held(argv: list[str], let_go: Callable[[], None]) -> HeldRun:
    """Run ``langgraph-jsonl argv`` while the caller holds a lock it needs; call
    ``let_go()`` once the CLI has said something on stderr (or 60 s passed), then wait
    for it to end (killed after 120 s)."""
    child = subprocess.Popen([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None and child.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stderr, stdout, out_read = child.stderr, child.stdout, []
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
    out_reader = threading.Thread(target=lambda: out_read.append(stdout.read()), daemon=True)
    reader.start()
    out_reader.start()
    try:
        try:
            first = lines.get(timeout=60)  # the start of Python and the CLI on a loaded machine
        except queue.Empty:
            first = ""
        running = child.poll() is None
        let_go()
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    reader.join(timeout=30)
    out_reader.join(timeout=30)
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    stdout.close()
    stderr.close()
    return HeldRun(child.returncode, first, "".join(rest), "".join(out_read), running)
