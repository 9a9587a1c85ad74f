"""The adapter's per-task batch state: one per tool-node task execution, shared by the
task's parallel calls, kept in a small LRU (``_MAX_LIVE_BATCHES``).

A batch is prepared once (its records loaded, its uncertain calls settled) and its calls
then run from it. If a batch were forgotten while its task still runs, a sibling call
would prepare it again, find a call of its own batch started (it is running) and ask a
person about it: a question about nothing that went wrong. So, past the bound, the least
recently used batch goes, never the one just made.

Written for the mutation-testing survivor ``ReplayAdapter._batch_for`` 30
(``popitem(last=True)``: the newest batch dropped).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter
from langgraph_jsonl_checkpoint.replay import adapter as adapter_module
from tests.harness.bounded import within
from tests.harness.replay_tools import (
    IDEMPOTENT_BY_NAME,
    Hooks,
    build_graph,
    call,
    config,
    effects,
    make_tools,
)

PLAN = [[[call("send_email", "c2", to="bob"), call("charge", "c3", amount=5)]]]
#: Longest a call waits for its sibling (never reached when the batch is shared).
PATIENCE = 10.0


class Siblings(Hooks):
    """Each tool call, once started, waits until its sibling has started too, or has
    loaded the batch's records a second time (then the first call is seen running)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.started: set[str] = set()
        self.loads: dict[str, int] = {}
        self.reloaded = False

    def at(self, point: str, call_id: str) -> None:
        if point != "before_effect":
            return
        with self.cond:
            self.started.add(call_id)
            self.cond.notify_all()
            self.cond.wait_for(lambda: len(self.started) == 2 or self.reloaded, PATIENCE)

    def wrap_load(self, load: Any) -> Any:
        def counted(thread_id: str, keys: Any) -> Any:
            with self.cond:
                self.loads[thread_id] = self.loads.get(thread_id, 0) + 1
                again = self.loads[thread_id] > 1
                if again:  # a second preparation of the batch: after a call started
                    self.cond.wait_for(lambda: bool(self.started), PATIENCE)
            out = load(thread_id, keys)
            if again:
                with self.cond:
                    self.reloaded = True
                    self.cond.notify_all()
            return out

        return counted


def test_a_new_batch_is_kept_past_the_bound_and_its_calls_share_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(adapter_module, "_MAX_LIVE_BATCHES", 1)
    hooks = Siblings()
    with JsonlSaver(tmp_path / "store") as saver, within(60):
        adapter = ReplayAdapter(saver, idempotent=IDEMPOTENT_BY_NAME)
        monkeypatch.setattr(adapter.journal, "load", hooks.wrap_load(adapter.journal.load))
        graph = build_graph(
            "tool_node", tools=make_tools(tmp_path / "effects", hooks=hooks), plan=PLAN,
            checkpointer=saver, adapter=adapter,
        )
        # a first task execution fills the adapter's one batch place
        hooks.started = {"c2", "c3"}
        graph.invoke({"messages": [HumanMessage("go", id="h0")]}, config("first"), durability="sync")
        hooks.started = set()
        assert len(adapter._batches) == 1

        out = graph.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="sync")
        assert "__interrupt__" not in out, out["__interrupt__"]
        assert not graph.get_state(config("t")).interrupts
        assert hooks.loads["t"] == 1  # prepared once, for both calls
        assert out["messages"][-1].content.startswith("done:")
        assert {(r.key.call_id, r.state) for r in saver.tool_calls("t")} == {
            ("c2", "finished"), ("c3", "finished")
        }
        assert dict(effects(tmp_path / "effects")) == {"c2": 2, "c3": 2}  # once per thread
