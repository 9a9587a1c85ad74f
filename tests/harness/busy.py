"""Several workers advancing one thread: a turn-taking agent, the workers (threads, asyncio
tasks, processes) and the check that a history is a transcript a chat model accepts.

A *turn* is one invoke with one human message (``both <worker> <i>``, id ``turn-w<worker>-<i>``):
the scripted model asks for two parallel tool calls, slow tools answer them, the model
answers. A worker takes turns until its time is up; a turn refused with
``ThreadBusyError`` is retried, a turn that returned is *acknowledged* (an ack line
written after ``invoke`` returned, which survives the worker's death).
"""

from __future__ import annotations

import asyncio
import operator
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import ConcurrentRunError, ThreadBusyError
from tests.harness.flow_graphs import ScriptedToolModel

#: How long each tool call takes: long enough for runs to overlap.
TOOL_SECONDS = 0.02


@tool
def slow_add(a: int, b: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Add two integers, slowly."""
    time.sleep(TOOL_SECONDS)
    return ToolMessage(content=str(a + b), name="add", tool_call_id=tool_call_id, id=f"tool-{tool_call_id}")


@tool
def slow_multiply(a: int, b: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Multiply two integers, slowly."""
    time.sleep(TOOL_SECONDS)
    return ToolMessage(
        content=str(a * b), name="multiply", tool_call_id=tool_call_id, id=f"tool-{tool_call_id}"
    )


class _TurnModel(ScriptedToolModel):
    """``ScriptedToolModel`` asking for ``add`` and ``multiply`` under their slow names."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        result = super()._generate(messages, stop, run_manager, **kwargs)
        msg = result.generations[0].message
        for call in getattr(msg, "tool_calls", []) or []:
            call["name"] = "slow_" + call["name"]
        return result


def turn_agent(checkpointer: Any):
    """The compiled agent: model ↔ slow tools."""

    def agent(state: MessagesState) -> dict:
        return {"messages": [_TurnModel().invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([slow_add, slow_multiply]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def turn_id(worker: int, i: int) -> str:
    return f"turn-w{worker}-{i}"


def turn_input(worker: int, i: int) -> dict:
    return {"messages": [HumanMessage(content=f"both {worker} {i}", id=turn_id(worker, i))]}


@dataclass
class Tally:
    """What one worker saw."""

    acked: list[str]
    busy: int = 0  # ThreadBusyError (refused, or waited past busy_timeout)
    behind: int = 0  # ConcurrentRunError other than ThreadBusyError
    other: list[str] | None = None  # any other error, as text

    def as_dict(self) -> dict:
        return asdict(self)


def _sort(exc: BaseException, tally: Tally) -> None:
    if isinstance(exc, ThreadBusyError):
        tally.busy += 1
    elif isinstance(exc, ConcurrentRunError):
        tally.behind += 1
    else:
        tally.other = (tally.other or []) + [f"{type(exc).__name__}: {exc}"]


def take_turns(graph: Any, thread_id: str, worker: int, seconds: float, ack_fd: int = -1) -> Tally:
    """Take turns on ``thread_id`` for ``seconds`` (sync ``invoke``)."""
    cfg = {"configurable": {"thread_id": thread_id}}
    tally, i, rng = Tally(acked=[]), 0, random.Random(worker)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            graph.invoke(turn_input(worker, i), cfg)
        except Exception as exc:  # noqa: BLE001 - sorted into the tally
            _sort(exc, tally)
            time.sleep(rng.uniform(0.001, 0.02))
            continue
        _ack(ack_fd, tally, turn_id(worker, i))
        i += 1
    return tally


async def atake_turns(graph: Any, thread_id: str, worker: int, seconds: float) -> Tally:
    """:func:`take_turns` with ``ainvoke``."""
    cfg = {"configurable": {"thread_id": thread_id}}
    tally, i, rng = Tally(acked=[]), 0, random.Random(worker)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            await graph.ainvoke(turn_input(worker, i), cfg)
        except Exception as exc:  # noqa: BLE001 - sorted into the tally
            _sort(exc, tally)
            await asyncio.sleep(rng.uniform(0.001, 0.02))
            continue
        _ack(-1, tally, turn_id(worker, i))
        i += 1
    return tally


def _ack(fd: int, tally: Tally, turn: str) -> None:
    tally.acked.append(turn)
    if fd >= 0:
        os.write(fd, (turn + "\n").encode())


def read_acked(path: str) -> list[str]:
    """Turns acknowledged in an ack file (whole lines only)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    return [line for line in data.split("\n")[:-1] if line]


def transcript_problems(messages: Sequence[Any], *, turns_answered: bool = True) -> list[str]:
    """Why a chat model API would reject ``messages`` (empty: it is a valid transcript).

    Every tool call of an AI message is answered by a ToolMessage with its id before
    any other human or AI message; every ToolMessage answers an open call. With
    ``turns_answered``, also every human turn ends with an AI answer that asks for no
    tool (what a history of runs that all finished holds).
    """
    problems: list[str] = []
    open_calls: set[str] = set()
    turn_open: str | None = None
    for i, m in enumerate(messages):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                problems.append(f"#{i}: a ToolMessage for {m.tool_call_id!r}, which no open call asked for")
            open_calls.discard(m.tool_call_id)
            continue
        if open_calls:
            problems.append(
                f"#{i}: {type(m).__name__} {m.id!r} before the tool calls {sorted(open_calls)} were answered"
            )
            open_calls = set()
        if isinstance(m, HumanMessage):
            if turn_open is not None and turns_answered:
                problems.append(f"#{i}: human {m.id!r} before turn {turn_open!r} had an answer")
            turn_open = m.id
        elif isinstance(m, AIMessage):
            open_calls = {c["id"] for c in m.tool_calls}
            if not m.tool_calls:
                turn_open = None
    if open_calls:
        problems.append(f"the history ends with the tool calls {sorted(open_calls)} unanswered")
    if turn_open is not None and turns_answered:
        problems.append(f"the history ends with turn {turn_open!r} unanswered")
    return problems


class Held(TypedDict, total=False):
    visits: Annotated[list[str], operator.add]


def holding_graph(checkpointer: Any, inside_path: str, hold_seconds: float):
    """One node (``node``) that creates ``inside_path``, holds the run (sleeps), then
    appends ``visit <n>`` to ``visits`` (the shape of ``test_busy_threads.held_graph``)."""
    def node(state: Held) -> dict:
        with open(inside_path, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(hold_seconds)
        return {"visits": [f"visit {len(state.get('visits', []))}"]}

    g = StateGraph(Held)
    g.add_node("node", node)
    g.add_edge(START, "node")
    return g.compile(checkpointer=checkpointer)
