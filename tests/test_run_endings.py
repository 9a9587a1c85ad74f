"""Every way a run can end gives its live-run hold back, sync and async, in every
``concurrent_runs`` mode that takes one (``refuse``, ``wait``, ``hold``): returned,
refused by LangGraph before its first step (strict resume, no input), raised inside a
node, cancelled, a ``stream`` generator closed early or dropped, an ``astream``
generator left suspended when its event loop closed, ``KeyboardInterrupt``.

After each ending, a normal run on the same thread must run normally: not refused
(``ThreadBusyError``), not left waiting out ``busy_timeout`` behind a run that is gone
(``"wait"`` would then refuse it, ``"hold"`` would log that it went ahead without the
lock). ``InMemorySaver`` runs the same sequence as the oracle: same outputs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import operator
import signal
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph._internal._constants import CONFIG_KEY_STRICT_RESUME
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import EmptyInputError
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadBusyError
from tests.harness.bounded import within

MODES = ["refuse", "wait", "hold"]
#: Long enough that a run behind a live one would wait it out, short enough for a test.
BUSY_TIMEOUT = 2.0


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _config(strict: bool = False) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": str(uuid.uuid4())}
    if strict:
        configurable[CONFIG_KEY_STRICT_RESUME] = True
    return {"configurable": configurable}


def _parallel_questions(saver: Any) -> Any:
    """The issue's graph: two parallel nodes, each asking a question."""

    def a(state: State) -> dict:
        return {"log": [f"a:{interrupt('a?')}"]}

    def b(state: State) -> dict:
        return {"log": [f"b:{interrupt('b?')}"]}

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    return g.compile(checkpointer=saver)


