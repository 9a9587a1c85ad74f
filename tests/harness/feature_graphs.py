"""Reference graphs for LangGraph features a user's script reaches for: a subgraph
compiled with ``checkpointer=True``, ``Command(goto=...)`` with ``Send`` fan-out and a
retried branch, ``Command.PARENT``, the functional API, errors and retries inside nested
subgraphs, and state values that are not JSON.

Builders return an *uncompiled* graph (or, for the functional API, an object with a
``compile(checkpointer=...)``) and are deterministic; counters live in closures.
"""
from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import operator
import time
import uuid
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy, Send, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict


class S(TypedDict, total=False):
    """The state of every graph here."""
    log: Annotated[list, operator.add]
    val: Any


# a subgraph compiled with checkpointer=True (own persistent state per thread)
def build_persistent_subgraph() -> StateGraph:
    """A subgraph with its own checkpointer, as a node and called from a node."""
    def c1(state: S) -> dict:
        return {"log": [f"c1 saw {len(state.get('log') or [])}"]}

    def c_ask(state: S) -> dict:
        ans = interrupt({"q": "child?", "n": len(state.get("log") or [])})
        return {"log": [f"child-ans={ans}"]}

    child = StateGraph(S)
    child.add_node("c1", c1)
    child.add_node("c_ask", c_ask)
    child.add_edge(START, "c1")
    child.add_edge("c1", "c_ask")
    child.add_edge("c_ask", END)
    child_c = child.compile(checkpointer=True)

    def p1(state: S) -> dict:
        return {"log": ["p1"]}

    def call_child(state: S) -> dict:
        out = child_c.invoke({"log": ["from-parent"]})
        return {"log": [f"child returned {len(out['log'])}"]}

    def p3(state: S) -> dict:
        return {"log": ["p3"]}

    g = StateGraph(S)
    g.add_node("p1", p1)
    g.add_node("child", call_child)
    g.add_node("sub", child_c)
    g.add_node("p3", p3)
    g.add_edge(START, "p1")
    g.add_edge("p1", "sub")
    g.add_edge("sub", "child")
    g.add_edge("child", "p3")
    g.add_edge("p3", END)
    return g


# Command(goto) + Send fan-out: one branch retried, one (optionally) failing once
def build_command_send(fail_until: int = 2, hard_fail: bool = False) -> StateGraph:
    """Branch 1 fails until call ``fail_until`` (retried); with ``hard_fail`` branch 2
    fails its first call without retry (after the others finished)."""
    calls: dict = {}

    def router(state: S) -> Command:
        n = len(state.get("log") or [])
        return Command(update={"log": [f"router {n}"]},
                       goto=[Send("work", {"val": i}) for i in range(3)] + ["side"])

    def work(state: S) -> dict:
        i = state["val"]
        calls[i] = calls.get(i, 0) + 1
        if i == 1 and calls[i] < fail_until:
            raise ValueError(f"work {i} failed on call {calls[i]}")
        if i == 2 and hard_fail and calls[i] == 1:
            time.sleep(0.1)  # let the other branches finish first: no cancel race
            raise RuntimeError("hard fail of 2")
        return {"log": [f"work {i} ok"]}

    def side(state: S) -> Command:
        return Command(update={"log": ["side"]}, goto="end_node")

    def end_node(state: S) -> dict:
        return {"log": [f"end {len(state['log'])}"]}

    g = StateGraph(S)
    g.add_node("router", router)
    retry = RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False, retry_on=ValueError)
    g.add_node("work", work, retry_policy=retry)
    g.add_node("side", side)
    g.add_node("end_node", end_node)
    g.add_edge(START, "router")
    g.add_edge("work", "end_node")
    g.add_edge("end_node", END)
    return g


class Color(enum.Enum):
    RED = "red"


class Model(BaseModel):
    a: int
    when: datetime.datetime
    tags: set[str] = set()


@dataclasses.dataclass
class DC:
    x: int
    items: tuple = ()


