"""The debug trace: events in order with durations, token usage and errors; rotation by
size; a process killed mid-run leaves a readable trace; recovery with the trace folder
deleted or damaged behaves exactly as a run that never had a tracer; delete_thread
removes it; the CLI prints the timeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_jsonl_checkpoint import ConfigError, JsonlSaver, JsonlTracer
from langgraph_jsonl_checkpoint.cli import main as cli_main
from langgraph_jsonl_checkpoint.tracing import read_events, timeline
from tests.harness.bounded import within

ROOT = Path(__file__).resolve().parents[1]


class CountingModel(BaseChatModel):
    """Asks for ``lookup`` once per human message, then answers; reports token usage."""

    @property
    def _llm_type(self) -> str:
        return "counting"

    def bind_tools(self, tools: Any, **kwargs: Any) -> CountingModel:
        return self

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        n = len(messages)
        usage = {"input_tokens": 10 * n, "output_tokens": 3, "total_tokens": 10 * n + 3}
        if isinstance(messages[-1], HumanMessage):
            args = {"q": str(messages[-1].content)}
            call = {"name": "lookup", "args": args, "id": f"c-{n}", "type": "tool_call"}
            msg = AIMessage("", id=f"ai-{n}", usage_metadata=usage, tool_calls=[call])
        else:
            msg = AIMessage(f"done after {n}", id=f"ai-{n}", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def lookup(q: str) -> str:
    """Look something up (fails for "boom")."""
    if q == "boom":
        raise ValueError("lookup exploded")
    return f"found {q}"


def _graph(checkpointer: Any) -> Any:
    model = CountingModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", ToolNode([lookup], handle_tool_errors=False))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", tools_condition)
    b.add_edge("tools", "agent")
    return b.compile(checkpointer=checkpointer)


def _cfg(thread: str, tracer: JsonlTracer | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"configurable": {"thread_id": thread}}
    if tracer is not None:
        cfg["callbacks"] = [tracer]
    return cfg


def test_events_in_order_with_durations_tokens_and_errors(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        tracer = JsonlTracer(saver)
        graph = _graph(saver)
        graph.invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg("t", tracer))
        with pytest.raises(ValueError, match="lookup exploded"):
            graph.invoke({"messages": [HumanMessage("boom", id="h1")]}, _cfg("t", tracer))
        tracer.close()
        rows = timeline(read_events(saver.store.path, "t"))
    what = [(r.kind, r.name, r.status) for r in rows]
    assert what == [
        ("graph", "LangGraph", "ok"),
        ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
        ("node", "tools", "ok"), ("tool", "lookup", "ok"),
        ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
        ("graph", "LangGraph", "error"),
        ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
        ("node", "tools", "error"), ("tool", "lookup", "error"),
    ]
    assert [r.depth for r in rows[:5]] == [0, 1, 2, 1, 2]
    assert all(r.seconds is not None and r.seconds >= 0 for r in rows)
    assert rows[0].seconds >= sum(r.seconds for r in rows[1:7] if r.depth == 1)  # type: ignore[operator]
    assert rows[2].tokens == {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
    assert rows[6].tokens == {"input_tokens": 30, "output_tokens": 3, "total_tokens": 33}
    assert "ValueError: lookup exploded" in (rows[-1].error or "")
    starts = [e["at"] for e in read_events(str(tmp_path / "s"), "t") if e["ev"] == "start"]
    assert starts == sorted(starts)
    # the log never holds a trace event
    log = (tmp_path / "s" / "threads").glob("*.jsonl")
    assert not any(b'"ev":"start"' in p.read_bytes() and b'"kind":"node"' in p.read_bytes() for p in log)


def test_rotation_bounds_the_files(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s") as saver, within(120):
        tracer = JsonlTracer(saver, max_bytes=2048)
        graph = _graph(saver)
        for i in range(30):
            graph.invoke({"messages": [HumanMessage(f"q{i}", id=f"h{i}")]}, _cfg("t", tracer))
        tracer.close()
        files = sorted(os.listdir(tmp_path / "s" / "traces"))
        assert len(files) == 3 and [f.split(".", 1)[1] for f in files] == ["1.jsonl", "2.jsonl", "jsonl"]
        longest_line = 600
        assert all(os.path.getsize(tmp_path / "s" / "traces" / f) <= 2048 + longest_line for f in files)
        rows = timeline(read_events(saver.store.path, "t"))
        # the newest run is whole; older ones were rotated away
        assert rows[-1].kind == "model" and rows[-1].status == "ok"
        assert len(rows) < 30 * 7



def test_open_trace_files_are_bounded_and_a_closed_one_is_appended_to_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tracer seeing many threads keeps at most ``MAX_OPEN_FILES`` trace files (a
    descriptor each) open; a thread whose file was let go gets its next lines appended
    to the same file."""
    from langgraph_jsonl_checkpoint.tracing import tracer as tracer_module

    monkeypatch.setattr(tracer_module, "MAX_OPEN_FILES", 2, raising=False)
    with JsonlSaver(tmp_path / "s") as saver, within(120):
        tracer = JsonlTracer(saver)
        graph = _graph(saver)
        threads = [f"t{i}" for i in range(6)]
        for turn in range(2):
            for t in threads:
                graph.invoke({"messages": [HumanMessage(f"q{turn}", id=f"h{turn}")]}, _cfg(t, tracer))
                assert len(tracer._files) <= 2
        tracer.close()
        for t in threads:
            rows = timeline(read_events(saver.store.path, t))
            assert [r.name for r in rows if r.kind == "graph"] == ["LangGraph", "LangGraph"], t
            assert len(rows) == 2 * 7, t


