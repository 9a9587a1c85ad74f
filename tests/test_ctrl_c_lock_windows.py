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


def _ctrl_c_at_call(k: int, previous: object) -> object:
    """A trace function raising ``KeyboardInterrupt`` as the ``k``-th Python function
    called from now on starts: where CPython runs a pending signal's handler (a function's
    first instruction checks for one). It puts ``previous`` back as it fires."""
    import sys

    calls = [0]

    def tracer(frame: object, event: str, arg: object) -> object:
        if event == "call":
            calls[0] += 1
            if calls[0] == k:
                sys.settrace(previous)  # type: ignore[arg-type]
                raise KeyboardInterrupt
        return None

    return tracer


def _flock_free(path: str) -> bool:
    """Whether a new descriptor can take ``path``'s flock at once (never made: free)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["release", "stop_waiting", "others_waiting"])
def test_ctrl_c_anywhere_in_letting_a_run_lock_go_leaves_nothing_held(tmp_path: Path, how: str) -> None:
    """A Ctrl-C at any call while the live-run lock or a waiter's place is let go: the
    descriptor was forgotten first and let go in a function called after, so an
    interrupt as that function started left a flock nothing could release (the thread
    refused, or a run waiting for it queued behind a waiter that never came, for the rest
    of the process). Each call of the path in turn gets the interrupt; the caller's own
    cleanup (one more ``release``) must then leave both locks free and no descriptor
    open."""
    import sys

    from langgraph_jsonl_checkpoint.disk.paths import LogPaths
    from langgraph_jsonl_checkpoint.disk.runlock import RunLock

    paths = LogPaths(str(tmp_path), "t", str(tmp_path))
    interrupted_at = []
    previous = sys.gettrace()  # (a coverage tool's, say: put back after each attempt)
    for k in range(1, 40):
        fds_before = set(os.listdir("/proc/self/fd"))
        lock = RunLock(paths, "t")
        if how == "release":
            assert lock.try_acquire("run-1")
            assert lock.start_waiting()
        elif how == "stop_waiting":
            assert lock.start_waiting()
        sys.settrace(_ctrl_c_at_call(k, previous))  # type: ignore[arg-type]
        try:
            if how == "others_waiting":
                lock.others_waiting()
            else:
                getattr(lock, how)()
        except KeyboardInterrupt:
            interrupted_at.append(k)
        else:
            sys.settrace(previous)  # type: ignore[arg-type]
            lock.release()
            break
        finally:
            sys.settrace(previous)  # type: ignore[arg-type]
        with within(5, "the caller's cleanup after the interrupt"):
            lock.release()
        assert _flock_free(paths.run), f"the run lock is still held after an interrupt at call {k}"
        assert _flock_free(paths.waiters), f"a waiter's place is still held after an interrupt at call {k}"
        leaked = set(os.listdir("/proc/self/fd")) - fds_before
        assert not leaked, f"descriptors left open after an interrupt at call {k}"
    assert len(interrupted_at) >= 2, f"the path's calls interrupted: {interrupted_at}"


def _open_paths() -> set[str]:
    """The files this process holds open."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # (the listing's own descriptor, closed by now)
    return found


def test_ctrl_c_anywhere_as_a_run_gives_its_thread_back_leaves_the_log_unpinned(tmp_path: Path) -> None:
    """A Ctrl-C at any call while a run gives its thread back: the run's entry was
    removed before the store was told the run had ended, so an interrupt as
    ``Store.unpin`` started left the thread pinned for the rest of the process (its log
    and descriptor never let go, whatever ``max_open_threads``; its caches never dropped),
    and the loop's finalizer, finding no entry, could not undo it (and the open-log bound
    counted the pin: one more idle log than ``max_open_threads`` kept open). Each call of
    the path in turn gets the interrupt; the finalizer's own ``_release`` then runs, and
    the thread must be free: its run lock let go, and once other threads have been used,
    only the bound's one idle log held open, not this thread's."""
    import sys

    saver = JsonlSaver(tmp_path / "s", max_open_threads=1)
    graph(saver).invoke({"visits": []}, CFG)
    live, store = saver._live, saver.store
    log_path = os.path.realpath(store.log_paths("t").log)
    interrupted_at = []
    previous = sys.gettrace()
    for k in range(1, 80):
        token = object()  # a run (its RunControl), holding the thread as _take leaves it
        lock = store.run_lock("t")
        assert lock.try_acquire("run-1")
        with live._lock:
            live._held["t"] = (token, lock)
        store.pin("t", token)
        sys.settrace(_ctrl_c_at_call(k, previous))  # type: ignore[arg-type]
        try:
            live._release("t", token)
            finished = True
        except KeyboardInterrupt:
            interrupted_at.append(k)
            finished = False
        finally:
            sys.settrace(previous)  # type: ignore[arg-type]
        with within(5, "the loop's finalizer after the interrupt"):
            live._release("t", token)
        run_file = store.log_paths("t").run
        assert _flock_free(run_file), f"the run lock is still held after an interrupt at call {k}"
        assert "t" not in live._held
        for other in ("u", "v", "w"):  # the bound lets every idle log but one go
            graph(saver).invoke({"visits": []}, {"configurable": {"thread_id": other}})
        open_logs = sorted(p for p in _open_paths() if p.endswith(".jsonl"))
        assert log_path not in open_logs and len(open_logs) == 1, (
            f"after an interrupt at call {k}, other threads used, logs held open: {open_logs} "
            "(max_open_threads=1)"
        )
        if finished:
            break
    assert len(interrupted_at) >= 3, f"the path's calls interrupted: {interrupted_at}"
    assert_thread_usable(tmp_path / "s", saver, 1)
    saver.close()


def test_a_release_of_a_run_given_back_already_never_waits_for_the_store(tmp_path: Path) -> None:
    """The loop's finalizer calls ``_release`` again when the collector frees the loop,
    which can be anywhere, even inside the store's own locked section (a log being
    opened): a release of a run that gave its thread back already must return without
    waiting for the store's lock. It took it, and the process hung in a LangGraph run."""
    import threading

    saver = JsonlSaver(tmp_path / "s")
    graph(saver).invoke({"visits": []}, CFG)
    gone = object()  # the token of a run given back already
    with saver.store._lock:  # as while the store opens a log
        finalizer = threading.Thread(target=saver._live._release, args=("t", gone), daemon=True)
        finalizer.start()
        finalizer.join(5)
        assert not finalizer.is_alive(), "the finalizer's release waited for the store's lock"
    saver.close()
