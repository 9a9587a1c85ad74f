"""Session memory: built from real graph runs (a crash, an uncertain call decided by
"skip", a failed tool, an interrupt still waiting), kept incrementally and equal to a
rebuild from the log at every prefix, found by a fresh process, bounded, deterministic,
and handled by delete, compaction, archive and restore."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter
from langgraph_jsonl_checkpoint.memory import MemoryBuilder, MemoryKeeper, SessionMemory
from tests.harness.bounded import within
from tests.harness.replay_crashes import graph_for, open_store, run_crash, spec
from tests.harness.replay_tools import call, config

PLAN = [
    [[call("search", "s1", query="flights")], [call("send_email", "e1", to="bob@example.com")]],
    [[call("explode", "x1", reason="no stock")]],
    [[call("approve", "a1", action="refund order 7")]],
]


def _rebuild(saver: JsonlSaver, thread_id: str, upto_seq: int | None = None) -> SessionMemory:
    """The memory of the log's records up to ``upto_seq``, by a fresh builder."""
    builder = MemoryBuilder(thread_id, saver.codec.decode)
    for rec in saver.store.thread_log(thread_id).iter_records():
        if upto_seq is not None and rec["seq"] > upto_seq:
            break
        builder.feed(rec)
    return builder.memory()


@pytest.fixture
def real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], list[SessionMemory]]:
    """A thread that went through a crash (killed child), a resume answered "skip" for
    the uncertain call, a failed tool, and an interrupt still waiting; returns the spec
    and the memories the keeper held after each append of this process."""
    s = spec(tmp_path / "store", plan=PLAN, plug="tool_node",
             crash={"call": "e1", "point": "after_effect", "how": "kill"}, user="book me a flight")
    crash = run_crash(s)
    assert crash.died, crash.error
    seen: list[SessionMemory] = []
    original = MemoryKeeper.appended

    def spy(self: MemoryKeeper, log: Any) -> None:
        original(self, log)
        assert self.builder is not None
        seen.append(self.builder.memory())

    monkeypatch.setattr(MemoryKeeper, "appended", spy)
    saver, adapter = open_store(s)
    with saver, within(120, "the real run"):
        # The keeper follows a thread's appends once its memory was asked for (as the
        # memory middleware does at the first model call of a run).
        saver.session_memory("t1")
        graph = graph_for(s, saver, adapter, handle_tool_errors=True)
        graph.invoke(None, config("t1"))
        graph.invoke(ReplayAdapter.resume_command(graph.get_state(config("t1")).interrupts, {"e1": "skip"}),
                     config("t1"))
        graph.invoke({"messages": [HumanMessage("check stock", id="human-1")]}, config("t1"))
        graph.invoke({"messages": [HumanMessage("now refund order 7", id="human-2")]}, config("t1"))
        assert graph.get_state(config("t1")).interrupts  # approve waits for a person
    monkeypatch.setattr(MemoryKeeper, "appended", original)
    return s, seen


def test_memory_names_the_crash_decision_failure_and_waiting_interrupt(real_run: Any) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"]) as saver, within(60):
        memory = saver.session_memory("t1")
    text = memory.to_text()
    assert memory.goal == "now refund order 7"
    assert [i.call_id for i in memory.completed] == ["s1"]
    assert "search(query=flights) -> found flights" in memory.completed[0].text
    assert [i.call_id for i in memory.failed] == ["x1"] and "boom: no stock" in memory.failed[0].text
    assert [i.call_id for i in memory.decisions] == ["e1"]
    assert "send_email(to=bob@example.com): skip" in memory.decisions[0].text
    assert any("waiting for an answer" in i.text and "refund order 7" in i.text for i in memory.open_items)
    assert (memory.turns, memory.tool_calls) == (3, 4)
    # open items come first in the text, the counts last
    assert text.index("Open items") < text.index("Failed attempts") < text.index("Work completed")
    assert re.search(r"Counts: turns 3, tool calls 4, checkpoints \d+\.$", text)


