"""Smaller things a new user meets: ``":memory:"`` stores, error messages that say what
and where, a directory made private with a word about it."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages

from langgraph_jsonl_checkpoint import (
    AsyncJsonlSaver,
    ConfigError,
    EncodeError,
    JsonlSaver,
    ThreadDeletedError,
)
from tests.harness.state_graphs import build_counter_graph


def _graph(saver):
    builder = StateGraph(MessagesState)
    builder.add_node("echo", lambda state: {"messages": [AIMessage(f"seen {len(state['messages'])}")]})
    builder.add_edge(START, "echo")
    return builder.compile(checkpointer=saver)


def test_from_conn_string_memory_is_a_temporary_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with JsonlSaver.from_conn_string(":memory:") as saver:
        where = saver.temporary_path
        assert where is not None and os.path.isdir(where)
        graph = _graph(saver)
        cfg = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("hi")]}, cfg)
        assert [m.content for m in graph.get_state(cfg).values["messages"]] == ["hi", "seen 1"]
    assert not os.path.exists(where)
    assert os.listdir(tmp_path) == []  # no directory named ":memory:"


@pytest.mark.parametrize("call", ["invoke", "get_state", "list", "delete_thread"])
def test_a_memory_store_used_after_close_says_it_was_closed(tmp_path: Path, monkeypatch, call: str) -> None:
    """close() removes a ":memory:" store; using the saver after it raised a bare
    FileNotFoundError naming a file in a temporary directory."""
    monkeypatch.chdir(tmp_path)
    saver = JsonlSaver(":memory:")
    graph = _graph(saver)
    cfg = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, cfg)
    saver.close()
    calls = {
        "invoke": lambda: graph.invoke({"messages": [HumanMessage("again")]}, cfg),
        "get_state": lambda: graph.get_state(cfg),
        "list": lambda: list(saver.list(None)),
        "delete_thread": lambda: saver.delete_thread("t"),
    }
    with pytest.raises(ConfigError, match=r"':memory:' store.*closed"):
        calls[call]()
    assert os.listdir(tmp_path) == []  # nothing made again


async def test_async_from_conn_string_memory_is_a_temporary_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with AsyncJsonlSaver.from_conn_string(":memory:") as saver:
        where = saver.temporary_path
        graph = _graph(saver)
        cfg = {"configurable": {"thread_id": "t"}}
        await graph.ainvoke({"messages": [HumanMessage("hi")]}, cfg)
        assert len((await graph.aget_state(cfg)).values["messages"]) == 2
    assert not os.path.exists(where)
    assert os.listdir(tmp_path) == []


def test_two_memory_stores_are_apart_and_close_removes_each() -> None:
    a, b = JsonlSaver(":memory:"), JsonlSaver(":memory:")
    assert a.temporary_path != b.temporary_path
    _graph(a).invoke({"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "t"}})
    assert b.get_tuple({"configurable": {"thread_id": "t"}}) is None
    for s in (a, b):
        s.close()
        assert not os.path.exists(s.temporary_path)
    with pytest.raises(ConfigError):
        JsonlSaver(":memory:", read_only=True)


def test_a_missing_thread_id_says_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        JsonlSaver(tmp_path / "s").get_tuple({"configurable": {}})
    text = str(err.value)
    assert "config={'configurable': {'thread_id': '...'}}" in text and "}}}" not in text


def test_an_unencodable_value_names_its_path_and_type(tmp_path: Path) -> None:
    graph = _graph(JsonlSaver(tmp_path / "s"))
    bad = AIMessage("x", additional_kwargs={"cb": lambda: 1})
    with pytest.raises(EncodeError) as err:
        graph.invoke(
            {"messages": [HumanMessage("a"), HumanMessage("b"), bad]}, {"configurable": {"thread_id": "t-1"}}
        )
    text = str(err.value)
    assert "thread 't-1'" in text
    assert '["messages"][2].additional_kwargs["cb"]' in text and "function" in text
    assert err.value.path == '["messages"][2].additional_kwargs["cb"]'


def test_an_existing_empty_directory_is_made_private_and_says_so(tmp_path: Path, caplog) -> None:
    d = tmp_path / "mounted"
    d.mkdir()
    os.chmod(d, 0o755)
    with caplog.at_level(logging.INFO, logger="langgraph_jsonl_checkpoint"):
        JsonlSaver(d).close()
    assert oct(d.stat().st_mode & 0o777) == oct(0o700)
    assert any("755" in r.getMessage() and "700" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("snapshot_every", [64, 4, 2])
def test_compact_never_grows_a_forked_agent_thread(tmp_path: Path, snapshot_every: int) -> None:
    """Compaction stores each delta as it was written when its base is in the new file:
    a fork's delta extends the fork point, and re-deriving it from the channel's newest
    value stored it in full (a compacted log grew by 1-2%)."""
    from tests.harness.answers import answers, diff_answers
    from tests.harness.flow_graphs import build_agent_graph
    from tests.harness.raw_log import ThreadFiles

    saver = JsonlSaver(tmp_path / "s", snapshot_every=snapshot_every)
    graph = build_agent_graph().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    for turn in range(12):
        graph.invoke(
            {"messages": [HumanMessage(f"what is {turn} + 2?", id=f"h{turn}")]}, cfg, durability="sync"
        )
        if turn % 3 == 2:  # time travel: continue from a checkpoint in the middle
            history = list(graph.get_state_history(cfg))
            old = history[len(history) // 2].config
            graph.invoke({"messages": [HumanMessage(f"fork {turn}", id=f"f{turn}")]}, old, durability="sync")
    before = answers(saver, "t")
    size_before, size_after = saver.compact("t")
    assert size_after <= size_before
    assert os.path.getsize(ThreadFiles.of(tmp_path / "s", "t").log) == size_after
    assert not diff_answers(answers(JsonlSaver(tmp_path / "s"), "t"), before)


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:5432/app", "sqlite:///app.db", "file:///tmp/x",
            "file:checkpoints.db", "file:./app.db?mode=rwc"]
)
def test_a_database_url_for_a_path_is_refused_pointing_to_the_migration_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """The docs show these URLs next to JsonlSaver (import, copy, export): passed as its
    path, one became nested folders (``./postgresql:/postgres@.../app/``) holding a store."""
    monkeypatch.chdir(tmp_path)
    for open_it in (JsonlSaver, JsonlSaver.from_conn_string, AsyncJsonlSaver):
        with pytest.raises(ConfigError) as err:
            saver = open_it(url)
            if hasattr(saver, "__enter__"):
                saver.__enter__()
        text = str(err.value)
        assert url in text and "langgraph-jsonl import" in text and "directory" in text, text
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_open_threads": 0}, "max_open_threads must be a whole number, 1 or more"),
        ({"max_open_threads": -1}, "max_open_threads must be a whole number, 1 or more"),
        ({"max_open_threads": "16"}, "max_open_threads must be a whole number, 1 or more"),
        ({"busy_timeout": "5"}, "busy_timeout must be a number of seconds, 0 or more"),
        ({"busy_timeout": float("nan")}, "busy_timeout must be a number of seconds, 0 or more"),
        ({"snapshot_every": "64"}, "snapshot_every must be a whole number, 1 or more"),
        ({"snapshot_every": 0}, "snapshot_every must be a whole number, 1 or more"),
        ({"snapshot_ratio": "2"}, "snapshot_ratio must be a number, 0 or more"),
        ({"snapshot_ratio": -1}, "snapshot_ratio must be a number, 0 or more"),
        # read from an environment variable: "false" is a non-empty string, so it was true
        ({"read_only": "false"}, "read_only must be True or False"),
        ({"read_only": 0}, "read_only must be True or False"),
        ({"session_memory": "false"}, "session_memory must be True or False"),
        # a serializer's name instead of one: it failed only inside the first run
        ({"serde": "json"}, "serde must be a serializer"),
        ({"serde": JsonPlusSerializer}, "serde must be a serializer"),
    ],
)
def test_a_bad_option_value_is_a_config_error_naming_the_option(
    tmp_path: Path, options: dict, words: str
) -> None:
    with pytest.raises(ConfigError) as err:
        JsonlSaver(tmp_path / "s", **options)
    assert words in str(err.value) and repr(next(iter(options.values())))[:4] in str(err.value)
    assert not (tmp_path / "s").exists()  # refused before anything was made


def test_an_empty_path_is_refused_as_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.py").write_text("")  # a project folder: not empty, not a store
    with pytest.raises(ConfigError, match="path is empty"):
        JsonlSaver("")


@pytest.mark.parametrize("path", [None, 123])
def test_a_path_that_is_not_one_is_refused_saying_what_to_pass(path: object) -> None:
    """``JsonlSaver(os.environ.get("STORE"))`` with the variable unset: a bare
    ``TypeError: expected str, bytes or os.PathLike object, not NoneType``. It now says
    what was passed and what a path is."""
    with pytest.raises(ConfigError, match="JsonlSaver path is") as caught:
        JsonlSaver(path)  # type: ignore[arg-type]
    assert repr(path) in str(caught.value) and "JsonlSaver('./checkpoints')" in str(caught.value)
    if path is None:
        assert "environment variable" in str(caught.value)


def test_a_string_with_a_lone_surrogate_is_stored_as_langgraph_s_savers_store_it(tmp_path: Path) -> None:
    """``os.fsdecode`` of a file name that is not UTF-8 gives a str with a lone surrogate.
    LangGraph's savers store it with ``?`` in its place and the run goes on; this saver
    failed the run with a bare ``TypeError`` from the JSON encoder (a value, a message,
    metadata). It now stores what InMemorySaver stores, in this process and the next."""
    odd = os.fsdecode(b"report-\xff.txt")

    def node(state: State) -> dict:
        return {"name": odd, "messages": [AIMessage(f"saved {odd}", id="a1")]}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    cfg = {"configurable": {"thread_id": "t"}, "metadata": {"file": odd}}
    seen = []
    for saver in (InMemorySaver(), JsonlSaver(tmp_path / "s")):
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"name": "start", "messages": [HumanMessage(odd, id="h1")]}, cfg)
        tup = saver.get_tuple(cfg)
        seen.append((graph.get_state(cfg).values, tup.metadata.get("file")))
    assert seen[0][0]["name"] == "report-?.txt"  # what LangGraph's own saver does
    assert seen[1] == seen[0]
    saver.close()
    fresh = JsonlSaver(tmp_path / "s", read_only=True)
    tup = fresh.get_tuple(cfg)
    assert (builder.compile(checkpointer=fresh).get_state(cfg).values, tup.metadata.get("file")) == seen[0]
    fresh.close()


class State(TypedDict):
    name: str
    messages: Annotated[list, add_messages]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_graph_run_on_a_read_only_saver_is_refused_before_any_node_runs(
    tmp_path: Path, durability: str
) -> None:
    """A run on a read_only=True saver failed at its first save with a DurabilityError
    (an OSError: code retrying on OSError retried it), saying nothing of what to do; in
    durability "async" and "exit" its first node (a model call, a tool with side
    effects) had already run. It is now refused as it reads the thread, before any
    node runs, with a ConfigError naming read_only."""
    with JsonlSaver(tmp_path / "s") as saver:
        _graph(saver).invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t"}})
    ran = []
    saver = JsonlSaver(tmp_path / "s", read_only=True)
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda s: ran.append(1) or {"messages": [AIMessage("again")]})
    builder.add_edge(START, "agent")
    graph = builder.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConfigError, match=r"read-only.*read_only") as err:
        graph.invoke({"messages": [HumanMessage("more")]}, cfg, durability=durability)
    assert not isinstance(err.value, OSError) and "'t'" in str(err.value)
    assert ran == []
    assert [m.content for m in graph.get_state(cfg).values["messages"]] == ["hi", "seen 1"]  # reads work
    with pytest.raises(ConfigError, match=r"read-only.*read_only"):
        saver.delete_thread("t")
    saver.close()


def test_update_state_on_a_config_from_before_delete_thread_says_why_it_is_refused(
    tmp_path: Path,
) -> None:
    # InMemorySaver accepts this (a new checkpoint whose parent is gone); the tombstone
    # refuses it, since it may carry deleted values. The message must fit this cause too:
    # no run was saving, the user kept a config from get_state_history.
    with JsonlSaver(tmp_path / "s") as saver:
        graph = build_counter_graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        graph.invoke({"n": 1}, cfg)
        old = list(graph.get_state_history(cfg))[1].config
        saver.delete_thread("t")
        graph.invoke({"n": 2}, cfg)  # the thread id in use again
        with pytest.raises(ThreadDeletedError) as caught:
            graph.update_state(old, {"n": 9})
        message = str(caught.value)
        assert "'t'" in message and old["configurable"]["checkpoint_id"] in message
        assert "from before delete_thread" in message  # a kept config, not only a late run
        assert "without a checkpoint_id" in message  # what to do instead
        assert graph.get_state(cfg).values["n"] == 6  # the new run's state is untouched
