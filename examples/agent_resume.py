"""Crash a tool-calling agent mid-run, then resume it from a *different process*.

Run it (no network or API key needed):

    python examples/agent_resume.py                 # uses a temporary directory
    python examples/agent_resume.py --store ./ckpt  # keeps the checkpoint files
    python examples/agent_resume.py --store ./ckpt --thread t-1  # names the thread

The demo runs three steps:

1. Process A starts a LangGraph agent run. The model asks for the
   ``get_weather`` tool, and the tool kills the process with ``os._exit``
   (like a power cut or an OOM kill: no cleanup, no ``finally`` blocks).
2. The parent process opens the checkpoint directory and shows that the run
   stopped just before the ``tools`` node.
3. Process B makes a new ``JsonlSaver`` on the same directory and calls
   ``graph.invoke(None, config)`` with the same ``thread_id``. The run picks up
   where it stopped: the tool runs again, and the agent writes its final answer.

The "LLM" is a small deterministic fake chat model. It picks its reply from the
messages it is given, not from a counter held in memory, so it gives the same
answer in any process. That is how a real model would behave after a restart.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

try:  # the first of the example's packages: missing when the virtualenv is not active
    import langchain_core  # noqa: F401
    import langgraph  # noqa: F401
except ModuleNotFoundError as missing:
    sys.exit(f"{missing.name} is not installed for {sys.executable}. Activate the virtualenv the "
             "package was installed into (`. .venv/bin/activate`), or install it there: pip install -e .")

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

try:
    from langgraph_jsonl_checkpoint import ConfigError, JsonlSaver, StoreError
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from langgraph_jsonl_checkpoint import ConfigError, JsonlSaver, StoreError


QUESTION = "What's the weather in Paris?"
EXPECTED_ANSWER = "The weather in Paris is sunny, 18 C."
CRASH_EXIT_CODE = 3  # exit code of the simulated crash in process A


# --------------------------------------------------------------------------
# The checkpointer. This is the only place that knows how checkpoints are
# stored. Every process (A, the parent, B) opens the store through it.
# --------------------------------------------------------------------------
def open_saver(store_dir: str) -> contextlib.AbstractContextManager:
    """Open the checkpoint store in ``store_dir`` (a context manager yielding a saver)."""
    return JsonlSaver.from_conn_string(store_dir)


# --------------------------------------------------------------------------
# The tool. In process A it "crashes" the whole process the first time it runs.
# --------------------------------------------------------------------------
CRASH_IN_TOOL = False  # set to True only in process A

FORECASTS = {"paris": "sunny, 18 C", "london": "light rain, 12 C", "tokyo": "cloudy, 21 C"}


@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    if CRASH_IN_TOOL:
        say(f"tool : get_weather({city!r}) started... simulating a crash: os._exit({CRASH_EXIT_CODE})")
        sys.stdout.flush()  # os._exit() skips flushing buffers, so flush by hand
        os._exit(CRASH_EXIT_CODE)
    return FORECASTS.get(city.lower(), "clear skies, 20 C")


TOOLS = [get_weather]


# --------------------------------------------------------------------------
# A deterministic fake chat model that supports bind_tools().
# --------------------------------------------------------------------------
class ScriptedWeatherModel(BaseChatModel):
    """Fake LLM: reads the conversation and decides what to say next.

    * Last message is a user question -> call ``get_weather`` for the city in it.
    * Last message is a tool result   -> answer using that result.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted-weather"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        # A real provider would send these schemas to the API. We just attach
        # them, as real chat models do, so the code reads the same.
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            # Find the tool call that produced this result, to get the city back.
            city = next(
                call["args"]["city"]
                for m in reversed(messages)
                if isinstance(m, AIMessage)
                for call in m.tool_calls
                if call["id"] == last.tool_call_id
            )
            reply = AIMessage(content=f"The weather in {city} is {last.content}.")
        else:
            match = re.search(r"\bin\s+([A-Za-z .'-]+?)\s*[?.!]*$", str(last.content))
            city = match.group(1) if match else "Paris"
            reply = AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "get_weather",
                        "args": {"city": city},
                        # Deterministic id: the same in every process.
                        "id": f"call_get_weather_{len(messages)}",
                        "type": "tool_call",
                    }
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


