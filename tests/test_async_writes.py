"""The async write path: ``aput``/``aput_writes``/``aget_tuple`` in the saver's own worker
threads, with group commit per thread log (``worker.py``, ``JsonlSaver._run_group``,
``ThreadLog.group_commit``).

Checked here: many concurrent calls (on many threads and on one thread) leave exactly
what ``InMemorySaver`` answers; an error reaches the caller that awaited the call, and
an append refused inside a group fails alone; a group whose sync fails acknowledges
nothing and leaves nothing in the log; worker threads end on ``close()`` (and when
idle), serve several event loops, and never outlive their saver's close.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import langgraph_jsonl_checkpoint.disk.files as files_module
import langgraph_jsonl_checkpoint.disk.log as log_module
import langgraph_jsonl_checkpoint.disk.view as view_module
import langgraph_jsonl_checkpoint.saver.worker as worker_module
from langgraph_jsonl_checkpoint import (
    ConfigError,
    DurabilityError,
    EncodeError,
    JsonlSaver,
    ThreadDeletedError,
)
from langgraph_jsonl_checkpoint.disk.store import thread_file_stem
from tests.harness.answers import answers, diff_answers
from tests.harness.bounded import within
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import sidecar_blocks, sidecar_summaries

_EARLIER: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def _earlier_workers() -> Any:
    """Worker threads of savers earlier tests left open (they end after a few idle
    seconds): not this test's, whatever order the files run in."""
    _EARLIER.clear()
    _EARLIER.update(t for t in threading.enumerate() if t.name == "jsonl-saver-worker")
    yield


def _worker_threads() -> list[threading.Thread]:
    """This test's savers' worker threads that are still running."""
    return [t for t in threading.enumerate() if t.name == "jsonl-saver-worker" and t not in _EARLIER]


async def _advance(saver: Any, ref: InMemorySaver, thread_id: str, steps: int, tasks: int) -> None:
    """Advance one thread: each step's writes and the next checkpoint are sent at once
    (as LangGraph does), and a retried write slot is sent twice concurrently."""
    parent: str | None = None
    messages: list[Any] = []
    versions: dict[str, Any] = {}
    for step in range(steps):
        cid = cp_id(step)
        messages = messages + [HumanMessage(f"{thread_id} says {step}", id=f"{thread_id}-h{step}")]
        nv = {"messages": saver.get_next_version(versions.get("messages"), None),
              "step": saver.get_next_version(versions.get("step"), None)}
        versions = {**versions, **nv}
        cp = make_checkpoint(cid, {"messages": messages, "step": step}, versions)
        md = {"step": step, "source": "loop"}
        cfg = config(thread_id, "", parent)
        ref.put(cfg, cp, md, nv)
        written = await saver.aput(cfg, cp, md, nv)
        assert written == config(thread_id, "", cid)
        calls = []
        for t in range(tasks):
            w = [("messages", [AIMessage(f"task {t} of {step}", id=f"{thread_id}-a{step}-{t}")])]
            ref.put_writes(written, w, f"task-{t}")
            calls.append(saver.aput_writes(written, w, f"task-{t}"))
            calls.append(saver.aput_writes(written, w, f"task-{t}"))  # a retry: stored once
        await asyncio.gather(*calls)
        parent = cid


