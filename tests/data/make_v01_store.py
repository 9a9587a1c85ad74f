"""Make the store in ``tests/data/store-v0.1/`` and the answers it must give.

The committed store was written by this script at commit ``pre-house`` (1d1a636's
successor a59e730, before the package moved into subpackages), with its answers in
``store-v0.1.answers.json``; ``tests/test_format_compat.py`` checks that every later
version reads the same answers from it. Only the public API is used, so the script runs
against any version::

    PYTHONPATH=<a checkout> python tests/data/make_v01_store.py OUT_DIR

Threads: a tool-calling agent (snapshots and deltas), a fork by time travel, a subgraph
(two namespaces), hand-made puts and writes (special channels, a retried slot, a write
before its checkpoint), tool-call events, a compacted thread, a deleted thread (its
tombstone), a log with a torn tail, an id with spaces and non-ASCII characters.
"""

from __future__ import annotations

import json
import operator
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_jsonl_checkpoint import JsonlSaver

THREADS = ["agent", "forked", "sub", "raw", "tools", "compacted", "torn", "café au lait"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class _Model(BaseChatModel):
    """Asks for ``add`` once per human message, then answers with the result."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _Model:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        turn = sum(isinstance(m, HumanMessage) for m in messages)
        if isinstance(last, ToolMessage):
            msg = AIMessage(f"the sum is {last.content}", id=f"answer-{turn}")
        else:
            msg = AIMessage("", id=f"call-{turn}", tool_calls=[
                {"id": f"add-{turn}", "name": "add", "args": {"a": turn, "b": 2}}])
        return ChatResult(generations=[ChatGeneration(message=msg)])


def agent_graph() -> StateGraph:
    model = _Model()

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g


class Trail(TypedDict):
    trail: Annotated[list, operator.add]


def sub_graph() -> StateGraph:
    inner = StateGraph(Trail)
    inner.add_node("i1", lambda s: {"trail": ["i1"]})
    inner.add_node("i2", lambda s: {"trail": ["i2"]})
    inner.add_edge(START, "i1")
    inner.add_edge("i1", "i2")
    inner.add_edge("i2", END)
    outer = StateGraph(Trail)
    outer.add_node("o1", lambda s: {"trail": ["o1"]})
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "o1")
    outer.add_edge("o1", "inner")
    outer.add_edge("inner", END)
    return outer


def _cp(i: int, values: dict, versions: dict) -> dict:
    return {"v": 4, "id": f"1ef00000-0000-6000-8000-{i:012d}", "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": values, "channel_versions": versions, "versions_seen": {},
            "updated_channels": sorted(values)}


def build(store: str) -> None:
    saver = JsonlSaver(store, snapshot_every=2, snapshot_ratio=0.5)
    agent = agent_graph().compile(checkpointer=saver)
    for thread in ("agent", "forked", "compacted", "torn", "café au lait", "deleted"):
        cfg = {"configurable": {"thread_id": thread}}
        for turn in range(3):
            agent.invoke({"messages": [HumanMessage(f"{thread} turn {turn}", id=f"h{turn}")]}, cfg)
    forked = {"configurable": {"thread_id": "forked"}}
    old = list(agent.get_state_history(forked))[5].config
    agent.invoke({"messages": [HumanMessage("a fork", id="fork")]}, old)
    sub_graph().compile(checkpointer=saver).invoke({"trail": []}, {"configurable": {"thread_id": "sub"}})
    raw = {"configurable": {"thread_id": "raw", "checkpoint_ns": ""}}
    versions: dict = {}
    values: dict = {}
    for i in range(1, 6):
        values = {"m": values.get("m", []) + [f"item {i}"], "n": {"i": i}}
        versions = {"m": saver.get_next_version(versions.get("m"), None), "n": f"{i:032}.{i:016}"}
        raw = saver.put(raw, _cp(i, values, versions), {"step": i, "run_id": f"run-{i % 2}"}, versions)
        saver.put_writes(raw, [("m", f"write {i}"), ("__interrupt__", {"i": i})], f"task-{i}", f"~{i}")
    saver.put_writes(raw, [("m", "write 5"), ("__error__", {"error": "boom"})], "task-5", "~5")
    early = {"configurable": {"thread_id": "raw", "checkpoint_ns": "",
                              "checkpoint_id": "1ef00000-0000-6000-8000-000000000099"}}
    saver.put_writes(early, [("m", "before its checkpoint")], "task-early", "")
    at = "1ef00000-0000-6000-8000-000000000001"
    saver.record_tool_events("tools", [
        {"ev": "requested", "ns": "tools:1", "cp": at, "call": "c1", "at": "2026-01-01T00:00:00+00:00",
         "name": "send_email", "args": {"json": {"to": "ada@example.com"}}},
        {"ev": "started", "ns": "tools:1", "cp": at, "call": "c1", "at": "2026-01-01T00:00:01+00:00",
         "proc": {"host": "elsewhere", "pid": 1}},
        {"ev": "requested", "ns": "tools:1", "cp": at, "call": "c2", "at": "2026-01-01T00:00:00+00:00",
         "name": "lookup", "args": {"json": {"q": 1}}},
        {"ev": "started", "ns": "tools:1", "cp": at, "call": "c2", "at": "2026-01-01T00:00:01+00:00",
         "proc": {"host": "elsewhere", "pid": 1}},
        {"ev": "finished", "ns": "tools:1", "cp": at, "call": "c2", "at": "2026-01-01T00:00:02+00:00",
         "result": {"json": "found"}},
    ])
    saver.compact("compacted")
    saver.delete_thread("deleted")
    saver.close()
    # a writer killed in the middle of a batch leaves an uncommitted tail
    (log,) = [os.path.join(store, "threads", f) for f in os.listdir(os.path.join(store, "threads"))
              if f.startswith("torn-") and f.endswith(".jsonl")]
    with open(log, "ab") as f:
        f.write(b'{"t":"writes","ns":"","cp":"x","task":"t","path":"","w":[],"seq":999999,"more":1,"c":"0')


def plain(value: Any) -> Any:
    """Tuples and messages as JSON-comparable data."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return {"__class__": type(value).__name__, **plain(value.model_dump())}
    return value


def answers(saver: JsonlSaver) -> dict:
    """Everything the store serves, as JSON-comparable data."""
    out: dict = {"threads": sorted(saver.store.thread_ids()) if hasattr(saver, "store") else []}
    for thread in THREADS + ["deleted"]:
        listed = [plain(t._asdict()) for t in saver.list({"configurable": {"thread_id": thread}})]
        latest = {}
        for ns in sorted({t["config"]["configurable"]["checkpoint_ns"] for t in listed}):
            tup = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})
            latest[ns] = plain(tup._asdict())
        calls = [plain({**c.__dict__, "key": c.key.__dict__}) for c in saver.tool_calls(thread)]
        out[thread] = {"list": listed, "latest": latest, "tool_calls": calls}
    return json.loads(json.dumps(out, default=str))


if __name__ == "__main__":
    out = sys.argv[1]
    build(out)
    with JsonlSaver(out, read_only=True) as reader:
        data = answers(reader)
    with open(out + ".answers.json", "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    print(f"wrote {out} and {out}.answers.json")