# --------------------------------------------------------------------------
# The graph: agent -> (tools -> agent)* -> END
# --------------------------------------------------------------------------
def build_graph(checkpointer):
    model = ScriptedWeatherModel().bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    # tools_condition sends the run to "tools" if the last AIMessage has tool calls,
    # and ends the run if it does not.
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------
# Output helpers
# --------------------------------------------------------------------------
def say(text: str) -> None:
    print(text, flush=True)


def describe(message: BaseMessage) -> str:
    role = {"human": "user ", "ai": "agent", "tool": "tool "}.get(message.type, message.type)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
        return f"{role}: calls {calls}"
    return f"{role}: {message.content}"


def print_updates(stream: Iterator[dict]) -> None:
    """Print each new message as the graph produces it (stream_mode="updates")."""
    for update in stream:
        for node_output in update.values():
            for message in (node_output or {}).get("messages", []):
                say(describe(message))


# --------------------------------------------------------------------------
# Child processes
# --------------------------------------------------------------------------
def step1(store_dir: str, thread_id: str) -> None:
    """Process A: start the run. The tool kills this process part way through."""
    global CRASH_IN_TOOL
    CRASH_IN_TOOL = True
    say(f"process A, pid {os.getpid()}")
    config = {"configurable": {"thread_id": thread_id}}
    with open_saver(store_dir) as saver:
        graph = build_graph(saver)
        say(f"user : {QUESTION}")
        # durability="sync": each checkpoint is written before the next step
        # starts. The default ("async") writes it in the background while the
        # next step runs, so a hard crash right after a step could lose that
        # step's checkpoint.
        print_updates(
            graph.stream(
                {"messages": [("user", QUESTION)]},
                config,
                stream_mode="updates",
                durability="sync",
            )
        )
    say("ERROR: the run finished, but the tool should have crashed the process")
    sys.exit(1)


def step2(store_dir: str, thread_id: str) -> None:
    """Process B: a new saver on the same directory. Resume the thread and finish."""
    say(f"process B, pid {os.getpid()}: new saver on the same directory")
    config = {"configurable": {"thread_id": thread_id}}
    with open_saver(store_dir) as saver:
        graph = build_graph(saver)
        say(f"graph.invoke(None, {{'configurable': {{'thread_id': {thread_id!r}}}}})")
        # Input None means "no new input: continue from the last checkpoint".
        result = graph.invoke(None, config)
    for message in result["messages"][-2:]:  # the messages this process added
        say(describe(message))
    final = result["messages"][-1]
    if final.content != EXPECTED_ANSWER:
        say(f"ERROR: expected final answer {EXPECTED_ANSWER!r}, got {final.content!r}")
        sys.exit(1)


