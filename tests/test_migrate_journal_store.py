"""The replay journal of checkpointer objects: ``copy_threads(..., target_store=, source_store=)``.

A target given as an object (``PostgresSaver(..., serde=...)``, the route the docs give for
an encrypted store) has no journal store of its own: the caller names the one its
``ReplayAdapter(store=...)`` reads. When the source has journal records and the target
has nowhere to put them, the report says so (a problem, ``ok`` false) for every kind of
target, dry run or not; ``journal=False`` leaves the journal behind on purpose.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.store.postgres import PostgresStore
from langgraph.types import Command, interrupt

from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter
from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.bounded import within

SENT: list[str] = []
CFG: Any = {"configurable": {"thread_id": "t"}}


@tool
def send_email(to: str) -> str:
    """Send an email (a side effect that must happen once)."""
    SENT.append(to)
    return f"sent to {to}"


@tool
def approve(what: str) -> str:
    """Ask a person."""
    return f"approved: {interrupt({'approve': what})}"


def _agent(state: MessagesState) -> dict[str, Any]:
    if isinstance(state["messages"][-1], HumanMessage):
        return {"messages": [AIMessage("", id="ai1", tool_calls=[
            {"name": "send_email", "args": {"to": "ada"}, "id": "c-email"},
            {"name": "approve", "args": {"what": "refund"}, "id": "c-approve"}])]}
    return {"messages": [AIMessage("all done", id="ai2")]}


def build(adapter: ReplayAdapter, checkpointer: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("agent", _agent)
    g.add_node("tools", adapter.tool_node([send_email, approve]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store whose thread ``t`` sent its email and waits for a person in the tools node."""
    SENT.clear()
    with JsonlSaver(tmp_path / "store") as saver, within(120, "the first run"):
        build(ReplayAdapter(saver), saver).invoke({"messages": [("user", "go")]}, CFG)
        assert SENT == ["ada"]
        assert {r.key.call_id: r.state for r in saver.tool_calls("t")}["c-email"] == "finished"
    return tmp_path / "store"


@contextmanager
def postgres(url: str) -> Iterator[tuple[Any, Any]]:
    with PostgresSaver.from_conn_string(url) as saver, PostgresStore.from_conn_string(url) as pg_store:
        saver.setup()
        pg_store.setup()
        yield saver, pg_store


def test_a_postgres_saver_object_gets_the_journal_in_the_store_named(store: Path, tmp_path: Path,
                                                                      pg_url: str) -> None:
    with JsonlSaver(store, read_only=True) as source:
        calls = [(r.key, r.state, r.args) for r in source.tool_calls("t")]
    with postgres(pg_url) as (saver, pg_store), JsonlSaver(store, read_only=True) as source:
        report = copy_threads(source, saver, target_store=pg_store)
        assert report.ok and report.journal_records > 0, report.to_json()
        again = copy_threads(source, saver, target_store=pg_store)
        assert again.ok and again.journal_records == 0  # nothing twice

    # Resumed on PostgreSQL with the adapter on that store: the finished email is not sent again.
    SENT.clear()
    with postgres(pg_url) as (saver, pg_store), within(120, "the resumed run"):
        result = build(ReplayAdapter(store=pg_store), saver).invoke(Command(resume="yes"), CFG)
    assert SENT == []
    assert result["messages"][-1].content == "all done"

    # And back from the objects, journal and all (the answer given on PostgreSQL included).
    with postgres(pg_url) as (saver, pg_store), JsonlSaver(tmp_path / "back") as back:
        report = copy_threads(saver, back, source_store=pg_store)
        assert report.ok and report.journal_records > 0, report.to_json()
        states = {r.key.call_id: r.state for r in back.tool_calls("t")}
        assert states == {"c-email": "finished", "c-approve": "finished"}
        assert [(r.key, r.args) for r in back.tool_calls("t")] == [(k, a) for k, _, a in calls]


@contextmanager
def _objects(kind: str, tmp_path: Path, pg_url: str) -> Iterator[Any]:
    if kind == "InMemorySaver":
        yield InMemorySaver()
    elif kind == "SqliteSaver":
        with closing(sqlite3.connect(tmp_path / "app.db", check_same_thread=False)) as conn:
            yield SqliteSaver(conn)
    else:
        with postgres(pg_url) as (saver, _):
            yield saver


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("kind", ["InMemorySaver", "SqliteSaver", "PostgresSaver"])
def test_a_journal_with_nowhere_to_go_is_a_problem(store: Path, tmp_path: Path, pg_url: str, kind: str,
                                                   dry_run: bool) -> None:
    with _objects(kind, tmp_path, pg_url) as target, JsonlSaver(store, read_only=True) as source:
        report = copy_threads(source, target, dry_run=dry_run)
        assert not report.ok and report.journal_records == 0
        [thread] = report.problems
        assert thread.checkpoints > 0  # the checkpoints were (would be) copied all the same
        assert "6 tool-call journal record(s) were not copied" in str(thread.problem)
        assert "target_store=" in str(thread.problem) and "journal=False" in str(thread.problem)
        assert report.to_json()["problems"] == [{"thread_id": "t", "problem": thread.problem}]
        left = copy_threads(source, target, dry_run=dry_run, journal=False)
        assert left.ok and not left.problems  # left behind on purpose


def test_an_sqlite_url_without_sqlite_store_says_so_too(store: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``SqliteSaver`` file whose ``SqliteStore`` cannot be imported (an older
    langgraph-checkpoint-sqlite): no journal store there either."""
    monkeypatch.setitem(sys.modules, "langgraph.store.sqlite", None)  # its import fails
    url = "sqlite:///" + str(tmp_path / "app.db")
    for dry_run in (True, False):
        report = copy_threads(str(store), url, dry_run=dry_run)
        assert not report.ok and "journal record(s) were not copied" in str(report.threads[0].problem)
    assert copy_threads(str(store), url, journal=False).ok


def test_a_thread_without_journal_records_is_no_problem(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s") as saver:
        g = StateGraph(MessagesState)
        g.add_node("agent", lambda s: {"messages": [AIMessage("hi", id="a1")]})
        g.add_edge(START, "agent")
        g.compile(checkpointer=saver).invoke({"messages": [("user", "hello")]}, CFG)
        report = copy_threads(saver, InMemorySaver())
        assert report.ok and report.checkpoints > 0 and not report.problems
