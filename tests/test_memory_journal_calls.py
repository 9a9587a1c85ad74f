"""The session memory against what the replay journal says about each call: decisions are
the calls a question was about (not every key of the answer), a call id used again by a
later execution is a new call, and a call the thread's messages answer is not open.
Each case runs the real adapter after a real crash (a killed child) and checks the memory
against a rebuild from the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command

from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.inspection.follow import ThreadFollower
from langgraph_jsonl_checkpoint.memory import SessionMemory
from tests.harness.bounded import within
from tests.harness.replay_crashes import graph_for, open_store, run_crash, spec
from tests.harness.replay_tools import call, config
from tests.test_session_memory import _rebuild

LOOKUP = call("lookup_order", "l1", order_id="7")
EMAIL = call("send_email", "e1", to="bob@example.com")
CHARGE = call("charge", "c1", amount=5)
SKIPPED_BOB = "send_email(to=bob@example.com): skip: not run again, outcome unknown"


def _texts(items: Any) -> list[str]:
    return [i.text.split(" (answered ")[0] for i in items]


def _killed_after_the_email(tmp_path: Path) -> tuple[Any, JsonlSaver, ReplayAdapter]:
    """A run that looked up the order (settled) and was killed after send_email took
    effect; the store opened again."""
    s = spec(tmp_path / "store", plan=[[[LOOKUP, EMAIL]]],
             crash={"call": "e1", "point": "after_effect", "how": "kill", "settle": ["l1"]})
    assert run_crash(s).died
    saver, adapter = open_store(s)
    return s, saver, adapter


def _memory(saver: JsonlSaver, thread_id: str = "t1") -> SessionMemory:
    memory = saver.session_memory(thread_id, budget=None)
    assert memory == _rebuild(saver, thread_id)
    return memory


def test_decisions_are_the_calls_the_question_was_about(tmp_path: Path) -> None:
    """Only e1 is asked about; the answer also names the finished l1 and a typo. The
    memory told the model l1 was skipped ("outcome unknown") and listed the typo."""
    s, saver, adapter = _killed_after_the_email(tmp_path)
    with saver, within(120):
        graph = graph_for(s, saver, adapter)
        out = graph.invoke(None, config("t1"))
        assert [c["id"] for i in out["__interrupt__"] for c in i.value["calls"]] == ["e1"]
        graph.invoke(Command(resume={"e1": "skip", "l1": "skip", "e1x": "retry"}), config("t1"))
        memory = _memory(saver)
        assert _texts(memory.decisions) == [SKIPPED_BOB]
        assert [i.call_id for i in memory.decisions] == ["e1"]
        assert _texts(memory.completed) == ["lookup_order(order_id=7) -> order 7: shipped"]
        # `tail` says the same: the answer about e1, not about every key given
        answers = [e.tool for e in ThreadFollower(saver, "t1").read_new()
                   if e.tool is not None and e.tool.event == "answer"]
        assert [(a.call_id, a.detail) for a in answers] == [("e1", "a person answered: e1=skip")]


def test_create_agent_resume_command_lists_each_decision_once(tmp_path: Path, capsys) -> None:
    """``create_agent`` asks about each uncertain call in its own interrupt, and
    ``resume_command`` gives every interrupt the whole mapping: the memory listed every
    decision once per interrupt, the second time under the bare call id."""
    s = spec(tmp_path / "store", plan=[[[EMAIL, CHARGE]]], plug="agent",
             crash={"call": "e1", "point": "after_effect", "how": "kill", "hold": ["c1"],
                    "effects_of": ["c1"]})
    assert run_crash(s).died
    saver, adapter = open_store(s)
    with saver, within(120):
        graph = graph_for(s, saver, adapter)
        out = graph.invoke(None, config("t1"))
        assert sorted(c["id"] for i in out["__interrupt__"] for c in i.value["calls"]) == ["c1", "e1"]
        # `show` told to answer each with graph.invoke(Command(resume={...})), which LangGraph
        # refuses while two interrupts wait: it gives one resume_command over both instead
        capsys.readouterr()
        assert main(["show", str(tmp_path / "store"), "t1"]) == 0
        text = capsys.readouterr().out
        assert "Command(resume=" not in text, text
        (hint,) = [line.strip() for line in text.splitlines() if line.strip().startswith("answer: ")]
        assert hint.startswith("answer: graph.invoke(ReplayAdapter.resume_command(graph.get_state("
                               "config).interrupts, {") and hint.endswith("}), config)  (docs/tool-calls.md)")
        for call_id in ("c1", "e1"):
            assert f'"{call_id}": "retry" | "skip" | {{"result": ...}}' in hint, hint
        answers = {"e1": "skip", "c1": "skip"}
        graph.invoke(ReplayAdapter.resume_command(graph.get_state(config("t1")).interrupts, answers),
                     config("t1"))
        memory = _memory(saver)
        assert sorted(_texts(memory.decisions)) == [
            "charge(amount=5): skip: not run again, outcome unknown",
            SKIPPED_BOB,
        ]
        answered = [e.tool.detail for e in ThreadFollower(saver, "t1").read_new()
                    if e.tool is not None and e.tool.event == "answer"]
        assert sorted(answered) == ["a person answered: c1=skip", "a person answered: e1=skip"]


def test_a_call_id_used_again_after_a_lost_run_is_a_new_call(tmp_path: Path) -> None:
    """``durability="exit"``: the lost run's e1 is asked about on its own and skipped;
    the re-planned run asks for e1 again (same id, other arguments) and it is sent. The
    memory left that email out of the work completed, and named the decision by its
    question id."""
    s = spec(tmp_path / "store", plan=[[[EMAIL]]], durability="exit",
             crash={"call": "e1", "point": "after_effect", "how": "kill"})
    assert run_crash(s).died
    saver, adapter = open_store(s)
    again = call("send_email", "e1", to="ann@example.com")
    with saver, within(120):
        graph = graph_for({**s, "plan": [[[again]]]}, saver, adapter)
        out = graph.invoke({"messages": [HumanMessage("go", id="human-0")]}, config("t1"), durability="exit")
        [question] = [c for i in out["__interrupt__"] for c in i.value["calls"]]
        assert question["lost_run"] and question["id"].startswith("e1@")
        graph.invoke(Command(resume={question["id"]: "skip"}), config("t1"), durability="exit")
        memory = _memory(saver)
        assert _texts(memory.decisions) == [SKIPPED_BOB]
        assert _texts(memory.completed) == ["send_email(to=ann@example.com) -> sent to ann@example.com"]
        assert not memory.open_items, memory.open_items


def test_a_held_call_answered_with_update_state_is_not_open(tmp_path: Path, capsys: Any) -> None:
    """A person answers the held call themselves, LangGraph's way: a ToolMessage written
    with ``update_state(..., as_node="tools")``. The journal never settles the call, and
    the memory kept it under "Open items (resolve these first)" on every later turn,
    while listing its answer as work completed; ``tool_calls()`` and ``tools`` said
    ``uncertain``."""
    s, saver, adapter = _killed_after_the_email(tmp_path)
    with saver, within(120):
        graph = graph_for(s, saver, adapter)
        graph.invoke(None, config("t1"))
        assert [r.effective_state for r in saver.tool_calls("t1")] == ["finished", "uncertain"]
        graph.update_state(config("t1"), {"messages": [
            ToolMessage("sent by hand", tool_call_id="e1", name="send_email")]}, as_node="tools")
        graph.invoke(None, config("t1"))
        graph.invoke({"messages": [HumanMessage("thanks", id="human-1")]}, config("t1"))
        memory = _memory(saver)
        assert memory.goal == "thanks"
        assert not memory.open_items, memory.open_items
        assert _texts(memory.completed) == ["lookup_order(order_id=7) -> order 7: shipped",
                                            "send_email(to=bob@example.com) -> sent by hand"]
        records = saver.tool_calls("t1")
        assert [(r.key.call_id, r.state, r.effective_state) for r in records] == [
            ("l1", "finished", "finished"), ("e1", "started", "answered")]
    assert main(["tools", s["store"], "t1", "--json"]) == 0
    rows = {r["call_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["e1"]["state"], rows["e1"]["decision"], rows["e1"]["outcome"]) == (
        "answered", "answered", "sent by hand")


def test_a_call_id_the_model_uses_again_in_a_later_turn_is_told_again() -> None:
    """Turn 1's k1 fails (its error told from the journal, so its error ToolMessage is not
    told twice); turn 2's model uses the id k1 again and the call succeeds. A told call
    id used to hide every later ToolMessage with that id."""
    from langgraph_jsonl_checkpoint.memory import MemoryBuilder

    b = MemoryBuilder("t", lambda cell: None)

    def checkpoint(cid: str, seq: int, *msgs: dict[str, Any]) -> dict[str, Any]:
        return {"t": "checkpoint", "ns": "", "id": cid, "parent": None, "cv": {}, "seq": seq,
                "values": {"messages": {"ver": seq, "tail": {"msgs": list(msgs)}, "keep": b.message_count}}}

    def tool(ev: str, cp: str, seq: int, **fields: Any) -> dict[str, Any]:
        key = {"ns": f"tools:{cp}", "cp": cp, "call": "k1"}
        return {"t": "tool", "ev": ev, **key, "at": f"T{seq}", "seq": seq, **fields}

    ask = {"type": "ai", "content": "", "id": "a1",
           "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "k1"}]}
    b.feed(checkpoint("c1", 1, {"type": "human", "content": "one", "id": "h1"}, ask))
    b.feed(tool("requested", "c1", 2, name="search", args={"json": {"q": "x"}}))
    b.feed(tool("started", "c1", 3))
    b.feed(tool("failed", "c1", 4, error={"type": "Boom", "message": "down"}))
    b.feed(checkpoint("c2", 5, {"type": "tool", "content": "Error: down", "tool_call_id": "k1",
                                "status": "error", "id": "m1"}))
    b.feed(checkpoint("c3", 6, {"type": "human", "content": "two", "id": "h2"}, {**ask, "id": "a2"}))
    b.feed(tool("requested", "c3", 7, name="search", args={"json": {"q": "x"}}))
    b.feed(tool("started", "c3", 8))
    b.feed(tool("finished", "c3", 9, result={"json": "found"}))
    b.feed(checkpoint("c4", 10, {"type": "tool", "content": "found", "tool_call_id": "k1", "id": "m2"}))
    memory = b.memory()
    assert [i.text for i in memory.failed] == ["search(q=x) failed: Boom: down"]
    assert [i.text for i in memory.completed] == ["search(q=x) -> found"]
    assert not memory.open_items and MemoryBuilder("t", lambda cell: None, b.state()).memory() == memory
