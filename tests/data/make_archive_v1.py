"""Make the store in ``tests/data/archive-v1/``: one thread archived by a release whose
archive held the log only.

The committed store was written by this script at commit d90ec71, the last before an
archive also kept the thread's debug trace and quarantine file: its ``archive/`` holds
``<stem>.<time>.jsonl.zst`` alone, and the trace the thread had was dropped.
``tests/test_retention.py`` checks that every later version restores it. Only the
public API is used, so the script runs against any version::

    PYTHONPATH=<a checkout> python tests/data/make_archive_v1.py OUT_DIR

Thread ``archived-1``: two turns of a one-node graph, traced by ``JsonlTracer``, then
swept with ``strategy="archive"``.
"""

from __future__ import annotations

import sys
import time

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver, JsonlTracer

THREAD = "archived-1"
#: What the thread's last message says once restored.
LAST_REPLY = "noted: second"


def main(out: str) -> None:
    """Write the store into ``out`` (a new directory)."""
    builder = StateGraph(MessagesState)
    builder.add_node("n", lambda s: {"messages": [AIMessage(f"noted: {s['messages'][-1].content}",
                                                            id=f"ai-{len(s['messages'])}")]})
    builder.add_edge(START, "n")
    saver = JsonlSaver(out)
    graph = builder.compile(checkpointer=saver)
    tracer = JsonlTracer(saver)
    config = {"configurable": {"thread_id": THREAD}, "callbacks": [tracer]}
    for i, text in enumerate(["first", "second"]):
        graph.invoke({"messages": [HumanMessage(text, id=f"h{i}")]}, config)
    tracer.close()
    report = saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + 3600)
    assert report.swept == [(THREAD, "archive")], report
    saver.close()


if __name__ == "__main__":
    main(sys.argv[1])
