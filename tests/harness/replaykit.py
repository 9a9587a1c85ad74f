"""Helpers for the ``ReplayAdapter`` tests.

- Tools that count their side effects: each appends ``"<call id> <tool name>"`` to an
  effects file at the moment its effect happens, so a test can count exactly how many
  times each call took effect, across processes.
- A deterministic "model": it reads the conversation and decides the next AI message
  from a fixed plan, so every process (the one that crashes, the one that resumes)
  produces the same messages and tool call ids.
- Graph builders for the three ways the adapter plugs in (``adapter.tool_node``,
  ``ToolNode(wrap_tool_call=...)``, ``create_agent(middleware=[...])``) and plain
  ``ToolNode`` for comparison.
- Crash injection (:func:`install_crash`): at a point of one call's lifecycle, call a
  ``crash`` function. Points inside the adapter (before ``started`` is durable, after
  ``finished`` is durable, ...) wrap the adapter journal's ``record``; points inside
  the tool use the tools' hooks. In-process tests pass a function that raises a
  ``BaseException``; child processes really die.
- Child processes: :func:`run_crash` runs a graph on a ``JsonlSaver`` in a child until
  its crash point, where the child dies: it tells the test, which SIGKILLs it, or it
  calls ``os._exit``. :func:`run_resume` resumes the thread in another fresh child and
  returns a report. Children are forked by a small fork server (see ``_ForkServer``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import NotRequired, TypedDict

HERE = Path(__file__).resolve()
CRASH_EXIT = 71  # exit code of a child that crashed itself with os._exit
SETTLED = ("finished", "failed")

# Where a child can die, for the call named in its spec:
#   before_started   the adapter is about to record ``started`` (not durable yet)
#   before_effect    inside the tool, ``started`` durable, effect not done
#   after_effect     inside the tool, effect done, tool has not returned
#   before_finished  the tool returned; ``finished`` not recorded yet
#   after_finished   ``finished`` is durable; the node's checkpoint writes are not
CRASH_POINTS = ("before_started", "before_effect", "after_effect", "before_finished", "after_finished")
# the points inside the adapter: (event, crash before or after it is recorded)
JOURNAL_POINTS = {"before_started": ("started", "before"), "before_finished": ("finished", "before"),
                  "after_finished": ("finished", "after")}


# --------------------------------------------------------------------------
# side effects
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# tools
# --------------------------------------------------------------------------
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
    - ``approve`` (asks a person with ``interrupt()``; takes effect once answered)
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
            return f"{action}: {answer}"

    search.metadata = {"idempotent": True}
    return [lookup_order, search, send_email, charge, explode, set_status, approve]


# --------------------------------------------------------------------------
# the deterministic "model"
# --------------------------------------------------------------------------
# A plan is a list of turns (one per user message); a turn is a list of steps; a step
# is a list of tool calls ``{"name", "args", "id"}``. After the last step of a turn the
# model answers ``"done: <call id>=<tool result> | ..."``.
Plan = list[list[list[dict[str, Any]]]]


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


def next_reply(messages: Sequence[BaseMessage], plan: Plan) -> AIMessage:
    """The next AI message for a conversation: a pure function of the messages."""
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


# --------------------------------------------------------------------------
# graphs
# --------------------------------------------------------------------------
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
    **tool_node_kwargs: Any,
) -> Any:
    """A compiled agent loop.

    ``plug``: ``"tool_node"`` (``adapter.tool_node(tools)``), ``"wrap"``
    (``ToolNode(tools, wrap_tool_call=..., awrap_tool_call=...)``), ``"agent"``
    (``create_agent(..., middleware=[adapter.middleware()])``), or ``"plain"`` /
    ``"plain_agent"`` (no adapter, for comparison).
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
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def config(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


# --------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# crash injection (used in child processes, and in-process with an exception)
# --------------------------------------------------------------------------
class CrashAt(Hooks):
    """Tool hooks that wait for ``ready()`` and then call ``crash()`` at ``point`` of
    ``call_id``; calls in ``hold`` block forever after their effect (they never finish)."""

    def __init__(
        self,
        point: str | None,
        call_id: str | None,
        ready: Callable[[], bool],
        crash: Callable[[], None],
        hold: Sequence[str] = (),
    ) -> None:
        self.point, self.call_id, self.ready, self.crash, self.hold = point, call_id, ready, crash, set(hold)

    def at(self, point: str, call_id: str) -> None:
        if (point, call_id) == (self.point, self.call_id):
            wait_until(self.ready, what="the crash point's preconditions")
            self.crash()
        if point == "after_effect" and call_id in self.hold:
            time.sleep(3600)

    async def aat(self, point: str, call_id: str) -> None:
        if (point, call_id) == (self.point, self.call_id):
            await await_until(self.ready, what="the crash point's preconditions")
            self.crash()
        if point == "after_effect" and call_id in self.hold:
            await asyncio.sleep(3600)


def install_crash(adapter: Any, *, point: str, call_id: str, ready: Callable[[], bool] = lambda: True,
                  crash: Callable[[], None], hold: Sequence[str] = ()) -> Hooks:
    """Arrange for ``crash()`` at ``point`` (see ``CRASH_POINTS``) of ``call_id``.

    Journal points wrap ``adapter.journal.record`` (the async journal methods of
    ``SaverJournal`` go through it; for a ``StoreJournal`` both ``record`` and ``arecord``
    are wrapped). Returns the hooks to give the tools (tool points, held calls).
    """
    if point not in JOURNAL_POINTS:
        return CrashAt(point, call_id, ready, crash, hold)
    ev, when = JOURNAL_POINTS[point]
    journal = adapter.journal
    original, aoriginal = journal.record, journal.arecord
    is_store = type(journal).__name__ == "StoreJournal"

    def hit(events: list[dict[str, Any]]) -> bool:
        return any(e["ev"] == ev and e["call"] == call_id for e in events)

    def record(thread_id: str, events: list[dict[str, Any]]) -> None:
        if hit(events) and when == "before":
            wait_until(ready, what="the crash point's preconditions")
            crash()
        original(thread_id, events)
        if hit(events) and when == "after":
            wait_until(ready, what="the crash point's preconditions")
            crash()

    async def arecord(thread_id: str, events: list[dict[str, Any]]) -> None:
        if hit(events) and when == "before":
            await await_until(ready, what="the crash point's preconditions")
            crash()
        await aoriginal(thread_id, events)
        if hit(events) and when == "after":
            await await_until(ready, what="the crash point's preconditions")
            crash()

    journal.record = record
    if is_store:
        journal.arecord = arecord
    return CrashAt(None, None, ready, crash, hold)


# --------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------
@dataclass
class Crash:
    exitcode: int | None
    how: str
    error: str | None = None

    @property
    def died(self) -> bool:
        """The child died at its crash point (and not for another reason)."""
        return self.exitcode == (-signal.SIGKILL if self.how == "kill" else CRASH_EXIT)


def spec(store: Path, *, plan: Plan, plug: str = "tool_node", mode: str = "sync", thread: str = "t1",
         crash: dict | None = None, answers: Any = None, **extra: Any) -> dict:
    """A child spec.

    ``crash = {"call", "point", "how": "kill"|"exit", "settle": [ids], "effects_of": [ids],
    "hold": [ids]}``: die at ``point`` of ``call`` once the ``settle`` calls are
    finished/failed in the journal and the ``effects_of`` calls have taken effect;
    ``hold`` calls block after their effect. ``answers``: what the resume phase answers
    uncertain calls with (through ``ReplayAdapter.resume_command``). ``resume_with``
    (extra): the crash phase resumes the thread (``None``, then these answers, through
    ``resume_command`` or, with ``resume_form="value"``, as ``Command(resume=answers)``)
    instead of starting it.
    """
    return {"store": str(store), "effects": str(store.parent / "effects.log"), "plug": plug, "mode": mode,
            "plan": plan, "thread": thread, "crash": crash, "answers": answers, **extra}


# Children are forked by a small fork server: a helper process that imported this module
# (langgraph, langchain...) once and forks one child per request, so a child starts in
# milliseconds instead of a second. Each child is a separate process that has never run
# a graph. (multiprocessing's own forkserver re-imports the test runner's __main__ in
# every child, which costs as much as a fresh interpreter.)
#
# Protocol, one JSON object per line: the test writes ``{"phase", "spec"}`` to the
# server's stdin; the server answers ``{"kind": "started", "pid"}``, the child writes
# ``{"kind": "crashpoint"}`` / ``{"kind": "ok", "payload"}`` / ``{"kind": "error",
# "payload": traceback}`` and the server, once the child is gone, ``{"kind": "exit",
# "code"}`` (negative: killed by that signal).
class _ForkServer:
    def __init__(self) -> None:
        import subprocess
        import tempfile

        self.errors = tempfile.TemporaryFile()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE.parents[2]), os.environ.get("PYTHONPATH", "")]),
        }
        serve = "from tests.harness import replaykit; replaykit._serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", serve],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                     text=True, env=env)
        import threading

        self.lock = threading.Lock()

    def run(
        self, phase: str, s: dict, *, on_crashpoint: Callable[[int], None], timeout: float
    ) -> tuple[int, list[dict]]:
        import threading

        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps({"phase": phase, "spec": s}) + "\n")
            self.proc.stdin.flush()
            started = self._read()
            assert started["kind"] == "started", started
            pid = started["pid"]
            timer = threading.Timer(timeout, lambda: _kill(pid))
            timer.start()
            try:
                messages = []
                while (msg := self._read())["kind"] != "exit":
                    messages.append(msg)
                    if msg["kind"] == "crashpoint":
                        on_crashpoint(pid)
            finally:
                timer.cancel()
            return msg["code"], messages

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.errors.seek(0)
            raise RuntimeError(
                "the fork server died:\n" + self.errors.read().decode(errors="replace")[-3000:]
            )
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        for f in (self.proc.stdout, self.errors):
            if f is not None:
                f.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_server: _ForkServer | None = None


