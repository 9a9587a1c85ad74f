"""Several workers, one thread: a run on a thread another run is working on is refused
(``concurrent_runs="refuse"``) or waits (``"wait"``); a finished, interrupted, failed,
cancelled or killed run leaves the thread free at once; the parts of one run (subgraphs,
parallel branches) are that run.

The scenario of the issue runs with threads, asyncio tasks and processes: every
acknowledged turn is in the final history, and the history is a transcript a chat model
API accepts (every tool call answered before the next human message).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
import threading
import time
from pathlib import Path
from typing import Annotated

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import (
    ConcurrentRunError,
    ConfigError,
    JsonlCheckpointError,
    JsonlSaver,
    ThreadBusyError,
)
from tests.harness.bounded import within
from tests.harness.busy import (
    atake_turns,
    read_acked,
    take_turns,
    transcript_problems,
    turn_agent,
)
from tests.harness.children import busy_worker_child, holding_run_child, spawn
from tests.harness.flow_graphs import build_nested_subgraph_graph

#: Seconds each worker takes turns in the several-workers scenarios (the issue used 8).
SECONDS = float(os.environ.get("BUSY_SECONDS", "3"))
CFG = {"configurable": {"thread_id": "shared"}}


class Held(TypedDict, total=False):
    visits: Annotated[list[str], operator.add]


def held_graph(saver, inside: threading.Event | None = None, release: threading.Event | None = None,
               raise_in_node: BaseException | None = None):
    """One node that appends to ``visits``; it can signal that it runs, wait, or raise."""

    def node(state: Held) -> dict:
        if inside is not None:
            inside.set()
        if release is not None:
            assert release.wait(30), "the test never released the run"
        if raise_in_node is not None:
            raise raise_in_node
        return {"visits": [f"visit {len(state.get('visits', []))}"]}

    g = StateGraph(Held)
    g.add_node("node", node)
    g.add_edge(START, "node")
    return g.compile(checkpointer=saver)


class LiveRun:
    """A run of ``held_graph`` in a thread, held inside its node until :meth:`finish`."""

    def __init__(self, saver, cfg=CFG, durability: str = "async") -> None:
        self.inside, self.release = threading.Event(), threading.Event()
        self.graph = held_graph(saver, self.inside, self.release)
        self.outcome: list = []
        self.thread = threading.Thread(target=self._run, args=(cfg, durability), daemon=True)
        self.thread.start()
        assert self.inside.wait(30), "the held run never started"

    def _run(self, cfg, durability: str) -> None:
        try:
            self.outcome.append(self.graph.invoke({"visits": []}, cfg, durability=durability))
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            self.outcome.append(exc)

    def finish(self) -> object:
        self.release.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        return self.outcome[0]


def _count(saver, cfg=CFG) -> int:
    return len(list(saver.list(cfg)))


def _stored(saver, cfg=CFG) -> str:
    """Everything the thread holds (values and pending writes of every checkpoint), as text."""
    return repr([(t.checkpoint["channel_values"], t.pending_writes, t.metadata) for t in saver.list(cfg)])


# ---------------------------------------------------------------------------
# refuse
# ---------------------------------------------------------------------------


def test_a_run_on_a_busy_thread_is_refused_before_it_stores_anything(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    live = LiveRun(saver)
    graph = held_graph(saver)
    with within(10), pytest.raises(ThreadBusyError) as caught:
        graph.invoke({"visits": ["from the second run"]}, CFG)
    err = caught.value
    assert isinstance(err, ConcurrentRunError) and isinstance(err, JsonlCheckpointError)
    assert "'shared'" in str(err) and f"process {os.getpid()}" in str(err), str(err)
    assert "concurrent_runs='wait'" in str(err)
    # the holder in words a person can use, not an object's repr ("run RunControl@7f95b6f1c460")
    assert "@" not in str(err) and "RunControl" not in str(err), str(err)
    assert err.thread_id == "shared" and err.holder["pid"] == os.getpid()
    # the live run goes on untouched; nothing of the refused run was stored
    assert live.finish() == {"visits": ["visit 0"]}
    assert "from the second run" not in _stored(saver) and _count(saver) == 3
    # the thread is free once the live run ended
    assert graph.invoke({"visits": ["again"]}, CFG) == {"visits": ["visit 0", "again", "visit 2"]}
    saver.close()


@pytest.mark.parametrize("savers", ["one saver", "two savers"])
@pytest.mark.parametrize("mode", ["refuse", "wait", "hold"])
def test_a_graph_invoked_on_the_thread_from_inside_its_own_run_is_refused_at_once(
    tmp_path: Path, mode: str, savers: str
) -> None:
    """A node (a tool running a sub-agent) invokes a graph with a config of its own on
    the thread its run is working on. That run cannot end before the node does: waiting
    for it is waiting for oneself. The inner run was refused only after a second (after
    busy_timeout, 60 s by default, with "wait") with advice that cannot work (retry,
    concurrent_runs='wait', a longer busy_timeout, close a stream). It is refused at
    once, saying why and what to do ("hold", never refused, goes ahead at once instead
    of after busy_timeout)."""
    saver = JsonlSaver(tmp_path / "s", concurrent_runs=mode)
    inner = held_graph(saver if savers == "one saver" else JsonlSaver(tmp_path / "s", concurrent_runs=mode))
    refused: list[tuple[float, ThreadBusyError]] = []

    def node(state: Held) -> dict:
        started = time.monotonic()
        try:
            inner.invoke({"visits": ["inner"]}, {"configurable": {"thread_id": "shared"}})
        except ThreadBusyError as err:
            refused.append((time.monotonic() - started, err))
        return {"visits": ["outer"]}

    g = StateGraph(Held)
    g.add_node("node", node)
    g.add_edge(START, "node")
    with within(30, "the outer run"):
        assert g.compile(checkpointer=saver).invoke({"visits": []}, CFG) == {"visits": ["outer"]}
    if mode == "hold":  # never refused: it goes ahead at once, as after busy_timeout
        assert not refused and "inner" in _stored(saver)
        return
    [(waited, err)] = refused
    assert waited < 0.5, f"the inner run waited {waited:.1f} s for the run it is part of"
    message = str(err)
    assert "'shared'" in message and "from inside" in message, message
    assert "thread_id of its own" in message and "subgraph" in message, message
    assert "concurrent_runs='wait'" not in message and "busy_timeout" not in message, message
    assert "inner" not in _stored(saver)
    saver.close()


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_closing_the_saver_leaves_a_live_run_its_thread(tmp_path: Path, durability: str) -> None:
    """close() while a run is inside a node (an app reloading, a test tearing down) gave
    up the run's live-run lock, yet the run went on saving: another saver's run on the
    thread was not refused, and the two interleaved (the first then failed with
    ConcurrentRunError, its input left without a reply). The lock now stays with the
    run until it ends, as workers.md says: the live run goes on untouched."""
    first = JsonlSaver(tmp_path / "s")
    live = LiveRun(first, durability=durability)
    first.close()
    second = JsonlSaver(tmp_path / "s")
    with within(10), pytest.raises(ThreadBusyError):
        held_graph(second).invoke({"visits": ["from the second run"]}, CFG)
    assert live.finish() == {"visits": ["visit 0"]}
    assert "from the second run" not in _stored(second)
    again = held_graph(second).invoke({"visits": ["again"]}, CFG)
    assert again == {"visits": ["visit 0", "again", "visit 2"]}
    first.close()
    second.close()


def test_two_savers_on_one_store_see_each_others_runs(tmp_path: Path) -> None:
    """Two workers of an app open their own saver on the store: one run per thread."""
    first, second = JsonlSaver(tmp_path / "s"), JsonlSaver(tmp_path / "s")
    live = LiveRun(first)
    with within(10), pytest.raises(ThreadBusyError):
        held_graph(second).invoke({"visits": []}, CFG)
    # another thread is not busy
    other = {"configurable": {"thread_id": "other"}}
    assert held_graph(second).invoke({"visits": []}, other) == {"visits": ["visit 0"]}
    live.finish()
    assert held_graph(second).invoke({"visits": []}, CFG)["visits"] == ["visit 0", "visit 1"]
    first.close()
    second.close()


def test_reading_and_driving_the_saver_directly_are_never_refused(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    live = LiveRun(saver, durability="sync")
    graph = held_graph(saver)
    with within(10):
        assert graph.get_state(CFG).next == ("node",)
        assert len(list(graph.get_state_history(CFG))) == _count(saver)
        assert saver.get_tuple(CFG) is not None
    reader = JsonlSaver(tmp_path / "s", read_only=True)
    assert reader.get_tuple(CFG) is not None
    live.finish()
    reader.close()
    saver.close()


def test_unchecked_never_refuses(tmp_path: Path) -> None:
    """The mode for the LangGraph server, which coordinates runs itself."""
    saver = JsonlSaver(tmp_path / "s")
    live = LiveRun(saver)
    server_side = JsonlSaver(tmp_path / "s", concurrent_runs="unchecked")
    with within(10):
        out = held_graph(server_side).invoke({"visits": ["server"]}, CFG)
    assert out["visits"][-1].startswith("visit")
    live.finish()
    saver.close()
    server_side.close()


def test_bad_options_are_refused_with_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'refuse', 'wait', 'allow', 'unchecked'"):
        JsonlSaver(tmp_path / "s", concurrent_runs="reject")
    with pytest.raises(ConfigError, match="busy_timeout"):
        JsonlSaver(tmp_path / "s", busy_timeout=-1)


# ---------------------------------------------------------------------------
# wait
# ---------------------------------------------------------------------------


def test_wait_starts_from_the_head_the_live_run_left(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="wait", busy_timeout=30)
    live = LiveRun(saver)
    waiter_done = threading.Event()
    result: list = []

    def second() -> None:
        result.append(held_graph(saver).invoke({"visits": ["queued"]}, CFG))
        waiter_done.set()

    t = threading.Thread(target=second, daemon=True)
    t.start()
    assert not waiter_done.wait(0.5), "the second run did not wait for the live one"
    live.finish()
    assert waiter_done.wait(10)
    assert result == [{"visits": ["visit 0", "queued", "visit 2"]}]
    saver.close()


def test_wait_gives_up_after_busy_timeout(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="wait", busy_timeout=0.3)
    live = LiveRun(saver)
    started = time.monotonic()
    with within(10), pytest.raises(ThreadBusyError, match=r"waited 0\.[3-9] s \(busy_timeout\)") as err:
        held_graph(saver).invoke({"visits": ["timed out"]}, CFG)
    # and what to do about it
    assert "Retry once that run has ended, or open the saver with a longer busy_timeout" in str(err.value)
    assert time.monotonic() - started >= 0.3
    live.finish()
    assert "timed out" not in _stored(saver) and _count(saver) == 3
    saver.close()


# ---------------------------------------------------------------------------
# when a run ends: finished, interrupted, failed, cancelled, killed
# ---------------------------------------------------------------------------


class _Seen(list):
    """Results of invokes, with interrupts as their values (their ids name checkpoints)."""

    def plain(self) -> list:
        return [
            {k: [i.value for i in v] if k == "__interrupt__" else v for k, v in out.items()}
            for out in self
        ]


def test_a_run_stopped_at_an_interrupt_is_over(tmp_path: Path) -> None:
    """The next invoke (new input, a resume, time travel) is not refused, and the thread
    ends as it does with InMemorySaver."""

    def build(saver):
        def ask(state: Held) -> dict:
            answer = interrupt("go on?")
            return {"visits": [f"answer {answer}"]}

        g = StateGraph(Held)
        g.add_node("ask", ask)
        g.add_edge(START, "ask")
        return g.compile(checkpointer=saver)

    def scenario(graph) -> list:
        seen = _Seen([graph.invoke({"visits": ["a"]}, CFG)])
        first = graph.get_state(CFG).config
        seen.append(graph.invoke({"visits": ["b"]}, CFG))  # new input while interrupted
        seen.append(graph.invoke(Command(resume="yes"), CFG))
        seen.append(graph.invoke(None, first))  # time travel to the first interrupt
        seen.append(graph.invoke(Command(resume="later"), CFG))
        graph.update_state(CFG, {"visits": ["edited"]})
        seen.append(graph.get_state(CFG).values)
        return seen.plain()

    saver = JsonlSaver(tmp_path / "s")
    with within(30):
        ours = scenario(build(saver))
    assert ours == scenario(build(InMemorySaver()))
    saver.close()


def test_a_failed_run_frees_the_thread(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    with pytest.raises(RuntimeError):
        held_graph(saver, raise_in_node=RuntimeError("tool broke")).invoke({"visits": []}, CFG)
    with within(10):
        assert held_graph(saver).invoke(None, CFG) == {"visits": ["visit 0"]}
    saver.close()


def test_keyboard_interrupt_frees_the_thread_at_once(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")  # refuse: a run still live would be refused
    with pytest.raises(KeyboardInterrupt):
        held_graph(saver, raise_in_node=KeyboardInterrupt()).invoke({"visits": []}, CFG)
    with within(10):
        assert held_graph(saver).invoke({"visits": []}, CFG) == {"visits": ["visit 0"]}
    saver.close()


async def test_a_cancelled_task_frees_the_thread_at_once(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    inside = asyncio.Event()

    async def slow(state: Held) -> dict:
        inside.set()
        await asyncio.sleep(60)
        return {"visits": ["never"]}

    g = StateGraph(Held)
    g.add_node("slow", slow)
    g.add_edge(START, "slow")
    graph = g.compile(checkpointer=saver)
    task = asyncio.create_task(graph.ainvoke({"visits": []}, CFG))
    await asyncio.wait_for(inside.wait(), 30)
    with pytest.raises(ThreadBusyError):
        await held_graph(saver).ainvoke({"visits": []}, CFG)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    out = await asyncio.wait_for(held_graph(saver).ainvoke({"visits": ["next"]}, CFG), 10)
    assert out == {"visits": ["next", "visit 1"]}
    saver.close()


def test_a_process_killed_mid_run_leaves_the_thread_free_at_once(tmp_path: Path) -> None:
    store, inside = str(tmp_path / "s"), str(tmp_path / "inside")
    child = spawn(holding_run_child, store, "shared", inside, str(tmp_path / "err"))
    deadline = time.monotonic() + 60
    while not os.path.exists(inside):
        assert child.exitcode is None, (tmp_path / "err").read_text()
        assert time.monotonic() < deadline, "the child's run never started"
        time.sleep(0.01)
    saver = JsonlSaver(store)  # refuse: never waits, so "not refused" means "free now"
    with pytest.raises(ThreadBusyError, match=f"process {child.pid} "):
        held_graph(saver).invoke({"visits": []}, CFG)
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    with within(10):
        out = held_graph(saver).invoke(None, CFG)  # resumes the killed run's step
    assert out == {"visits": ["visit 0"]}
    saver.close()


# ---------------------------------------------------------------------------
# the parts of one run are that run
# ---------------------------------------------------------------------------


class Fan(TypedDict, total=False):
    items: list[str]
    done: Annotated[list[str], operator.add]


def _fan_graph(saver):
    def split(state: Fan) -> dict:
        return {}

    def worker(item: dict) -> dict:
        time.sleep(0.01)
        return {"done": [item["item"]]}

    inner = StateGraph(Fan)
    inner.add_node("worker", lambda s: {"done": ["inner"]})
    inner.add_edge(START, "worker")

    g = StateGraph(Fan)
    g.add_node("split", split)
    g.add_node("worker", worker)
    g.add_node("inner", inner.compile(checkpointer=True))  # a subgraph with its own history
    g.add_edge(START, "split")
    g.add_conditional_edges("split", lambda s: [Send("worker", {"item": x}) for x in s["items"]], ["worker"])
    g.add_edge("split", "inner")
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("mode", ["refuse", "wait"])
def test_subgraphs_and_parallel_branches_are_one_run(tmp_path: Path, mode: str) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs=mode, busy_timeout=2)
    with within(30):
        out = _fan_graph(saver).invoke({"items": list("abcdef")}, CFG)
        ref = _fan_graph(InMemorySaver()).invoke({"items": list("abcdef")}, CFG)
        assert sorted(out["done"]) == sorted(ref["done"]) == sorted([*"abcdef", "inner"])
        nested = build_nested_subgraph_graph(with_interrupt=True)
        ours, theirs = nested.compile(checkpointer=saver), nested.compile(checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": "nested"}}
        for graph in (ours, theirs):
            graph.invoke({"trail": []}, cfg)
            graph.invoke(Command(resume="42"), cfg)
        assert ours.get_state(cfg).values == theirs.get_state(cfg).values
    saver.close()


# ---------------------------------------------------------------------------
# the scenario: several workers taking turns on one thread
# ---------------------------------------------------------------------------


def _check_history(saver, acked: list[str]) -> None:
    messages = saver.get_tuple(CFG).checkpoint["channel_values"]["messages"]
    assert transcript_problems(messages) == []
    humans = [m.id for m in messages if m.type == "human"]
    assert len(humans) == len(set(humans)), "a turn is in the history twice"
    # every acknowledged turn is there; a refused turn stored nothing
    assert sorted(humans) == sorted(acked)


@pytest.mark.parametrize("mode", ["refuse", "wait"])
def test_three_processes_take_turns_on_one_thread(tmp_path: Path, mode: str) -> None:
    store = str(tmp_path / "s")
    JsonlSaver(store).close()
    start_at = time.time() + 1.0
    children = []
    for w in range(3):
        paths = [str(tmp_path / f"{name}-{w}") for name in ("acks", "tally", "err")]
        child = spawn(busy_worker_child, store, mode, "shared", w, start_at, SECONDS, *paths)
        children.append((child, paths))
    tallies, acked = [], []
    for child, (ack_path, tally_path, err_path) in children:
        child.join(SECONDS + 120)
        assert child.exitcode == 0, Path(err_path).read_text() if os.path.exists(err_path) else child.exitcode
        tallies.append(json.loads(Path(tally_path).read_text()))
        acked += read_acked(ack_path)
    assert all(t["other"] is None and t["behind"] == 0 for t in tallies), tallies
    # the ack files (written as each turn returned) agree with what each worker counted
    assert [len(read_acked(str(tmp_path / f"acks-{w}"))) for w in range(3)] == [
        len(t["acked"]) for t in tallies
    ]
    if mode == "wait":
        assert all(t["busy"] == 0 for t in tallies), tallies
        assert all(t["acked"] for t in tallies), f"a waiting worker never got a turn: {tallies}"
    assert len(acked) >= 3, tallies
    with within(30):
        saver = JsonlSaver(store, read_only=True)
        _check_history(saver, acked)
    saver.close()


@pytest.mark.parametrize("mode", ["refuse", "wait"])
@pytest.mark.parametrize("savers", ["shared", "one each"])
def test_threads_take_turns_on_one_thread(tmp_path: Path, mode: str, savers: str) -> None:
    shared = JsonlSaver(tmp_path / "s", concurrent_runs=mode)
    mine = [shared] * 3
    if savers == "one each":
        mine = [JsonlSaver(tmp_path / "s", concurrent_runs=mode) for _ in range(3)]
    tallies: list = [None] * 3

    def worker(w: int) -> None:
        tallies[w] = take_turns(turn_agent(mine[w]), "shared", w, SECONDS / 2)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(SECONDS + 120)
        assert not t.is_alive()
    assert all(t.other is None and t.behind == 0 for t in tallies), tallies
    if mode == "wait":
        assert all(t.busy == 0 and t.acked for t in tallies), tallies
    with within(30):
        _check_history(shared, [turn for t in tallies for turn in t.acked])
    for s in set(mine) | {shared}:
        s.close()


@pytest.mark.parametrize("mode", ["refuse", "wait"])
async def test_asyncio_tasks_take_turns_on_one_thread(tmp_path: Path, mode: str) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs=mode)
    graph = turn_agent(saver)
    tallies = await asyncio.gather(*(atake_turns(graph, "shared", w, SECONDS / 2) for w in range(3)))
    assert all(t.other is None and t.behind == 0 for t in tallies), tallies
    if mode == "wait":
        assert all(t.busy == 0 and t.acked for t in tallies), tallies
    _check_history(saver, [turn for t in tallies for turn in t.acked])
    saver.close()


def test_allow_lets_runs_overlap_and_refuses_the_one_behind(tmp_path: Path) -> None:
    """``"allow"`` is the behaviour before busy threads: runs overlap; the run that falls
    behind gets ConcurrentRunError (and the history may hold an unanswered tool call,
    which is why it is not the default)."""
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="allow")
    live = LiveRun(saver, durability="sync")  # its first checkpoint is stored before it holds
    with within(10):
        out = held_graph(saver).invoke({"visits": ["second"]}, CFG, durability="sync")  # it overlaps
    assert out == {"visits": ["second", "visit 1"]}  # from the live run's first checkpoint
    assert isinstance(live.finish(), ConcurrentRunError)
    saver.close()


def _held_lock_attempt(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The first attempt at a live-run lock stops in its worker thread: the first event
    is set as it stops there, and it goes on once the test sets the second."""
    from langgraph_jsonl_checkpoint.disk.runlock import RunLock

    attempting, go_on = threading.Event(), threading.Event()
    real = RunLock.try_acquire

    def slow_attempt(self, *args, **kwargs):
        if not attempting.is_set():
            attempting.set()
            assert go_on.wait(30), "the test never let the attempt go on"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunLock, "try_acquire", slow_attempt)
    return attempting, go_on