def _two_steps(saver: Any, second: Callable[[State], Any] | None = None) -> Any:
    """``one`` then ``two`` (``second`` replaces the plain ``two``)."""

    def one(state: State) -> dict:
        return {"log": ["one"]}

    def two(state: State) -> dict:
        return {"log": ["two"]}

    g = StateGraph(State)
    g.add_node("one", one)
    g.add_node("two", second or two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    return g.compile(checkpointer=saver)


def _saver(tmp_path: Path, mode: str) -> JsonlSaver:
    return JsonlSaver(tmp_path / "store", concurrent_runs=mode, busy_timeout=BUSY_TIMEOUT)


class NoStaleHold:
    """Fails the test if a run went ahead without the lock (``"hold"`` behind a stale
    hold logs it), besides the refusal the other modes raise."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        caplog.set_level(logging.WARNING, logger="langgraph_jsonl_checkpoint")

    def check(self) -> None:
        stale = [r.getMessage() for r in self.caplog.records if "without the live-run lock" in r.getMessage()]
        assert not stale, stale


def _next_run(saver: Any, cfg: dict[str, Any]) -> dict:
    """A normal run on the thread; it must neither be refused nor wait out a hold."""
    with within(BUSY_TIMEOUT * 5, "the next run"):
        return _two_steps(saver).invoke({"log": ["next"]}, cfg)


async def _anext_run(saver: Any, cfg: dict[str, Any]) -> dict:
    return await asyncio.wait_for(_two_steps(saver).ainvoke({"log": ["next"]}, cfg), BUSY_TIMEOUT * 5)


# -- the reproduction -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_refused_by_strict_resume_gives_the_thread_back(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    watch = NoStaleHold(caplog)
    outputs = []
    for saver in (InMemorySaver(), _saver(tmp_path, mode)):
        graph = _parallel_questions(saver)
        cfg = _config(strict=True)
        graph.invoke({"log": []}, cfg)
        ids = {i.value: i.id for i in graph.get_state(cfg).interrupts}
        with pytest.raises(Exception) as refused:
            graph.invoke(Command(resume={"not-a-pending-id": "x"}), cfg)
        assert not isinstance(refused.value, ThreadBusyError)
        # The refusal is still alive here (pytest keeps its traceback, which holds the
        # refused run's loop): the hold must be given back all the same.
        with within(BUSY_TIMEOUT * 5, "the resume"):
            outputs.append(graph.invoke(Command(resume={ids["a?"]: "yes", ids["b?"]: "no"}), cfg))
    assert outputs[0] == outputs[1] == {"log": ["a:yes", "b:no"]}
    watch.check()


@pytest.mark.parametrize("mode", MODES)
async def test_an_async_resume_refused_by_strict_resume_gives_the_thread_back(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    watch = NoStaleHold(caplog)
    saver = _saver(tmp_path, mode)
    graph = _parallel_questions(saver)
    cfg = _config(strict=True)
    await graph.ainvoke({"log": []}, cfg)
    ids = {i.value: i.id for i in (await graph.aget_state(cfg)).interrupts}
    with pytest.raises(Exception) as refused:
        await graph.ainvoke(Command(resume={"0" * 32: "x"}), cfg)
    assert not isinstance(refused.value, ThreadBusyError)
    out = await asyncio.wait_for(graph.ainvoke(Command(resume={ids["a?"]: "y", ids["b?"]: "n"}), cfg), 10)
    assert out == {"log": ["a:y", "b:n"]}
    watch.check()
    saver.close()


# -- every ending, sync ------------------------------------------------------------------


def _returned(saver: Any, cfg: dict[str, Any]) -> None:
    assert _two_steps(saver).invoke({"log": []}, cfg) == {"log": ["one", "two"]}


def _no_input(saver: Any, cfg: dict[str, Any]) -> None:
    # LangGraph refuses this in the loop's __enter__, after the thread was read.
    with pytest.raises(EmptyInputError):
        _two_steps(saver).invoke(None, cfg)


def _raised_in_node(saver: Any, cfg: dict[str, Any]) -> None:
    def broken(state: State) -> dict:
        raise RuntimeError("tool broke")

    with pytest.raises(RuntimeError, match="tool broke"):
        _two_steps(saver, broken).invoke({"log": []}, cfg)


def _stream_closed_early(saver: Any, cfg: dict[str, Any]) -> None:
    stream = _two_steps(saver).stream({"log": []}, cfg)
    assert next(stream) == {"one": {"log": ["one"]}}
    stream.close()


def _stream_left_with_break(saver: Any, cfg: dict[str, Any]) -> None:
    for _ in _two_steps(saver).stream({"log": []}, cfg):
        break


def _stream_dropped_in_a_cycle(saver: Any, cfg: dict[str, Any]) -> None:
    # A generator in a reference cycle is closed only by the cyclic collector; the next
    # run must not be refused in the meantime.
    holder: dict[str, Any] = {}
    holder["self"] = holder
    holder["stream"] = _two_steps(saver).stream({"log": []}, cfg)
    assert next(holder["stream"]) == {"one": {"log": ["one"]}}
    del holder
    if isinstance(saver, JsonlSaver):
        gc.disable()  # the cycle stays until the saver itself asks for a collection
    else:
        gc.collect()  # the oracle: the dropped run ends before the next one, as with ours


def _keyboard_interrupt(saver: Any, cfg: dict[str, Any]) -> None:
    # A real SIGINT (Ctrl-C) delivered to the main thread while a node runs (in the main
    # thread or in a worker: LangGraph decides). The node returns once the signal was
    # handled, so a run whose node is in a worker does not wait for it long.
    inside, delivered = threading.Event(), threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        delivered.set()
        raise KeyboardInterrupt

    def slow(state: State) -> dict:
        inside.set()
        for _ in range(3000):  # short waits: the handler runs between two of them
            if delivered.wait(0.01):
                break
        return {"log": ["after ctrl-c"]}

    def press_ctrl_c() -> None:
        assert inside.wait(30)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    previous = signal.signal(signal.SIGINT, on_sigint)
    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _two_steps(saver, slow).invoke({"log": []}, cfg)
    finally:
        presser.join()
        signal.signal(signal.SIGINT, previous)


SYNC_ENDINGS = {
    "returned": _returned,
    "refused_before_first_step": _no_input,
    "raised_in_node": _raised_in_node,
    "stream_closed_early": _stream_closed_early,
    "stream_left_with_break": _stream_left_with_break,
    "stream_dropped_in_a_cycle": _stream_dropped_in_a_cycle,
    "keyboard_interrupt": _keyboard_interrupt,
}


@pytest.mark.parametrize("ending", list(SYNC_ENDINGS))
@pytest.mark.parametrize("mode", MODES)
def test_after_every_sync_ending_the_next_run_runs(
    tmp_path: Path, mode: str, ending: str, caplog: pytest.LogCaptureFixture
) -> None:
    watch = NoStaleHold(caplog)
    outputs = []
    was_enabled = gc.isenabled()
    try:
        for saver in (InMemorySaver(), _saver(tmp_path, mode)):
            cfg = _config()
            SYNC_ENDINGS[ending](saver, cfg)
            outputs.append(_next_run(saver, cfg)["log"])
            gc.enable()
    finally:
        if was_enabled:
            gc.enable()
    assert outputs[0] == outputs[1]
    assert outputs[1][-2:] == ["one", "two"]
    watch.check()


# -- every ending, async ------------------------------------------------------------------


async def _areturned(saver: Any, cfg: dict[str, Any]) -> None:
    assert await _two_steps(saver).ainvoke({"log": []}, cfg) == {"log": ["one", "two"]}


async def _ano_input(saver: Any, cfg: dict[str, Any]) -> None:
    with pytest.raises(EmptyInputError):
        await _two_steps(saver).ainvoke(None, cfg)


async def _araised_in_node(saver: Any, cfg: dict[str, Any]) -> None:
    async def broken(state: State) -> dict:
        raise RuntimeError("tool broke")

    with pytest.raises(RuntimeError, match="tool broke"):
        await _two_steps(saver, broken).ainvoke({"log": []}, cfg)


async def _acancelled_in_node(saver: Any, cfg: dict[str, Any]) -> None:
    inside = asyncio.Event()

    async def slow(state: State) -> dict:
        inside.set()
        await asyncio.sleep(60)
        return {"log": ["never"]}

    task = asyncio.create_task(_two_steps(saver, slow).ainvoke({"log": []}, cfg))
    await asyncio.wait_for(inside.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _acancelled_consumer_after_first_step(saver: Any, cfg: dict[str, Any]) -> None:
    # The case: astream in a task, the task cancelled after its first step while
    # it awaits something of its own; the generator is left suspended.
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in _two_steps(saver).astream({"log": []}, cfg):
            first.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    cancelled = False
    try:
        await task
    except asyncio.CancelledError:
        cancelled = True
    # Nothing keeps the cancelled task (nor its traceback, which holds the generator):
    # the generator is left to its event loop's finalizer, as in an app.
    del task
    assert cancelled


async def _astream_closed_early(saver: Any, cfg: dict[str, Any]) -> None:
    stream = _two_steps(saver).astream({"log": []}, cfg)
    assert await stream.__anext__() == {"one": {"log": ["one"]}}
    await stream.aclose()


ASYNC_ENDINGS = {
    "returned": _areturned,
    "refused_before_first_step": _ano_input,
    "raised_in_node": _araised_in_node,
    "cancelled_in_node": _acancelled_in_node,
    "cancelled_consumer_after_first_step": _acancelled_consumer_after_first_step,
    "astream_closed_early": _astream_closed_early,
}


@pytest.mark.parametrize("ending", list(ASYNC_ENDINGS))
@pytest.mark.parametrize("mode", MODES)
async def test_after_every_async_ending_the_next_run_runs(
    tmp_path: Path, mode: str, ending: str, caplog: pytest.LogCaptureFixture
) -> None:
    watch = NoStaleHold(caplog)
    outputs = []
    for saver in (InMemorySaver(), _saver(tmp_path, mode)):
        cfg = _config()
        await ASYNC_ENDINGS[ending](saver, cfg)
        outputs.append((await _anext_run(saver, cfg))["log"])
    assert outputs[0] == outputs[1]
    watch.check()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("awaited", [True, False], ids=["task_awaited", "task_not_awaited"])
def test_an_astream_left_suspended_when_asyncio_run_returns_frees_the_thread(
    tmp_path: Path, mode: str, awaited: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's report: ``astream`` in a task, the task cancelled after its first
    step, ``asyncio.run`` returned; then a plain ``invoke`` on the thread. The generator
    is never resumed (its event loop is closed), so its ``async with`` never exits."""
    watch = NoStaleHold(caplog)
    saver = _saver(tmp_path, mode)
    cfg = _config()

    async def main() -> None:
        first = asyncio.Event()

        async def consume() -> None:
            async for _ in _two_steps(saver).astream({"log": []}, cfg):
                first.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 30)
        task.cancel()
        if awaited:
            with pytest.raises(asyncio.CancelledError):
                await task

    # In a thread of its own: pytest-asyncio's loop must not be the one that closes.
    errors: list[BaseException] = []
    runner = threading.Thread(target=lambda: _capture(errors, lambda: asyncio.run(main())))
    runner.start()
    runner.join(60)
    assert not runner.is_alive() and not errors, errors
    out = _next_run(saver, cfg)
    assert out["log"][-3:] == ["next", "one", "two"]
    watch.check()
    saver.close()


