"""``delete_for_runs`` on every thread of a store, against ``InMemorySaver`` (with the
harness's model of the call), and its refusal to cut a DeltaChannel's history.

Written for mutants of ``maintenance/compaction.py`` that survived the fast tests
(stress/mutation.py): the call was exercised only by the slow state machine, the
conformance suite and the server tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import DeltaHistoryError, JsonlSaver
from tests.harness.answers import answers, diff_answers, mem_copy_thread, mem_delete_for_runs
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _v(n: int) -> str:
    return f"{n:032}.{0:016}"


def _fill(saver: object, thread: str, runs: list[str], first: int) -> None:
    parent = config(thread)
    items: list[str] = []
    for i, run in enumerate(runs, start=first):
        items = items + [f"{thread} {i}"]
        versions = {"m": _v(i)}
        cp = make_checkpoint(cp_id(i), {"m": items}, versions)
        parent = saver.put(parent, cp, {"run_id": run, "step": i}, versions)  # type: ignore[attr-defined]
        saver.put_writes(parent, [("m", f"w{i}")], f"task-{i}", "")  # type: ignore[attr-defined]


def test_delete_for_runs_removes_the_runs_checkpoints_in_every_thread(tmp_path: Path) -> None:
    ours, mem = JsonlSaver(tmp_path / "s"), InMemorySaver()
    plan = {"a": ["r1", "r2", "r1", "r3"], "b": ["r2", "r2"], "c": ["r1", "r1"]}
    for saver in (ours, mem):
        for n, (thread, runs) in enumerate(plan.items()):
            _fill(saver, thread, runs, 10 * n + 1)
    ours.delete_for_runs(["r1", "r9"])
    mem_delete_for_runs(mem, {"r1", "r9"})
    for thread in plan:
        assert not diff_answers(answers(ours, thread), answers(mem, thread)), thread
    assert [t.metadata["run_id"] for t in ours.list(config("a"))] == ["r3", "r2"]
    assert ours.get_tuple(config("c")) is None
    assert not Path(ThreadFiles.of(tmp_path / "s", "c").log).exists()
    ours.close()
    fresh = JsonlSaver(tmp_path / "s", read_only=True)
    for thread in plan:
        assert not diff_answers(answers(fresh, thread), answers(mem, thread)), thread


def test_delete_for_runs_refuses_to_cut_a_delta_channels_history(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    v1 = {"d": _v(1)}
    first = saver.put(config("t"), make_checkpoint(cp_id(1), {"d": ["x"]}, v1), {"run_id": "r1"}, v1)
    saver.put_writes(first, [("d", "y")], "task-1", "")
    # The second checkpoint stores no value for "d": LangGraph rebuilds it from the
    # writes since the first, which a DeltaChannel's counters say it needs.
    v2 = {"d": _v(2)}
    md = {"run_id": "r2", "counters_since_delta_snapshot": {"d": 1}}
    saver.put(first, make_checkpoint(cp_id(2), {}, v2), md, v2)
    before = answers(saver, "t")
    with pytest.raises(DeltaHistoryError) as err:
        saver.delete_for_runs(["r1"])
    msg = str(err.value)
    for part in ("thread 't'", f"checkpoint {cp_id(2)}", f"checkpoint {cp_id(1)}", "a run being deleted",
                 "Nothing was deleted in this thread", "prune(keep_latest)"):
        assert part in msg, (part, msg)
    assert not diff_answers(answers(saver, "t"), before)
    saver.delete_for_runs(["r1", "r2"])  # both runs: nothing is left to need the history
    assert saver.get_tuple(config("t")) is None
    saver.close()


def test_delete_for_runs_of_this_process_opens_only_the_threads_they_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The LangGraph server rolls back a cancelled run with adelete_for_runs([run_id]):
    # with a run written in this process, only its threads (and copies of them) are
    # opened, not every thread of the store; an unknown run is looked for everywhere.
    writer, mem = JsonlSaver(tmp_path / "s"), InMemorySaver()
    plan = {**{f"idle-{i}": [f"old-{i}"] for i in range(30)}, "a": ["r1", "r2", "r1"], "b": ["r1"]}
    for saver in (writer, mem):
        for n, (thread, runs) in enumerate(plan.items()):
            _fill(saver, thread, runs, 10 * n + 1)
    writer.copy_thread("b", "b-copy")
    mem_copy_thread(mem, "b", "b-copy")
    other = JsonlSaver(tmp_path / "s")  # another saver of the process (the server has one per OS thread)
    opened: list[str] = []
    thread_log = other.store.thread_log
    monkeypatch.setattr(other.store, "thread_log", lambda tid: opened.append(tid) or thread_log(tid))

    other.delete_for_runs(["r1"])
    mem_delete_for_runs(mem, {"r1"})
    assert sorted(opened) == ["a", "b", "b-copy"]
    opened.clear()
    other.delete_for_runs(["old-3", "r-unknown"])
    mem_delete_for_runs(mem, {"old-3", "r-unknown"})
    assert len(opened) >= 30  # not known here: every thread is looked at

    fresh = JsonlSaver(tmp_path / "s", read_only=True)
    for thread in [*plan, "b-copy"]:
        assert not diff_answers(answers(fresh, thread), answers(mem, thread)), thread
    for saver in (fresh, other, writer):
        saver.close()


@pytest.mark.parametrize("call", [
    lambda s: s.delete_for_runs("run-1"),
    lambda s: s.prune("abc", strategy="delete"),
    lambda s: s.prune("abc"),
])
def test_a_single_id_where_a_list_is_due_is_refused_not_read_a_character_at_a_time(
    tmp_path: Path, call
) -> None:
    """``delete_for_runs("run-1")`` and ``prune("abc")`` iterated the string: every
    character taken for an id, nothing deleted, no word said. Now a ``ConfigError`` says
    to pass a list, and the thread is as it was."""
    from langgraph_jsonl_checkpoint import ConfigError

    with JsonlSaver(tmp_path / "s") as saver:
        _fill(saver, "abc", ["run-1", "run-1"], 1)
        before = answers(saver, "abc")
        with pytest.raises(ConfigError, match=r"takes a list of ids .* write \w+\(\['\w+-?\d?'\]\)"):
            call(saver)
        assert answers(saver, "abc") == before
        saver.delete_for_runs(["run-1"])  # as the error says: then it does what was meant
        assert saver.get_tuple(config("abc")) is None

