"""The LangGraph server with this package's checkpointer: a real ``langgraph dev``
(started here on a free port of 127.0.0.1, stopped at the end), driven through
``langgraph-sdk`` as an app would.

What it proves: runs, streams, state, history, ``update_state``, an interrupt answered
by a resume serve what the same graph serves with ``InMemorySaver`` (the oracle, run in
this process); copy and delete act on the store; double-texting with ``"interrupt"``
and ``"rollback"`` is never refused by the saver and a rollback removes the cancelled
run's checkpoints (``adelete_for_runs``); a run's live-run lock is visible to a sweep
in another process; after a restart the server reads the same states back; with a
``ttl`` block in ``langgraph.json`` the factory's sweeper prunes idle threads and
leaves pinned ones (thread metadata ``{"pinned": true}``, a state edit after their
runs included) whole. No blocking call on
the event loop (the dev server raises on those) and no refusal shows in its output.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from langgraph_sdk import get_client

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.langgraph_server import GRAPH_SOURCE, SLOW_SECONDS, DevServer, write_project

pytestmark = pytest.mark.slow

#: Longest wait for anything the server does in the background (a sweep, a run).
BOUND = 60.0


def _local_graph() -> Any:
    """The project's graph, compiled here with ``InMemorySaver`` (the oracle)."""
    namespace: dict[str, Any] = {}
    exec(GRAPH_SOURCE.replace("SLOW_SECONDS", repr(SLOW_SECONDS)), namespace)  # noqa: S102 - our own source
    return namespace["builder"].compile(checkpointer=InMemorySaver())


def _said(text: str) -> dict[str, Any]:
    """Run input: one user message."""
    return {"messages": [{"role": "user", "content": text}]}


