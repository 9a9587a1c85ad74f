"""A sweep stops between two threads when told (a ``stop`` event, as a copy does), and
the server factory's close stops its sweeper's sweep promptly instead of waiting for it
to go through the whole store."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.maintenance import retention
from langgraph_jsonl_checkpoint.saver import retention_methods
from langgraph_jsonl_checkpoint.server import checkpointer
from tests.harness.bounded import within
from tests.harness.flow_graphs import build_agent_graph

TIDS = [f"t-{i:02d}" for i in range(6)]


def _store(path: Path) -> str:
    with JsonlSaver(path) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        for tid in TIDS:
            graph.invoke({"messages": [HumanMessage("what is 1 + 2?", id=f"{tid}-h")]},
                         {"configurable": {"thread_id": tid}})
    return str(path)


class _SetAfter(threading.Event):
    """An event that reads as set from its ``n + 1``-th look on."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.looks, self.n = 0, n

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks > self.n or super().is_set()


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_sweep_stops_between_two_threads_when_told(tmp_path: Path, dry_run: bool) -> None:
    store = _store(tmp_path / "s")
    with JsonlSaver(store) as saver:
        report = saver.sweep({"default_ttl": 0, "strategy": "delete"}, dry_run=dry_run, stop=_SetAfter(2))
        assert report.stopped
        assert [t for t, _ in report.swept] == TIDS[:2]
        assert [t for t in TIDS if saver.store.has_thread(t)] == (TIDS if dry_run else TIDS[2:])
        report = saver.sweep({"default_ttl": 0, "strategy": "delete"}, stop=threading.Event())
        assert not report.stopped and [t for t, _ in report.swept] == (TIDS if dry_run else TIDS[2:])


def _factory_sweep_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, deaf: threading.Event | None = None
) -> tuple[str, threading.Event, dict[str, threading.Event]]:
    """A store the server factory sweeps (TTL 0, delete), its sweep held after its first
    thread until told to stop (or, with ``deaf``, until ``deaf`` is set: it does not hear
    the stop). Returns the store, the event set once the hold starts, and ``{"stop": the
    sweep's stop event}`` once the sweep runs."""
    store = _store(tmp_path / "s")
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", store)
    monkeypatch.setenv("LANGGRAPH_JSONL_TTL", '{"default_ttl": 0, "strategy": "delete"}')
    started = threading.Event()
    told: dict[str, threading.Event] = {}
    real_sweep, real_sweep_one = retention_methods.sweep, retention._sweep_one

    def sweep(*args: Any, **kwargs: Any) -> retention.SweepReport:
        told["stop"] = kwargs.get("stop") or threading.Event()
        return real_sweep(*args, **kwargs)

    def sweep_one(*args: Any, **kwargs: Any) -> None:
        real_sweep_one(*args, **kwargs)
        if not started.is_set():  # the first thread is swept: hold the sweep
            started.set()
            (deaf or told["stop"]).wait(10)

    monkeypatch.setattr(retention_methods, "sweep", sweep)
    monkeypatch.setattr(retention, "_sweep_one", sweep_one)
    return store, started, told


def test_leaving_the_factory_stops_its_sweep_after_the_thread_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, started, _ = _factory_sweep_held(tmp_path, monkeypatch)

    async def serve() -> float:
        async with checkpointer():
            assert await asyncio.to_thread(started.wait, 10)
            left = time.monotonic()
        return time.monotonic() - left

    with within(8, "leaving the factory"):
        closing_took = asyncio.run(serve())
    assert closing_took < 5  # it did not wait out the hold (10 s) nor the whole store
    with JsonlSaver(store, read_only=True) as saver:
        assert [t for t in TIDS if saver.store.has_thread(t)] == TIDS[1:]  # one swept, then it stopped


def test_a_server_shutdown_cancelled_while_the_factory_waits_for_the_sweep_stays_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server cancels its lifespan while the factory's close waits for a sweep that
    does not stop at once: the cancellation reaches the server (it was swallowed, and the
    shutdown went on as if nothing had been asked), and the saver is still closed."""
    release = threading.Event()
    store, started, told = _factory_sweep_held(tmp_path, monkeypatch, deaf=release)
    box: dict[str, Any] = {}
    closed = threading.Event()

    async def serve() -> None:
        async with checkpointer() as saver:
            real_close = saver.close

            def close() -> None:
                real_close()
                closed.set()

            monkeypatch.setattr(saver, "close", close)
            assert await asyncio.to_thread(started.wait, 10)

    async def main() -> None:
        task = asyncio.create_task(serve())
        while not ("stop" in told and told["stop"].is_set()):  # the close is waiting now
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            box["cancelled"] = True
        finally:
            release.set()

    with within(20, "leaving the factory"):
        asyncio.run(main())
    assert box.get("cancelled"), "the shutdown's cancellation was swallowed by the factory"
    assert closed.wait(10), "the saver was not closed"
