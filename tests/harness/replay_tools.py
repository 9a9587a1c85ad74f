"""Tools, a scripted model, graphs and checks for the ``ReplayAdapter`` tests.

- Tools that count their side effects: each appends ``"<call id> <tool name>"`` to an
  effects file at the moment its effect happens, so a test can count exactly how many
  times each call took effect, across processes. ``Hooks`` run around each effect.
- A deterministic "model": it reads the conversation and decides the next AI message
  from a fixed plan, so every process (the one that crashes, the one that resumes)
  produces the same messages and tool call ids.
- Graph builders for the three ways the adapter plugs in (``adapter.tool_node``,
  ``ToolNode(wrap_tool_call=...)``, ``create_agent(middleware=[...])``) and plain
  ``ToolNode`` for comparison.
- Checks of a transcript, and waits for a journal or an effects file to reach a state.

Crash injection and the child processes that really die are in ``replay_crashes``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

SETTLED = ("finished", "failed")


# ---------------------------------------------------------------------------
# side effects
# ---------------------------------------------------------------------------


def note_effect(path: str | os.PathLike, name: str, call_id: str) -> None:
    """Record that a tool took effect (one line, appended; survives SIGKILL)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{call_id} {name}\n")


def effects(path: str | os.PathLike) -> Counter:
    """How many times each tool call id took effect."""
    p = Path(path)
    if not p.exists():
        return Counter()
    return Counter(line.split(" ", 1)[0] for line in p.read_text(encoding="utf-8").splitlines() if line)


# ---------------------------------------------------------------------------
# tools
# ---------------------------------------------------------------------------


class ToolBoom(ValueError):
    """What the ``explode`` tool raises."""


class Hooks:
    """Called by every tool around its effect: ``point`` is ``before_effect``,
    ``after_effect`` or ``before_interrupt`` (the ``approve`` tool). Override ``at``
    (runs in the tool's thread) and/or ``aat`` (awaited by async tools)."""

    def at(self, point: str, call_id: str) -> None:
        pass

    async def aat(self, point: str, call_id: str) -> None:
        self.at(point, call_id)


class HookMap(Hooks):
    """Hooks from a dict ``{(point, call_id): callable}``; the callable gets no args."""

    def __init__(self, actions: dict[tuple[str, str], Callable[[], Any]] | None = None) -> None:
        self.actions = dict(actions or {})

    def at(self, point: str, call_id: str) -> None:
        action = self.actions.get((point, call_id))
        if action is not None:
            action()

    async def aat(self, point: str, call_id: str) -> None:
        action = self.actions.get((point, call_id))
        if action is not None:
            out = action()
            if asyncio.iscoroutine(out):
                await out


IDEMPOTENT_BY_NAME = ["lookup_order"]  # pass to ReplayAdapter(idempotent=...)


