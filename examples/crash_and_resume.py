"""Kill an agent while it sends an email, resume it elsewhere, and never send it twice.

Run it (no network or API key needed):

    python examples/crash_and_resume.py                 # uses a temporary directory
    python examples/crash_and_resume.py --store ./demo  # keeps the files

Run again with the same ``--store``, it starts over: it removes what its last run left
there (its thread, the outbox, the lookups) and says so. A folder holding anything else
is refused and left as it is.

The agent has two tools:

- ``lookup_order`` reads an order. It is read-only, so the ``ReplayAdapter`` is told it
  is idempotent: it may safely run again.
- ``send_email`` appends the email to an outbox file. Running it twice sends two emails,
  so the adapter treats it as side-effecting (the default).

The demo:

1. Process A starts the run. ``send_email`` writes the email to the outbox, tells this
   script so, and we kill process A with SIGKILL before the tool returns: nobody knows
   whether the email went out.
2. Process B resumes the thread from the same checkpoint directory. LangGraph would run
   the tool node again (and send the email again); the adapter finds ``send_email``
   *started but never finished* and stops with an ``interrupt()`` naming the uncertain
   call.
3. A person (played by this script) looks at the outbox and answers ``"skip"``.
   Process C resumes with that answer: the model is told the outcome is unknown, the
   email is not sent again, and the run finishes.

The script checks that the outbox holds the email exactly once and exits non-zero if
anything is off.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # the first of the example's packages: missing when the virtualenv is not active
    import langchain_core  # noqa: F401
    import langgraph  # noqa: F401
except ModuleNotFoundError as missing:
    sys.exit(f"{missing.name} is not installed for {sys.executable}. Activate the virtualenv the "
             "package was installed into (`. .venv/bin/activate`), or install it there: pip install -e .")

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

try:
    from langgraph_jsonl_checkpoint import JsonlCheckpointError, JsonlSaver, ReplayAdapter
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from langgraph_jsonl_checkpoint import JsonlCheckpointError, JsonlSaver, ReplayAdapter

THREAD_ID = "support-ticket-1042"
CONFIG = {"configurable": {"thread_id": THREAD_ID}}
REQUEST = "Order 1042 arrived damaged. Please email the customer that a replacement is on its way."
WROTE_MARKER = "send_email: email written to the outbox"  # process A prints this, then waits to die

ORDERS = {"1042": {"customer": "ada@example.com", "item": "teapot", "status": "delivered"}}

# Set in child processes from the command line.
OUTBOX: Path = Path("outbox.jsonl")
LOOKUPS: Path = Path("lookups.log")
HANG_AFTER_SENDING = False  # process A only: wait to be killed right after sending


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------
@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by id (read-only)."""
    with LOOKUPS.open("a") as f:
        f.write(order_id + "\n")
    order = ORDERS.get(order_id)
    return json.dumps(order) if order else "no such order"


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email (appends it to the outbox)."""
    with OUTBOX.open("a") as f:
        f.write(json.dumps({"to": to, "subject": subject, "body": body}) + "\n")
    if HANG_AFTER_SENDING:
        print(WROTE_MARKER, flush=True)
        import time

        time.sleep(60)  # the parent kills us with SIGKILL during this sleep
    return f"email sent to {to}"


TOOLS = [lookup_order, send_email]


# --------------------------------------------------------------------------
# A deterministic fake chat model (reads the conversation, decides the next step)
# --------------------------------------------------------------------------
class ScriptedSupportModel(BaseChatModel):
    """Fake LLM: look the order up, email the customer, then report what happened."""

    @property
    def _llm_type(self) -> str:
        return "scripted-support"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            reply = AIMessage(
                "",
                id="ai-lookup",
                tool_calls=[
                    {
                        "name": "lookup_order",
                        "args": {"order_id": "1042"},
                        "id": "call_lookup_1042",
                        "type": "tool_call",
                    }
                ],
            )
        elif isinstance(last, ToolMessage) and last.name == "lookup_order":
            order = json.loads(last.content)
            reply = AIMessage("", id="ai-email", tool_calls=[{
                "name": "send_email",
                "args": {"to": order["customer"], "subject": "Your replacement teapot",
                         "body": f"Sorry your {order['item']} arrived damaged; a replacement is on its way."},
                "id": "call_email_1042", "type": "tool_call"}])
        elif isinstance(last, ToolMessage) and last.status == "error":
            reply = AIMessage("I could not confirm that the email to the customer went out; "
                              "please check the outbox before sending it again.", id="ai-final")
        else:
            reply = AIMessage(f"Done: {last.content}.", id="ai-final")
        return ChatResult(generations=[ChatGeneration(message=reply)])


# --------------------------------------------------------------------------
# The graph: agent -> (tools -> agent)*; the tool node goes through the adapter
# --------------------------------------------------------------------------
def build_graph(saver: JsonlSaver) -> Any:
    adapter = ReplayAdapter(saver, idempotent=["lookup_order"])
    model = ScriptedSupportModel().bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", adapter.tool_node(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


# --------------------------------------------------------------------------
# Output helpers
# --------------------------------------------------------------------------
def say(text: str = "") -> None:
    print(text, flush=True)


def describe(m: BaseMessage) -> str:
    if isinstance(m, AIMessage) and m.tool_calls:
        return "agent: calls " + ", ".join(
            f"{c['name']}({json.dumps(c['args'])}) [{c['id']}]" for c in m.tool_calls
        )
    role = {"human": "user ", "ai": "agent", "tool": "tool "}.get(m.type, m.type)
    status = " (error)" if getattr(m, "status", None) == "error" else ""
    return f"{role}: {m.content}{status}"


def print_updates(stream: Any) -> None:
    for update in stream:
        for node, output in update.items():
            if node == "__interrupt__":
                continue
            for m in (output or {}).get("messages", []):
                say(describe(m))


def journal_lines(saver: JsonlSaver) -> list[str]:
    return [
        f"{r.name:<13} [{r.key.call_id}] {r.effective_state}"
        + (f" (resolved: {r.resolution})" if r.resolution else "")
        for r in saver.tool_calls(THREAD_ID)
    ]


# --------------------------------------------------------------------------
# Child processes
# --------------------------------------------------------------------------
def process_a(store: str) -> None:
    """Start the run; send_email will hang after writing, and we get killed."""
    global HANG_AFTER_SENDING
    HANG_AFTER_SENDING = True
    say(f"process A, pid {os.getpid()}")
    with JsonlSaver.from_conn_string(store) as saver:
        graph = build_graph(saver)
        say(f"user : {REQUEST}")
        # durability="sync": every checkpoint is on disk before the next step starts
        print_updates(
            graph.stream(
                {"messages": [HumanMessage(REQUEST)]}, CONFIG, stream_mode="updates", durability="sync"
            )
        )
    say("ERROR: process A was not killed")
    sys.exit(1)


def process_b(store: str) -> None:
    """Resume after the crash: the adapter stops on the uncertain send_email."""
    say(f"process B, pid {os.getpid()}: a new saver on the same directory; graph.stream(None, config)")
    with JsonlSaver.from_conn_string(store) as saver:
        graph = build_graph(saver)
        print_updates(graph.stream(None, CONFIG, stream_mode="updates", durability="sync"))
        state = graph.get_state(CONFIG)
        say(f"run paused, next node: {state.next}")
        # hand the interrupt to the parent (the "person") as JSON
        say("INTERRUPTS " + json.dumps([{"id": i.id, "value": i.value} for i in state.interrupts]))


def process_c(store: str, answers_json: str) -> None:
    """Resume with the person's answers."""
    answers = json.loads(answers_json)
    say(f"process C, pid {os.getpid()}: resume with {answers}")
    with JsonlSaver.from_conn_string(store) as saver:
        graph = build_graph(saver)
        interrupts = graph.get_state(CONFIG).interrupts
        print_updates(graph.stream(ReplayAdapter.resume_command(interrupts, answers), CONFIG,
                                   stream_mode="updates", durability="sync"))


