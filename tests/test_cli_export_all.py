"""`langgraph-jsonl export --all DIR` run again: DIR follows the store."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk.paths import thread_file_stem
from tests.harness.bounded import within
from tests.harness.scratch import CutShort


def _store(path: Path, threads: tuple[str, ...]) -> None:
    model = FakeListChatModel(responses=["hello!"])
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "agent")
    with JsonlSaver(path) as saver:
        graph = builder.compile(checkpointer=saver)
        for thread in threads:
            graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread}})


@pytest.mark.parametrize("fmt", ["html", "md", "jsonl"])
def test_export_all_again_removes_its_pages_of_threads_gone_and_nothing_else(
    fmt: str, tmp_path: Path, capsys
) -> None:
    # Run again after a thread was deleted or archived, the export left the old page in
    # DIR while its new index no longer listed it: DIR no longer said what the store held.
    store, out = tmp_path / "checkpoints", tmp_path / "transcripts"
    _store(store, ("t-1", "t-2", "t-3 `odd` <id>"))
    assert main(["export", str(store), "--all", str(out), "--format", fmt]) == 0
    capsys.readouterr()
    page = {t: out / f"{thread_file_stem(t)}.{fmt}" for t in ("t-1", "t-2", "t-3 `odd` <id>")}
    assert all(p.is_file() for p in page.values())
    # the user's own files in DIR, one named like a page of the export
    mine = {out / "notes.txt": "mine\n", out / f"mine-{'0' * 32}.{fmt}": "my own page\n",
            out / f"{thread_file_stem('t-9')}.{fmt}": "looks like a page, is not one\n"}
    for path, text in mine.items():
        path.write_text(text)

    with JsonlSaver(store) as saver, within(30):
        saver.delete_thread("t-2")
        old = time.time() - 8 * 24 * 3600
        os.utime(saver.store.thread_log("t-3 `odd` <id>").path, (old, old))
        saver.sweep({"default_ttl": 24 * 60, "strategy": "archive"})
        assert [a.thread_id for a in saver.archived()] == ["t-3 `odd` <id>"]

    assert main(["export", str(store), "--all", str(out), "--format", fmt]) == 0
    said = capsys.readouterr().out
    assert page["t-1"].is_file()
    assert not page["t-2"].exists() and not page["t-3 `odd` <id>"].exists()
    assert {p: p.read_text() for p in mine} == mine  # nothing of the user's touched
    assert "removed 2 page(s) of threads no longer in the store (deleted or archived): " in said, said
    assert "t-2" in said and str(out) in said

    assert main(["export", str(store), "--all", str(out), "--format", fmt, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["removed"] == []
    assert [f["thread_id"] for f in result["files"]] == ["t-1", None]


def test_a_ctrl_c_while_a_page_is_written_leaves_the_page_before_whole(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``export --all`` run again opened each page for writing (emptying it), then wrote
    it: a Ctrl-C in between left an empty or half page where the last export's was. The
    page before stays whole, and nothing else is left in DIR."""
    from langgraph_jsonl_checkpoint.inspection import export

    store, out = tmp_path / "checkpoints", tmp_path / "transcripts"
    _store(store, ("t-1",))
    assert main(["export", str(store), "--all", str(out), "--format", "md"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _store(store, ("t-1",))  # a second turn: the page changes

    monkeypatch.setattr(export, "open", CutShort, raising=False)
    with pytest.raises(KeyboardInterrupt):
        export.export_store(JsonlSaver(store, read_only=True), str(out), "md")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_export_all_to_dash_is_refused_and_creates_nothing(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``export --all -`` made a directory named ``-`` in the current directory, where
    ``-`` is stdout elsewhere (``-o -``): --all writes many files, so it cannot be
    stdout. It is refused (exit status 2, one line saying what to give instead)."""
    store = tmp_path / "checkpoints"
    _store(store, ("t-1",))
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["export", str(store), "--all", "-", "--format", "md"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("error: ") and said.err.count("\n") == 1, said.err
    assert "--all" in said.err and "directory" in said.err and "-o -" in said.err, said.err
    assert sorted(os.listdir(tmp_path)) == before  # no directory named "-"
    # a directory named "-" given as a path is still a directory
    assert main(["export", str(store), "--all", "./-", "--format", "md"]) == 0
    assert (tmp_path / "-" / "index.md").is_file()
