"""Forked processes and the thread's locks: a process forked while it holds a thread's
lock descriptors (a ``multiprocessing`` pool a node starts with the ``fork`` start
method, a saver opened before ``gunicorn --preload`` or a prefork pool forks its
workers) neither keeps a thread busy after its run ended nor shares the writer lock
with its parent, so runs and appends of forked workers still exclude each other.
"""

from __future__ import annotations

import multiprocessing
import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.maintenance.verify import verify
from tests.harness.bounded import within
from tests.harness.checkpoints import config, cp_id, make_checkpoint

FORK = multiprocessing.get_context("fork")


class Visits(TypedDict, total=False):
    visits: Annotated[list[str], operator.add]


def _stay_until(release: Any) -> None:
    release.wait(60)


def test_a_child_forked_by_a_node_does_not_keep_the_thread_busy(tmp_path: Path) -> None:
    """A node starts a worker process (fork) that outlives the run, as a lazily made
    ``multiprocessing.Pool`` does: the next run on the thread goes ahead, as with
    ``InMemorySaver``. It was refused with ``ThreadBusyError`` ("another run") for as
    long as the child lived: the child's copy of the live-run lock's descriptor kept the
    lock when the run closed its own."""
    release = FORK.Event()
    children: list[Any] = []

    def node(state: Visits) -> dict:
        if not children:
            child = FORK.Process(target=_stay_until, args=(release,), daemon=True)
            child.start()
            children.append(child)
        return {"visits": ["visit"]}

    g = StateGraph(Visits)
    g.add_node("node", node)
    g.add_edge(START, "node")
    graph = g.compile(checkpointer=JsonlSaver(tmp_path / "store"))
    cfg = {"configurable": {"thread_id": "t1"}}
    try:
        with within(30, "the runs"):
            graph.invoke({"visits": []}, cfg)
            assert children[0].is_alive()
            assert graph.invoke({"visits": []}, cfg)["visits"] == ["visit", "visit"]
    finally:
        release.set()
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()


