"""The store keeps ``max_open_threads`` idle logs open while threads come back to them,
and one while none does (threads taking turns over more threads than the bound): then
each log is let go as its run ends instead of holding its index for ``max_open_threads``
turns unused. Behaviour stays that of ``InMemorySaver`` whichever it keeps."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk.idle_bound import IdleBound
from tests.harness.bounded import within
from tests.test_open_logs import _cfg, _graph  # the same one-node graph

# -- the rule ------------------------------------------------------------------------


def _cold_opens(b: IdleBound, n: int, prefix: str = "cold") -> None:
    for i in range(n):
        b.opened(f"{prefix}-{i}")
        b.let_go(f"{prefix}-{i}")


def test_the_full_bound_is_kept_until_twice_the_bound_logs_are_let_go_unused() -> None:
    b = IdleBound(4)
    assert b.keep == 4 and not b.lean
    _cold_opens(b, 7)
    assert b.keep == 4
    _cold_opens(b, 1, prefix="eighth")
    assert b.keep == 1 and b.lean


def test_a_reuse_starts_the_count_again() -> None:
    b = IdleBound(4)
    _cold_opens(b, 7)
    b.reused()
    _cold_opens(b, 7, prefix="again")
    assert b.keep == 4


def test_a_thread_back_soon_after_it_was_let_go_restores_the_bound() -> None:
    b = IdleBound(4)
    _cold_opens(b, 8)
    assert b.keep == 1
    b.opened("cold-5")  # among the last 4 let go
    assert b.keep == 4 and not b.lean


def test_a_thread_back_long_after_it_was_let_go_is_a_cold_open() -> None:
    b = IdleBound(4)
    _cold_opens(b, 8)
    b.opened("cold-2")  # 6 let go since: a bound of 4 would not have kept it
    assert b.keep == 1


def test_new_threads_opened_at_once_are_no_evidence() -> None:
    """Threads running at once (each log held by its live run) let no idle log go."""
    b = IdleBound(4)
    for i in range(50):
        b.opened(f"new-{i}")
    assert b.keep == 4


def test_a_bound_of_one_stays_one() -> None:
    b = IdleBound(1)
    _cold_opens(b, 10)
    assert b.keep == 1
    b.reused()
    assert b.keep == 1


def test_it_remembers_no_more_threads_than_the_bound() -> None:
    b = IdleBound(3)
    _cold_opens(b, 1000)
    assert len(b._recent) == 3


# -- in a saver ----------------------------------------------------------------------


def _idle_open(saver: JsonlSaver) -> int:
    store = saver.store
    return len(store._logs) - len(store._pinned)


def test_threads_taking_turns_over_more_than_the_bound_keep_one_idle_log(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s", max_open_threads=4) as saver, within(120):
        oracle = InMemorySaver()
        ours, theirs = _graph(saver), _graph(oracle)
        ids = [f"t{i}" for i in range(12)]
        for turn in range(3):
            for tid in ids:
                a = ours.invoke({"log": [f"{tid} {turn}"]}, _cfg(tid))
                b = theirs.invoke({"log": [f"{tid} {turn}"]}, _cfg(tid))
                assert a == b
            if turn == 0:
                assert saver.store.idle.lean  # 12 opened, none used again
            assert _idle_open(saver) <= 1
        for tid in ids:
            assert ours.get_state(_cfg(tid)).values == theirs.get_state(_cfg(tid)).values


def test_threads_that_come_back_keep_their_logs_open(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s", max_open_threads=4) as saver, within(120):
        graph = _graph(saver)
        ids = ["a", "b", "c", "d"]
        for tid in ids:
            graph.invoke({"log": ["first"]}, _cfg(tid))
        logs = {tid: saver.store._logs[tid] for tid in ids}
        for turn in range(10):
            for tid in ids:
                graph.invoke({"log": [str(turn)]}, _cfg(tid))
        assert not saver.store.idle.lean
        assert {tid: saver.store._logs.get(tid) for tid in ids} == logs  # never reopened


def test_a_server_gone_lean_keeps_the_bound_again_when_threads_come_back(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s", max_open_threads=4) as saver, within(120):
        graph = _graph(saver)
        for i in range(14):  # new threads one after another: none comes back
            graph.invoke({"log": ["x"]}, _cfg(f"once-{i}"))
        assert saver.store.idle.lean
        for turn in range(4):  # then three conversations going on
            for tid in ("a", "b", "c"):
                graph.invoke({"log": [str(turn)]}, _cfg(tid))
        assert not saver.store.idle.lean
        logs = {tid: saver.store._logs[tid] for tid in ("a", "b", "c")}
        for tid in ("a", "b", "c"):
            graph.invoke({"log": ["again"]}, _cfg(tid))
        assert {tid: saver.store._logs.get(tid) for tid in ("a", "b", "c")} == logs
        assert saver.get_tuple(_cfg("a")) is not None
        assert len(graph.get_state(_cfg("a")).values["log"]) == 10  # five runs, two entries each


def test_a_read_of_the_thread_just_run_does_not_keep_the_bound(tmp_path: Path) -> None:
    """A server reads a thread's state after its run: that log is the one idle log kept
    either way, so finding it open is no reason to keep more."""
    with JsonlSaver(tmp_path / "s", max_open_threads=4) as saver, within(120):
        graph = _graph(saver)
        for i in range(20):
            graph.invoke({"log": ["x"]}, _cfg(f"t{i}"))
            graph.get_state(_cfg(f"t{i}"))
        assert saver.store.idle.lean
        assert _idle_open(saver) <= 1