async def test_concurrent_async_calls_on_many_threads_serve_what_in_memory_serves(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    threads = [f"t{i}" for i in range(24)]
    await asyncio.gather(*(_advance(saver, ref, t, steps=6, tasks=3) for t in threads))
    # reads through the async path, too, while more writes are in flight
    reads = await asyncio.gather(*(saver.aget_tuple(config(t)) for t in threads))
    for t, tup in zip(threads, reads):
        assert tup == ref.get_tuple(config(t))
    for t in threads:
        got = answers(saver, t)
        assert not diff_answers(got, answers(ref, t)), diff_answers(got, answers(ref, t))
    saver.close()
    assert not _worker_threads()
    fresh = JsonlSaver(tmp_path / "s")  # cold: what is on disk
    for t in threads:
        assert not diff_answers(answers(fresh, t), answers(ref, t))
    fresh.close()


async def test_many_concurrent_calls_on_one_thread_are_grouped_and_all_stored(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    syncs = []
    real = files_module.os

    class CountingOS:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def fdatasync(self, fd: int) -> None:
            syncs.append(fd)
            real.fdatasync(fd)

    files_module.os = CountingOS()  # type: ignore[assignment]
    try:
        await _advance(saver, ref, "one", steps=1, tasks=0)
        cfg = config("one", "", cp_id(0))
        before = len(syncs)
        calls = []
        for t in range(40):
            w = [("messages", [AIMessage(f"w{t}", id=f"w{t}")])]
            ref.put_writes(cfg, w, f"task-{t:02d}")
            calls.append(saver.aput_writes(cfg, w, f"task-{t:02d}"))
        await asyncio.gather(*calls)
        grouped_syncs = len(syncs) - before
    finally:
        files_module.os = real  # type: ignore[assignment]
    assert saver.get_tuple(cfg) == ref.get_tuple(cfg)
    assert not diff_answers(answers(saver, "one"), answers(ref, "one"))
    # 40 appends to one log, queued at once: they share syncs (how many depends on timing)
    assert grouped_syncs < 40, grouped_syncs
    saver.close()


async def test_errors_reach_the_caller_and_a_refused_append_fails_alone(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    await _advance(saver, ref, "t", steps=2, tasks=0)
    cfg = config("t", "", cp_id(1))
    good = [("ch", i) for i in range(3)]

    class Unencodable:
        pass

    results = await asyncio.gather(
        saver.aput_writes(cfg, [("ch", 1)], "a"),
        saver.aput_writes(cfg, [("ch", Unencodable())], "bad"),  # refused before writing
        saver.aput_writes(cfg, good, "b"),
        saver.aput_writes({"configurable": {"thread_id": "t"}}, [("ch", 1)], "no-checkpoint"),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    # the value the serializer cannot encode: EncodeError naming where it is
    assert type(results[1]) is EncodeError, results[1]
    assert "task bad to channel 'ch'" in str(results[1]) and "Nothing was stored" in str(results[1])
    # a write without a checkpoint id: a config problem, told as such
    assert type(results[3]) is ConfigError and "checkpoint_id" in str(results[3]), results[3]
    ref.put_writes(cfg, [("ch", 1)], "a")
    ref.put_writes(cfg, good, "b")
    assert saver.get_tuple(cfg) == ref.get_tuple(cfg)

    # a write for a deleted thread is refused, the caller gets ThreadDeletedError
    await saver.adelete_thread("t")
    with pytest.raises(ThreadDeletedError):
        await saver.aput_writes(cfg, [("ch", 2)], "late")
    saver.close()


@pytest.mark.parametrize("fault", ["write", "fdatasync"])
async def test_a_group_that_cannot_be_made_durable_acknowledges_nothing(tmp_path: Path, fault: str) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    await _advance(saver, ref, "t", steps=2, tasks=1)
    log_path = tmp_path / "s" / "threads" / (thread_file_stem("t") + ".jsonl")
    before = log_path.read_bytes()
    cfg = config("t", "", cp_id(1))
    real = files_module.os
    gate = threading.Event()
    state = {"n": 0}

    class FaultyOS:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def write(self, fd: int, data: Any) -> int:
            # hold the first append until the others are queued, so they form a group
            gate.wait(5)
            if fault == "write" and state["n"] == 1:
                state["n"] += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            state["n"] += 1
            return real.write(fd, data)

        def fdatasync(self, fd: int) -> None:
            if fault == "fdatasync":
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            real.fdatasync(fd)

    files_module.os = FaultyOS()  # type: ignore[assignment]
    try:
        calls = [asyncio.ensure_future(saver.aput_writes(cfg, [("ch", i)], f"task-{i}")) for i in range(4)]
        await asyncio.sleep(0.2)
        gate.set()
        results = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        files_module.os = real  # type: ignore[assignment]
    failed = [r for r in results if isinstance(r, DurabilityError)]
    assert failed, results
    assert all(r is None or isinstance(r, DurabilityError) for r in results), results
    # what is stored is exactly what was acknowledged, in this saver and in a fresh one
    for i, r in enumerate(results):
        if r is None:
            ref.put_writes(cfg, [("ch", i)], f"task-{i}")
    if all(isinstance(r, DurabilityError) for r in results):
        assert log_path.read_bytes() == before
    assert saver.get_tuple(cfg) == ref.get_tuple(cfg)
    fresh = JsonlSaver(tmp_path / "s")
    assert not diff_answers(answers(fresh, "t"), answers(ref, "t"))
    fresh.close()
    # and the next call succeeds
    await saver.aput_writes(cfg, [("ch", 9)], "after")
    ref.put_writes(cfg, [("ch", 9)], "after")
    assert saver.get_tuple(cfg) == ref.get_tuple(cfg)
    saver.close()


def test_worker_threads_end_on_close_and_serve_several_event_loops(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    saver.close()  # idle, never used: nothing to end
    assert not _worker_threads()
    # a new loop per call, as tests and asyncio.run() users do
    for i in range(3):
        asyncio.run(_advance(saver, ref, f"loop-{i}", steps=2, tasks=2))
    assert _worker_threads()
    saver.close()
    assert not _worker_threads()
    saver.close()  # idempotent
    # usable again after close (threads start again), and from sync code alike
    asyncio.run(_advance(saver, ref, "again", steps=2, tasks=1))
    assert saver.get_tuple(config("again")) == ref.get_tuple(config("again"))
    for t in ("loop-0", "loop-1", "loop-2", "again"):
        assert not diff_answers(answers(saver, t), answers(ref, t))
    with saver:
        pass
    assert not _worker_threads()


async def test_async_exit_ends_the_worker_threads(tmp_path: Path) -> None:
    from langgraph_jsonl_checkpoint import AsyncJsonlSaver

    ref = InMemorySaver()
    async with AsyncJsonlSaver.from_conn_string(str(tmp_path / "s")) as saver:
        await _advance(saver, ref, "t", steps=2, tasks=2)
        assert _worker_threads()
    assert not _worker_threads()
    async with JsonlSaver(tmp_path / "s") as again:
        assert await again.aget_tuple(config("t")) == ref.get_tuple(config("t"))
    assert not _worker_threads()


async def test_idle_worker_threads_end_by_themselves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "IDLE_SECONDS", 0.05)
    saver = JsonlSaver(tmp_path / "s")
    await _advance(saver, InMemorySaver(), "t", steps=2, tasks=2)
    for _ in range(100):
        if not _worker_threads():
            break
        await asyncio.sleep(0.02)
    assert not _worker_threads()
    assert (await saver.aget_tuple(config("t"))) is not None  # starts one again
    saver.close()
    assert not _worker_threads()


async def test_a_cancelled_caller_does_not_stop_the_others(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    await _advance(saver, ref, "t", steps=1, tasks=0)
    cfg = config("t", "", cp_id(0))
    calls = [asyncio.ensure_future(saver.aput_writes(cfg, [("ch", i)], f"task-{i}")) for i in range(10)]
    calls[3].cancel()
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(results[3], asyncio.CancelledError)
    assert all(r is None for i, r in enumerate(results) if i != 3)
    saver.close()  # finishes what was queued
    tup = JsonlSaver(tmp_path / "s").get_tuple(cfg)
    tasks = {t for t, _, _ in tup.pending_writes}
    assert {f"task-{i}" for i in range(10) if i != 3} <= tasks


def test_a_forked_child_gets_worker_threads_of_its_own(tmp_path: Path) -> None:
    import multiprocessing

    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    asyncio.run(_advance(saver, ref, "parent", steps=1, tasks=1))
    assert _worker_threads()  # the parent's threads exist at the fork

    def child(q: Any) -> None:
        try:
            asyncio.run(_advance(saver, InMemorySaver(), "child", steps=2, tasks=1))
            q.put("ok")
        except BaseException as exc:  # pragma: no cover - reported below
            q.put(repr(exc))

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    with warnings.catch_warnings():  # Python 3.12+ warns of fork() with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        p.start()
    p.join(30)
    if p.is_alive():  # pragma: no cover - the child hung on its parent's threads
        p.kill()
        p.join()
    assert p.exitcode == 0 and q.get(timeout=5) == "ok"
    assert saver.get_tuple(config("child")) is not None  # the child's appends, on disk
    saver.close()


async def test_an_index_rebuilt_in_the_middle_of_a_group_keeps_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sidecar entry that disagrees with its record is found when the record is first
    read, here by the second append of a group (the put reads its parent's value): the
    index is rebuilt from the log, which already holds the group's first batch, and the
    group goes on and is synced through the same handle."""
    monkeypatch.setattr(view_module, "LOADED_RECORDS_BYTES", 0)  # a long log: its sidecar is loaded
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    await _advance(saver, ref, "t", steps=3, tasks=1)
    saver.close()  # writes the sidecar
    (idx_file,) = (tmp_path / "s" / "threads").glob("*.idx")
    head, summaries = sidecar_summaries(idx_file.read_bytes())
    target = max(i for i, s in enumerate(summaries) if s["t"] == "checkpoint")
    summaries[target]["md"] = {"json": {"step": 999}}  # wrong, yet its block's checksum is fine
    idx_file.write_bytes(sidecar_blocks(head, summaries, cuts=(target,)))

    rebuilds: list[int] = []  # batches of the group pending at each rebuild
    real_rebuild = log_module.ThreadLog._rebuild_without_sidecar

    def rebuild(self: Any) -> None:
        rebuilds.append(len(self._group or [0, 0]) - 2)
        real_rebuild(self)

    monkeypatch.setattr(log_module.ThreadLog, "_rebuild_without_sidecar", rebuild)
    saver = JsonlSaver(tmp_path / "s")
    last = config("t", "", cp_id(2))
    tup = ref.get_tuple(last)
    versions = dict(tup.checkpoint["channel_versions"])
    nv = {"messages": saver.get_next_version(versions["messages"], None)}
    cp = make_checkpoint(cp_id(3), {**tup.checkpoint["channel_values"],
                                          "messages": tup.checkpoint["channel_values"]["messages"] + [
                                              HumanMessage("more", id="more")]}, {**versions, **nv})
    ref.put_writes(last, [("ch", 1)], "late-task")
    ref.put(last, cp, {"step": 3}, nv)
    # the worker's group runner, called directly so the two appends surely form a group
    outcomes = saver._run_group("t", [
        (saver._writes.prepare_put_writes, (last, [("ch", 1)], "late-task")),
        (saver._writes.prepare_put, (last, cp, {"step": 3}, nv)),
    ])
    assert outcomes == [(None, None), (config("t", "", cp_id(3)), None)], outcomes
    assert rebuilds == [1], rebuilds  # once, with the writes batch of the group pending
    assert not diff_answers(answers(saver, "t"), answers(ref, "t"))
    saver.close()
    fresh = JsonlSaver(tmp_path / "s")
    assert not diff_answers(answers(fresh, "t"), answers(ref, "t"))
    fresh.close()


@pytest.mark.parametrize("fault", ["first-write", "second-write", "fdatasync", "refused"])
def test_group_runner_acknowledges_nothing_of_a_group_that_failed(tmp_path: Path, fault: str) -> None:
    """The group runner, called directly: a write or the sync failing fails every append
    of the group and leaves the log as it was; a refusal fails only its own append."""
    saver = JsonlSaver(tmp_path / "s")
    ref = InMemorySaver()
    asyncio.run(_advance(saver, ref, "t", steps=2, tasks=1))
    log_path = tmp_path / "s" / "threads" / (thread_file_stem("t") + ".jsonl")
    before = log_path.read_bytes()
    cfg = config("t", "", cp_id(1))
    real = files_module.os
    writes = {"n": 0}

    class FaultyOS:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def write(self, fd: int, data: Any) -> int:
            writes["n"] += 1
            if (fault, writes["n"]) in (("first-write", 1), ("second-write", 2)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real.write(fd, data)

        def fdatasync(self, fd: int) -> None:
            if fault == "fdatasync":
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            real.fdatasync(fd)

    class Unencodable:
        pass

    payloads = [
        (saver._writes.prepare_put_writes, (cfg, [("ch", 1)], "a")),
        (saver._writes.prepare_put_writes, (cfg, [("ch", Unencodable() if fault == "refused" else 2)], "b")),
        (saver._writes.prepare_put_writes, (cfg, [("ch", 3)], "c")),
    ]
    files_module.os = FaultyOS()  # type: ignore[assignment]
    try:
        outcomes = saver._run_group("t", payloads)
    finally:
        files_module.os = real  # type: ignore[assignment]
    if fault == "refused":
        assert outcomes[0] == (None, None) and outcomes[2] == (None, None)
        assert outcomes[1][1] is not None and not isinstance(outcomes[1][1], DurabilityError)
        ref.put_writes(cfg, [("ch", 1)], "a")
        ref.put_writes(cfg, [("ch", 3)], "c")
    else:
        assert all(isinstance(exc, DurabilityError) for _, exc in outcomes), outcomes
        assert log_path.read_bytes() == before
    assert saver.get_tuple(cfg) == ref.get_tuple(cfg)
    assert not diff_answers(answers(JsonlSaver(tmp_path / "s"), "t"), answers(ref, "t"))
    saver.put_writes(cfg, [("ch", 9)], "next")  # the log takes the next append
    ref.put_writes(cfg, [("ch", 9)], "next")
    assert not diff_answers(answers(saver, "t"), answers(ref, "t"))
    saver.close()


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_a_thread_deleted_while_a_run_is_on_it_stays_deleted(tmp_path: Path, durability: str) -> None:
    """A user asks for their data to be deleted while a run of their thread is inside a
    node: the run's later saves carried the whole state, deleted turns included, and
    brought the thread back (in a fresh process too). They are refused now; the run
    ends with ThreadDeletedError, and a new run starts the thread afresh."""
    from langgraph.graph import START, MessagesState, StateGraph

    entered, go_on = asyncio.Event(), asyncio.Event()

    async def agent(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].content == "second":
            entered.set()
            await asyncio.wait_for(go_on.wait(), 10)
        return {"messages": [AIMessage(f"reply to {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("after", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "after")
    saver = JsonlSaver(tmp_path / "s")
    graph = builder.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "user-42"}}
    await graph.ainvoke({"messages": [HumanMessage("my secret")]}, cfg, durability=durability)
    second = graph.ainvoke({"messages": [HumanMessage("second")]}, cfg, durability=durability)
    run = asyncio.create_task(second)
    await asyncio.wait_for(entered.wait(), 10)
    await saver.adelete_thread("user-42")
    go_on.set()
    with pytest.raises(ThreadDeletedError, match="user-42"):
        await asyncio.wait_for(run, 10)
    assert (await graph.aget_state(cfg)).values == {}
    saver.close()
    fresh = JsonlSaver(tmp_path / "s", read_only=True)
    assert fresh.get_tuple(cfg) is None
    fresh.close()
    saver = JsonlSaver(tmp_path / "s")
    graph = builder.compile(checkpointer=saver)
    out = await graph.ainvoke({"messages": [HumanMessage("new start")]}, cfg, durability=durability)
    assert [m.content for m in out["messages"]] == [
        "new start", "reply to new start", "reply to reply to new start"]
    saver.close()


async def test_close_does_not_wait_for_idle_threads_while_a_thread_log_is_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Worker threads that were idle when close() came, and found only jobs of a thread
    # log another worker holds (a cancelled run's last saves, say), went back to sleep
    # for IDLE_SECONDS: nothing woke them once that log's jobs were done, so close() (an
    # ``async with`` exit, the end of a Ctrl-C'd program) hung that long.
    monkeypatch.setattr(worker_module, "IDLE_SECONDS", 120.0)
    gate, all_in, k_in = threading.Event(), threading.Barrier(3), threading.Event()

    def runner(key: Any, payloads: Any) -> list[Any]:
        if key == "k" and payloads == ["first"]:
            k_in.set()
            gate.wait(30)
        elif key != "k":
            all_in.wait(30)  # three threads at once: three idle threads afterwards
        return [(p, None) for p in payloads]

    worker = worker_module.Worker(runner, threads=3)
    assert await asyncio.gather(*(worker.submit(key, key) for key in "xyz")) == ["x", "y", "z"]
    first = asyncio.ensure_future(worker.submit("k", "first"))
    await asyncio.to_thread(k_in.wait, 30)
    second = asyncio.ensure_future(worker.submit("k", "second"))  # queued behind "first"
    await asyncio.sleep(0.05)  # the woken idle thread finds "k" busy and sleeps again
    closer = threading.Thread(target=worker.close)
    closer.start()
    while not worker._stopping:
        await asyncio.sleep(0.001)
    gate.set()
    with within(20, "close()"):
        closer.join()
    assert worker.running == 0
    assert await first == "first" and await second == "second"


async def test_close_does_not_wait_for_threads_when_a_call_comes_in_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A call made while close() waits for the busy threads (a cancelled run's background
    # save submitted as the ``async with`` block exits) started a thread of its own and
    # told every thread to stay: the ones close() was joining then slept out
    # IDLE_SECONDS before ending, and close() with them.
    monkeypatch.setattr(worker_module, "IDLE_SECONDS", 120.0)
    gate, a_in = threading.Event(), threading.Event()

    def runner(key: Any, payloads: Any) -> list[Any]:
        if key == "a":
            a_in.set()
            gate.wait(30)
        return [(p, None) for p in payloads]

    worker = worker_module.Worker(runner, threads=3)
    first = asyncio.ensure_future(worker.submit("a", "first"))
    await asyncio.to_thread(a_in.wait, 30)
    closer = threading.Thread(target=worker.close)
    closer.start()
    while not worker._stopping:
        await asyncio.sleep(0.001)
    assert await asyncio.wait_for(worker.submit("b", "late"), 30) == "late"  # run meanwhile
    gate.set()
    with within(20, "close()"):
        closer.join()
    assert await first == "first"
    worker.close()
    assert worker.running == 0


async def test_savers_dropped_without_close_let_their_files_and_threads_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saver made per request and never closed (a common mistake in a web app) kept
    its files open and its worker threads running until those threads had been idle for
    IDLE_SECONDS: the threads kept the saver alive. 100 such requests in a row held ~300
    descriptors and ~245 threads, enough at a higher rate to run out of descriptors.
    Once a saver is no longer referenced (and collected), its files are closed and its
    threads end at once, as a SqliteSaver's connection is closed when it is freed."""
    import gc

    monkeypatch.setattr(worker_module, "IDLE_SECONDS", 120.0)  # not the idle threads' own end

    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = descriptors()
    for i in range(10):
        saver = JsonlSaver(tmp_path / "s")
        await _advance(saver, InMemorySaver(), f"t{i}", steps=2, tasks=2)
    assert _worker_threads() and descriptors() > before
    del saver
    gc.collect()
    for _ in range(200):  # (threads end as they wake: moments)
        if not _worker_threads() and descriptors() <= before:
            break
        await asyncio.sleep(0.01)
    assert not _worker_threads()
    assert descriptors() <= before