# --------------------------------------------------------------------------
# Parent process: run the demo
# --------------------------------------------------------------------------
def run_child(step: str, store_dir: str, thread_id: str) -> int:
    proc = subprocess.run(
        [sys.executable, __file__, step, store_dir, thread_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    for line in proc.stdout.splitlines():
        say(f"    {line}")
    for line in proc.stderr.splitlines():
        say(f"    stderr| {line}")
    return proc.returncode


def show_store(store_dir: str) -> None:
    files = sorted(p for p in Path(store_dir).rglob("*") if p.is_file())
    if not files:
        say("    (no files)")
    for path in files:
        data = path.read_bytes()
        lines = data.count(b"\n")
        say(f"    {path.relative_to(store_dir)}: {lines} lines, {len(data)} bytes")


def fail(message: str) -> int:
    say(f"\nFAILED: {message}")
    return 1


def demo(store_dir: str, thread_id: str | None = None) -> int:
    thread_id = thread_id or f"weather-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread_id}}
    say("Crash a LangGraph agent mid-run, then resume it in a new process")
    say(f"store: {store_dir}")
    say(f"thread_id: {thread_id}\n")
    with open_saver(store_dir) as saver:
        graph = build_graph(saver)
        snapshot = graph.get_state(config)
        if snapshot.next:  # an earlier run on --thread was cut short (Ctrl-C, a crash)
            # A new question now would follow a tool call that has no answer, which a
            # chat model API rejects: finish that run first, as process B would have.
            say(f"the thread's last run stopped before {snapshot.next}; finishing it first:")
            say(f"    graph.invoke(None, {{'configurable': {{'thread_id': {thread_id!r}}}}})\n")
            graph.invoke(None, config)
            snapshot = graph.get_state(config)
        before = len(snapshot.values.get("messages", []))
    if before:  # --thread named a thread the store already has: this run is its next turn
        say(f"the thread already holds {before} message(s); this run continues it\n")

    say("[1/3] Start the run in a child process; the tool crashes it")
    code = run_child("step1", store_dir, thread_id)
    if code != CRASH_EXIT_CODE:
        return fail(f"process A exited with {code}, expected the simulated crash ({CRASH_EXIT_CODE})")
    say(f"    -> process A died (exit code {code}) before the run finished\n")

    say("[2/3] Read the thread back from the store (parent process)")
    with open_saver(store_dir) as saver:
        snapshot = build_graph(saver).get_state(config)
    say(f"    {len(snapshot.values.get('messages', []))} messages saved, next node: {snapshot.next}")
    if snapshot.next != ("tools",):
        return fail(f"expected the run to stop before 'tools', next is {snapshot.next}")
    say("")

    say("[3/3] Resume the thread in another child process")
    code = run_child("step2", store_dir, thread_id)
    if code != 0:
        return fail(f"process B exited with code {code}; the resumed run failed (see its output above)")
    say("")

    # Check again from the store itself, in this process.
    with open_saver(store_dir) as saver:
        snapshot = build_graph(saver).get_state(config)
    messages = snapshot.values.get("messages", [])
    say("Final conversation, read back from the store:")
    for message in messages:
        say(f"    {describe(message)}")
    say("\nFiles in the store:")
    show_store(store_dir)

    if snapshot.next or not messages or messages[-1].content != EXPECTED_ANSWER:
        return fail(f"the stored thread does not end with the expected answer {EXPECTED_ANSWER!r}")
    if sum(isinstance(m, ToolMessage) for m in messages[before:]) != 1:
        return fail("expected exactly one tool result among the messages this run added")
    say(f"\nOK: the resumed run finished with: {messages[-1].content}")
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("step1", "step2"):  # we are a child process
        step, store_dir, thread_id = argv
        try:
            (step1 if step == "step1" else step2)(store_dir, thread_id)
        except KeyboardInterrupt:  # Ctrl-C reaches the whole demo: the parent says so
            return 130
        return 0

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store", metavar="DIR", help="checkpoint directory to use and keep (default: a temporary directory)"
    )
    parser.add_argument(
        "--thread", metavar="ID", help="the thread id of the run (default: weather-<8 random hex "
        "digits>, a new thread each time); a thread the store already has gets one more turn"
    )
    args = parser.parse_args(argv)
    try:
        if args.store:
            # The saver creates the directory itself (mode 0700) if it is missing.
            return demo(os.path.abspath(args.store), args.thread)
        with tempfile.TemporaryDirectory(prefix="agent-resume-") as store_dir:
            return demo(store_dir, args.thread)
    except (StoreError, ConfigError) as exc:  # --store names a folder (or file) the saver cannot use
        parser.error(f"{exc}\npass --store a new or empty directory, or a store this example made")
    except KeyboardInterrupt:
        kept = (f"what was saved is in {os.path.abspath(args.store)}" if args.store
                else "its temporary store was removed")
        say(f"\nstopped by Ctrl-C; {kept}")
        return 130
    except BrokenPipeError:
        # Its reader went away (``| head``): stop quietly (each step's process has ended
        # before its lines are shown); later writes (the exit's flush) go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
