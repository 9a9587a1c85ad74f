"""Reference graphs about control flow: the tool-calling agent loop, interrupts, fan-out
and ``Send``, nested subgraphs, a node that fails once.

Every builder returns an *uncompiled* ``StateGraph`` (or a factory of one) so
the same graph definition can be compiled once per checkpointer.  Builders
must be deterministic: two graphs built by the same builder and fed the same
inputs must produce the same state (up to random ids, which the
differential normaliser maps away).  Anything stateful (fail-once counters,
...) lives in a closure created by the builder, never at module level.

``tool_agent_graph`` is also the agent loop of ``scripted_agent`` (the crash batteries).
"""

from __future__ import annotations

import operator
import time
from typing import Annotated

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict

# ---------------------------------------------------------------------------
# 1. tool-calling agent
# ---------------------------------------------------------------------------


# The tools return ToolMessages with explicit, deterministic ids.  A ToolMessage
# created by ToolNode has ``id=None``; ``add_messages`` assigns a random id *in
# place* while the task's writes may still be being serialised by a background
# ``put_writes`` call, so whether a saved pending write carries that id is a
# race inside LangGraph (observed: InMemorySaver stores ``None``, SqliteSaver
# the uuid).  Explicit ids keep the differential comparison deterministic.


@tool
def add(a: int, b: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Add two integers."""
    return ToolMessage(
        content=str(a + b), name="add", tool_call_id=tool_call_id, id=f"tool-{tool_call_id}"
    )


@tool
def multiply(
    a: int, b: int, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage:
    """Multiply two integers."""
    return ToolMessage(
        content=str(a * b),
        name="multiply",
        tool_call_id=tool_call_id,
        id=f"tool-{tool_call_id}",
    )


class ScriptedToolModel(BaseChatModel):
    """Deterministic fake chat model.

    * last message is a human message ``"add 2 3"`` / ``"mul 2 3"`` /
      ``"both 2 3"`` -> an AIMessage with one (or two parallel) tool calls;
    * last message is a human message with any other text -> plain answer;
    * last message is a tool message -> a final answer quoting the results.

    Message ids and tool-call ids are derived from the conversation length,
    so they are identical across runs.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-model"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        n = len(messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            results = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                results.append(f"{m.name}={m.content}")
            msg = AIMessage(
                content="result: " + ", ".join(reversed(results)), id=f"ai-{n}"
            )
        else:
            words = str(last.content).split()
            if len(words) == 3 and words[0] in ("add", "mul", "both"):
                a, b = int(words[1]), int(words[2])
                calls = []
                if words[0] in ("add", "both"):
                    calls.append(
                        {"name": "add", "args": {"a": a, "b": b}, "id": f"call-add-{n}"}
                    )
                if words[0] in ("mul", "both"):
                    calls.append(
                        {
                            "name": "multiply",
                            "args": {"a": a, "b": b},
                            "id": f"call-mul-{n}",
                        }
                    )
                msg = AIMessage(content="", tool_calls=calls, id=f"ai-{n}")
            else:
                msg = AIMessage(content=f"echo: {last.content}", id=f"ai-{n}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def build_agent_graph() -> StateGraph:
    return tool_agent_graph(ScriptedToolModel())


def tool_agent_graph(model: BaseChatModel) -> StateGraph:
    """The agent loop every test kit uses: ``model`` ↔ a ``ToolNode`` of add/multiply."""

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add, multiply]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g


# ---------------------------------------------------------------------------
# 2. interrupts
# ---------------------------------------------------------------------------


class ReviewState(TypedDict, total=False):
    topic: str
    draft: str
    approved: bool
    feedback: Annotated[list[str], operator.add]


def build_review_graph() -> StateGraph:
    def write_draft(state: ReviewState) -> dict:
        version = len(state.get("feedback") or [])
        return {"draft": f"draft v{version} about {state['topic']}"}

    def review(state: ReviewState) -> dict:
        answer = interrupt({"question": "approve?", "draft": state["draft"]})
        if answer == "yes":
            return {"approved": True}
        return {"approved": False, "feedback": [str(answer)]}

    def finalize(state: ReviewState) -> dict:
        return {"draft": state["draft"].upper()}

    g = StateGraph(ReviewState)
    g.add_node("write_draft", write_draft)
    g.add_node("review", review)
    g.add_node("finalize", finalize)
    g.add_edge(START, "write_draft")
    g.add_edge("write_draft", "review")
    g.add_conditional_edges(
        "review", lambda s: "finalize" if s.get("approved") else "write_draft"
    )
    g.add_edge("finalize", END)
    return g


class FormState(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]
    summary: str


def build_parallel_interrupt_graph() -> StateGraph:
    """Two parallel nodes that interrupt; ``ask_a`` interrupts twice in a row."""

    def ask_a(state: FormState) -> dict:
        name = interrupt("name?")
        age = interrupt("age?")
        return {"answers": [f"name={name}", f"age={age}"]}

    def ask_b(state: FormState) -> dict:
        color = interrupt({"q": "color?", "choices": ["red", "blue"]})
        return {"answers": [f"color={color}"]}

    def join(state: FormState) -> dict:
        return {"summary": ";".join(sorted(state["answers"]))}

    g = StateGraph(FormState)
    g.add_node("ask_a", ask_a)
    g.add_node("ask_b", ask_b)
    g.add_node("join", join)
    g.add_edge(START, "ask_a")
    g.add_edge(START, "ask_b")
    g.add_edge(["ask_a", "ask_b"], "join")
    g.add_edge("join", END)
    return g


# ---------------------------------------------------------------------------
# 3. fan-out / fan-in and Send
# ---------------------------------------------------------------------------


class FanState(TypedDict, total=False):
    items: list[str]
    log: Annotated[list[str], operator.add]
    results: Annotated[list[str], operator.add]


class WorkerInput(TypedDict):
    item: str
    idx: int


def build_fanout_graph(*, barrier: bool = True) -> StateGraph:
    """``barrier=True`` joins with ``add_edge(["left", "right"], "join")``
    (a NamedBarrierValue channel).  Under ``durability="async"`` LangGraph
    serialises the checkpoint in the background while the loop keeps
    mutating the barrier's live ``seen`` set, so what gets stored (and hence
    the replayed ``next``) is a race independent of the saver; use
    ``barrier=False`` (two plain edges, same superstep) there."""
    def split(state: FanState) -> dict:
        return {"log": [f"split {len(state['items'])}"]}

    def left(state: FanState) -> dict:
        return {"log": ["left"]}

    def right(state: FanState) -> dict:
        return {"log": ["right", "right2"]}

    def join(state: FanState) -> dict:
        return {"log": [f"join saw {len(state['log'])}"]}

    def worker(inp: WorkerInput) -> dict:
        return {"results": [f"{inp['idx']}:{inp['item'].upper()}"]}

    def reduce(state: FanState) -> dict:
        return {"log": [f"reduced {len(state['results'])}"]}

    def fan(state: FanState) -> list[Send]:
        return [
            Send("worker", {"item": x, "idx": i}) for i, x in enumerate(state["items"])
        ]

    g = StateGraph(FanState)
    g.add_node("split", split)
    g.add_node("left", left)
    g.add_node("right", right)
    g.add_node("join", join)
    g.add_node("worker", worker)
    g.add_node("reduce", reduce)
    g.add_edge(START, "split")
    g.add_edge("split", "left")
    g.add_edge("split", "right")
    if barrier:
        g.add_edge(["left", "right"], "join")
    else:
        g.add_edge("left", "join")
        g.add_edge("right", "join")
    g.add_conditional_edges("join", fan, ["worker"])
    g.add_edge("worker", "reduce")
    g.add_edge("reduce", END)
    return g


# ---------------------------------------------------------------------------
# 4. subgraphs (nested), optionally with an interrupt in the innermost one
# ---------------------------------------------------------------------------


class NestState(TypedDict, total=False):
    trail: Annotated[list[str], operator.add]
    answer: str


def build_nested_subgraph_graph(*, with_interrupt: bool = False) -> StateGraph:
    # innermost graph
    def l1(state: NestState) -> dict:
        return {"trail": ["l1"]}

    def l_ask(state: NestState) -> dict:
        ans = interrupt({"ask": "leaf wants input", "seen": len(state["trail"])})
        return {"trail": [f"leaf-answer={ans}"], "answer": str(ans)}

    def l2(state: NestState) -> dict:
        return {"trail": ["l2"]}

    leaf = StateGraph(NestState)
    leaf.add_node("l1", l1)
    leaf.add_node("l2", l2)
    leaf.add_edge(START, "l1")
    if with_interrupt:
        leaf.add_node("l_ask", l_ask)
        leaf.add_edge("l1", "l_ask")
        leaf.add_edge("l_ask", "l2")
    else:
        leaf.add_edge("l1", "l2")
    leaf.add_edge("l2", END)
    leaf_c = leaf.compile()

    # middle graph: has the leaf graph as a node
    def m1(state: NestState) -> dict:
        return {"trail": ["m1"]}

    def m2(state: NestState) -> dict:
        return {"trail": ["m2"]}

    mid = StateGraph(NestState)
    mid.add_node("m1", m1)
    mid.add_node("leaf", leaf_c)
    mid.add_node("m2", m2)
    mid.add_edge(START, "m1")
    mid.add_edge("m1", "leaf")
    mid.add_edge("leaf", "m2")
    mid.add_edge("m2", END)
    mid_c = mid.compile()

    # a plain subgraph invoked from inside a node function
    def s1(state: NestState) -> dict:
        return {"trail": ["s1"]}

    side = StateGraph(NestState)
    side.add_node("s1", s1)
    side.add_edge(START, "s1")
    side.add_edge("s1", END)
    side_c = side.compile()

    def p1(state: NestState) -> dict:
        return {"trail": ["p1"]}

    def p2(state: NestState) -> dict:
        out = side_c.invoke({"trail": ["into-side"]})
        return {"trail": [f"p2 got {len(out['trail'])}"]}

    async def p2_async(state: NestState) -> dict:
        out = await side_c.ainvoke({"trail": ["into-side"]})
        return {"trail": [f"p2 got {len(out['trail'])}"]}

    from langchain_core.runnables import RunnableLambda

    parent = StateGraph(NestState)
    parent.add_node("p1", p1)
    parent.add_node("mid", mid_c)
    parent.add_node("p2", RunnableLambda(p2, afunc=p2_async))
    parent.add_edge(START, "p1")
    parent.add_edge("p1", "mid")
    parent.add_edge("mid", "p2")
    parent.add_edge("p2", END)
    return parent


# ---------------------------------------------------------------------------
# extra: a node that fails once (error stored as a pending write), retried
# ---------------------------------------------------------------------------


class FlakyState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def build_flaky_graph() -> StateGraph:
    calls = {"flaky": 0}

    def steady(state: FlakyState) -> dict:
        return {"log": ["steady"]}

    def flaky(state: FlakyState) -> dict:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            # let the parallel "steady" task finish first: otherwise whether it
            # is cancelled (and a CancelledError write saved) is a timing race
            time.sleep(0.05)
            raise ValueError("flaky failed on first call")
        return {"log": [f"flaky ok after {calls['flaky']} calls"]}

    def after(state: FlakyState) -> dict:
        return {"log": [f"after {len(state['log'])}"]}

    g = StateGraph(FlakyState)
    g.add_node("steady", steady)
    g.add_node("flaky", flaky)
    g.add_node("after", after)
    g.add_edge(START, "steady")
    g.add_edge(START, "flaky")
    # plain edges, not a barrier: see build_fanout_graph
    g.add_edge("steady", "after")
    g.add_edge("flaky", "after")
    g.add_edge("after", END)
    return g