_CRASHING_RUN = """
import os, sys
sys.path.insert(0, {root!r})
from langchain_core.messages import HumanMessage
from langgraph_jsonl_checkpoint import ConfigError, JsonlSaver, JsonlTracer
import tests.test_tracer as t

crash = sys.argv[2] == "crash"
@t.tool
def lookup(q: str) -> str:
    '''Look something up.'''
    if crash:
        os._exit(3)
    return "found " + q
t.lookup = lookup
saver = JsonlSaver(sys.argv[1])
cfg = {{"configurable": {{"thread_id": "t"}}}}
if sys.argv[3] == "trace":
    cfg["callbacks"] = [JsonlTracer(saver)]
graph = t._graph(saver)
# sync: the checkpoint before the tool is durable when the tool kills the process
out = graph.invoke({{"messages": [HumanMessage("cats", id="h0")]}} if crash else None, cfg, durability="sync")
# a ToolMessage's id is random: left out
print(json.dumps([[m.type, None if m.type == "tool" else m.id, m.content] for m in out["messages"]]))
"""


def _run(store: Path, phase: str, trace: str) -> subprocess.CompletedProcess[str]:
    code = "import json\n" + _CRASHING_RUN.format(root=str(ROOT))
    return subprocess.run([sys.executable, "-c", code, str(store), phase, trace], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("damage", ["delete", "garble"])
def test_crash_leaves_a_readable_trace_and_recovery_ignores_it(tmp_path: Path, damage: str) -> None:
    traced, plain = tmp_path / "traced", tmp_path / "plain"
    assert _run(traced, "crash", "trace").returncode == 3
    assert _run(plain, "crash", "none").returncode == 3
    rows = timeline(read_events(str(traced), "t"))
    assert [(r.kind, r.name, r.status) for r in rows] == [
        ("graph", "LangGraph", "unfinished"), ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
        ("node", "tools", "unfinished"), ("tool", "lookup", "unfinished")]
    folder = traced / "traces"
    if damage == "delete":
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()
    else:
        for f in folder.iterdir():
            f.write_bytes(b"\x00garbage{" + f.read_bytes()[7:] + b"\xff\n")
    resumed_traced = _run(traced, "resume", "trace")
    resumed_plain = _run(plain, "resume", "none")
    assert resumed_traced.returncode == 0, resumed_traced.stderr
    assert resumed_plain.returncode == 0, resumed_plain.stderr
    messages = json.loads(resumed_traced.stdout)
    assert messages == json.loads(resumed_plain.stdout)
    assert [m[0] for m in messages] == ["human", "ai", "tool", "ai"]
    # the resumed run's events are there, after whatever was left
    assert timeline(read_events(str(traced), "t"))[-1].kind == "model"


def test_delete_thread_removes_the_trace_and_the_cli_prints_it(tmp_path: Path, capsys: Any) -> None:
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        tracer = JsonlTracer(saver)
        _graph(saver).invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg("t", tracer))
        tracer.close()
    assert cli_main(["trace", str(tmp_path / "s"), "t"]) == 0
    out = capsys.readouterr().out
    assert "graph LangGraph" in out and "    model CountingModel" in out and "10+3" in out
    assert cli_main(["trace", str(tmp_path / "s"), "t", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["kind"] == "graph" and rows[2]["tokens"]["total_tokens"] == 13
    assert cli_main(["trace", str(tmp_path / "s"), "nobody"]) == 2
    with JsonlSaver(tmp_path / "s") as saver:
        saver.delete_thread("t")
    assert os.listdir(tmp_path / "s" / "traces") == []


@pytest.mark.parametrize("how", ["deleted", "archived and restored"])
def test_a_tracer_keeps_tracing_a_thread_whose_file_was_taken_away(tmp_path: Path, how: str) -> None:
    """A tracer that kept a thread's trace file open wrote every later line into the
    file a delete (or an archive) had taken away: the lines were lost, and after a
    restore the trace shown stopped at the archiving."""
    with JsonlSaver(tmp_path / "s", ttl={"default_ttl": 60, "strategy": "archive"}) as saver, within(60):
        tracer = JsonlTracer(saver)
        graph = _graph(saver)
        graph.invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg("t", tracer))
        if how == "deleted":
            saver.delete_thread("t")
        else:
            import time

            saver.sweep(now=time.time() + 7200)
            saver.restore("t")
        graph.invoke({"messages": [HumanMessage("dogs", id="h1")]}, _cfg("t", tracer))
        tracer.close()
        events = read_events(str(tmp_path / "s"), "t")
    runs = [e for e in events if e.get("ev") == "start" and e.get("kind") == "graph"]
    # deleted: the second run's lines alone (they were lost); restored: both runs' lines
    assert len(runs) == (1 if how == "deleted" else 2), events


def test_an_interrupt_is_traced_as_a_pause_not_an_error(tmp_path: Path, capsys: Any) -> None:
    """``interrupt()`` waits for a person (the replay adapter's question about uncertain
    calls is one); the trace showed it as a failed node (``error: GraphInterrupt: ...``)."""
    from langgraph.types import Command, interrupt

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": "send it?"})
        return {"messages": [AIMessage(f"answer: {answer}", id="ai-1")]}

    b = StateGraph(MessagesState)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    with JsonlSaver(tmp_path / "s") as saver, within(60):
        tracer = JsonlTracer(saver)
        graph = b.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("hi", id="h0")]}, _cfg("t", tracer))
        graph.invoke(Command(resume="yes"), _cfg("t", tracer))
        tracer.close()
    rows = timeline(read_events(str(tmp_path / "s"), "t"))
    asked = [r for r in rows if r.kind == "node" and r.name == "ask"]
    assert [r.status for r in asked] == ["interrupted", "ok"], rows
    assert asked[0].error is None and "send it?" in (asked[0].interrupt or ""), asked[0]
    assert cli_main(["trace", str(tmp_path / "s"), "t"]) == 0
    out = capsys.readouterr().out
    assert "interrupted: " in out and "send it?" in out and "GraphInterrupt" not in out, out