def _fork_server() -> _ForkServer:
    global _server
    if _server is None or _server.proc.poll() is not None:
        import atexit

        _server = _ForkServer()
        atexit.register(_server.close)
    return _server


def _send(msg: dict) -> None:
    os.write(1, (json.dumps(msg, default=str) + "\n").encode())


def _serve() -> None:
    """The fork server's loop (runs in the helper process)."""
    import langchain.agents  # noqa: F401  (import before forking)

    from langgraph_jsonl_checkpoint import JsonlSaver  # noqa: F401

    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the child
            code = 0
            try:
                out = (_crash_phase if req["phase"] == "crash" else resume)(req["spec"])
                _send({"kind": "ok", "payload": out})
            except BaseException:
                import traceback

                _send({"kind": "error", "payload": traceback.format_exc()})
                code = 1
            os._exit(code)
        _send({"kind": "started", "pid": pid})
        _, status = os.waitpid(pid, 0)
        _send({"kind": "exit", "code": os.waitstatus_to_exitcode(status)})


def run_crash(s: dict, timeout: float = 30.0) -> Crash:
    """Run the graph in a child process until its crash point, where it dies: SIGKILLed
    by this process (``how="kill"``) or by its own ``os._exit`` (``how="exit"``)."""
    how = (s.get("crash") or {}).get("how", "kill")
    code, messages = _fork_server().run("crash", s, timeout=timeout,
                                        on_crashpoint=lambda pid: _kill(pid) if how == "kill" else None)
    errors = [m["payload"] for m in messages if m["kind"] == "error"]
    if any(m["kind"] == "ok" for m in messages):
        errors.append("the child finished without reaching its crash point")
    return Crash(code, how, "\n".join(errors) or None)


