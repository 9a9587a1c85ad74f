"""A writer in its own process, for the tests of readers that follow it.

``python -m tests.harness.cli_writer STORE THREAD TURNS GATE_DIR`` runs the scripted
tool-calling agent (``flow_graphs``) on ``THREAD`` for ``TURNS`` turns, each a user
message ``add <i> <i>``: a tool call, its result, an answer. Before turn ``i`` it waits
(at most 60 s) for the file ``GATE_DIR/<i>``, so a test decides when each turn is
written; after each turn it prints ``turn <i> written`` and flushes.
"""

from __future__ import annotations

import os
import sys
import time

from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.flow_graphs import build_agent_graph


def main(store: str, thread_id: str, turns: int, gate: str) -> None:
    with JsonlSaver(store) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": thread_id}}
        for i in range(turns):
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(gate, str(i))):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"gate {i} never opened")
                time.sleep(0.01)
            graph.invoke({"messages": [HumanMessage(f"add {i} {i}", id=f"h-{i}")]}, config, durability="sync")
            print(f"turn {i} written", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
