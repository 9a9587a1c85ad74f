"""A run's hold is given back from wherever the collector happens to be: a ``stream``
generator dropped in a reference cycle is closed, and a loop nothing ran the exit of is
finalized, when the cyclic collector runs, which can be in any allocation of any code
of the process, the saver's own locked sections included (a log being opened, a run
being recorded as holding its thread). The release must then never wait for a lock its
own thread holds further down the stack: it did, and the process hung for good.

Each test runs the scenario in a worker thread of its own, holding the lock as the
saver would, and fails if the worker has not finished within a time limit; the hold
must then be given back all the same: the thread's run lock free, the run struck off,
the thread's log no longer pinned open, and the thread usable.
"""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.bounded import within
from tests.test_ctrl_c_lock_windows import _flock_free
from tests.test_run_endings import _two_steps as two_steps

CFG = {"configurable": {"thread_id": "t"}}


def run_lock_free(saver: JsonlSaver) -> bool:
    return _flock_free(saver.store.log_paths("t").run)


def given_back(saver: JsonlSaver) -> bool:
    """The run lock free, no run held, the thread's log not pinned open."""
    return run_lock_free(saver) and "t" not in saver._live._held and "t" not in saver.store._pinned


def wait_until_given_back(saver: JsonlSaver, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not given_back(saver):
        assert time.monotonic() < end, (
            f"the hold was not given back: run lock free {run_lock_free(saver)}, "
            f"held {list(saver._live._held)}, pinned {list(saver.store._pinned)}"
        )
        time.sleep(0.01)


def in_a_worker_holding(lock: Any, action: Any) -> None:
    """Run ``action`` in a thread of its own while that thread holds ``lock``; fail if
    it has not finished within 10 s (the worker is a daemon: a hang cannot stall the
    session, only fail the test)."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with lock:
                action()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the release waited for a lock its own thread held"
    assert not errors, errors


@pytest.mark.parametrize("whose", ["store", "live_runs"])
def test_a_stream_dropped_in_a_cycle_collected_inside_a_locked_section(tmp_path: Path, whose: str) -> None:
    """The collector frees the dropped generator and its loop (the loop's finalizer
    gives the hold back) while the worker is inside the store's lock (as while a log is
    opened) or the saver's table of held threads (as while a run is recorded).
    Durability ``"sync"``: under ``"async"`` LangGraph's own loop exit waits there for
    saves running in other threads, which wait for the store's lock (SqliteSaver's lock
    would hang the same way); what this package can answer for is its own release."""
    saver = JsonlSaver(tmp_path / "s")
    holder: dict[str, Any] = {}
    holder["self"] = holder
    holder["stream"] = two_steps(saver).stream({"log": []}, CFG, durability="sync")
    assert next(holder["stream"]) == {"one": {"log": ["one"]}}
    assert "t" in saver._live._held and not run_lock_free(saver)
    lock = saver.store._lock if whose == "store" else saver._live._lock
    was_enabled = gc.isenabled()
    gc.disable()  # the cycle stays until the collection below
    try:
        del holder
        in_a_worker_holding(lock, gc.collect)
    finally:
        if was_enabled:
            gc.enable()
    wait_until_given_back(saver)
    with within(20, "a run after the release"):
        assert two_steps(saver).invoke({"log": []}, CFG)["log"] == ["one", "one", "two"]
    saver.close()


def test_a_release_the_collector_hands_off_is_waited_for_by_the_next_run(tmp_path: Path) -> None:
    """A run finding its thread held by a run of its own process asks the collector to
    free gone runs; a hold the collection gave back (in a thread of its own) must be
    free before that run tries again, not refused meanwhile (``"refuse"``)."""
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="refuse")
    for _ in range(20):
        holder: dict[str, Any] = {}
        holder["self"] = holder
        holder["stream"] = two_steps(saver).stream({"log": []}, CFG, durability="sync")
        next(holder["stream"])
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            del holder
            with within(20, "a run after a dropped one"):
                two_steps(saver).invoke({"log": []}, CFG)
        finally:
            if was_enabled:
                gc.enable()
    assert not saver._live._held
    saver.close()