async def test_a_task_cancelled_while_its_lock_attempt_runs_gets_cancelled_and_leaves_the_thread_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt at the live-run lock runs in a worker thread; a task cancelled meanwhile
    (``asyncio.timeout``, a server dropping a request) must see ``CancelledError``, not an
    error from closing the attempt still running, and must not leave the lock held."""
    saver = JsonlSaver(tmp_path / "s")
    attempting, go_on = _held_lock_attempt(monkeypatch)
    task = asyncio.create_task(held_graph(saver).ainvoke({"visits": []}, CFG))
    assert await asyncio.to_thread(attempting.wait, 30), "the run never tried to take its lock"
    task.cancel()
    await asyncio.sleep(0.05)  # the task has seen its cancellation; the attempt is still running
    go_on.set()
    with within(10), pytest.raises(asyncio.CancelledError):
        await task
    # The attempt went on and took the lock for a run that no longer exists: it is let go.
    out = await asyncio.wait_for(held_graph(saver).ainvoke({"visits": ["next"]}, CFG), 10)
    assert out == {"visits": ["next", "visit 1"]}
    oracle = InMemorySaver()
    await held_graph(oracle).ainvoke({"visits": ["next"]}, CFG)
    assert _count(saver) == _count(oracle), "the cancelled run stored nothing"
    saver.close()


async def test_ctrl_c_in_asyncio_run_while_a_lock_attempt_runs_cancels_the_run_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Ctrl-C, ``asyncio.run`` cancels every task of the loop, not only the run's: the
    attempt at the lock, still running in its worker thread, must not be one of them.
    (It was a task of its own: cancelled, it looked over, and closing the attempts it
    was still executing raised ``ValueError: generator already executing`` out of the
    run instead of its ``CancelledError``, and left the lock to the loop being freed.)"""
    saver = JsonlSaver(tmp_path / "s")
    attempting, go_on = _held_lock_attempt(monkeypatch)
    task = asyncio.create_task(held_graph(saver).ainvoke({"visits": []}, CFG))
    assert await asyncio.to_thread(attempting.wait, 30), "the run never tried to take its lock"
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert task in others
    for t in others:  # as asyncio.run does on Ctrl-C
        t.cancel()
    await asyncio.sleep(0.05)  # the cancellations are seen; the attempt is still running
    go_on.set()
    with within(10):
        outcomes = await asyncio.gather(*others, return_exceptions=True)
    assert not [o for o in outcomes if not isinstance(o, asyncio.CancelledError)], outcomes
    out = await asyncio.wait_for(held_graph(saver).ainvoke({"visits": ["next"]}, CFG), 10)
    assert out == {"visits": ["next", "visit 1"]}
    saver.close()