def test_memory_after_the_crash_names_the_uncertain_call(tmp_path: Path) -> None:
    s = spec(tmp_path / "store", plan=PLAN, plug="tool_node",
             crash={"call": "e1", "point": "after_effect", "how": "kill"}, user="book me a flight")
    assert run_crash(s).died
    with JsonlSaver(s["store"]) as saver, within(60):
        memory = saver.session_memory("t1")
    assert memory.goal == "book me a flight"
    [uncertain] = [i for i in memory.open_items if i.text.startswith("uncertain")]
    assert uncertain.call_id == "e1" and "send_email(to=bob@example.com)" in uncertain.text
    assert any(i.text.startswith("step not finished: tools") for i in memory.open_items)
    assert [i.call_id for i in memory.completed] == ["s1"]


def test_incremental_equals_rebuilt_at_every_prefix(real_run: Any) -> None:
    s, seen = real_run
    assert len(seen) > 20
    with JsonlSaver(s["store"], read_only=True) as saver, within(120):
        for kept in seen:
            assert kept == _rebuild(saver, "t1", kept.covers), f"prefix up to seq {kept.covers}"
        assert saver.session_memory("t1", budget=None) == _rebuild(saver, "t1")


def test_fresh_process_reads_the_kept_memory_without_replaying_the_log(
    real_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"]) as saver:
        expected = saver.session_memory("t1").to_json()
        stem = saver.store.thread_log("t1").paths
    kept = json.loads(Path(stem.memory).read_bytes())
    assert kept["end"] == os.path.getsize(stem.log)  # written on close, covering the whole log
    code = (
        "import json, sys\n"
        "from langgraph_jsonl_checkpoint import JsonlSaver\n"
        "from langgraph_jsonl_checkpoint.disk.view import LogView\n"
        "offsets = []\n"
        "orig = LogView.records_from\n"
        "LogView.records_from = lambda self, o: (offsets.append(o), orig(self, o))[1]\n"
        "with JsonlSaver(sys.argv[1]) as s:\n"
        "    print(json.dumps({'memory': s.session_memory('t1').to_json(), 'offsets': offsets}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, s["store"]], capture_output=True, text=True,
                         timeout=120, check=True)
    got = json.loads(out.stdout)
    assert got["memory"] == json.loads(json.dumps(expected))
    assert 0 not in got["offsets"]  # the log was not read from its start


@pytest.mark.parametrize("damage", ["delete", "garble", "other_generation", "longer_before", "link"])
def test_missing_or_damaged_memory_file_is_rebuilt(real_run: Any, damage: str) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"]) as saver:
        expected = saver.session_memory("t1", budget=None)
        path = saver.store.thread_log("t1").paths.memory
    if damage == "delete":
        os.unlink(path)
    elif damage == "longer_before":
        # Written over the one before in place, then cut to its length: a crash between
        # the two leaves the new record followed by the end of a longer one.
        Path(path).write_bytes(Path(path).read_bytes() + b'"seq":0,"c":"00000000"}\n')
    elif damage == "link":  # a link where the file goes: replaced, never written through
        elsewhere = Path(path).parent.parent / "elsewhere.txt"
        elsewhere.write_bytes(b"not the store's\n")
        os.unlink(path)
        os.symlink(elsewhere, path)
    elif damage == "garble":
        data = bytearray(Path(path).read_bytes())
        data[len(data) // 2] ^= 0x20
        Path(path).write_bytes(bytes(data))
    else:  # a file naming another generation of the log, with a wrong goal in it
        rec = json.loads(Path(path).read_bytes())
        rec["state"]["goal"] = "something else"
        rec["log"][0] += 1
        from langgraph_jsonl_checkpoint.disk import framing

        rec.pop("c")
        Path(path).write_bytes(framing.frame(rec))
    with JsonlSaver(s["store"]) as saver, within(60):
        assert saver.session_memory("t1", budget=None) == expected
    if damage == "link":
        assert (Path(path).parent.parent / "elsewhere.txt").read_bytes() == b"not the store's\n"
    if damage in ("longer_before", "link"):  # the close wrote the file again, whole
        assert not Path(path).is_symlink()
        assert json.loads(Path(path).read_bytes())["end"] == os.path.getsize(Path(path).with_suffix(".jsonl"))


def test_compaction_delete_archive_and_restore(real_run: Any) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"]) as saver, within(120):
        before = saver.session_memory("t1", budget=None)
        saver.compact("t1")
        after = saver.session_memory("t1", budget=None)
        # compaction drops snapshots and superseded duplicates only: the same facts
        assert (after.goal, after.completed, after.failed, after.decisions, after.open_items) == (
            before.goal, before.completed, before.failed, before.decisions, before.open_items)
        assert after == _rebuild(saver, "t1")
        saver.copy_thread("t1", "t2")
        assert saver.session_memory("t2").goal == before.goal
        paths = saver.store.thread_log("t2").paths
        saver.close()
    with JsonlSaver(s["store"]) as saver:
        assert os.path.exists(paths.memory)
        saver.delete_thread("t2")
    left = sorted(p.name for p in Path(paths.directory).iterdir() if p.name.startswith(paths.name))
    assert {n.rsplit(".", 1)[1] for n in left} <= {"deleted", "lock", "run", "wait"}
    assert "deleted" in {n.rsplit(".", 1)[1] for n in left}
    assert not os.path.exists(paths.memory)
    with JsonlSaver(s["store"]) as saver, within(120):
        report = saver.sweep({"default_ttl": 1, "strategy": "archive"}, now=4e9)
        assert report.swept == [("t1", "archive")]
        assert not os.path.exists(saver.store.thread_log("t1").paths.memory)
        saver.restore("t1")
        assert saver.session_memory("t1", budget=None) == _rebuild(saver, "t1")
        assert saver.session_memory("t1", budget=None).decisions == before.decisions


def _chatty_graph(checkpointer: Any) -> Any:
    """An agent loop without a model: each turn asks one tool, gets its result, answers."""

    def agent(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        n = len(state["messages"])
        if isinstance(last, HumanMessage):
            return {"messages": [AIMessage("", id=f"ai-{n}", tool_calls=[
                {"name": "lookup", "args": {"q": last.content}, "id": f"c-{n}", "type": "tool_call"}])]}
        return {"messages": [AIMessage(f"answer {n}", id=f"ai-{n}")]}

    def tools(state: MessagesState) -> dict[str, Any]:
        c = state["messages"][-1].tool_calls[0]
        result = ToolMessage(f"result for {c['args']['q']}", tool_call_id=c["id"], name="lookup")
        return {"messages": [result]}

    def route(state: MessagesState) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else "__end__"

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", tools)
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", route)
    b.add_edge("tools", "agent")
    return b.compile(checkpointer=checkpointer)


def test_budget_holds_on_a_thousand_turn_thread(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "store") as saver, within(600, "1,000 turns"):
        graph = _chatty_graph(saver)
        cfg = {"configurable": {"thread_id": "long"}}
        for i in range(1000):
            graph.invoke({"messages": [HumanMessage(f"question {i}", id=f"h-{i}")]}, cfg, durability="exit")
        for budget in (500, 2000, 4000):
            memory = saver.session_memory("long", budget=budget)
            assert len(memory.to_text()) <= budget
            assert (memory.goal, memory.turns, memory.tool_calls) == ("question 999", 1000, 1000)
            assert memory.completed[-1].text == "lookup(q=question 999) -> result for question 999"
            assert sum(memory.folded.values()) + len(memory.completed) == 1000
        full = saver.session_memory("long", budget=None)
        assert len(full.completed) == 64 and full.folded == {"completed": 936}
        assert full == _rebuild(saver, "long")


def test_deterministic(real_run: Any, tmp_path: Path) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"], read_only=True) as saver:
        a = saver.session_memory("t1")
        b = _rebuild(saver, "t1")
    with JsonlSaver(s["store"], session_memory=False) as saver:
        c = saver.session_memory("t1")
    assert a.to_text() == c.to_text() and a == c
    assert b.to_text() == _rebuild(JsonlSaver(s["store"], read_only=True), "t1").to_text()


def test_absent_thread_has_an_empty_memory(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "store") as saver:
        memory = saver.session_memory("nobody")
        assert memory.is_empty and memory.turns == 0
        assert not saver.store.has_files("nobody")


async def test_async_twin(real_run: Any) -> None:
    s, _ = real_run
    with JsonlSaver(s["store"]) as saver:
        assert await saver.asession_memory("t1") == saver.session_memory("t1")


def test_verify_reports_a_memory_file_that_disagrees_with_its_log(real_run: Any, capsys: Any) -> None:
    from langgraph_jsonl_checkpoint.cli import main as cli_main
    from langgraph_jsonl_checkpoint.disk import framing

    s, _ = real_run
    with JsonlSaver(s["store"]) as saver:
        saver.session_memory("t1")
        path = saver.store.thread_log("t1").paths.memory
    assert cli_main(["verify", s["store"]]) == 0
    capsys.readouterr()
    rec = json.loads(Path(path).read_bytes())
    rec.pop("c")
    rec["state"]["goal"] = "a goal the log never had"
    Path(path).write_bytes(framing.frame(rec))
    assert cli_main(["verify", s["store"]]) == 1
    assert "session memory file disagrees with the log" in capsys.readouterr().out
    os.unlink(path)  # derived data: deleting it is the fix
    assert cli_main(["verify", s["store"]]) == 0


async def test_async_group_commits_keep_the_memory_equal_to_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ainvoke`` under durability "async": appends land through the worker's group
    commits; the memory after each is the memory of the log up to it."""
    seen: list[SessionMemory] = []
    original = MemoryKeeper.appended

    def spy(self: MemoryKeeper, log: Any) -> None:
        original(self, log)
        assert self.builder is not None
        seen.append(self.builder.memory())

    monkeypatch.setattr(MemoryKeeper, "appended", spy)
    with JsonlSaver(tmp_path / "store") as saver:
        graph = _chatty_graph(saver)
        await saver.asession_memory("a")  # asked once: from now on the keeper follows
        for i in range(15):
            await graph.ainvoke({"messages": [HumanMessage(f"q{i}", id=f"h-{i}")]},
                                {"configurable": {"thread_id": "a"}}, durability="async")
        monkeypatch.setattr(MemoryKeeper, "appended", original)
        assert len(seen) > 15
        for kept in seen:
            assert kept == _rebuild(saver, "a", kept.covers)
        memory = await saver.asession_memory("a")
        assert (memory.goal, memory.turns, len(memory.completed)) == ("q14", 15, 15)


def test_a_long_log_without_memory_file_is_rebuilt_by_a_read_not_by_a_put(
    real_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_jsonl_checkpoint.memory import keeper as keeper_module

    s, _ = real_run
    with JsonlSaver(s["store"]) as saver:
        os.unlink(saver.store.thread_log("t1").paths.memory)
    monkeypatch.setattr(keeper_module, "REBUILD_ON_APPEND", 1000)  # bytes: the log is longer
    saver, adapter = open_store(s)
    with saver, within(60):
        graph = graph_for(s, saver, adapter, handle_tool_errors=True)
        log = saver.store.thread_log("t1")
        before = log.refresh().last_seq
        graph.invoke({"messages": [HumanMessage("and one more", id="human-3")]}, config("t1"))
        assert log.index.last_seq > before + 3
        [keeper] = [o for o in log.observers if isinstance(o, MemoryKeeper)]
        assert keeper.builder is None  # the puts left the rebuild to the next read
        memory = saver.session_memory("t1", budget=None)
        assert memory == _rebuild(saver, "t1")
        assert keeper.builder is not None
        saver.put_writes(saver.get_tuple(config("t1")).config, [("custom", 1)], "task-x")
        assert keeper.builder is not None and keeper.builder.seq == log.index.last_seq


def test_a_log_dropped_from_the_open_set_keeps_its_memory_without_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many threads taking turns (more than the open set holds), each turn asking for
    the thread's memory (as the memory middleware does): a log dropped from the open
    set writes its memory file, so its next ask continues from it instead of reading the
    whole log again, and the memory still equals a rebuild."""
    rebuilt_from_start: list[str] = []
    original = MemoryKeeper._feed_from

    def spy(self: MemoryKeeper, offset: int) -> bool:
        if offset == 0:
            rebuilt_from_start.append(self.log.thread_id)
        return original(self, offset)

    monkeypatch.setattr(MemoryKeeper, "_feed_from", spy)
    with JsonlSaver(tmp_path / "store", max_open_threads=2) as saver, within(120, "turns"):
        graph = _chatty_graph(saver)
        for turn in range(3):
            for t in ("a", "b", "c"):
                graph.invoke({"messages": [HumanMessage(f"{t} question {turn}", id=f"h-{t}-{turn}")]},
                             {"configurable": {"thread_id": t}}, durability="sync")
                saver.session_memory(t)
        assert sorted(rebuilt_from_start) == ["a", "b", "c"]  # each new log once, no more
        for t in ("a", "b", "c"):
            memory = saver.session_memory(t, budget=None)
            assert (memory.goal, memory.turns) == (f"{t} question 2", 3)
            assert memory == _rebuild(saver, t)