def make_tools(
    effects_path: str | os.PathLike, *, asynchronous: bool = False, hooks: Hooks | None = None
) -> list[BaseTool]:
    """The test tools, all sync or all async.

    - ``lookup_order`` (read-only; idempotent by name, see ``IDEMPOTENT_BY_NAME``)
    - ``search`` (read-only; idempotent through ``metadata={"idempotent": True}``)
    - ``send_email``, ``charge`` (side-effecting)
    - ``explode`` (takes effect, then raises ``ToolBoom``)
    - ``set_status`` (returns ``Command(update={"messages": [...], "status": ...})``)
    - ``approve`` (asks a person with ``interrupt()``; takes effect once answered; its
      hooks are ``before_interrupt`` and ``after_effect``)
    """
    hooks = hooks or Hooks()
    eff = str(effects_path)

    def sync_body(name: str, call_id: str) -> None:
        hooks.at("before_effect", call_id)
        note_effect(eff, name, call_id)
        hooks.at("after_effect", call_id)

    async def async_body(name: str, call_id: str) -> None:
        await hooks.aat("before_effect", call_id)
        note_effect(eff, name, call_id)
        await hooks.aat("after_effect", call_id)

    def status_command(status: str, call_id: str) -> Command:
        return Command(
            update={
                "messages": [
                    ToolMessage(
                        f"status is now {status}", tool_call_id=call_id, name="set_status", id=f"tm-{call_id}"
                    )
                ],
                "status": status,
            }
        )

    if not asynchronous:

        @tool
        def lookup_order(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Look up an order (read-only)."""
            sync_body("lookup_order", tool_call_id)
            return f"order {order_id}: shipped"

        @tool
        def search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Search the knowledge base (read-only)."""
            sync_body("search", tool_call_id)
            return f"found {query}"

        @tool
        def send_email(to: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Send an email."""
            sync_body("send_email", tool_call_id)
            return f"sent to {to}"

        @tool
        def charge(amount: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Charge a card."""
            sync_body("charge", tool_call_id)
            return f"charged {amount}"

        @tool
        def explode(reason: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Do something that fails."""
            sync_body("explode", tool_call_id)
            raise ToolBoom(f"boom: {reason}")

        @tool
        def set_status(status: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
            """Set the conversation status."""
            sync_body("set_status", tool_call_id)
            return status_command(status, tool_call_id)

        @tool
        def approve(action: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Ask a person to approve an action."""
            hooks.at("before_interrupt", tool_call_id)
            answer = interrupt({"approve": action})
            note_effect(eff, "approve", tool_call_id)
            hooks.at("after_effect", tool_call_id)
            return f"{action}: {answer}"

    else:

        @tool
        async def lookup_order(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Look up an order (read-only)."""
            await async_body("lookup_order", tool_call_id)
            return f"order {order_id}: shipped"

        @tool
        async def search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Search the knowledge base (read-only)."""
            await async_body("search", tool_call_id)
            return f"found {query}"

        @tool
        async def send_email(to: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Send an email."""
            await async_body("send_email", tool_call_id)
            return f"sent to {to}"

        @tool
        async def charge(amount: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Charge a card."""
            await async_body("charge", tool_call_id)
            return f"charged {amount}"

        @tool
        async def explode(reason: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Do something that fails."""
            await async_body("explode", tool_call_id)
            raise ToolBoom(f"boom: {reason}")

        @tool
        async def set_status(status: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
            """Set the conversation status."""
            await async_body("set_status", tool_call_id)
            return status_command(status, tool_call_id)

        @tool
        async def approve(action: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Ask a person to approve an action."""
            await hooks.aat("before_interrupt", tool_call_id)
            answer = interrupt({"approve": action})
            note_effect(eff, "approve", tool_call_id)
            await hooks.aat("after_effect", tool_call_id)
            return f"{action}: {answer}"

    search.metadata = {"idempotent": True}
    return [lookup_order, search, send_email, charge, explode, set_status, approve]


# ---------------------------------------------------------------------------
# the deterministic "model"
# ---------------------------------------------------------------------------


# A plan is a list of turns (one per user message); a turn is a list of steps; a step
# is a list of tool calls ``{"name", "args", "id"}``. After the last step of a turn the
# model answers ``"done: <call id>=<tool result> | ..."``.
Plan = list[list[list[dict[str, Any]]]]


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


#: Every history a model was asked to answer in this process, in order.
MODEL_INPUTS: list[list[BaseMessage]] = []


def next_reply(messages: Sequence[BaseMessage], plan: Plan) -> AIMessage:
    """The next AI message for a conversation: a pure function of the messages (each
    history it gets is kept in ``MODEL_INPUTS``)."""
    MODEL_INPUTS.append(list(messages))
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    turn = len(humans) - 1
    since = messages[humans[-1] + 1:] if humans else list(messages)
    step = sum(1 for m in since if isinstance(m, AIMessage) and m.tool_calls)
    steps = plan[turn] if 0 <= turn < len(plan) else []
    if step < len(steps):
        calls = [{**c, "type": "tool_call"} for c in steps[step]]
        return AIMessage("", id=f"ai-{turn}-{step}", tool_calls=calls)
    results = [f"{m.tool_call_id}={m.content}" for m in since if isinstance(m, ToolMessage)]
    return AIMessage("done: " + " | ".join(results), id=f"ai-{turn}-final")


class ScriptedChatModel(BaseChatModel):
    """A chat model for ``create_agent``: ``bind_tools`` returns itself; replies come from
    :func:`next_reply` (deterministic, so every process says the same)."""

    plan: list = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=next_reply(messages, self.plan))])


# ---------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    status: NotRequired[str]


def build_graph(
    plug: str,
    *,
    tools: Sequence[BaseTool],
    plan: Plan,
    checkpointer: Any,
    adapter: Any = None,
    answer_pending: bool = False,
    retry_policy: Any = None,
    **tool_node_kwargs: Any,
) -> Any:
    """A compiled agent loop.

    ``plug``: ``"tool_node"`` (``adapter.tool_node(tools)``), ``"wrap"``
    (``ToolNode(tools, wrap_tool_call=..., awrap_tool_call=...)``), ``"agent"``
    (``create_agent(..., middleware=[adapter.middleware()])``), or ``"plain"`` /
    ``"plain_agent"`` (no adapter, for comparison). ``answer_pending``: put
    ``adapter.pending_calls_node()`` between ``START`` and the model node, as the README
    says (``create_agent``'s middleware does it in its ``before_model`` hook).
    ``retry_policy``: the tool node's ``RetryPolicy`` (not for the agent plugs).
    """
    if plug in ("agent", "plain_agent"):
        from langchain.agents import create_agent

        middleware = [adapter.middleware()] if plug == "agent" else []
        return create_agent(
            ScriptedChatModel(plan=plan), list(tools), middleware=middleware, checkpointer=checkpointer
        )
    if plug == "tool_node":
        node = adapter.tool_node(tools, **tool_node_kwargs)
    elif plug == "wrap":
        node = ToolNode(
            tools,
            wrap_tool_call=adapter.wrap_tool_call,
            awrap_tool_call=adapter.awrap_tool_call,
            **tool_node_kwargs,
        )
    elif plug == "plain":
        node = ToolNode(tools, **tool_node_kwargs)
    else:
        raise ValueError(plug)

    def agent(state: State) -> dict:
        return {"messages": [next_reply(state["messages"], plan)]}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", node, retry_policy=retry_policy)
    if answer_pending:
        builder.add_node("answer_pending", adapter.pending_calls_node())
        builder.add_edge(START, "answer_pending")
        builder.add_edge("answer_pending", "agent")
    else:
        builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def config(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------


def tool_messages(messages: Sequence[BaseMessage]) -> dict[str, list[ToolMessage]]:
    out: dict[str, list[ToolMessage]] = {}
    for m in messages:
        if isinstance(m, ToolMessage):
            out.setdefault(m.tool_call_id, []).append(m)
    return out


def assert_transcript_complete(messages: Sequence[BaseMessage]) -> None:
    """Every AI tool call has exactly one ToolMessage, right after its AI message's batch."""
    seen_calls: list[str] = []
    for m in messages:
        if isinstance(m, AIMessage):
            seen_calls += [c["id"] for c in m.tool_calls]
    answered = Counter(m.tool_call_id for m in messages if isinstance(m, ToolMessage))
    # a call id may be reused by a later turn: compare multiplicities
    assert Counter(seen_calls) == answered, f"tool calls {Counter(seen_calls)} vs tool messages {answered}"


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.005)


async def await_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def settled(journal_records: Callable[[], Sequence[Any]], call_ids: Sequence[str]) -> Callable[[], bool]:
    """A predicate: every call in ``call_ids`` has a finished or failed record."""

    def check() -> bool:
        st = {r.key.call_id: r.state for r in journal_records()}
        return all(st.get(c) in SETTLED for c in call_ids)

    return check


def effects_present(effects_path: str | os.PathLike, call_ids: Sequence[str]) -> Callable[[], bool]:
    """A predicate: every call in ``call_ids`` has taken effect at least once."""
    return lambda: all(effects(effects_path)[c] > 0 for c in call_ids)


def all_of(*predicates: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: all(p() for p in predicates)
