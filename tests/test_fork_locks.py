"""Forked processes and the thread's locks: a process forked while it holds a thread's
lock descriptors (a ``multiprocessing`` pool a node starts with the ``fork`` start
method) does not keep the thread busy after its run ended.
"""

from __future__ import annotations

import multiprocessing
import operator
from pathlib import Path
from typing import Annotated, Any

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.bounded import within

FORK = multiprocessing.get_context("fork")


class Visits(TypedDict, total=False):
    visits: Annotated[list[str], operator.add]


def _stay_until(release: Any) -> None:
    release.wait(60)


def test_a_child_forked_by_a_node_does_not_keep_the_thread_busy(tmp_path: Path) -> None:
    """A node starts a worker process (fork) that outlives the run, as a lazily made
    ``multiprocessing.Pool`` does: the next run on the thread goes ahead, as with
    ``InMemorySaver``. It was refused with ``ThreadBusyError`` ("another run") for as
    long as the child lived: the child's copy of the live-run lock's descriptor kept the
    lock when the run closed its own."""
    release = FORK.Event()
    children: list[Any] = []

    def node(state: Visits) -> dict:
        if not children:
            child = FORK.Process(target=_stay_until, args=(release,), daemon=True)
            child.start()
            children.append(child)
        return {"visits": ["visit"]}

    g = StateGraph(Visits)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=JsonlSaver(tmp_path / "store"))
    cfg = {"configurable": {"thread_id": "t1"}}
    try:
        with within(30, "the runs"):
            graph.invoke({"visits": []}, cfg)
            assert children[0].is_alive()
            assert graph.invoke({"visits": []}, cfg)["visits"] == ["visit", "visit"]
    finally:
        release.set()
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()