async def test_a_slow_lock_attempt_never_holds_up_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's attempt at its thread's live-run lock (file operations, in a worker
    thread) must not make the event loop wait: another run, on another thread, starts
    and ends meanwhile. (The saver's bookkeeping lock, which the event loop takes at a
    run's start and end, was held across those file operations.)"""
    from langgraph_jsonl_checkpoint.disk.runlock import RunLock

    saver = JsonlSaver(tmp_path / "s")
    attempting, go_on, attempt_over = threading.Event(), threading.Event(), threading.Event()
    real = RunLock.try_acquire

    def slow_attempt(self, *args, **kwargs):
        if self.thread_id == "slow":
            attempting.set()
            go_on.wait(5)  # a bound, so that the event loop blocked here does not hang the test
            attempt_over.set()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunLock, "try_acquire", slow_attempt)
    slow_cfg = {"configurable": {"thread_id": "slow"}}
    slow = asyncio.create_task(held_graph(saver).ainvoke({"visits": []}, slow_cfg))
    assert await asyncio.to_thread(attempting.wait, 30), "the run never tried to take its lock"
    out = await held_graph(saver).ainvoke({"visits": []}, {"configurable": {"thread_id": "other"}})
    other_ended_first = not attempt_over.is_set()
    go_on.set()
    assert await asyncio.wait_for(slow, 30) == {"visits": ["visit 0"]}
    assert out == {"visits": ["visit 0"]}
    assert other_ended_first, "the event loop waited for another run's lock attempt"
    saver.close()