def run_resume(s: dict, timeout: float = 30.0) -> dict:
    """Resume the crashed thread in a fresh child process; returns :func:`resume`'s report."""
    code, messages = _fork_server().run("resume", s, timeout=timeout, on_crashpoint=lambda pid: None)
    ok = [m["payload"] for m in messages if m["kind"] == "ok"]
    if code != 0 or not ok:
        raise AssertionError(f"resume child failed (exit code {code}): {messages}")
    assert ok[0]["pid"] != os.getpid()
    return ok[0]


def _crash_now(how: str) -> None:
    if how == "exit":
        os._exit(CRASH_EXIT)
    _send({"kind": "crashpoint"})
    time.sleep(120)  # the test SIGKILLs us now
    os._exit(99)  # reached only if it never did


def open_store(s: dict) -> tuple[Any, Any]:
    """A new ``JsonlSaver`` on the spec's store and a new ``ReplayAdapter`` on it."""
    from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter

    saver = JsonlSaver(s["store"])
    adapter = ReplayAdapter(saver, idempotent=IDEMPOTENT_BY_NAME)
    return saver, adapter


def graph_for(s: dict, saver: Any, adapter: Any, hooks: Hooks | None = None, **tool_node_kwargs: Any) -> Any:
    """The spec's graph on ``saver``/``adapter``."""
    tools = make_tools(s["effects"], asynchronous=s["mode"] == "async", hooks=hooks)
    return build_graph(s["plug"], tools=tools, plan=s["plan"], checkpointer=saver, adapter=adapter,
                       **tool_node_kwargs)