def child_cmd(*args: str) -> list[str]:
    return [sys.executable, __file__, *args]


def relay(line: str) -> None:
    say("    " + line.rstrip("\n"))


def run_child(*args: str) -> tuple[int, list[str]]:
    proc = subprocess.run(child_cmd(*args), capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    for line in lines:
        if not line.startswith("INTERRUPTS "):
            relay(line)
    for line in proc.stderr.splitlines():
        relay("stderr| " + line)
    return proc.returncode, lines


def run_and_kill(*args: str) -> int:
    """Start a child; SIGKILL it as soon as it says the email is in the outbox."""
    proc = subprocess.Popen(child_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    killed = False
    try:
        for line in proc.stdout:
            relay(line)
            if line.strip() == WROTE_MARKER:
                say(f"    -> SIGKILL to process A (pid {proc.pid}) while send_email is still running")
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
        code = proc.wait(timeout=120)
        for line in proc.stderr.read().splitlines():
            relay("stderr| " + line)
    finally:
        if proc.poll() is None:  # the demo stops early (its output closed, Ctrl-C): no child left asleep
            proc.kill()
            proc.wait()
        proc.stderr.close()
        proc.stdout.close()
    return code if killed else (code or 1)


# --------------------------------------------------------------------------
# The demo (parent process)
# --------------------------------------------------------------------------
def outbox_emails() -> list[dict]:
    return [json.loads(line) for line in OUTBOX.read_text().splitlines()] if OUTBOX.exists() else []


def fail(message: str) -> int:
    say(f"\nFAILED: {message}")
    return 1


def demo(workdir: Path) -> int:
    store = str(workdir / "checkpoints")
    paths = [str(OUTBOX), str(LOOKUPS)]
    say("Kill an agent while it sends an email; resume it; the email goes out once")
    say(f"work directory: {workdir}\n")

    say("[1/3] Process A starts the run; it is killed inside send_email, after the email was written")
    code = run_and_kill("A", store, *paths)
    if code != -signal.SIGKILL:
        return fail(f"process A ended with {code}, expected to be killed by SIGKILL")
    with JsonlSaver.from_conn_string(store) as saver:
        say("    tool-call journal after the crash:")
        for line in journal_lines(saver):
            say("      " + line)
        states = {r.name: r.effective_state for r in saver.tool_calls(THREAD_ID)}
    say(f"    outbox: {len(outbox_emails())} email(s)\n")
    if states != {"lookup_order": "finished", "send_email": "uncertain"}:
        return fail(f"unexpected journal after the crash: {states}")

    say("[2/3] Process B resumes the thread")
    code, lines = run_child("B", store, *paths)
    if code != 0:
        return fail(f"process B exited with {code}")
    interrupts = [json.loads(line[len("INTERRUPTS "):]) for line in lines if line.startswith("INTERRUPTS ")]
    if not interrupts or len(interrupts[0]) != 1:
        return fail(f"expected one interrupt from process B, got {interrupts}")
    value = interrupts[0][0]["value"]
    say(f"    interrupt: {value['type']}")
    for c in value.get("calls", []):
        say(f"      {c['name']} [{c['id']}] started at {c['started_at']}")
        say(f"        args: {json.dumps(c['args'])}")
    if value.get("type") != "uncertain_tool_calls" or [c["name"] for c in value["calls"]] != ["send_email"]:
        return fail(f"expected the uncertain send_email call in the interrupt, got {value}")
    if len(outbox_emails()) != 1:
        return fail(f"resuming sent the email again: the outbox holds {len(outbox_emails())}")
    say("")

    say("[3/3] A person checks the outbox, sees the email, and answers \"skip\"")
    call_id = value["calls"][0]["id"]
    code, _ = run_child("C", store, *paths, json.dumps({call_id: "skip"}))
    if code != 0:
        return fail(f"process C exited with {code}")
    say("")

    with JsonlSaver.from_conn_string(store) as saver:
        state = build_graph(saver).get_state(CONFIG)
        journal = journal_lines(saver)
        records = {r.name: r for r in saver.tool_calls(THREAD_ID)}
    messages = state.values.get("messages", [])
    say("Conversation, read back from the store:")
    for m in messages:
        say("    " + describe(m))
    say("Tool-call journal:")
    for line in journal:
        say("    " + line)
    emails = outbox_emails()
    say(f"Outbox ({OUTBOX.name}): {len(emails)} email(s)")
    for e in emails:
        say(f"    to {e['to']}: {e['subject']}")
    lookups = LOOKUPS.read_text().splitlines() if LOOKUPS.exists() else []
    say(f"lookup_order ran {len(lookups)} time(s)")

    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    if state.next or state.interrupts:
        return fail(f"the run did not finish: next={state.next}, interrupts={state.interrupts}")
    if sorted(calls) != sorted(answered):
        return fail(f"tool calls without exactly one result: calls={calls}, results={answered}")
    if len(emails) != 1:
        return fail(f"the outbox holds {len(emails)} emails, expected exactly 1")
    if records["send_email"].resolution != "skip" or records["send_email"].state != "finished":
        return fail("send_email is not recorded as resolved by 'skip'")
    if len(lookups) != 1:
        return fail(f"lookup_order ran {len(lookups)} times, expected once (it finished before the crash)")
    if not messages or not messages[-1].content.startswith("I could not confirm"):
        return fail("the agent's last message does not report the unknown outcome")
    say("\nOK: the email was sent exactly once, and the agent knows its outcome was uncertain.")
    return 0


def start_over(workdir: Path) -> tuple[list[str], str | None]:
    """Make ``workdir`` ready for a run: it is new or empty, or holds what an earlier run
    of this demo left there (its thread in ``checkpoints/``, ``outbox.jsonl``,
    ``lookups.log``), which is removed. Anything else is not the demo's to remove:
    nothing is, and the second value says why the folder cannot be used. Returns what
    was removed, and that reason."""
    store, outbox, lookups = workdir / "checkpoints", workdir / "outbox.jsonl", workdir / "lookups.log"
    ours = {p.name for p in (store, outbox, lookups)}
    others = sorted(p.name for p in workdir.iterdir() if p.name not in ours)
    if others:
        return [], f"it holds {', '.join(others)}, which this demo did not write"
    customers = {o["customer"] for o in ORDERS.values()}
    for path, is_ours in ((outbox, lambda line: json.loads(line).get("to") in customers),
                          (lookups, lambda line: line in ORDERS)):
        try:
            foreign = path.exists() and not all(is_ours(line) for line in path.read_text().splitlines())
        except (ValueError, AttributeError, OSError):
            foreign = True
        if foreign:
            return [], f"its {path.name} holds lines this demo did not write"
    removed = []
    if store.exists():
        try:  # a store (or an empty folder): only the demo's thread goes, others stay
            with JsonlSaver.from_conn_string(str(store)) as saver:
                if saver.get_tuple(CONFIG) is not None:
                    saver.delete_thread(THREAD_ID)
                    removed.append(f"thread {THREAD_ID} from {store.name}/")
        except (JsonlCheckpointError, OSError) as exc:
            return [], f"its {store.name}/ is not a checkpoint store this demo can use ({exc})"
    for path in (outbox, lookups):
        if path.exists():
            path.unlink()
            removed.append(path.name)
    return removed, None


def main(argv: list[str]) -> int:
    global OUTBOX, LOOKUPS
    if argv and argv[0] in ("A", "B", "C"):  # a child process
        step, store, OUTBOX, LOOKUPS = argv[0], argv[1], Path(argv[2]), Path(argv[3])
        try:
            if step == "A":
                process_a(store)
            elif step == "B":
                process_b(store)
            else:
                process_c(store, argv[4])
        except KeyboardInterrupt:  # Ctrl-C reaches the whole demo: the parent says so
            return 130
        return 0

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", metavar="DIR",
                        help="a directory for checkpoints and the outbox (kept): new, empty, or one "
                        "a run of this demo left (it starts over)")
    args = parser.parse_args(argv)
    try:
        if args.store:
            workdir = Path(args.store).resolve()
            if workdir.exists() and not workdir.is_dir():
                parser.error(f"{workdir} is not a directory: pass --store a new or empty directory")
            workdir.mkdir(parents=True, exist_ok=True)
            removed, refused = start_over(workdir)
            if refused is not None:
                parser.error(
                    f"{workdir} cannot hold this demo: {refused}; nothing was removed. The demo "
                    "checks that the outbox and the thread it writes there hold exactly one email "
                    "and one run. Pass --store a new or empty directory, one a run of this demo left "
                    "(it starts over), or leave --store out (a temporary one)"
                )
            if removed:
                say(f"starting over in {workdir}, which an earlier run of this demo left: removed "
                    + ", ".join(removed) + "\n")
            OUTBOX, LOOKUPS = workdir / "outbox.jsonl", workdir / "lookups.log"
            return demo(workdir)
        with tempfile.TemporaryDirectory(prefix="crash-and-resume-") as tmp:
            workdir = Path(tmp)
            OUTBOX, LOOKUPS = workdir / "outbox.jsonl", workdir / "lookups.log"
            return demo(workdir)
    except KeyboardInterrupt:
        kept = (f"what was saved is in {Path(args.store).resolve()}" if args.store
                else "its temporary directory was removed")
        say(f"\nstopped by Ctrl-C; {kept}")
        return 130
    except BrokenPipeError:
        # Its reader went away (``| head``): stop quietly, its child gone (run_and_kill)
        # and its temporary directory removed; later writes (the exit's flush) go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
