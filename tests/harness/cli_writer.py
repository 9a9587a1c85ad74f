"""A writer in its own process, for the tests of readers that follow it.

``python -m tests.harness.cli_writer STORE THREAD TURNS GATE_DIR`` runs the scripted
tool-calling agent (``flow_graphs``) on ``THREAD`` for ``TURNS`` turns, each a user
message ``add <i> <i>``: a tool call, its result, an answer. Before turn ``i`` it waits
(at most 60 s) for the file ``GATE_DIR/<i>``, so a test decides when each turn is
written; after each turn it prints ``turn <i> written`` and flushes.

``python -m tests.harness.cli_writer STORE THREAD hold GATE_DIR`` runs one graph whose
node prints ``in run`` and waits (at most 60 s) for ``GATE_DIR/release``: a run that is
live (it holds the thread) for as long as the test wants.
"""

from __future__ import annotations

import os
import sys
import time

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.flow_graphs import build_agent_graph


def wait_for(path: str) -> None:
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.01)


def hold(store: str, thread_id: str, gate: str) -> None:
    """One run that stays live until ``GATE_DIR/release`` exists."""

    def step(state: MessagesState) -> dict:
        print("in run", flush=True)
        wait_for(os.path.join(gate, "release"))
        return {"messages": [AIMessage("released", id="ai-released")]}

    builder = StateGraph(MessagesState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    with JsonlSaver(store) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("hold on", id="h-hold")]},
                     {"configurable": {"thread_id": thread_id}}, durability="sync")
    print("run ended", flush=True)


def main(store: str, thread_id: str, turns: int, gate: str) -> None:
    with JsonlSaver(store) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": thread_id}}
        for i in range(turns):
            wait_for(os.path.join(gate, str(i)))
            graph.invoke({"messages": [HumanMessage(f"add {i} {i}", id=f"h-{i}")]}, config, durability="sync")
            print(f"turn {i} written", flush=True)


if __name__ == "__main__":
    if sys.argv[3] == "hold":
        hold(sys.argv[1], sys.argv[2], sys.argv[4])
    else:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