def _crash_phase(s: dict) -> None:
    saver, adapter = open_store(s)
    c = s["crash"]
    ready = all_of(settled(lambda: saver.tool_calls(s["thread"]), c.get("settle", [])),
                   effects_present(s["effects"], c.get("effects_of", [])))
    hooks = install_crash(adapter, point=c["point"], call_id=c["call"], ready=ready,
                          crash=lambda: _crash_now(c.get("how", "kill")), hold=c.get("hold", []))
    graph = graph_for(s, saver, adapter, hooks)
    cfg = config(s["thread"])
    inputs: list[Any] = [{"messages": [HumanMessage(s.get("user", "go"), id="human-0")]}]
    if "resume_with" in s:  # resume a crashed thread instead: None, then the answers
        inputs = [None, "answers"]
    for inp in inputs:
        if inp == "answers":
            from langgraph_jsonl_checkpoint import ReplayAdapter

            if s.get("resume_form") == "value":  # Command(resume={call id: answer})
                inp = Command(resume=s["resume_with"])
            else:  # Command(resume={interrupt id: {call id: answer}})
                inp = ReplayAdapter.resume_command(graph.get_state(cfg).interrupts, s["resume_with"])
        if s["mode"] == "async":
            asyncio.run(graph.ainvoke(inp, cfg, durability="sync"))
        else:
            graph.invoke(inp, cfg, durability="sync")


def resume(s: dict) -> dict:
    """Resume a crashed thread (new saver and adapter on the store): ``invoke(None)``; if
    that stops on interrupts and ``s["answers"]`` is set, answer them all with
    ``ReplayAdapter.resume_command``. Returns a JSON-able report."""
    from langgraph_jsonl_checkpoint import ReplayAdapter

    saver, adapter = open_store(s)
    try:
        graph = graph_for(s, saver, adapter, None)
        cfg = config(s["thread"])

        def run(inp: Any) -> Any:
            if s["mode"] == "async":
                return asyncio.run(graph.ainvoke(inp, cfg, durability="sync"))
            return graph.invoke(inp, cfg, durability="sync")

        report: dict[str, Any] = {"pid": os.getpid()}
        report["before"] = {
            r.key.call_id: [r.state, r.effective_state] for r in saver.tool_calls(s["thread"])
        }
        run(None)
        snap = graph.get_state(cfg)
        report["interrupts"] = [i.value for i in snap.interrupts]
        if snap.interrupts and s.get("answers") is not None:
            run(ReplayAdapter.resume_command(snap.interrupts, s["answers"]))
            snap = graph.get_state(cfg)
        report["next"] = list(snap.next)
        report["pending_interrupts"] = [i.value for i in snap.interrupts]
        report["messages"] = [
            {
                "type": m.type,
                "content": m.content,
                "tool_call_id": getattr(m, "tool_call_id", None),
                "status": getattr(m, "status", None),
                "tool_calls": [c["id"] for c in getattr(m, "tool_calls", [])],
            }
            for m in snap.values.get("messages", [])
        ]
        report["status"] = snap.values.get("status")
        report["tool_calls"] = {r.key.call_id: {"state": r.state, "effective": r.effective_state,
                                                "resolution": r.resolution, "events": r.events}
                                for r in saver.tool_calls(s["thread"])}
        report["effects"] = dict(effects(s["effects"]))
        return report
    finally:
        saver.close()