def build_values_graph(big: int = 0) -> StateGraph:
    """A state value of every non-JSON kind LangGraph's serializer keeps (``big``: plus a
    string of that many characters and a long list)."""
    def make(state: S) -> dict:
        now = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.UTC)
        v = {
            "dt": now, "naive": datetime.datetime(2024, 1, 1), "date": datetime.date(2024, 2, 3),
            "time": datetime.time(1, 2, 3), "td": datetime.timedelta(days=1, microseconds=5),
            "set": {1, 2, 3}, "fs": frozenset({"a"}), "bytes": b"\x00\x01\xff", "ba": bytearray(b"ab"),
            "model": Model(a=1, when=now, tags={"x"}), "dc": DC(1, (2, 3)), "tuple": (1, (2, "3")),
            "dec": decimal.Decimal("3.14"), "uuid": uuid.UUID(int=7), "enum": Color.RED,
            "intkeys": {1: "a", 2: "b"}, "tuplekey": {(1, 2): 3}, "nan": float("inf"),
            "neg0": -0.0, "str_nul": "a\x00b", "surrogate_ok": "😀",
            "json_like": {"__type__": "x", "lc": 1, "type": "constructor", "id": ["a"]},
            "empty": {}, "nested_list": [[[]]],
        }
        if big:
            v["big"] = "x" * big
            v["biglist"] = list(range(big // 100))
        return {"val": v, "log": ["make"]}

    def touch(state: S) -> dict:
        return {"log": [f"touch {type(state['val']['dc']).__name__} {sorted(state['val']['set'])}"]}

    g = StateGraph(S)
    g.add_node("make", make)
    g.add_node("touch", touch)
    g.add_edge(START, "make")
    g.add_edge("make", "touch")
    g.add_edge("touch", END)
    return g


# the functional API
def build_functional() -> Any:
    """An ``@entrypoint`` with parallel ``@task``s, an interrupt, ``previous`` and ``final``."""
    from langgraph.func import entrypoint, task

    class Functional:
        def compile(self, checkpointer: Any = None, **_: Any) -> Any:
            @task
            def square(x: int) -> int:
                return x * x

            @task
            def ask(x: int) -> str:
                return interrupt({"need": x})

            @entrypoint(checkpointer=checkpointer)
            def main(inp: dict, *, previous: Any = None) -> Any:
                futs = [square(i) for i in range(inp["n"])]
                vals = [f.result() for f in futs]
                ans = ask(sum(vals)).result()
                return entrypoint.final(value={"vals": vals, "ans": ans, "prev": previous},
                                        save={"last": ans, "prev": previous})

            return main

    return Functional()


# Command.PARENT from a subgraph
def build_parent_command() -> StateGraph:
    """A subgraph node that jumps to a node of its parent graph."""
    def c1(state: S) -> Command:
        return Command(graph=Command.PARENT, goto="p_after", update={"log": ["from child"]})

    child = StateGraph(S)
    child.add_node("c1", c1)
    child.add_edge(START, "c1")
    child_c = child.compile()

    def p_after(state: S) -> dict:
        return {"log": [f"p_after {len(state['log'])}"]}

    g = StateGraph(S)
    g.add_node("child", child_c, destinations=("p_after",))
    g.add_node("p_after", p_after)
    g.add_edge(START, "child")
    g.add_edge("p_after", END)
    return g


# errors, retries and an interrupt two subgraphs down
def build_failing_nested_subgraph() -> StateGraph:
    """A leaf subgraph (inside a middle one) with a node retried twice, a node that
    fails its first call without retry, and an interrupt; a parallel parent node."""
    calls = {"boom": 0, "retried": 0}

    def retried(state: S) -> dict:
        calls["retried"] += 1
        if calls["retried"] < 3:
            raise KeyError("retry me")
        return {"log": [f"retried after {calls['retried']}"]}

    def boom(state: S) -> dict:
        calls["boom"] += 1
        if calls["boom"] == 1:
            raise ValueError("leaf failed once")
        return {"log": ["boom ok"]}

    def ask(state: S) -> dict:
        return {"log": [f"ans={interrupt('q')}"]}

    leaf = StateGraph(S)
    retry = RetryPolicy(max_attempts=5, initial_interval=0.001, jitter=False, retry_on=KeyError)
    leaf.add_node("retried", retried, retry_policy=retry)
    leaf.add_node("boom", boom)
    leaf.add_node("ask", ask)
    leaf.add_edge(START, "retried")
    leaf.add_edge("retried", "boom")
    leaf.add_edge("boom", "ask")
    leaf.add_edge("ask", END)
    mid = StateGraph(S)
    mid.add_node("m", lambda state: {"log": ["m"]})
    mid.add_node("leaf", leaf.compile())
    mid.add_edge(START, "m")
    mid.add_edge("m", "leaf")
    mid.add_edge("leaf", END)
    top = StateGraph(S)
    top.add_node("mid", mid.compile())
    top.add_node("side", lambda state: {"log": ["side"]})
    top.add_edge(START, "mid")
    top.add_edge(START, "side")
    top.add_edge("mid", END)
    return top


class Branch(TypedDict, total=False):
    """The state of one parallel subgraph run (its input carries ``idx``)."""

    log: Annotated[list, operator.add]
    idx: int


# a Send fan-out to a subgraph node: parallel subgraph runs, each interrupted
def build_send_to_subgraph(branches: int = 3) -> StateGraph:
    """``branches`` parallel runs of a subgraph that asks for input, then a join."""

    def ask(state: Branch) -> dict:
        answer = interrupt({"idx": state["idx"]})
        return {"log": [f"branch{state['idx']}={answer}"]}

    sub = StateGraph(Branch, output_schema=S)
    sub.add_node("ask", ask)
    sub.add_edge(START, "ask")
    sub.add_edge("ask", END)

    def fan(state: S) -> list[Send]:
        return [Send("branch", {"idx": i, "log": []}) for i in range(branches)]

    g = StateGraph(S)
    g.add_node("start", lambda state: {"log": ["start"]})
    g.add_node("branch", sub.compile())
    g.add_node("join", lambda state: {"log": [f"join {len(state['log'])}"]})
    g.add_edge(START, "start")
    g.add_conditional_edges("start", fan, ["branch"])
    g.add_edge("branch", "join")
    g.add_edge("join", END)
    return g
