"""Reference graphs about state and channels: a counter (time travel, forks, update_state),
DeltaChannel, a long chat with message edits, nodes mutating state in place, custom types.

Every builder returns an *uncompiled* ``StateGraph`` (or a factory of one) so
the same graph definition can be compiled once per checkpointer.  Builders
must be deterministic: two graphs built by the same builder and fed the same
inputs must produce the same state (up to random ids, which the
differential normaliser maps away).  Anything stateful (fail-once counters,
...) lives in a closure created by the builder, never at module level.

``human`` makes the human messages (with fixed ids) the scenarios feed these graphs and
the agent.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite
from pydantic import BaseModel
from typing_extensions import TypedDict

# ---------------------------------------------------------------------------
# 5/6. time travel, forks, update_state
# ---------------------------------------------------------------------------


class CounterState(TypedDict, total=False):
    n: int
    trail: Annotated[list[str], operator.add]


def build_counter_graph() -> StateGraph:
    def inc(state: CounterState) -> dict:
        return {"n": state.get("n", 0) + 1, "trail": [f"inc->{state.get('n', 0) + 1}"]}

    def double(state: CounterState) -> dict:
        return {"n": state["n"] * 2, "trail": [f"double->{state['n'] * 2}"]}

    def report(state: CounterState) -> dict:
        return {"trail": [f"report {state['n']}"]}

    g = StateGraph(CounterState)
    g.add_node("inc", inc)
    g.add_node("double", double)
    g.add_node("report", report)
    g.add_edge(START, "inc")
    g.add_edge("inc", "double")
    g.add_edge("double", "report")
    g.add_edge("report", END)
    return g


# ---------------------------------------------------------------------------
# 7. DeltaChannel
# ---------------------------------------------------------------------------


def concat_reducer(state: list, writes: list) -> list:
    out = list(state)
    for w in writes:
        if isinstance(w, list):
            out.extend(w)
        else:
            out.append(w)
    return out


def messages_delta_reducer(state: list, writes: list) -> list:
    for w in writes:
        state = add_messages(state, w)
    return state


class DeltaState(TypedDict, total=False):
    items: Annotated[list, DeltaChannel(concat_reducer, snapshot_frequency=3)]
    msgs: Annotated[
        list[AnyMessage], DeltaChannel(messages_delta_reducer, snapshot_frequency=4)
    ]
    n: int
    target: int


def build_delta_graph() -> StateGraph:
    def tick(state: DeltaState) -> dict:
        n = state.get("n", 0) + 1
        out: dict[str, Any] = {"n": n, "items": [f"t{n}"]}
        if n % 4 == 0:
            out["msgs"] = [AIMessage(content=f"tick {n}", id=f"tick-{n}")]
        if n % 9 == 0:
            # replace an existing message by id and remove another one
            out["msgs"] = [
                AIMessage(content=f"rewritten at {n}", id=f"tick-{n - 5}"),
            ]
        if n == 14:
            out["items"] = Overwrite([f"reset@{n}"])
        return out

    def left(state: DeltaState) -> dict:
        return {"items": [f"L{state['n']}"]}

    def right(state: DeltaState) -> dict:
        return {"items": [f"R{state['n']}a", f"R{state['n']}b"]}

    def route(state: DeltaState) -> list[str] | str:
        if state["n"] >= state.get("target", 0):
            return END
        if state["n"] % 3 == 0:
            return ["left", "right"]
        return "tick"

    g = StateGraph(DeltaState)
    g.add_node("tick", tick)
    g.add_node("left", left)
    g.add_node("right", right)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", route, ["tick", "left", "right", END])
    g.add_edge("left", "tick")
    g.add_edge("right", "tick")
    return g


# ---------------------------------------------------------------------------
# 8. long thread with non-append edits of the message list
# ---------------------------------------------------------------------------


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    op: str
    turns: int


def build_long_chat_graph() -> StateGraph:
    def chat(state: ChatState) -> dict:
        turns = state.get("turns", 0) + 1
        msgs: list[BaseMessage] = state["messages"]
        op = state.get("op", "append")
        out: list[BaseMessage] = []
        if op == "replace" and len(msgs) >= 3:
            target = msgs[-3]
            out.append(
                AIMessage(content=f"edited@{turns}: {target.content}", id=target.id)
            )
        elif op == "remove" and len(msgs) >= 2:
            out.append(RemoveMessage(id=msgs[0].id))
        out.append(AIMessage(content=f"reply {turns}", id=f"reply-{turns}"))
        return {"messages": out, "turns": turns}

    def summarise(state: ChatState) -> dict:
        msgs = state["messages"]
        removals = [RemoveMessage(id=m.id) for m in msgs[:-2]]
        summary = AIMessage(
            content=f"summary of {len(removals)} messages",
            id=f"summary-{state['turns']}",
        )
        return {"messages": [*removals, summary]}

    g = StateGraph(ChatState)
    g.add_node("chat", chat)
    g.add_node("summarise", summarise)
    g.add_edge(START, "chat")
    g.add_conditional_edges(
        "chat", lambda s: "summarise" if s.get("op") == "summarise" else END
    )
    g.add_edge("summarise", END)
    return g


# ---------------------------------------------------------------------------
# 9. nodes that mutate state in place
# ---------------------------------------------------------------------------


class MutState(TypedDict, total=False):
    log: list[str]  # plain LastValue channel
    meta: dict
    messages: Annotated[list[AnyMessage], add_messages]
    step: int


def build_mutating_graph() -> StateGraph:
    def mutate_log(state: MutState) -> dict:
        log = state.get("log")
        if log is None:
            return {"log": ["start"], "step": 1}
        log.append(f"mutated {state.get('step', 0)}")  # in place!
        return {"log": log, "step": state.get("step", 0) + 1}

    def mutate_meta(state: MutState) -> dict:
        meta = state.get("meta")
        if meta is None:
            return {"meta": {"count": 1, "hist": [1]}}
        meta["count"] += 1  # in place, and returned
        meta["hist"].append(meta["count"])
        return {"meta": meta}

    def mutate_message(state: MutState) -> dict:
        msgs = state.get("messages") or []
        if msgs:
            # in place mutation of a message that is NOT returned
            msgs[-1].additional_kwargs.setdefault("touched", []).append(
                state.get("step", 0)
            )
            msgs[0].content = str(msgs[0].content) + "!"
        return {
            "messages": [
                AIMessage(content=f"ack {state.get('step', 0)}", id=f"ack-{len(msgs)}")
            ]
        }

    def silent_mutation(state: MutState) -> dict:
        # mutate everything it received and return nothing
        if state.get("log") is not None:
            state["log"].append("silent")
        if state.get("meta") is not None:
            state["meta"]["silent"] = True
        return {}

    g = StateGraph(MutState)
    g.add_node("mutate_log", mutate_log)
    g.add_node("mutate_meta", mutate_meta)
    g.add_node("mutate_message", mutate_message)
    g.add_node("silent_mutation", silent_mutation)
    g.add_edge(START, "mutate_log")
    g.add_edge("mutate_log", "mutate_meta")
    g.add_edge("mutate_meta", "mutate_message")
    g.add_edge("mutate_message", "silent_mutation")
    g.add_edge("silent_mutation", END)
    return g


# ---------------------------------------------------------------------------
# 11. custom types for strict msgpack / encrypted serde
# ---------------------------------------------------------------------------


class Note(BaseModel):
    text: str
    tags: list[str] = []


@dataclass
class Point:
    x: int
    y: int
    labels: list[str] = field(default_factory=list)


class TypedState(TypedDict, total=False):
    note: Note
    points: Annotated[list[Point], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]


def build_typed_graph() -> StateGraph:
    def make_note(state: TypedState) -> dict:
        n = len(state.get("points") or [])
        return {
            "note": Note(text=f"note {n}", tags=["a", f"t{n}"]),
            "points": [Point(x=n, y=n * n, labels=[f"p{n}"])],
        }

    def answer(state: TypedState) -> dict:
        return {
            "messages": [
                AIMessage(
                    content=f"{state['note'].text} / {len(state['points'])} points",
                    id=f"typed-{len(state['points'])}",
                )
            ]
        }

    g = StateGraph(TypedState)
    g.add_node("make_note", make_note)
    g.add_node("answer", answer)
    g.add_edge(START, "make_note")
    g.add_edge("make_note", "answer")
    g.add_edge("answer", END)
    return g


def human(text: str, id: str) -> HumanMessage:
    return HumanMessage(content=text, id=id)