def test_workers_forked_from_a_process_that_wrote_keep_their_appends_apart(tmp_path: Path) -> None:
    """A saver that wrote a thread, then forked into workers (a pool or web server that
    forks after the app is loaded) that all write that thread: every acknowledged
    checkpoint is in the log, which verify finds whole. The workers shared the parent's
    descriptor on the writer lock, so each thought it held the lock while the others
    appended: records interleaved, the workers got ``CorruptLogError``, and the log
    served only what came before the first torn line."""
    store = tmp_path / "store"
    saver = JsonlSaver(store, concurrent_runs="unchecked")
    saver.put(config("t1"), make_checkpoint(cp_id(0), {"x": "parent"}, {"x": "1"}), {"step": 0}, {"x": "1"})
    results = FORK.Queue()

    def worker(k: int) -> None:
        acked = 0
        try:
            for i in range(150):
                n = 1 + k * 1000 + i
                saver.put(
                    config("t1"), make_checkpoint(cp_id(n), {"x": f"worker {k} " * 40}, {"x": str(n)}),
                    {"step": n}, {"x": str(n)},
                )
                acked += 1
        finally:
            results.put(acked)

    workers = [FORK.Process(target=worker, args=(k,)) for k in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        if w.is_alive():
            w.kill()
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert sum(results.get(timeout=5) for _ in workers) == 450
    with within(60, "the log"):
        fresh = JsonlSaver(store, read_only=True)
        assert len(list(fresh.list(config("t1")))) == 451
        report = verify(fresh)
    assert report.ok, report.findings


def test_a_forked_child_letting_go_of_a_copied_run_lock_leaves_the_thread_held(tmp_path: Path) -> None:
    """A child forked while the parent's run holds the thread (``os.fork()`` in a node)
    that lets go of its copy of the run's lock (its stack unwound by ``sys.exit``)
    leaves the parent's run holding the thread: only the process that took the lock
    unlocks it; a copy is only closed."""
    store = tmp_path / "store"
    saver = JsonlSaver(store)
    saver.put(config("t1"), make_checkpoint(cp_id(0), {"x": "a"}, {"x": "1"}), {"step": 0}, {"x": "1"})
    held = saver.store.run_lock("t1")
    assert held.try_acquire("parent run")
    try:
        child = FORK.Process(target=held.release)
        child.start()
        child.join(30)
        assert child.exitcode == 0
        other = saver.store.run_lock("t1")
        assert not other.try_acquire("second run"), "the child's release let the parent's lock go"
    finally:
        held.release()
    assert saver.store.run_lock("t1").try_acquire("after the run")


def test_a_child_forked_while_a_thread_of_the_parent_writes_can_use_the_saver(tmp_path: Path) -> None:
    """A process forks (a pool started by a node of a sync graph, whose last checkpoint
    LangGraph is still saving in a background thread) while another of its threads is
    appending to a thread's log; the child reads and writes that thread. It hung for
    good: the child's copy of the log's in-process lock was held by a thread that does
    not exist in the child."""
    import threading

    saver = JsonlSaver(tmp_path / "store", concurrent_runs="unchecked")
    stop = threading.Event()
    written: list[int] = []

    def keep_writing() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            checkpoint = make_checkpoint(cp_id(i), {"x": "a" * 20_000}, {"x": str(i)})
            saver.put(config("t1"), checkpoint, {"step": i}, {"x": str(i)})
            written.append(i)

    def child() -> None:
        assert saver.get_tuple(config("t1")) is not None
        checkpoint = make_checkpoint(cp_id(10**9), {"x": "child"}, {"x": "c"})
        saver.put(config("t1"), checkpoint, {"step": -1}, {"x": "c"})

    writer = threading.Thread(target=keep_writing)
    writer.start()
    children = []
    try:
        while len(written) < 3:
            stop.wait(0.01)
        for _ in range(3):
            children.append(FORK.Process(target=child))
            children[-1].start()
            children[-1].join(10)
    finally:
        stop.set()
        writer.join(30)
        for c in children:
            if c.is_alive():
                c.kill()
                c.join()
    assert [c.exitcode for c in children] == [0] * 3, "a forked child hung on the parent's lock"
    ids = {t.checkpoint["id"] for t in JsonlSaver(tmp_path / "store", read_only=True).list(config("t1"))}
    assert cp_id(10**9) in ids and {cp_id(i) for i in written} <= ids


def _held(saver: JsonlSaver, which: str) -> Any:
    """The in-process lock ``which`` of ``saver`` (or of its modules)."""
    from langgraph_jsonl_checkpoint.memory.keeper import MemoryKeeper
    from langgraph_jsonl_checkpoint.saver import run_threads

    if which == "run tracker":
        return saver._runs._lock
    if which == "live runs":
        return saver._live._lock  # type: ignore[union-attr]
    if which == "run threads":
        return run_threads._lock
    if which == "tool journal":
        return saver._tool_log._lock
    if which == "checkpoint landing":
        return saver._tool_log.landing._cond
    if which == "store catalog":
        return saver.store._lock
    if which == "worker":
        return saver._worker._cond
    if which == "session memory":
        return MemoryKeeper.attach(saver.store.thread_log("t1"), saver.codec).lock
    raise AssertionError(which)


def _child_exit_while_held(lock: Any, target: Any, args: tuple[Any, ...]) -> int | None:
    """Fork a child running ``target(*args)`` while another thread of this process holds
    ``lock``: the child's exit status (killed after 20 s: it hung)."""
    import threading

    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        child = FORK.Process(target=target, args=args)
        child.start()
        child.join(20)
        if child.is_alive():
            child.kill()
            child.join()
    finally:
        release.set()
        holder.join(30)
    return child.exitcode


def _graph(saver: JsonlSaver) -> Any:
    g = StateGraph(Visits)
    g.add_node("node", lambda state: {"visits": ["visit"]})
    g.add_edge(START, "node")
    return g.compile(checkpointer=saver)


def _use_everything(saver: JsonlSaver) -> None:
    """In the child: a run, the tool journal, the session memory, a rollback of a run,
    the store's listing, an async run (the worker)."""
    import uuid

    graph = _graph(saver)
    cfg = {"configurable": {"thread_id": "t1"}, "run_id": uuid.uuid4()}
    assert graph.invoke({"visits": []}, cfg)["visits"] == ["visit", "visit"]
    assert saver.orphaned_tool_calls("t1") == []
    saver.session_memory("t1")
    saver.delete_for_runs([str(uuid.uuid4())])
    assert [e.thread_id for e in saver.store.catalog()] == ["t1"]
    import asyncio

    async def run_async() -> None:
        out = await graph.ainvoke({"visits": []}, {"configurable": {"thread_id": "t1"}})
        assert out["visits"] == ["visit"] * 3
        assert await saver.aget_tuple({"configurable": {"thread_id": "t1"}}) is not None

    asyncio.run(run_async())


@pytest.mark.parametrize(
    "which",
    ["run tracker", "live runs", "run threads", "tool journal", "checkpoint landing", "session memory",
     "store catalog", "worker"],
)
def test_a_child_forked_while_a_thread_of_the_parent_holds_a_lock_can_use_the_saver(
    tmp_path: Path, which: str
) -> None:
    """A process forks while another of its threads holds one of the saver's in-process
    locks (the run tracker's, the live runs', the table of each run's threads, the tool
    journal's, the landing of checkpoints', a session memory's); the child runs a graph
    on the saver, asks for orphaned tool calls and the session memory, rolls back a run. It hung for good
    on the lock: its holder does not exist in the child."""

    saver = JsonlSaver(tmp_path / "store")
    _graph(saver).invoke({"visits": []}, {"configurable": {"thread_id": "t1"}})
    lock = _held(saver, which)
    assert _child_exit_while_held(lock, _use_everything, (saver,)) == 0, (
        f"a forked child hung on the parent's {which} lock")


def _traced_run(saver: JsonlSaver, tracer: Any) -> None:
    """In the child: a run traced by the parent's tracer, then the tracer closed."""
    cfg = {"configurable": {"thread_id": "t1"}, "callbacks": [tracer]}
    _graph(saver).invoke({"visits": []}, cfg)
    tracer.close()


def _batch(adapter: Any) -> None:
    """In the child: the adapter's batch of a task (what each tool call of a ToolNode asks)."""
    from types import SimpleNamespace

    token = object()
    config = {"configurable": {"__pregel_scratchpad": token}}
    request = SimpleNamespace(runtime=SimpleNamespace(config=config))
    assert adapter._batch_for(request) is adapter._batch_for(request)


@pytest.mark.parametrize("which", ["tracer", "trace file", "replay adapter"])
def test_a_child_forked_while_a_thread_of_the_parent_holds_a_tracer_or_adapter_lock_goes_on(
    tmp_path: Path, which: str
) -> None:
    """The same for the tracer's locks (its table of files, a thread's trace file) and the
    replay adapter's table of batches: the child's run traced by the tracer, or its
    tool calls through the adapter, hung for good."""

    from langgraph_jsonl_checkpoint import JsonlTracer, ReplayAdapter

    saver = JsonlSaver(tmp_path / "store")
    tracer = JsonlTracer(saver)
    _graph(saver).invoke({"visits": []}, {"configurable": {"thread_id": "t1"}, "callbacks": [tracer]})
    adapter = ReplayAdapter(saver)
    lock, target, args = {
        "tracer": (tracer._lock, _traced_run, (saver, tracer)),
        "trace file": (next(iter(tracer._files.values())).lock, _traced_run, (saver, tracer)),
        "replay adapter": (adapter._batches_lock, _batch, (adapter,)),
    }[which]
    try:
        code = _child_exit_while_held(lock, target, args)
    finally:
        tracer.close()
    assert code == 0, f"a forked child hung on the parent's {which} lock"
