"""Nothing the saver keeps in memory grows with the number of threads it has seen.

One ``JsonlSaver`` with a small open-log bound (``max_open_threads=BOUND``) carries
three times that many threads through an agent turn each (a ``ReplayAdapter`` tool node
with a side-effecting and an idempotent tool, the pending-calls node, session memory,
the debug tracer, live-run locks), sync and async, and reads each back (``get_state``,
history, the tool journal, the session memory). Then every structure that is keyed by
thread (or by run, or by task) is checked against its bound, one by one; and, to catch
one this list forgets, everything reachable from the saver, the adapter and the tracer
is counted after a first and after a second batch of as many new threads: the second
batch must not leave more behind than the first.

The bounds of the caches that default to hundreds of entries (the adapter's batches, the
tool journal's settled-call memo, the run tracker, the tracer's open files) are made
``BOUND`` here, so that three times ``BOUND`` threads overflow every one of them.
"""

from __future__ import annotations

import asyncio
import gc
import types
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver, JsonlTracer, ReplayAdapter
from langgraph_jsonl_checkpoint.disk import store as store_module
from langgraph_jsonl_checkpoint.disk.view import LogView
from langgraph_jsonl_checkpoint.memory.keeper import MemoryKeeper
from langgraph_jsonl_checkpoint.replay import adapter as adapter_module
from langgraph_jsonl_checkpoint.saver import tool_log as tool_log_module
from langgraph_jsonl_checkpoint.tracing import tracer as tracer_module
from langgraph_jsonl_checkpoint.values.cache import ValueCache
from tests.harness.bounded import within
from tests.harness.replay_tools import IDEMPOTENT_BY_NAME, build_graph, call, config, make_tools

#: The open-log bound of the saver under test, and of every other cache here.
BOUND = 4
#: Threads per batch: three times the bound.
PER_BATCH = 3 * BOUND

PLAN = [[[call("lookup_order", "c1", order_id="42"), call("send_email", "c2", to="bob")]]]


class Rig:
    """A saver, an adapter, a tracer and a graph on one store; threads driven through it."""

    def __init__(self, tmp_path: Path) -> None:
        self.saver = JsonlSaver(tmp_path / "store", max_open_threads=BOUND)
        self.saver._runs._max = BOUND  # the run tracker's bound (default 4096 runs)
        self.adapter = ReplayAdapter(self.saver, idempotent=IDEMPOTENT_BY_NAME)
        self.tracer = JsonlTracer(self.saver)
        tools = make_tools(tmp_path / "effects")
        self.graph = build_graph(
            "tool_node", tools=tools, plan=PLAN, checkpointer=self.saver, adapter=self.adapter,
            answer_pending=True,
        )
        self.seen = 0

    def batch(self) -> None:
        """``PER_BATCH`` new threads: the first half sync, the second async; each read back."""
        ids = [f"thread-{self.seen + i:04d}" for i in range(PER_BATCH)]
        self.seen += PER_BATCH
        half = PER_BATCH // 2
        for tid in ids[:half]:
            self.graph.invoke(
                {"messages": [HumanMessage("order 42?", id=f"h-{tid}")]},
                {**config(tid), "callbacks": [self.tracer]},
                durability="sync",
            )

        async def arun() -> None:
            for tid in ids[half:]:
                await self.graph.ainvoke(
                    {"messages": [HumanMessage("order 42?", id=f"h-{tid}")]},
                    {**config(tid), "callbacks": [self.tracer]},
                    durability="async",
                )

        asyncio.run(arun())
        with within(60):
            for tid in ids:
                state = self.graph.get_state(config(tid))
                assert state.values["messages"][-1].content.startswith("done:"), tid
                assert len(list(self.graph.get_state_history(config(tid), limit=3))) == 3
                assert {r.key.call_id for r in self.adapter.tool_calls(tid)} >= {"c1", "c2"}
                assert self.saver.session_memory(tid).tool_calls == 2
            assert len(list(self.saver.list(None, limit=PER_BATCH))) == PER_BATCH


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(adapter_module, "_MAX_LIVE_BATCHES", BOUND)
    monkeypatch.setattr(tool_log_module, "_SETTLED_THREADS", BOUND)
    monkeypatch.setattr(tracer_module, "MAX_OPEN_FILES", BOUND, raising=False)
    monkeypatch.setattr(store_module, "MAX_PARKED", BOUND)  # what the store keeps of let-go logs
    r = Rig(tmp_path)
    yield r
    r.tracer.close()
    r.saver.close()


def alive_logs(store_path: str) -> list[LogView]:
    """The thread logs of this store still in memory (other tests' may be too)."""
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, LogView) and o.paths.log.startswith(store_path)]