def test_untraced_thread_gets_a_clear_message(tmp_path: Path, capsys: Any) -> None:
    with JsonlSaver(tmp_path / "s") as saver:
        _graph(saver).invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg("t"))
    assert cli_main(["trace", str(tmp_path / "s"), "t"]) == 2
    assert "JsonlTracer" in capsys.readouterr().err


def test_tool_message_shape_unchanged_by_the_tracer(tmp_path: Path) -> None:
    """The same run with and without the tracer stores the same messages."""
    outs = []
    for thread, tracer in (("a", None), ("b", JsonlTracer(tmp_path / "s"))):
        with JsonlSaver(tmp_path / "s") as saver:
            out = _graph(saver).invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg(thread, tracer))
            outs.append([(type(m), m.id if not isinstance(m, ToolMessage) else None, m.content)
                         for m in out["messages"]])
    assert outs[0] == outs[1]


def test_a_tracer_given_a_path_that_is_no_store_says_so_and_makes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A mistyped store path made a directory of its own with the traces in it, silently:
    ``langgraph-jsonl trace`` on the real store then said the thread had no trace and to
    pass a JsonlTracer, which the user had done."""
    typo = tmp_path / "checkpoint"
    tracer = JsonlTracer(typo)
    with JsonlSaver(tmp_path / "checkpoints") as saver, within(60):
        for thread in ("a", "b"):
            _graph(saver).invoke({"messages": [HumanMessage("cats", id="h0")]}, _cfg(thread, tracer))
    tracer.close()
    assert not typo.exists()
    warned = [r.getMessage() for r in caplog.records if str(typo) in r.getMessage()]
    assert len(warned) == 1, warned  # once, not at every event
    assert "not a store" in warned[0] and "JsonlTracer(saver)" in warned[0], warned
    assert f"there is no directory {typo}" in warned[0], warned  # not "no STORE.json in it"
    assert f"did you mean {tmp_path / 'checkpoints'}?" in warned[0], warned


def test_a_tracer_given_another_checkpointer_is_refused_naming_it() -> None:
    """``JsonlTracer(InMemorySaver())`` failed with "TypeError: expected str, bytes or
    os.PathLike object, not InMemorySaver"."""
    from langgraph.checkpoint.memory import InMemorySaver

    with pytest.raises(ConfigError, match=r"JsonlTracer: .*InMemorySaver.*JsonlSaver"):
        JsonlTracer(InMemorySaver())


