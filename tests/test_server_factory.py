"""The server factory in-process: where it opens the store, what it configures, and
what the LangGraph server relies on (several saver instances in one process, one per
OS thread and event loop, seeing each other's writes at once; no blocking call on an
event loop, checked with ``blockbuster``, which ``langgraph dev`` itself uses).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.server import checkpointer
from tests.harness.answers import answers, diff_answers
from tests.harness.flow_graphs import build_agent_graph


def _cfg(tid: str, run_id: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"configurable": {"thread_id": tid}}
    if run_id:
        cfg["metadata"] = {"run_id": run_id}
    return cfg


async def test_the_factory_opens_the_store_named_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "store"))
    async with checkpointer() as saver:
        assert saver.store.path == str(tmp_path / "store")
        assert saver.concurrent_runs == "hold" and saver.retention is None
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE")
    monkeypatch.chdir(tmp_path)
    async with checkpointer() as saver:
        assert saver.store.path == str(tmp_path / "checkpoints")


async def test_a_store_the_factory_cannot_open_is_named_with_the_variable_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server user never wrote JsonlSaver(...): the error says which variable to set.
    from langgraph_jsonl_checkpoint import ConfigError, StoreError

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("not a store")
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "notes"))
    with pytest.raises(StoreError, match=r"LANGGRAPH_JSONL_STORE") as caught:
        async with checkpointer():
            pass
    assert str(tmp_path / "notes") in str(caught.value) and "empty or new directory" in str(caught.value)
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "a-file"))
    with pytest.raises(ConfigError, match=r"LANGGRAPH_JSONL_STORE"):
        async with checkpointer():
            pass
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE")
    monkeypatch.chdir(tmp_path / "notes")
    (tmp_path / "notes" / "checkpoints").mkdir()
    (tmp_path / "notes" / "checkpoints" / "model.pt").write_text("someone else's checkpoints")
    with pytest.raises(StoreError, match=r"LANGGRAPH_JSONL_STORE is not set.*checkpoints"):
        async with checkpointer():
            pass


async def test_the_factory_sweeps_by_the_ttl_block_of_langgraph_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    with JsonlSaver(store) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        for tid in ("old", "pinned"):
            meta = {"pinned": True} if tid == "pinned" else {}
            graph.invoke({"messages": [HumanMessage("what is 1 + 2?")]}, {**_cfg(tid), "metadata": meta})
            path = saver.store.thread_log(tid).path
            os.utime(path, (time.time() - 7200, time.time() - 7200))
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(store))
    # What `langgraph dev` passes for {"checkpointer": {"path": ..., "ttl": {...}}}.
    block = {"path": "langgraph_jsonl_checkpoint.server.checkpointer",
             "ttl": {"strategy": "delete", "default_ttl": 60, "sweep_interval_minutes": 1}}
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps(block))
    async with checkpointer() as saver:
        assert saver.retention is not None and saver.retention.strategy == "delete"
        deadline = time.monotonic() + 30
        while saver.store.has_thread("old") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # the sweeper's first sweep runs at once
        assert not saver.store.has_thread("old")
        assert saver.store.has_thread("pinned")


def _in_own_loop(coro_fn: Any, *args: Any) -> Any:
    """Run ``coro_fn(*args)`` in a new OS thread with its own event loop (as the server
    enters the factory once per thread), under blockbuster."""
    box: dict[str, Any] = {}

    def main() -> None:
        try:
            box["value"] = asyncio.run(coro_fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=main)
    t.start()
    t.join(120)
    assert not t.is_alive(), "a server thread hung"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_savers_of_several_server_threads_see_each_others_writes_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "store"))
    entered = threading.Barrier(2, timeout=60)
    steps = [threading.Event() for _ in range(8)]
    seen: dict[str, Any] = {}

    async def writer() -> None:
        async with checkpointer() as saver:
            await asyncio.to_thread(entered.wait)
            graph = build_agent_graph().compile(checkpointer=saver)
            await graph.ainvoke({"messages": [HumanMessage("what is 1 + 2?")]}, _cfg("a", "run-1"))
            seen["a from the writer"] = (await graph.aget_state(_cfg("a"))).values
            steps[0].set()
            await asyncio.to_thread(steps[1].wait, 60)  # the reader deleted b
            seen["b after delete"] = await saver.aget_tuple(_cfg("b"))
            await saver.acopy_thread("a", "a-copy")
            await graph.ainvoke({"messages": [HumanMessage("what is 2 + 2?")]}, _cfg("a", "run-2"))
            steps[2].set()
            await asyncio.to_thread(steps[3].wait, 60)  # the reader pruned a
            seen["a after prune"] = [t async for t in saver.alist(_cfg("a"))]
            await saver.adelete_for_runs(["run-b"])
            steps[4].set()

    async def reader() -> None:
        async with checkpointer() as saver:
            await asyncio.to_thread(entered.wait)
            graph = build_agent_graph().compile(checkpointer=saver)
            await graph.ainvoke({"messages": [HumanMessage("what is 5 + 2?")]}, _cfg("b", "run-b"))
            await asyncio.to_thread(steps[0].wait, 60)
            seen["a from the reader"] = (await graph.aget_state(_cfg("a"))).values
            await saver.adelete_thread("b")
            steps[1].set()
            await asyncio.to_thread(steps[2].wait, 60)
            seen["copy from the reader"] = await saver.aget_tuple(_cfg("a-copy"))
            seen["a before prune"] = len([t async for t in saver.alist(_cfg("a"))])
            await saver.aprune(["a"], strategy="keep_latest")
            steps[3].set()
            await asyncio.to_thread(steps[4].wait, 60)
            seen["b after delete_for_runs"] = await saver.aget_tuple(_cfg("b"))

    with blockbuster_ctx(), ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(_in_own_loop, fn) for fn in (writer, reader)]:
            done.result(180)
    assert set(seen) == {"b after delete", "a from the writer", "a from the reader", "copy from the reader",
                         "a before prune", "a after prune", "b after delete_for_runs"}, seen
    assert seen["a from the reader"] == seen["a from the writer"]
    assert len(seen["a from the reader"]["messages"]) >= 2
    assert seen["b after delete"] is None
    assert seen["copy from the reader"] is not None
    assert seen["a before prune"] > 1 and len(seen["a after prune"]) == 1
    assert seen["b after delete_for_runs"] is None


def test_no_blocking_call_on_the_event_loop(tmp_path: Path) -> None:
    """Every async path the server uses, and sweep/restore, under blockbuster."""
    store = tmp_path / "store"

    async def flow() -> dict[str, Any]:
        # Opening a store is file I/O: off the loop, as the factory does it.
        opened = await asyncio.to_thread(JsonlSaver, store, concurrent_runs="hold")
        async with opened as saver:
            graph = build_agent_graph().compile(checkpointer=saver)
            await graph.ainvoke({"messages": [HumanMessage("what is 1 + 2?")]}, _cfg("t", "r1"))
            async for _ in graph.astream({"messages": [HumanMessage("what is 3 + 2?")]}, _cfg("t", "r2")):
                pass
            await graph.aupdate_state(_cfg("t"), {"messages": [HumanMessage("noted")]})
            history = [s async for s in graph.aget_state_history(_cfg("t"))]
            await saver.acopy_thread("t", "u")
            await saver.adelete_for_runs(["r2"])
            await saver.aprune(["u"])
            await saver.asweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + 3600)
            await saver.arestore("t")
            await saver.adelete_thread("u")
            return {"history": len(history), "t": await saver.aget_tuple(_cfg("t"))}

    with blockbuster_ctx():
        got = _in_own_loop(flow)
    assert got["history"] > 3 and got["t"] is not None


def test_restore_brings_back_what_the_other_instance_archived(tmp_path: Path) -> None:
    a, b = JsonlSaver(tmp_path / "s"), JsonlSaver(tmp_path / "s")
    graph = build_agent_graph().compile(checkpointer=a)
    graph.invoke({"messages": [HumanMessage("what is 1 + 2?")]}, _cfg("t"))
    want = answers(b, "t")
    a.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + 3600)
    assert b.get_tuple(_cfg("t")) is None
    b.restore("t")
    assert not diff_answers(answers(a, "t"), want)
    a.close()
    b.close()


def _encrypted_store_in_the_environment(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The factory's store, encrypted with the key in ``LANGGRAPH_AES_KEY``."""
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(store))
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "0123456789abcdef")
    monkeypatch.setenv("LANGGRAPH_JSONL_SERDE",
                       "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes")


