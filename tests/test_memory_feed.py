"""Once a thread's memory was asked for, the session memory is fed the records a write
just appended, as the writer hands them, without reading them back from the log; what
it is fed is exactly what a scan of the log gives, and it falls back to reading the log
whenever the handed records do not continue where it stopped (another process
appended). Sync, async group commits, and a group that is abandoned."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import files as files_module
from langgraph_jsonl_checkpoint.disk.view import LogView
from langgraph_jsonl_checkpoint.errors import DurabilityError
from langgraph_jsonl_checkpoint.memory import MemoryBuilder, MemoryKeeper
from tests.test_session_memory import _chatty_graph, _rebuild


class Spies:
    """Counts the keeper's reads of the log past its start, and records what the
    builders are fed (by seq)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads_past_start: list[int] = []
        self.fed: dict[int, dict[str, Any]] = {}
        records_from = LogView.records_from
        feed = MemoryBuilder.feed
        feed_from = MemoryKeeper._feed_from

        def spy_feed_from(keeper: MemoryKeeper, offset: int) -> bool:
            if offset:
                self.reads_past_start.append(offset)
            return feed_from(keeper, offset)

        def spy_feed(builder: MemoryBuilder, record: dict[str, Any]) -> None:
            self.fed.setdefault(record["seq"], record)  # the keeper's, not a test's rebuild
            feed(builder, record)

        monkeypatch.setattr(MemoryKeeper, "_feed_from", spy_feed_from)
        monkeypatch.setattr(MemoryBuilder, "feed", spy_feed)
        self.records_from = records_from

    def check_fed_as_scanned(self, saver: JsonlSaver, thread_id: str) -> None:
        """Every record fed equals the one a scan of the log gives (snapshots as stubs)."""
        log = saver.store.thread_log(thread_id)
        with log.mutex:
            log.refresh()
            scan = self.records_from(log, 0, skip=("snapshot",))
        scanned = {r.record["seq"]: r.record for r in scan.records}
        assert self.fed
        for seq, record in self.fed.items():
            assert record == scanned[seq], seq
            assert type(record) is dict and all(type(v) is not tuple for v in record.values())


def _turn(graph: Any, thread_id: str, i: int, durability: str = "sync") -> None:
    graph.invoke({"messages": [HumanMessage(f"q{i}", id=f"h-{thread_id}-{i}")]},
                 {"configurable": {"thread_id": thread_id}}, durability=durability)


def test_sync_appends_are_fed_without_reading_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spies = Spies(monkeypatch)
    with JsonlSaver(tmp_path / "store", snapshot_every=3) as saver:
        graph = _chatty_graph(saver)
        saver.session_memory("a")  # asked once: from now on the keeper follows the appends
        for i in range(6):
            _turn(graph, "a", i)
            [keeper] = [o for o in saver.store.thread_log("a").observers if isinstance(o, MemoryKeeper)]
            assert keeper.builder is not None
            assert keeper.builder.memory() == _rebuild(saver, "a")
        assert spies.reads_past_start == []
        assert any(r["t"] == "snapshot" for r in spies.fed.values())  # snapshots still skipped
        spies.check_fed_as_scanned(saver, "a")
        assert saver.session_memory("a", budget=None) == _rebuild(saver, "a")


async def test_async_group_commits_are_fed_without_reading_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spies = Spies(monkeypatch)
    with JsonlSaver(tmp_path / "store") as saver:
        graph = _chatty_graph(saver)
        await saver.asession_memory("a")  # asked once: from now on the keeper follows
        for i in range(10):
            await graph.ainvoke({"messages": [HumanMessage(f"q{i}", id=f"h-{i}")]},
                                {"configurable": {"thread_id": "a"}}, durability="async")
        assert spies.reads_past_start == []
        spies.check_fed_as_scanned(saver, "a")
        memory = await saver.asession_memory("a", budget=None)
        assert memory == _rebuild(saver, "a")
        assert (memory.goal, memory.turns) == ("q9", 10)


def test_another_writer_in_between_falls_back_to_reading_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second saver on the same store (its own log objects and flock: another process
    as far as the first is concerned) appends between two turns of the first."""
    spies = Spies(monkeypatch)
    with JsonlSaver(tmp_path / "store") as first, JsonlSaver(tmp_path / "store") as second:
        g1, g2 = _chatty_graph(first), _chatty_graph(second)
        first.session_memory("a")  # asked once: from now on the keeper follows
        _turn(g1, "a", 0)
        second.session_memory("a")  # reads the log from its start
        _turn(g2, "a", 1)
        assert spies.reads_past_start == []  # the second saver's keeper read its log from 0
        _turn(g1, "a", 2)
        assert spies.reads_past_start  # the first saver's keeper read what it missed
        spies.check_fed_as_scanned(first, "a")
        for saver in (first, second):
            memory = saver.session_memory("a", budget=None)
            assert memory == _rebuild(saver, "a")
            assert (memory.goal, memory.turns) == ("q2", 3)


def test_an_abandoned_group_feeds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spies = Spies(monkeypatch)
    with JsonlSaver(tmp_path / "store") as saver:
        graph = _chatty_graph(saver)
        saver.session_memory("a")  # asked once: from now on the keeper follows
        _turn(graph, "a", 0)
        log = saver.store.thread_log("a")
        [keeper] = [o for o in log.observers if isinstance(o, MemoryKeeper)]
        assert keeper.builder is not None
        before = keeper.builder.memory()
        cp = log.refresh().ordered_ids[""][-1]

        def writes(task: str, value: Any) -> dict[str, Any]:
            return {"t": "writes", "ns": "", "cp": cp, "task": task, "path": "",
                    "w": [(0, "custom", {"json": value})]}  # a tuple: stored as a list

        with log.writer(), pytest.raises(RuntimeError), log.group_commit():
            log.append([writes("lost-1", 1)])
            log.append([writes("lost-2", 2)])
            raise RuntimeError("given up")
        real = files_module.os

        class FailingSync:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def fdatasync(self, fd: int) -> None:
                raise OSError(errno.EIO, os.strerror(errno.EIO))

        monkeypatch.setattr(files_module, "os", FailingSync())
        with log.writer(), pytest.raises(DurabilityError), log.group_commit():
            log.append([writes("lost-3", 3)])
        monkeypatch.setattr(files_module, "os", real)
        assert keeper.builder is not None and keeper.builder.memory() == before
        assert not any(r.get("task", "").startswith("lost") for r in spies.fed.values())
        with log.writer(), log.group_commit():
            log.append([writes("kept-1", 1)])
            log.append([writes("kept-2", 2)])
        assert keeper.builder is not None and keeper.builder.seq == log.index.last_seq
        spies.check_fed_as_scanned(saver, "a")
        assert spies.fed[log.index.last_seq]["w"] == [[0, "custom", {"json": 2}]]
        assert keeper.builder.memory() == _rebuild(saver, "a")
        assert saver.session_memory("a", budget=None) == _rebuild(saver, "a")
