"""A store made by real graph runs, for the ``langgraph-jsonl`` reading commands.

``build_store(path)`` fills one store with threads in every status, each made the way
a user's would be:

=============  ==========================================================  ============
thread         how it was made                                             status
=============  ==========================================================  ============
``agent``      the tool-calling agent (two parallel tools), to the end     done
``review``     a node asked ``interrupt()`` and nobody answered            waiting
``fan``        fan-out with ``Send`` and a join                            done
``crashed``    the replay agent SIGKILLed inside ``send_email``            interrupted
``uncertain``  the same, resumed in a new process: the adapter asks        waiting
``decided``    the same, and a person answered ``skip``                    done
``damaged``    the agent, then a byte flipped in the middle of its log     damaged
=============  ==========================================================  ============

Each thread's expected status, and LangGraph's own view of it, are returned so a test
can compare the commands' answers with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness import flow_graphs
from tests.harness.raw_log import ThreadFiles
from tests.harness.replay_crashes import run_crash, run_resume, spec
from tests.harness.replay_tools import call

#: The replay agent's plan: one turn, one step of two calls; ``send_email`` is the call
#: the crash cuts off.
REPLAY_PLAN = [[[call("lookup_order", "c1", order_id="1042"),
                 call("send_email", "c2", to="ada@example.com")]]]
EXPECTED_STATUS = {
    "agent": "done", "review": "waiting", "fan": "done", "crashed": "interrupted",
    "uncertain": "waiting", "decided": "done", "damaged": "damaged",
}


@dataclass
class BuiltStore:
    """What :func:`build_store` made.

    Attributes:
        path: The store directory.
        graphs: For the in-process threads, the compiled graph (on a saver that is
            closed: recompile on a new saver to ask LangGraph).
        crashes: Exit codes of the processes that were killed.
    """

    path: Path
    graphs: dict[str, Any] = field(default_factory=dict)
    crashes: dict[str, int | None] = field(default_factory=dict)


def config(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


def build_store(path: Path) -> BuiltStore:
    """Fill a new store at ``path`` (see the module docstring); takes a few seconds."""
    built = BuiltStore(path)
    with JsonlSaver(path) as saver:
        g = flow_graphs.build_agent_graph().compile(checkpointer=saver)
        for tid in ("agent", "damaged"):
            g.invoke({"messages": [HumanMessage("both 2 3", id="h-1")]}, config(tid), durability="sync")
            g.invoke({"messages": [HumanMessage("thanks, bye", id="h-2")]}, config(tid), durability="sync")
        built.graphs["agent"] = flow_graphs.build_agent_graph
        g = flow_graphs.build_review_graph().compile(checkpointer=saver)
        g.invoke({"topic": "teapots"}, config("review"), durability="sync")
        built.graphs["review"] = flow_graphs.build_review_graph
        g = flow_graphs.build_fanout_graph().compile(checkpointer=saver)
        g.invoke({"items": ["a", "b", "c"]}, config("fan"), durability="sync")
        built.graphs["fan"] = flow_graphs.build_fanout_graph
    for tid in ("crashed", "uncertain", "decided"):
        s = spec(path, plan=REPLAY_PLAN, thread=tid, user="Order 1042 arrived damaged; email the customer.",
                 crash={"call": "c2", "point": "after_effect", "how": "kill", "settle": ["c1"]},
                 answers={"c2": "skip"} if tid == "decided" else None)
        crash = run_crash(s)
        assert crash.died, crash.error
        built.crashes[tid] = crash.exitcode
        if tid != "crashed":
            run_resume(s)
    damage(path, "damaged")
    return built


def damage(path: Path, thread_id: str) -> None:
    """Flip one byte of a thread's latest checkpoint record, which is followed by valid
    records (its writes): damage a listing meets, since it reads that record."""
    log = Path(ThreadFiles.of(path, thread_id).log)
    data = bytearray(log.read_bytes())
    lines = data.split(b"\n")
    last = max(i for i, line in enumerate(lines) if line.startswith(b'{"t":"checkpoint"'))
    data[sum(len(x) + 1 for x in lines[:last]) + 20] ^= 0x01
    log.write_bytes(bytes(data))


def answer_review(saver: JsonlSaver, answer: str = "yes") -> Any:
    """Answer the review thread's question (for tests that need it answered)."""
    g = flow_graphs.build_review_graph().compile(checkpointer=saver)
    return g.invoke(Command(resume=answer), config("review"), durability="sync")
