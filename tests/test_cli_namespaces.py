"""``--ns``: the commands that read one graph of a thread (``history``, ``show``,
``diff``, ``tail``) on a thread with a subgraph (``checkpointer=True``, stopped on an
``interrupt()`` inside it). The subgraph's checkpoints are read as LangGraph's own
``InMemorySaver`` holds them; a namespace the thread does not have is an error that
names the thread and the namespaces it has, never an empty listing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph, add_messages
from langgraph.types import interrupt

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.bounded import within


class State(TypedDict):
    messages: Annotated[list, add_messages]


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt("which account?")
    return {"messages": [AIMessage(f"using {answer}", id="sub-ai")]}


def _graph(checkpointer: Any) -> Any:
    sub = StateGraph(State)
    sub.add_node("ask", _ask)
    sub.add_edge(START, "ask")
    parent = StateGraph(State)
    parent.add_node("sub", sub.compile(checkpointer=True))
    parent.add_edge(START, "sub")
    return parent.compile(checkpointer=checkpointer)


CFG: Any = {"configurable": {"thread_id": "with sub"}}


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, InMemorySaver]:
    """A store whose thread waits inside its subgraph, and the same run on InMemorySaver."""
    memory = InMemorySaver()
    _graph(memory).invoke({"messages": [HumanMessage("pay the bill", id="h1")]}, CFG)
    path = tmp_path / "store"
    with JsonlSaver(path) as saver:
        _graph(saver).invoke({"messages": [HumanMessage("pay the bill", id="h1")]}, CFG)
    return str(path), memory


def test_a_subgraphs_checkpoints_are_read_with_its_namespace(
    store: tuple[str, InMemorySaver], capsys: pytest.CaptureFixture[str]
) -> None:
    path, memory = store
    sub_state = _graph(memory).get_state(CFG, subgraphs=True).tasks[0].state
    sub_ns = sub_state.config["configurable"]["checkpoint_ns"]
    expected = [(t.metadata["step"], t.metadata["source"])
                for t in memory.list({"configurable": {"thread_id": "with sub", "checkpoint_ns": sub_ns}})]
    with within(30, "history --ns"):
        assert main(["history", path, "with sub", "--ns", sub_ns, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["step"], r["source"]) for r in rows] == expected
    assert rows[0]["next"] == ["ask"] and rows[0]["waiting_for"] == ["interrupt"]


@pytest.mark.parametrize("command", [
    ["history"], ["show"], ["tail"], ["history", "--json"], ["show", "--json"], ["diff", "LATEST", "LATEST"]])
def test_a_namespace_the_thread_does_not_have_is_an_error_naming_those_it_has(
    store: tuple[str, InMemorySaver], capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    path, _ = store
    with JsonlSaver(path, read_only=True) as saver:
        latest = saver.get_tuple(CFG).config["configurable"]["checkpoint_id"]  # a root checkpoint
    operands = [latest if c == "LATEST" else c for c in command[1:]]
    with within(30, " ".join(command)):
        code = main([command[0], path, "with sub", *operands, "--ns", "nope"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "'with sub'" in err and "'nope'" in err
    assert "namespaces: '' (the root graph), 'sub'" in err and "--ns" in err


def test_search_tells_which_graph_each_hit_is_in(
    store: tuple[str, InMemorySaver], capsys: pytest.CaptureFixture[str]
) -> None:
    """The human message is in the root graph's state and in the subgraph's (its input):
    a hit per graph, and the table says which graph each is in, as --json does."""
    path, _ = store
    with within(30, "search"):
        assert main(["search", path, "pay the bill", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert sorted(h["ns"] for h in hits) == ["", "sub"]
    with within(30, "search"):
        assert main(["search", path, "pay the bill"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["THREAD", "NS"]
    assert sorted(line.split("  ")[1].strip() for line in lines) == ["-", "sub"]


@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_subgraphs_checkpoint_named_without_its_namespace_says_which_it_is_in(
    store: tuple[str, InMemorySaver], capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """``search`` names a subgraph's checkpoint; ``show`` of it without ``--ns`` said the
    thread had no such checkpoint. It says the namespace it is in, and with it, shows it."""
    path, _ = store
    assert main(["search", path, "pay the bill", "--json"]) == 0
    (hit,) = [h for h in json.loads(capsys.readouterr().out) if h["ns"] == "sub"]
    cid = hit["checkpoint_id"]
    operands = [cid] if command == "show" else [cid, cid]
    with within(30, command):
        assert main([command, path, "with sub", *operands]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"checkpoint {cid} is in namespace 'sub'" in err and "--ns sub" in err, err
    with within(30, command):
        assert main([command, path, "with sub", *operands, "--ns", "sub"]) == 0
