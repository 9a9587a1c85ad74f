"""A store written by an earlier version reads the same today.

``tests/data/store-v0.1/`` was written by ``tests/data/make_v01_store.py`` at the commit
before the package was reorganised into subpackages; ``store-v0.1.answers.json`` holds
what that version served from it. Every later version must serve exactly the same, with
the sidecar indexes it left and without them, and keep writing to it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.maintenance.verify import verify

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_v01_store as v01  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Path:
    copy = tmp_path / "store-v0.1"
    shutil.copytree(DATA / "store-v0.1", copy)
    return copy


@pytest.mark.parametrize("sidecars", ["kept", "deleted"])
@pytest.mark.parametrize("read_only", [True, False])
def test_a_store_written_before_reads_the_same(store: Path, sidecars: str, read_only: bool) -> None:
    if sidecars == "deleted":
        for idx in store.glob("threads/*.idx"):
            idx.unlink()
    want = json.loads((DATA / "store-v0.1.answers.json").read_text())
    with JsonlSaver(store, read_only=read_only) as saver:
        got = _known_fields(v01.answers(saver), want)
    for thread in v01.THREADS + ["deleted"]:
        assert got[thread] == want[thread], thread
    assert got == want


#: Tool-call record fields added since the answers were written: what they say of the
#: old store's calls (checked here, left out of the comparison).
NEW_FIELDS = {
    "superseded_from": lambda rec, ids: rec["superseded_from"] is None,  # nothing superseded
    # a started call is in a lost run iff its checkpoint is not in the thread
    "lost_run": lambda rec, ids: rec["lost_run"] is (
        None if rec["state"] != "started" else rec["key"]["checkpoint_id"] not in ids
    ),
    # no call the old store's journal left open is answered by a ToolMessage in its state
    "answered_with": lambda rec, ids: rec["answered_with"] is None,
    # nor was a held failed call of it overtaken by new input
    "overtaken_with": lambda rec, ids: rec["overtaken_with"] is None,
    # no event of the old store is marked `carry`: no lost call carries an answer
    "carries_answer": lambda rec, ids: rec["carries_answer"] is False,
}


def _known_fields(got: dict, want: dict) -> dict:
    """``got`` without the fields added since the answers were written (each checked)."""
    for thread, answer in want.items():
        if not isinstance(answer, dict):
            continue
        ids = {t["config"]["configurable"]["checkpoint_id"] for t in got[thread]["list"]}
        for new, old in zip(got[thread]["tool_calls"], answer["tool_calls"]):
            for field in set(new) - set(old):
                assert field in NEW_FIELDS and NEW_FIELDS[field](new, ids), (thread, field, new)
                new.pop(field)
    return got


def test_a_store_written_before_verifies_and_takes_new_writes(store: Path) -> None:
    with JsonlSaver(store) as saver:
        report = verify(saver)
        torn = [f for f in report.findings if "torn tail" in f.problem]
        assert len(report.findings) == len(torn) == 1, report.findings  # the torn log's tail
        graph = v01.agent_graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "torn"}}
        graph.invoke({"messages": [HumanMessage("one more", id="more")]}, cfg)
        messages = graph.get_state(cfg).values["messages"]
    assert [m.content for m in messages[-4:]][0] == "one more"
    with JsonlSaver(store, read_only=True) as saver:
        assert verify(saver).ok
        assert saver.get_tuple(cfg).checkpoint["channel_values"]["messages"][-4].content == "one more"