@pytest.mark.parametrize("value", [0, -1, 1023, True, "x", 4096.0, None])
def test_a_tracer_s_max_bytes_that_is_no_size_is_refused_naming_the_option(
    tmp_path: Path, value: Any
) -> None:
    """``max_bytes=0`` or ``-1`` was raised to 1,024 bytes silently (``True`` too), and
    ``"x"`` failed with a bare ``ValueError`` that did not name the option."""
    saver = JsonlSaver(tmp_path / "s")
    refused = r"JsonlTracer: max_bytes must be a whole number of bytes, 1024 or more"
    with pytest.raises(ConfigError, match=refused):
        JsonlTracer(saver, max_bytes=value)
    assert JsonlTracer(saver, max_bytes=1024).max_bytes == 1024
    saver.close()


def test_an_async_run_is_traced_without_a_blocking_call_in_its_event_loop(
    tmp_path: Path, caplog: Any
) -> None:
    """`langgraph dev` refuses blocking calls in its event loop (blockbuster): the tracer
    wrote each line there, so every graph and node event of an async run was dropped
    with "Error in JsonlTracer.on_chain_start callback: BlockingError" and the trace was
    nearly empty. Lines written from an event loop now go to a writer thread, in order;
    the timeline is the one a sync run gives."""
    import asyncio
    import logging

    from blockbuster import blockbuster_ctx

    with JsonlSaver(tmp_path / "s") as saver, within(60):
        graph = _graph(saver)
        graph.invoke({"messages": [HumanMessage("warm", id="h0")]}, _cfg("warm"))  # imports done
        tracer = JsonlTracer(saver)
        with caplog.at_level(logging.WARNING), blockbuster_ctx():
            asyncio.run(graph.ainvoke({"messages": [HumanMessage("cats", id="h1")]}, _cfg("t", tracer)))
        assert "BlockingError" not in caplog.text, caplog.text
        tracer.close()
        rows = timeline(read_events(saver.store.path, "t"))
    assert [(r.kind, r.name, r.status) for r in rows] == [
        ("graph", "LangGraph", "ok"),
        ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
        ("node", "tools", "ok"), ("tool", "lookup", "ok"),
        ("node", "agent", "ok"), ("model", "CountingModel", "ok"),
    ]
