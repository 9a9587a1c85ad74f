"""A Ctrl-C (``KeyboardInterrupt``) landing at an unlucky point of the lock code never
leaves a thread's lock taken with nothing left to let it go: each test makes the
interrupt land just after a lock was taken (the signal handler runs as a call returns),
then shows the thread still usable in the same process, by this saver and by another
one on the same store (its own descriptors), under a time limit.
"""

from __future__ import annotations

import fcntl
import operator
import os
from pathlib import Path
from typing import Annotated

import pytest
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.bounded import within

CFG = {"configurable": {"thread_id": "t"}}


class Visits(TypedDict, total=False):
    visits: Annotated[list[str], operator.add]


def graph(saver: JsonlSaver):
    def node(state: Visits) -> dict:
        return {"visits": [f"visit {len(state.get('visits', []))}"]}

    g = StateGraph(Visits)
    g.add_node("node", node)
    g.add_edge(START, "node")
    return g.compile(checkpointer=saver)


def assert_thread_usable(directory: Path, saver: JsonlSaver, visits_before: int) -> None:
    """Another saver on the store, then this one, run the thread (no lock is left)."""
    other = JsonlSaver(directory)
    try:
        with within(20, "a run after the interrupt"):
            out = graph(other).invoke({"visits": []}, CFG)
        assert len(out["visits"]) == visits_before + 1
    finally:
        other.close()
    with within(20, "a run after the interrupt"):
        out = graph(saver).invoke({"visits": []}, CFG)
    assert len(out["visits"]) == visits_before + 2


def test_ctrl_c_as_the_run_lock_flock_returns_leaves_the_lock_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt between the live-run lock's flock returning and its descriptor being
    recorded left the flock held by a descriptor nothing knew of: every later run of the
    thread (any saver, any process) was refused with ThreadBusyError until the process
    exited."""
    from langgraph_jsonl_checkpoint.disk.runlock import RunLock

    saver = JsonlSaver(tmp_path / "s")
    real = RunLock._try_flock
    interrupted: list[str] = []

    def flock_then_ctrl_c(self: RunLock, path: str, how: int, *rest: object) -> object:
        got = real(self, path, how, *rest)  # type: ignore[arg-type]
        if path == self.paths.run and got and not interrupted:
            interrupted.append(path)
            raise KeyboardInterrupt  # the signal handler runs as the call returns
        return got

    monkeypatch.setattr(RunLock, "_try_flock", flock_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        graph(saver).invoke({"visits": []}, CFG)
    assert interrupted
    assert_thread_usable(tmp_path / "s", saver, 0)
    saver.close()


class _CtrlCAfterDelete(dict):  # type: ignore[type-arg]
    """The saver's table of held threads, with a Ctrl-C landing just after an entry
    was removed (once)."""

    fired = False

    def __delitem__(self, key: object) -> None:
        super().__delitem__(key)
        if not _CtrlCAfterDelete.fired:
            _CtrlCAfterDelete.fired = True
            raise KeyboardInterrupt

    def pop(self, key: object, *default: object) -> object:
        found = super().pop(key, *default)
        if not _CtrlCAfterDelete.fired:
            _CtrlCAfterDelete.fired = True
            raise KeyboardInterrupt
        return found


def test_ctrl_c_as_a_run_gives_its_thread_back_leaves_the_lock_free(tmp_path: Path) -> None:
    """An interrupt as a run ended, between its entry being removed from the saver's
    held threads and its live-run lock being let go, left the lock held with nothing to
    release it (the loop's finalizer found no entry): the thread was refused for the
    rest of the process."""
    saver = JsonlSaver(tmp_path / "s")
    live = saver._live
    _CtrlCAfterDelete.fired = False
    live._held = _CtrlCAfterDelete()  # type: ignore[union-attr]
    try:
        graph(saver).invoke({"visits": []}, CFG)
    except KeyboardInterrupt:
        pass
    assert _CtrlCAfterDelete.fired
    assert_thread_usable(tmp_path / "s", saver, 1)
    saver.close()


def test_ctrl_c_as_the_writer_lock_is_taken_leaves_it_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt just after a thread's writer lock was taken, before the code that
    lets it go was in place, left the lock held by the open log's descriptor: a write
    on the thread by any other saver or process waited for ever ("waiting for the
    writer lock ... which another process holds")."""
    import langgraph_jsonl_checkpoint.disk.files as files_module
    from langgraph_jsonl_checkpoint.disk.store import Store

    saver = JsonlSaver(tmp_path / "s")
    graph(saver).invoke({"visits": []}, CFG)
    store = Store(tmp_path / "s")
    log = store.thread_log("t")  # open, as a saver keeps a thread's log between runs
    real = files_module.lock_waiting

    def lock_then_ctrl_c(fd: int, what: str) -> None:
        real(fd, what)
        raise KeyboardInterrupt  # the signal handler runs as the call returns

    monkeypatch.setattr(files_module, "lock_waiting", lock_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt), log.locked():
        pass
    monkeypatch.setattr(files_module, "lock_waiting", real)
    fd = os.open(log.paths.lock, os.O_RDWR)
    try:  # (a write by another saver would wait for ever: try without waiting)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pytest.fail("the interrupted log still holds its writer lock")
    finally:
        os.close(fd)
    assert_thread_usable(tmp_path / "s", saver, 1)
    with within(20, "the interrupted log's writer lock"), log.locked():
        pass
    store.close()
    saver.close()