async def test_the_factory_opens_the_store_with_the_serializer_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    _encrypted_store_in_the_environment(tmp_path / "store", monkeypatch)
    async with checkpointer() as saver:
        assert isinstance(saver.serde, EncryptedSerializer)
        graph = build_agent_graph().compile(checkpointer=saver)
        await graph.ainvoke({"messages": [HumanMessage("the weather in Paris, secretly")]}, _cfg("t"))
    (log,) = (tmp_path / "store" / "threads").glob("*.jsonl")
    assert b"secretly" not in log.read_bytes()
    reader = JsonlSaver(tmp_path / "store", read_only=True,
                        serde=EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef"))
    state = reader.get_tuple({"configurable": {"thread_id": "t"}})
    assert state is not None and "secretly" in state.checkpoint["channel_values"]["messages"][0].content
    reader.close()


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_copy_names_the_new_thread_in_metadata_as_the_server_does(tmp_path: Path, encrypted: bool) -> None:
    # The server puts "thread_id" in every run's checkpoint metadata; its own copy (and
    # its fallback for checkpointers without acopy_thread) renames it to the copy.
    from langgraph.checkpoint.base import empty_checkpoint

    serde = None
    if encrypted:
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    saver = JsonlSaver(tmp_path / "s", serde=serde)
    for tid, named in (("src", "src"), ("other", "someone")):
        cfg: Any = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        for step in range(2):
            cp = empty_checkpoint()
            cp["channel_values"] = {"n": step}
            cp["channel_versions"] = {"n": step + 1}
            cfg = saver.put(cfg, cp, {"source": "loop", "step": step, "thread_id": named, "owner": "ada"},
                            {"n": step + 1})
            saver.put_writes(cfg, [("n", step + 10)], "task-1")
    saver.copy_thread("src", "dst")
    saver.copy_thread("other", "other-copy")

    fresh = JsonlSaver(tmp_path / "s", serde=serde)
    source, copied = answers(fresh, "src"), answers(fresh, "dst")
    assert list(copied["list"]) == list(source["list"]) and len(copied["list"]) == 2
    for key, tup in copied["list"].items():
        assert tup.metadata == {**source["list"][key].metadata, "thread_id": "dst"}
        assert tup.checkpoint == source["list"][key].checkpoint
        assert tup.pending_writes == source["list"][key].pending_writes
    assert {t.metadata["thread_id"] for t in fresh.list({"configurable": {"thread_id": "src"}})} == {"src"}
    # A thread_id that is not the source's is the caller's own value: kept.
    assert {t.metadata["thread_id"] for t in fresh.list({"configurable": {"thread_id": "other-copy"}})} == {
        "someone"}
    fresh.close()
    saver.close()


def _emailing_graph(adapter: Any) -> Any:
    """A model node that asks for one ``send_email``, and the adapter's tool node."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    def model(state: MessagesState) -> dict:
        if isinstance(state["messages"][-1], HumanMessage):
            call = {"name": "send_email", "args": {"to": "ada-secret"}, "id": "call-1", "type": "tool_call"}
            return {"messages": [AIMessage("", tool_calls=[call])]}
        return {"messages": [AIMessage("done")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", adapter.tool_node([send_email]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder


async def test_the_journal_saver_keeps_tool_calls_with_the_servers_serializer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A graph module cannot reach the factory's saver: journal_saver() opens the same
    # store with the same serializer, so tool arguments and results are encrypted too.
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from langgraph_jsonl_checkpoint import ReplayAdapter
    from langgraph_jsonl_checkpoint.server import journal_saver

    _encrypted_store_in_the_environment(tmp_path / "store", monkeypatch)
    journal = await asyncio.to_thread(journal_saver)
    assert isinstance(journal.serde, EncryptedSerializer)
    assert journal.store.path == str(tmp_path / "store") and journal.retention is None
    async with checkpointer() as saver:
        graph = _emailing_graph(ReplayAdapter(journal)).compile(checkpointer=saver)
        result = await graph.ainvoke({"messages": [HumanMessage("email ada")]}, _cfg("t"))
    assert result["messages"][-1].content == "done"
    (record,) = await journal.atool_calls("t")
    assert record.state == "finished"
    (log,) = (tmp_path / "store" / "threads").glob("*.jsonl")
    assert b"ada-secret" not in log.read_bytes()
    journal.close()


def _sweep_of_a_forked_worker(store: str, result: Any) -> None:
    """In a forked child: enter the factory on ``store`` and tell whether its sweeper
    removed the thread "old" (within 30 s)."""
    os.environ["LANGGRAPH_JSONL_STORE"] = store

    async def main() -> bool:
        async with checkpointer() as saver:
            deadline = time.monotonic() + 30
            while saver.store.has_thread("old") and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return not saver.store.has_thread("old")

    result.put(asyncio.run(main()))


def test_a_worker_forked_after_the_factory_started_sweeping_sweeps_its_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that entered the factory (its sweeper running) then forks a worker
    (``gunicorn --preload``, ``os.fork``): the worker's own factory sweeps. The worker
    inherited the parent's "a sweeper is running" and never swept: expired threads
    stayed in its store for good."""
    import multiprocessing

    fork = multiprocessing.get_context("fork")
    with JsonlSaver(tmp_path / "child") as saver:
        saver.put(*_one_checkpoint("old"))
        os.utime(saver.store.thread_log("old").path, (time.time() - 7200, time.time() - 7200))
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "parent"))
    monkeypatch.setenv("LANGGRAPH_JSONL_TTL", json.dumps({"default_ttl": 60, "sweep_interval_minutes": 1}))
    entered, release = threading.Event(), threading.Event()

    async def parent() -> None:
        async with checkpointer() as saver:
            assert saver.retention is not None
            entered.set()
            await asyncio.to_thread(release.wait, 60)

    server = ThreadPoolExecutor(1)
    running = server.submit(_in_own_loop, parent)
    try:
        assert entered.wait(60), "the parent's factory did not open"
        result = fork.Queue()
        worker = fork.Process(target=_sweep_of_a_forked_worker, args=(str(tmp_path / "child"), result))
        worker.start()
        worker.join(60)
        if worker.is_alive():
            worker.kill()
        assert worker.exitcode == 0
        assert result.get(timeout=5) is True, "the forked worker's factory never swept its store"
    finally:
        release.set()
        running.result(60)
        server.shutdown()


def _one_checkpoint(tid: str) -> tuple[Any, ...]:
    """``put`` arguments for one checkpoint of thread ``tid``."""
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    cp["channel_values"] = {"n": 1}
    cp["channel_versions"] = {"n": 1}
    return ({"configurable": {"thread_id": tid, "checkpoint_ns": ""}}, cp, {"source": "input", "step": -1},
            {"n": 1})


async def test_the_factory_logs_which_variable_its_retention_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """As ``langgraph-jsonl sweep`` says it: a server whose policy is not the one its
    user meant (a stale LANGGRAPH_JSONL_TTL before the server's own variable) shows why."""
    import logging

    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("LANGGRAPH_JSONL_TTL", raising=False)
    monkeypatch.setenv("LANGGRAPH_THREAD_TTL", "10080")
    with caplog.at_level(logging.INFO, logger="langgraph_jsonl_checkpoint.server"):
        async with checkpointer() as saver:
            assert saver.retention is not None and saver.retention.default_ttl == 10080
    assert any("from LANGGRAPH_THREAD_TTL" in r.getMessage() for r in caplog.records), caplog.text