@pytest.mark.parametrize("at", ["ftruncate", "write"])
def test_ctrl_c_while_the_lock_is_taken_leaves_the_thread_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    """A KeyboardInterrupt (Ctrl-C) delivered as the live-run lock was being taken (as
    its holder record was written, after the flock) left the lock held by this process
    for good: every later run, restore or sweep of the thread in it was refused until
    the process exited (a notebook, a server). The lock is let go with the interrupt."""
    import langgraph_jsonl_checkpoint.disk.files as files_module
    from langgraph_jsonl_checkpoint.disk.runlock import RunLock
    from langgraph_jsonl_checkpoint.disk.store import Store

    store = Store(tmp_path / "s")
    real = files_module.os

    class CtrlC:
        def __getattr__(self, name: str):
            attr = getattr(real, name)
            if name != at:
                return attr

            def interrupted(*args, **kwargs):
                attr(*args, **kwargs)
                raise KeyboardInterrupt  # the signal handler runs as the call returns

            return interrupted

    lock = store.run_lock("t")
    monkeypatch.setattr(files_module, "os", CtrlC())
    with pytest.raises(KeyboardInterrupt):
        lock.try_acquire("run-1")
    monkeypatch.setattr(files_module, "os", real)
    other = RunLock(store.log_paths("t"), "t")
    assert other.try_acquire("run-2"), "the interrupted attempt still holds the lock"
    other.release()
    assert lock.try_acquire("run-1") and lock.holder()["run"] == "run-1"
    lock.release()
    store.close()


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_ctrl_c_just_after_the_lock_was_taken_leaves_the_thread_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durability: str
) -> None:
    """A KeyboardInterrupt (Ctrl-C) delivered just after a run took the thread's live-run
    lock, before it arranged to give it back at its end (as the log was pinned open),
    left the lock held by this process for good: every later run of the thread in it was
    refused with ThreadBusyError, as if an unfinished stream() held it. The lock is let go
    with the interrupt."""
    from langgraph_jsonl_checkpoint.disk.store import Store

    saver = JsonlSaver(tmp_path / "s")
    real_pin = Store.pin
    interrupted: list[str] = []

    def pin_then_ctrl_c(self: Store, thread_id: str, holder: object) -> None:
        real_pin(self, thread_id, holder)
        if not interrupted:
            interrupted.append(thread_id)
            raise KeyboardInterrupt  # the signal handler runs as the call returns

    monkeypatch.setattr(Store, "pin", pin_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        held_graph(saver).invoke({"visits": []}, CFG, durability=durability)
    assert interrupted == ["shared"]
    with within(10):
        assert held_graph(saver).invoke({"visits": []}, CFG, durability=durability) == {"visits": ["visit 0"]}
    assert not saver.store.run_lock("shared").seems_held()
    saver.close()
