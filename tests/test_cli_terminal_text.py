"""What a thread's messages say is untrusted text (a user typed it, a model or a tool
wrote it): printed to a terminal as it is, an escape sequence in it clears the screen,
recolours or retitles the terminal, a carriage return overwrites what was printed
before it, a bidirectional override shows text in another order than stored. The
commands that print messages (``show``, ``tail``, ``diff``, ``search``, ``tools``,
``memory``, and ``export`` to a terminal) show such characters as escapes; ``--json``,
and an export piped into a file, keep the text as stored."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph, add_messages

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.bounded import within

EVIL = "pay \x1b[2J\x1b]0;owned\x07 now\r hidden \x9b31m and \u202edesrever"
#: What a terminal acts on: C0 controls but newline and tab, DEL, C1 controls, bidi overrides.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class State(TypedDict):
    messages: Annotated[list, add_messages]


def _echo(state: State) -> dict[str, Any]:
    call = {"name": "t\x1b[1mool", "args": {"text": EVIL}, "id": "c1"}
    return {"messages": [AIMessage(f"echo {EVIL}", id="a1", tool_calls=[call])]}


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, list[str]]:
    g = StateGraph(State)
    g.add_node("echo", _echo)
    g.add_edge(START, "echo")
    path = tmp_path / "store"
    with JsonlSaver(path) as saver:
        graph = g.compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "t1"}}
        graph.invoke({"messages": [HumanMessage(EVIL, id="h1")]}, cfg)
        ids = [t.config["configurable"]["checkpoint_id"] for t in graph.get_state_history(cfg)]
    return str(path), ids


@pytest.mark.parametrize("argv", [
    ["show", "t1"], ["tail", "t1"], ["search", "pay"], ["tools", "t1"], ["diff", "t1", "OLDEST", "LATEST"],
    ["memory", "t1"],
])
def test_message_text_cannot_drive_the_terminal(
    store: tuple[str, list[str]], capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path, ids = store
    operands = [ids[-1] if a == "OLDEST" else ids[0] if a == "LATEST" else a for a in argv[1:]]
    with within(30, argv[0]):
        assert main([argv[0], path, *operands]) == 0
    out = capsys.readouterr().out
    assert UNSAFE.findall(out) == [], out
    assert "\\x1b[2J" in out or "\\u001b[2J" in out, out  # shown, as an escape


def test_json_keeps_the_text_as_stored(
    store: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = store
    assert main(["show", path, "t1", "--json"]) == 0
    messages = json.loads(capsys.readouterr().out)["messages"]
    assert messages[0]["text"] == EVIL


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl"])
def test_an_export_to_a_terminal_is_escaped_and_to_a_pipe_as_stored(
    store: tuple[str, list[str]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    """``export THREAD`` without ``-o`` prints the transcript: on a terminal its escape
    sequences acted on the screen; piped into a file (``> t.md``) it is the file."""
    import sys

    path, _ = store
    with within(30, "export to a pipe"):
        assert main(["export", path, "t1", "--format", fmt]) == 0
    piped = capsys.readouterr().out
    assert "\x1b[2J" in piped or "\\u001b[2J" in piped  # as stored (JSON escapes it itself)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with within(30, "export to a terminal"):
        assert main(["export", path, "t1", "--format", fmt]) == 0
    shown = capsys.readouterr().out
    assert UNSAFE.findall(shown) == [], shown
