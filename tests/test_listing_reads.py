"""list() reads many tuples from one log: what each tuple gets is its own, and the
cyclic collector is paused only while the saver builds tuples, never while the caller's
code runs (batches of tuples are read ahead under one pause)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.saver import reads
from tests.test_saver import _put


def _conversation(turn: int) -> list[Any]:
    return [
        HumanMessage(f"q{turn}", id=f"h{turn}"),
        AIMessage(
            [{"type": "text", "text": f"block {turn}"}], id=f"a{turn}",
            tool_calls=[{"name": "f", "args": {"x": [turn]}, "id": f"c{turn}", "type": "tool_call"}],
            response_metadata={"n": [turn]},
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage(f"r{turn}", tool_call_id=f"c{turn}", id=f"t{turn}", artifact={"rows": [turn]}),
        AIMessage(f"answer {turn}", id=f"b{turn}"),
        HumanMessage(f"extra {turn}", id=f"e{turn}", custom=[turn]),  # an extra field
    ]


def _fill(saver: JsonlSaver, turns: int) -> list[list[Any]]:
    msgs: list[Any] = []
    states = []
    parent = None
    for turn in range(turns):
        msgs = msgs + _conversation(turn)
        states.append(msgs)
        cfg = _put(saver, "t", turn, {"messages": msgs}, parent=parent)
        parent = cfg["configurable"]["checkpoint_id"]
    return states


def _containers(message: Any) -> dict[int, Any]:
    """Every mutable object a message holds, by identity (itself included)."""
    found: dict[int, Any] = {id(message): message}
    todo = [message.__dict__, message.__pydantic_fields_set__, message.__pydantic_extra__]
    while todo:
        item = todo.pop()
        if type(item) in (dict, list, set) and id(item) not in found:
            found[id(item)] = item
            todo.extend(item.values() if type(item) is dict else item)
    return found


def test_messages_of_listed_tuples_share_no_mutable_object(tmp_path: Path) -> None:
    """The messages of one listing are revived from the same stored dumps (once each,
    then copied per tuple): no tuple's message holds a dict, list or set of another's,
    defaults (empty additional_kwargs, invalid_tool_calls) and pydantic's own fields set
    included, and each equals the message that was stored."""
    saver = JsonlSaver(tmp_path / "s")
    states = _fill(saver, 4)
    tuples = list(saver.list({"configurable": {"thread_id": "t"}}))
    assert [t.checkpoint["channel_values"]["messages"] for t in tuples] == states[::-1]
    owner: dict[int, int] = {}
    for n, tup in enumerate(tuples):
        for message in tup.checkpoint["channel_values"]["messages"]:
            for key in _containers(message):
                assert owner.setdefault(key, n) == n, f"tuple {n} shares an object of {message!r}"
    # each listing's objects are its own, too: mutate one and list again
    for message in tuples[-1].checkpoint["channel_values"]["messages"]:
        message.additional_kwargs["mutated"] = True
        message.__pydantic_fields_set__.add("mutated")
        if isinstance(message, AIMessage):
            message.invalid_tool_calls.append({"mutated": True})
    again = list(saver.list({"configurable": {"thread_id": "t"}}))
    assert [t.checkpoint["channel_values"]["messages"] for t in again] == states[::-1]
    assert all("mutated" not in m.__pydantic_fields_set__
               for t in again for m in t.checkpoint["channel_values"]["messages"])


def test_the_collector_runs_while_the_caller_holds_a_listed_tuple(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tuples are read in batches with the collector paused, but the caller's code
    between them runs with it enabled, and a read that fails inside a batch leaves it
    enabled."""
    saver = JsonlSaver(tmp_path / "s")
    _fill(saver, 12)
    cfg = {"configurable": {"thread_id": "t"}}
    assert gc.isenabled()
    for _ in saver.list(cfg):
        assert gc.isenabled()
    for _ in saver.list(cfg, limit=5):
        assert gc.isenabled()

    calls = []
    real = reads.CheckpointReads._read_listed

    def failing(self: Any, *args: Any) -> Any:
        calls.append(gc.isenabled())
        if len(calls) == 3:  # the second batch (two tuples), inside its pause
            raise RuntimeError("read failed")
        return real(self, *args)

    monkeypatch.setattr(reads.CheckpointReads, "_read_listed", failing)
    listing = saver.list(cfg)
    next(listing)
    with pytest.raises(RuntimeError, match="read failed"):
        next(listing)
    assert calls == [False, False, False]  # each read ran with the collector paused
    assert gc.isenabled()


def test_a_listing_read_ahead_skips_nothing_and_stops_at_its_limit(tmp_path: Path) -> None:
    """Batches (1, 2, 4, ... tuples) change nothing of what list() yields: every limit
    and a before cursor give the checkpoints newest first, as one at a time did."""
    saver = JsonlSaver(tmp_path / "s")
    _fill(saver, 12)
    cfg = {"configurable": {"thread_id": "t"}}
    every = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg)]
    assert len(every) == 12 and every == sorted(every, reverse=True)
    for limit in (1, 2, 3, 7, 8, 11, 12, 20):
        got = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg, limit=limit)]
        assert got == every[:limit]
    before = {"configurable": {"thread_id": "t", "checkpoint_id": every[4]}}
    got = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg, before=before, limit=6)]
    assert got == every[5:11]


def test_a_listing_keeps_the_newest_list_a_run_reads_next(tmp_path: Path) -> None:
    """The newest version of a list channel is kept in stored form for the next read and
    put; listing older checkpoints (newest first) must not replace it with the oldest
    one listed, or the run's next read walks the delta chain again."""
    from langgraph_jsonl_checkpoint.values.cache import ValueCache

    saver = JsonlSaver(tmp_path / "s")
    _fill(saver, 6)
    cfg = {"configurable": {"thread_id": "t"}}
    latest = saver.get_tuple(cfg)
    version = latest.checkpoint["channel_versions"]["messages"]
    cache = ValueCache.of(saver.store.thread_log("t"))
    assert cache.kept("", "messages", version) is not None
    assert len(list(saver.list(cfg))) == 6
    assert cache.kept("", "messages", version) is not None
    assert saver.get_tuple(cfg).checkpoint["channel_values"] == latest.checkpoint["channel_values"]
    cache.clear()  # nothing kept (a fresh process): the listing keeps its newest
    assert len(list(saver.list(cfg))) == 6
    assert cache.kept("", "messages", version) is not None
