"""The replay journals asked about checkpoints that another checkpointer keeps: lost runs
found by asking it, checkpoints waited for in their namespace, sync and async alike.

Written for mutants of ``replay/journal.py`` that survived the suite (stress/mutation.py):
the graph tests use the saver as both journal and checkpointer, or no checkpointer.
"""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.replay.journal import SaverJournal, StoreJournal
from tests.harness.checkpoints import config, cp_id, make_checkpoint

KEPT, LOST = cp_id(1), cp_id(90)


def _events(call: str, cp: str, *evs: str) -> list[dict]:
    fields = {"requested": {"name": "f", "args": {"json": 1}}, "started": {"proc": {"host": "h", "pid": 1}},
              "finished": {"result": {"json": "ok"}}}
    return [{"ev": ev, "ns": "tools:1", "cp": cp, "call": call, "at": f"2026-01-01T00:00:0{i}+00:00",
             **fields[ev]} for i, ev in enumerate(evs)]


def _checkpointer() -> InMemorySaver:
    mem = InMemorySaver()
    v = {"m": mem.get_next_version(None, None)}
    mem.put(config("t"), make_checkpoint(KEPT, {"m": [1]}, v), {}, v)
    mem.put(config("t", "sub"), make_checkpoint(cp_id(2), {"m": [1]}, v), {}, v)
    return mem


def _journals(tmp_path: Path) -> list:
    saver = JsonlSaver(tmp_path / "s")
    return [SaverJournal(saver), StoreJournal(InMemoryStore())]


async def test_lost_runs_are_found_by_asking_the_graphs_checkpointer(tmp_path: Path) -> None:
    mem = _checkpointer()
    for journal in _journals(tmp_path):
        journal.record("t", _events("lost", LOST, "requested", "started"))
        journal.record("t", _events("kept", KEPT, "requested", "started"))
        journal.record("t", _events("done", LOST, "requested", "started", "finished"))
        for found in (journal.orphans("t", mem), await journal.aorphans("t", mem)):
            assert [(r.key.call_id, r.lost_run) for r in found] == [("lost", True)], type(journal)
        if isinstance(journal, StoreJournal):  # no checkpointer: no run can be told lost
            assert journal.orphans("t", None) == [] and await journal.aorphans("t", None) == []


async def test_the_journal_of_a_saver_that_is_the_checkpointer_asks_its_own_logs(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(KEPT, {"m": [1]}, v), {}, v)
    journal = SaverJournal(saver)
    journal.record("t", _events("lost", LOST, "requested", "started"))
    journal.record("t", _events("kept", KEPT, "requested", "started"))
    assert [r.key.call_id for r in journal.orphans("t", saver)] == ["lost"]
    assert [r.key.call_id for r in await journal.aorphans("t", saver)] == ["lost"]
    assert journal.wait_stored("t", "", KEPT, saver, 5.0)
    assert await journal.await_stored("t", "", KEPT, saver, 5.0)
    assert not journal.wait_stored("t", "", LOST, saver, 0.2)
    saver.close()


async def test_checkpoints_are_waited_for_in_their_namespace(tmp_path: Path) -> None:
    mem = _checkpointer()
    for journal in _journals(tmp_path):
        assert journal.wait_stored("t", "sub", cp_id(2), mem, 5.0)
        assert await journal.await_stored("t", "sub", cp_id(2), mem, 5.0)
        assert not journal.wait_stored("t", "", cp_id(2), mem, 0.2)  # not in the root namespace
        assert not await journal.await_stored("t", "", cp_id(2), mem, 0.2)
        assert journal.wait_stored("t", "", KEPT, mem, 5.0)
