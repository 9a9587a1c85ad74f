"""The store's open logs: a log a live run holds stays open whatever the bound, a log
whose run ended is trimmed and counts against ``max_open_threads`` again, and a log let
go of is opened again cheaply (what this process already checked of that very file is
not checked again; a long log leaves a current sidecar behind; a file changed meanwhile
is loaded afresh). Behaviour stays that of ``InMemorySaver`` throughout."""

from __future__ import annotations

import gc
import operator
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import view as view_module
from langgraph_jsonl_checkpoint.disk.log import ThreadLog
from langgraph_jsonl_checkpoint.disk.parked import Parked
from langgraph_jsonl_checkpoint.values.cache import ValueCache
from langgraph_jsonl_checkpoint.values.witness import ListWitness
from tests.harness.bounded import within


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph(saver: Any, inside: threading.Event | None = None, release: threading.Event | None = None) -> Any:
    def step(state: State) -> dict:
        if inside is not None:
            inside.set()
        if release is not None:
            assert release.wait(30)
        return {"log": [f"step {len(state.get('log', []))}"]}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    return g.compile(checkpointer=saver)


def _cfg(tid: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def test_a_log_a_live_run_holds_is_never_let_go(tmp_path: Path) -> None:
    with JsonlSaver(tmp_path / "s", max_open_threads=1) as saver, within(60):
        inside, release = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            try:
                _graph(saver, inside, release).invoke({"log": []}, _cfg("held"))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        runner = threading.Thread(target=run)
        runner.start()
        assert inside.wait(30)
        held = saver.store._logs["held"]
        for i in range(5):  # other threads' runs, past the bound of one idle log
            _graph(saver).invoke({"log": []}, _cfg(f"other-{i}"))
        assert saver.store._logs.get("held") is held  # still the very object
        assert len(saver.store._logs) == 2  # the held log, and one idle log
        release.set()
        runner.join(30)
        assert not errors, errors
        # the run ended: the held log is idle now, and the bound lets one idle log stay
        assert len(saver.store._logs) == 1
        assert saver.store._pinned == {}


def test_a_run_that_ended_leaves_no_proof_of_its_objects(tmp_path: Path) -> None:
    """A witness holds the very objects a run read or stored; no later run has them."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    def answer(state: MessagesState) -> dict:
        return {"messages": [AIMessage(f"answer {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    with JsonlSaver(tmp_path / "s") as saver:
        graph = g.compile(checkpointer=saver)
        for i in range(3):
            out = graph.invoke({"messages": [HumanMessage(f"q{i}")]}, _cfg("t"), durability="sync")
            cache = saver.store._logs["t"].derived
            assert isinstance(cache, ValueCache)
            assert not [p for _, p in cache._proofs.values() if isinstance(p, ListWitness)]
            head = saver.get_tuple(_cfg("t"))
            assert cache.kept("", "messages", head.checkpoint["channel_versions"]["messages"])
            assert len(out["messages"]) == 2 * (i + 1)
        oracle = g.compile(checkpointer=InMemorySaver())
        for i in range(3):
            oracle.invoke({"messages": [HumanMessage(f"q{i}")]}, _cfg("t"), durability="sync")
        ours = [m.content for m in graph.get_state(_cfg("t")).values["messages"]]
        assert ours == [m.content for m in oracle.get_state(_cfg("t")).values["messages"]]


def test_a_log_let_go_is_not_checked_again_unless_its_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[tuple[str, int]] = []
    real_verify = ThreadLog._verify_checksums

    def spy(self: ThreadLog) -> None:
        checked.append((self.thread_id, self.index.committed_end - self._verified_end))
        real_verify(self)

    monkeypatch.setattr(ThreadLog, "_verify_checksums", spy)
    monkeypatch.setattr(view_module, "LOADED_RECORDS_BYTES", 0)  # every log is long: leaves its sidecar
    store = tmp_path / "s"
    with JsonlSaver(store, max_open_threads=1) as saver, within(60):
        graph = _graph(saver)
        for turn in range(3):
            for tid in ("a", "b"):  # two threads, one idle log: each turn opens its log again
                graph.invoke({"log": []} if turn == 0 else None, _cfg(tid))
                graph.invoke({"log": [f"{tid} {turn}"]}, _cfg(tid))
        # Reopened from its sidecar (trusted), each log was checked once: the first time
        # it was loaded from a sidecar; never again while it was the same file.
        assert all(n == 0 for tid, n in checked[2:]), checked
        # Another saver (another process, as far as this one knows) rewrites "a".
        with JsonlSaver(store) as other:
            other.compact("a")
        checked.clear()
        graph.invoke({"log": ["a again"]}, _cfg("a"))
        assert checked and checked[0][1] > 0  # a new generation: checked whole
        oracle = _graph(InMemorySaver())
        for turn in range(3):
            for tid in ("a", "b"):
                oracle.invoke({"log": []} if turn == 0 else None, _cfg(tid))
                oracle.invoke({"log": [f"{tid} {turn}"]}, _cfg(tid))
        oracle.invoke({"log": ["a again"]}, _cfg("a"))
        for tid in ("a", "b"):
            assert graph.get_state(_cfg(tid)).values == oracle.get_state(_cfg(tid)).values


def test_a_long_log_let_go_leaves_a_current_sidecar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(view_module, "LOADED_RECORDS_BYTES", 0)  # every log is long
    with JsonlSaver(tmp_path / "s", max_open_threads=1) as saver:
        graph = _graph(saver)
        graph.invoke({"log": []}, _cfg("a"))
        log = saver.store._logs["a"]
        assert log.sidecar_lag() > 0
        graph.invoke({"log": []}, _cfg("b"))  # lets "a" go
        assert "a" not in saver.store._logs
        assert log.sidecar_lag() == 0  # its sidecar covers every record
        reopened = saver.store.thread_log("a")
        reopened.refresh()
        assert reopened.sidecar.trusted  # loaded from it, not scanned


def test_parked_facts_round_trip_and_stay_out_of_the_collector() -> None:
    parked = Parked(ino=2**40 + 7, gen=3, header_crc="0a1b2c3d", verified_end=123_456, swept=True)
    packed = parked.pack()
    assert isinstance(packed, bytes) and Parked.unpack(packed) == parked
    for index_crc in (0, 2**32 - 1):
        known = parked._replace(head_index_crc=index_crc)
        assert Parked.unpack(known.pack()) == known
    gc.collect()
    assert not gc.is_tracked(packed)