def _contents(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Messages as (type, content): ids differ between the server and the oracle."""
    out = []
    for m in values.get("messages", []):
        if isinstance(m, dict):
            out.append((m["type"], m["content"]))
        else:
            out.append((m.type, m.content))
    return out


def _server_history(history: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (_contents(h["values"]), tuple(h["next"]), h["metadata"]["source"], h["metadata"]["step"])
        for h in history
    ]


def _local_history(history: list[Any]) -> list[tuple[Any, ...]]:
    return [(_contents(s.values), tuple(s.next), s.metadata["source"], s.metadata["step"]) for s in history]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("langgraph-server")
    project = write_project(base / "project")
    dev = DevServer(project, base / "store", base / "server.log")
    try:
        dev.start()
    except RuntimeError as exc:
        pytest.fail(f"could not start the LangGraph server for these tests: {exc}")
    yield dev
    dev.stop()
    output = dev.output()
    for bad in ("BlockingError", "ThreadBusyError", "ConcurrentRunError", "Traceback"):
        assert bad not in output, f"the server printed {bad}:\n{dev.tail(80)}"


async def _wait_for(predicate: Any, what: str) -> Any:
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        got = await predicate()
        if got:
            return got
        await asyncio.sleep(0.3)
    raise AssertionError(f"gave up after {BOUND:.0f} s waiting for {what}")


async def test_runs_state_history_update_interrupt_match_inmemory(server: DevServer) -> None:
    async with get_client(url=server.url) as client:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        local = _local_graph()
        lconfig = {"configurable": {"thread_id": "oracle"}}

        await client.runs.wait(tid, "agent", input=_said("hi"))
        await local.ainvoke({"messages": [HumanMessage("hi")]}, lconfig)

        events = [
            part async for part in client.runs.stream(
                tid, "agent", input=_said("again"), stream_mode="values",
            )
        ]
        local_events = [v async for v in local.astream({"messages": [HumanMessage("again")]}, lconfig,
                                                        stream_mode="values")]
        streamed = [_contents(e.data) for e in events if e.event == "values"]
        assert streamed == [_contents(v) for v in local_events]

        await client.threads.update_state(tid, {"messages": [{"role": "user", "content": "edited"}]})
        await local.aupdate_state(lconfig, {"messages": [HumanMessage("edited")]})

        await client.runs.wait(tid, "agent", input=_said("ask"))
        await local.ainvoke({"messages": [HumanMessage("ask")]}, lconfig)
        state = await client.threads.get_state(tid)
        local_state = await local.aget_state(lconfig)
        assert tuple(state["next"]) == local_state.next == ("agent",)
        assert state["tasks"][0]["interrupts"][0]["value"] == {"question": "approve?"}

        result = await client.runs.wait(tid, "agent", command={"resume": "yes"})
        await local.ainvoke(Command(resume="yes"), lconfig)
        assert result["messages"][-1]["content"] == "approved: yes"

        state = await client.threads.get_state(tid)
        local_state = await local.aget_state(lconfig)
        assert _contents(state["values"]) == _contents(local_state.values)
        history = await client.threads.get_history(tid, limit=100)
        local_history = [s async for s in local.aget_state_history(lconfig)]
        assert _server_history(history) == _local_history(local_history)

        # The server's checkpoints are in the store, as the saver reads them.
        saver = JsonlSaver(server.store, read_only=True)
        try:
            stored = saver.get_tuple({"configurable": {"thread_id": tid}})
            assert stored is not None
            assert stored.checkpoint["id"] == state["checkpoint"]["checkpoint_id"]
            assert stored.metadata["thread_id"] == tid
        finally:
            saver.close()


async def test_copy_and_delete(server: DevServer) -> None:
    async with get_client(url=server.url) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "agent", input=_said("hi"))
        await client.runs.wait(tid, "agent", input=_said("more"))
        copy = (await client.threads.copy(tid))["thread_id"]
        original, copied = await client.threads.get_state(tid), await client.threads.get_state(copy)
        assert _contents(copied["values"]) == _contents(original["values"])
        history = await client.threads.get_history(tid, limit=100)
        copied_history = await client.threads.get_history(copy, limit=100)
        assert [h["checkpoint"]["checkpoint_id"] for h in copied_history] == [
            h["checkpoint"]["checkpoint_id"] for h in history
        ]
        # As with the server's own checkpointer: the copy's checkpoints name the copy.
        assert {h["metadata"]["thread_id"] for h in copied_history} == {copy}
        assert {h["metadata"]["thread_id"] for h in history} == {tid}
        by_thread = await client.threads.get_history(copy, limit=100, metadata={"thread_id": copy})
        assert len(by_thread) == len(history)

        await client.threads.delete(copy)
        saver = JsonlSaver(server.store, read_only=True)
        try:
            assert not saver.store.has_thread(copy)
            assert saver.get_tuple({"configurable": {"thread_id": tid}}) is not None
        finally:
            saver.close()


async def _double_text(server: DevServer, strategy: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    async with get_client(url=server.url) as client:
        tid = (await client.threads.create())["thread_id"]
        first = await client.runs.create(tid, "agent", input=_said("slow one"))
        await _wait_for(
            lambda: _status_is(client, tid, first["run_id"], "running"), "the first run to start"
        )
        second = await client.runs.create(
            tid, "agent", input=_said("second"), multitask_strategy=strategy
        )
        await client.runs.join(tid, second["run_id"])
        return tid, first, second


async def _status_is(client: Any, tid: str, run_id: str, status: str) -> bool:
    return (await client.runs.get(tid, run_id))["status"] == status


async def test_double_texting_interrupt_is_never_refused(server: DevServer) -> None:
    async with get_client(url=server.url) as client:
        tid, first, second = await _double_text(server, "interrupt")
        assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"
        assert (await client.runs.get(tid, first["run_id"]))["status"] == "interrupted"
        state = await client.threads.get_state(tid)
        # The interrupted run's input stays (the server's "interrupt" keeps it); the second answers.
        assert _contents(state["values"]) == [
            ("human", "slow one"), ("human", "second"), ("ai", "hello from the fake model"),
        ]


async def test_double_texting_rollback_removes_the_cancelled_run(server: DevServer) -> None:
    async with get_client(url=server.url) as client:
        tid, first, second = await _double_text(server, "rollback")
        assert (await client.runs.get(tid, second["run_id"]))["status"] == "success"
        state = await client.threads.get_state(tid)
        assert _contents(state["values"]) == [("human", "second"), ("ai", "hello from the fake model")]
        saver = JsonlSaver(server.store, read_only=True)
        try:
            run_ids = {t.metadata.get("run_id") for t in saver.list({"configurable": {"thread_id": tid}})}
        finally:
            saver.close()
        assert first["run_id"] not in run_ids  # adelete_for_runs removed its checkpoints
        assert second["run_id"] in run_ids


async def test_a_sweep_in_another_process_leaves_a_running_thread_alone(server: DevServer) -> None:
    async with get_client(url=server.url) as client:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "agent", input=_said("hi"))
        run = await client.runs.create(tid, "agent", input=_said("slow"))
        await _wait_for(lambda: _status_is(client, tid, run["run_id"], "running"), "the run to start")
        await asyncio.sleep(0.5)  # inside the graph loop, holding the thread
        saver = JsonlSaver(server.store)
        try:
            report = await saver.asweep({"default_ttl": 0, "strategy": "delete"}, now=time.time() + 3600)
            assert tid in report.live
            assert tid not in [t for t, _ in report.swept]
        finally:
            await saver.__aexit__(None, None, None)
        await client.runs.join(tid, run["run_id"])
        state = await client.threads.get_state(tid)
        assert [c for _, c in _contents(state["values"])][-2:] == ["slow", "hello from the fake model"]


def test_restart_reads_the_same_state_then_ttl_prunes_idle_threads(server: DevServer, tmp_path: Path) -> None:
    async def snapshot() -> dict[str, Any]:
        async with get_client(url=server.url) as client:
            out = {}
            for thread in await client.threads.search(limit=100):
                tid = thread["thread_id"]
                history = await client.threads.get_history(tid, limit=100)
                out[tid] = (
                    _contents((await client.threads.get_state(tid))["values"]),
                    [h["checkpoint"]["checkpoint_id"] for h in history],
                    thread["metadata"].get("pinned", False),
                )
            return out

    async def add_pinned() -> str:
        async with get_client(url=server.url) as client:
            tid = (await client.threads.create(metadata={"pinned": True}))["thread_id"]
            await client.runs.wait(tid, "agent", input=_said("keep me"))
            await client.runs.wait(tid, "agent", input=_said("and this"))
            # A state edit through the API: its checkpoint lacks the thread's metadata,
            # and must not unpin the thread.
            await client.threads.update_state(tid, {"messages": [{"role": "user", "content": "edited"}]})
            return tid

    pinned = asyncio.run(add_pinned())
    before = asyncio.run(snapshot())
    assert len(before) >= 5

    server.stop()
    server.start()
    assert asyncio.run(snapshot()) == before

    # Now with retention in langgraph.json: keep_latest after a few milliseconds idle.
    server.stop()
    write_project(server.project, ttl={"strategy": "keep_latest", "default_ttl": 0.0001})
    server.start()

    async def pruned() -> dict[str, Any] | None:
        now = await snapshot()
        done = all(len(now[t][1]) == 1 for t in now if t != pinned and before[t][1])
        return now if done else None

    after = asyncio.run(_wait_for(pruned, "the factory's sweeper to prune idle threads"))
    for tid, (values, history, _) in before.items():
        assert after[tid][0] == values, f"thread {tid}: state changed by keep_latest"
        if tid == pinned:
            assert after[tid][1] == history, "a pinned thread was pruned"
        elif history:
            assert after[tid][1] == history[:1], f"thread {tid}: not pruned to its latest checkpoint"
    assert "sweep:" in server.output()