def _capture(errors: list[BaseException], fn: Callable[[], Any]) -> None:
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)


def test_a_live_run_of_this_process_is_still_refused(tmp_path: Path) -> None:
    """The collection asked for on a conflict frees only runs that are gone: a run
    suspended in a ``stream`` generator that is still referenced is live."""
    saver = JsonlSaver(tmp_path / "store")
    cfg = _config()
    stream = _two_steps(saver).stream({"log": []}, cfg)
    assert next(stream) == {"one": {"log": ["one"]}}
    with pytest.raises(ThreadBusyError) as refused:
        _two_steps(saver).invoke({"log": []}, cfg)
    # The holder is this very process (a notebook cell Ctrl-C'd out of a stream loop):
    # the message says so and how to end that run, not only "wait for it".
    assert "this process" in str(refused.value) and ".close()" in str(refused.value), refused.value
    assert list(stream) == [{"two": {"log": ["two"]}}]
    assert _next_run(saver, cfg)["log"] == ["one", "two", "next", "one", "two"]
    saver.close()


# -- a run cancelled while its loop waits for its background saves ------------------------


class _GatedSaves(JsonlSaver):
    """A saver whose ``aput`` waits for a gate: the run's background saves (durability
    ``"async"``) are still pending when its graph loop exits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        await self.gate.wait()
        return await super().aput(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_cancelled_while_its_saves_are_pending_holds_the_thread_until_they_land(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Cancelling the task as its loop's exit waits for the background saves cancels that
    # wait too (LangGraph's exit task): the saves go on landing after CancelledError. The
    # next run must start after them, not read a head they are about to move (its first
    # save was refused with ConcurrentRunError).
    watch = NoStaleHold(caplog)
    saver = _GatedSaves(tmp_path / "store", concurrent_runs=mode, busy_timeout=BUSY_TIMEOUT)
    cfg = _config()
    done = asyncio.Event()

    def two(state: State) -> dict:
        done.set()
        return {"log": ["two"]}

    task = asyncio.create_task(_two_steps(saver, two).ainvoke({"log": ["in"]}, cfg, durability="async"))
    await asyncio.wait_for(done.wait(), 10)
    await asyncio.sleep(0.1)  # the loop is exiting: waiting for its gated saves
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    asyncio.get_running_loop().call_later(0.2, saver.gate.set)
    out = await _anext_run(saver, cfg)
    assert out["log"] == ["in", "one", "two", "next", "one", "two"]
    history = [t.metadata["step"] async for t in saver.alist(cfg)]
    assert history == list(range(6, -2, -1))
    watch.check()
    saver.close()


# -- a run cancelled just as its graph loop starts to exit --------------------------------


@pytest.mark.parametrize("durability", ["async", "sync", "exit"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_run_cancelled_as_its_loop_starts_to_exit_gives_the_thread_back(
    tmp_path: Path, mode: str, durability: str, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The async loop unwinds its exit stack in a task of its own; a cancel that lands as
    # that task is created cancels it before it ever runs, so nothing on the stack runs,
    # the hold's give-back included. A cancelled task whose error nobody fetched keeps
    # it (and through its traceback the run's loop) alive, so the hold must not wait for
    # the loop to be freed: the next run was refused, or waited out busy_timeout.
    watch = NoStaleHold(caplog)
    saver = _saver(tmp_path, mode)
    cfg = _config()
    real_create_task = asyncio.create_task
    landed: list[bool] = []

    def cancel_as_the_exit_starts(coro: Any, **kwargs: Any) -> Any:
        if not landed and getattr(coro, "__qualname__", "") == "AsyncExitStack.__aexit__":
            landed.append(True)
            run = asyncio.current_task()
            assert run is not None
            run.cancel()  # the user's task.cancel(), landing just then
        return real_create_task(coro, **kwargs)

    monkeypatch.setattr(asyncio, "create_task", cancel_as_the_exit_starts)
    task = asyncio.ensure_future(_two_steps(saver).ainvoke({"log": ["in"]}, cfg, durability=durability))
    await asyncio.wait([task])  # (as asyncio.wait/gather users do: the task keeps its error)
    monkeypatch.setattr(asyncio, "create_task", real_create_task)
    assert landed and task.cancelled()
    out = await _anext_run(saver, cfg)
    assert out["log"][-3:] == ["next", "one", "two"]
    watch.check()
    saver.close()
