"""``update_state`` while a run is working on the thread: refused with
``ThreadBusyError`` before it writes anything (``"refuse"`` and ``"wait"``), so the live
run goes on untouched. Written anyway, the update moved the thread's head under the run,
whose next save was refused with ``ConcurrentRunError`` (its step lost, its message
blaming "another run"). ``"hold"`` never refuses it; after the run, ``update_state``
behaves as with ``InMemorySaver``.
"""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadBusyError
from langgraph_jsonl_checkpoint.saver import liveness
from tests.harness.bounded import within

CFG = {"configurable": {"thread_id": "busy"}}


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph(saver: Any, inside: asyncio.Event | None = None, release: asyncio.Event | None = None) -> Any:
    """``one`` then ``two``; ``two`` can say it runs and wait to be released."""

    def one(state: State) -> dict:
        return {"log": ["one"]}

    async def two(state: State) -> dict:
        if inside is not None and release is not None:
            inside.set()
            await asyncio.wait_for(release.wait(), 30)
        return {"log": ["two"]}

    g = StateGraph(State)
    g.add_node("one", one)
    g.add_node("two", two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    return g.compile(checkpointer=saver)


async def test_update_state_during_a_run_is_refused_and_the_run_goes_on(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    inside, release = asyncio.Event(), asyncio.Event()
    graph = _graph(saver, inside, release)
    run = asyncio.create_task(graph.ainvoke({"log": ["in"]}, CFG))
    await asyncio.wait_for(inside.wait(), 30)
    with pytest.raises(ThreadBusyError) as refused:
        await asyncio.wait_for(graph.aupdate_state(CFG, {"log": ["edited"]}), 10)
    message = str(refused.value)
    assert "'busy'" in message and "update_state" in message and "nothing was written" in message
    with pytest.raises(ThreadBusyError):
        await asyncio.to_thread(graph.update_state, CFG, {"log": ["edited"]})
    assert [t.metadata["source"] for t in saver.list(CFG)].count("update") == 0
    release.set()
    assert (await asyncio.wait_for(run, 10))["log"] == ["in", "one", "two"]
    # After the run, an update is an update, as with InMemorySaver.
    ours = await _after_run(graph)
    assert ours == await _after_run(_graph(InMemorySaver()))
    saver.close()




async def _after_run(graph: Any) -> list[str]:
    if not (await graph.aget_state(CFG)).values:
        await graph.ainvoke({"log": ["in"]}, CFG)
    await graph.aupdate_state(CFG, {"log": ["edited"]})
    return list((await graph.aget_state(CFG)).values["log"])


@pytest.mark.parametrize("mode", ["refuse", "wait"])
async def test_update_state_is_refused_under_wait_too(tmp_path: Path, mode: str) -> None:
    # The update was made from the state it read: waiting for the run, then writing it,
    # would fork the thread from before the run (the run's turn left off the head).
    saver = JsonlSaver(tmp_path / "s", concurrent_runs=mode, busy_timeout=10)
    inside, release = asyncio.Event(), asyncio.Event()
    graph = _graph(saver, inside, release)
    run = asyncio.create_task(graph.ainvoke({"log": ["in"]}, CFG))
    await asyncio.wait_for(inside.wait(), 30)
    with pytest.raises(ThreadBusyError):
        await asyncio.wait_for(graph.aupdate_state(CFG, {"log": ["edited"]}), 5)
    release.set()
    assert (await asyncio.wait_for(run, 10))["log"] == ["in", "one", "two"]
    await graph.aupdate_state(CFG, {"log": ["edited"]})
    assert (await graph.aget_state(CFG)).values["log"] == ["in", "one", "two", "edited"]
    saver.close()


def test_hold_never_refuses_an_update(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="hold")
    graph = _graph(saver)
    lock = saver.store.run_lock("busy")
    assert lock.try_acquire("someone")
    try:
        graph.update_state(CFG, {"log": ["edited"]})
    finally:
        lock.release()
    assert graph.get_state(CFG).values["log"] == ["edited"]
    saver.close()


# -- a state update of another process: held for a few file operations, waited for --------

_HOLD_AS_UPDATE = """
import sys, time
from langgraph_jsonl_checkpoint import JsonlSaver
saver = JsonlSaver(sys.argv[1])
lock = saver.store.run_lock("busy")
assert lock.try_acquire("update_state")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
saver.close()
"""


@contextmanager
def _update_of_another_process(store: Path, seconds: float) -> Iterator[None]:
    """Another process holding the thread as its ``update_state`` does while it writes."""
    child = subprocess.Popen([sys.executable, "-c", _HOLD_AS_UPDATE, str(store), str(seconds)],
                             stdout=subprocess.PIPE, text=True)
    try:
        with within(60, "the other process taking the thread"):
            assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield
    finally:
        child.kill()
        child.wait(30)
        if child.stdout is not None:
            child.stdout.close()


@pytest.mark.parametrize("mode", ["refuse", "wait"])
def test_an_update_or_a_run_waits_for_another_process_s_update(tmp_path: Path, mode: str) -> None:
    # Two workers updating one thread: SqliteSaver takes both (and so does ours now).
    # The other's update held the thread for a moment, and this update and this run
    # were refused, told that "a run" was still working on it.
    saver = JsonlSaver(tmp_path / "s", concurrent_runs=mode, busy_timeout=30)
    graph = _graph(saver)
    with _update_of_another_process(tmp_path / "s", 0.5), within(30, "an update_state"):
        graph.update_state(CFG, {"log": ["edited"]})
    with _update_of_another_process(tmp_path / "s", 0.5), within(30, "a run"):
        ours = asyncio.run(graph.ainvoke({"log": ["in"]}, CFG))["log"]
    oracle = _graph(InMemorySaver())
    oracle.update_state(CFG, {"log": ["edited"]})
    assert ours == asyncio.run(oracle.ainvoke({"log": ["in"]}, CFG))["log"] == ["edited", "in", "one", "two"]
    saver.close()


def test_an_update_held_past_the_wait_is_named_as_an_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(liveness, "MAINTENANCE_WAIT", 0.2)
    saver = JsonlSaver(tmp_path / "s")
    graph = _graph(saver)
    with _update_of_another_process(tmp_path / "s", 30):
        for attempt in (lambda: graph.update_state(CFG, {"log": ["edited"]}),
                        lambda: graph.invoke({"log": ["in"]}, CFG)):
            with within(30, "a refusal"), pytest.raises(ThreadBusyError) as refused:
                attempt()
            message = str(refused.value)
            assert "a state update (update_state) of process" in message, message
            assert "a run of process" not in message, message
    assert graph.get_state(CFG).values == {}
    saver.close()