def test_every_cache_keyed_by_thread_stays_within_its_bound(rig: Rig) -> None:
    rig.batch()
    saver, store = rig.saver, rig.saver.store
    # the open logs, and the value caches counted against the store's budget
    assert len(store._logs) <= BOUND
    assert len(store._warm) <= BOUND
    assert set(store._warm) <= set(store._logs), "a log let go is still counted warm"
    # logs let go are freed, with what hangs on them (memory keepers, value caches)
    logs = alive_logs(store.path)
    assert len(logs) <= BOUND
    keepers = [o for o in gc.get_objects() if isinstance(o, MemoryKeeper) and o.log in logs]
    assert len(keepers) <= BOUND
    assert sum(1 for log in logs if isinstance(log.derived, ValueCache)) <= BOUND
    # per run, per thread, per task execution
    assert len(saver._runs._runs) <= BOUND
    assert len(saver._tool_log._settled) <= BOUND
    assert len(rig.adapter._batches) <= BOUND
    # nothing left waiting or held once every run returned
    assert saver._live is not None and saver._live._held == {}
    assert saver._tool_log.landing._futures == set()
    assert not saver._worker._busy and not saver._worker._jobs
    # the tracer: open trace files (a descriptor each), and runs it is timing
    assert len(rig.tracer._files) <= BOUND
    assert rig.tracer._runs == {}


def reachable(*roots: object) -> int:
    """Objects reachable from ``roots`` (tracked or not), not following modules,
    classes, functions or code: the instance data they hold."""
    skip = (types.ModuleType, type, types.FunctionType, types.CodeType, types.BuiltinFunctionType)
    gc.collect()
    seen = {id(r) for r in roots}
    stack = list(roots)
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) not in seen and not isinstance(ref, skip):
                seen.add(id(ref))
                stack.append(ref)
    return len(seen)


def left_behind(rig: Rig) -> int:
    """What the saver, the adapter and the tracer hold after a batch, the async worker's
    threads ended first: how many of them are alive (eleven objects each) depends on how
    the batch's jobs happened to overlap, not on the threads seen, and is bounded by the
    worker's own limit (it starts them again when work comes)."""
    rig.saver._worker.close()
    assert rig.saver._worker.running == 0
    return reachable(rig.saver, rig.adapter, rig.tracer)


#: Batches between the two counts: an entry kept per thread seen (its key at least) would
#: add ``LATER_BATCHES * PER_BATCH`` objects or more.
LATER_BATCHES = 4


def test_new_threads_leave_no_more_behind_than_the_first_batch_did(rig: Rig) -> None:
    rig.batch()
    first = left_behind(rig)
    counts = []
    for _ in range(LATER_BATCHES):
        rig.batch()
        counts.append(left_behind(rig))
    # Every cache is full after the first batch. Later counts move by a few objects
    # either way (which logs stay open, and how many lookups their last reads left in
    # their indexes, depends on how the async runs overlapped: up to 9 objects in 30
    # runs), never further; what is kept per thread seen grows by PER_BATCH or more
    # each batch, 48 objects or more over these four.
    assert counts[-1] - first < 2 * PER_BATCH, (first, counts)


def test_a_log_let_go_before_its_caches_are_counted_is_not_kept_warm(tmp_path: Path) -> None:
    """A put or read holds its log while another thread's open lets that log go (past
    ``max_open_threads``); counting its caches afterwards must not keep it (and its index)
    in the warm set, which only the item budget would ever empty."""
    from langgraph_jsonl_checkpoint.values.cache import ValueCache

    with JsonlSaver(tmp_path / "s", max_open_threads=2) as saver:
        store = saver.store
        held = store.thread_log("a")  # a put of thread "a" has its log...
        for tid in ("b", "c", "d"):  # ...while other threads' opens let it go
            store.thread_log(tid)
        assert "a" not in store._logs
        ValueCache.of(held).remember("", {})  # the put fills the log's caches, then counts them
        store.keep_warm(held)
        assert "a" not in store._warm
        assert set(store._warm) <= set(store._logs)


def test_a_log_let_go_is_freed_without_the_cyclic_collector(rig: Rig) -> None:
    """Nothing reachable from a thread log points back to it (its session-memory keeper
    holds it weakly), so a log the open-log bound lets go is freed by reference counting
    at once, index, value caches and all. A cycle left every let-go log to the collector:
    about 250 objects per turn of a store with more threads than ``max_open_threads``,
    and full collections over them (benchmarks/many_threads.py)."""
    import weakref

    rig.batch()  # every path that attaches something to a log: memory, adapter, tracer
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        logs = [weakref.ref(log) for log in rig.saver.store._logs.values()]
        # (three times the bound of threads opened in turn, none used again: the store
        # keeps one idle log, see disk/idle_bound.py)
        assert len(logs) == rig.saver.store.idle.keep == 1
        rig.batch()  # lets every one of them go, and more
        alive = [r() for r in logs if r() is not None]
        assert alive == [], [log.thread_id for log in alive]
        gc.set_debug(gc.DEBUG_SAVEALL)  # and nothing of ours was left in a cycle
        gc.collect()
        ours = sorted({type(o).__qualname__ for o in gc.garbage
                       if type(o).__module__.startswith("langgraph_jsonl_checkpoint")})
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
