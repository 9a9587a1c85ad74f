"""The docs' shell recipes, run as a user would run them (the jq recipe of
docs/getting-started.md, on a forked thread)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.doc_blocks import blocks
from tests.harness.flow_graphs import build_agent_graph


def _bash_block_with(text: str) -> str:
    """The one shell block of README.md or docs/ holding ``text``."""
    (found,) = [b.text for b in blocks("bash") if text in b.text]
    return found


def test_the_jq_recipe_prints_the_latest_conversation_of_a_forked_thread(tmp_path: Path) -> None:
    jq = shutil.which("jq")
    assert jq, "jq is not installed: .ci/run installs it (apt-get install jq)"
    saver = JsonlSaver(tmp_path / "checkpoints", snapshot_every=2)
    graph = build_agent_graph().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t-1"}}
    for turn in range(5):
        graph.invoke({"messages": [HumanMessage(f"what is {turn} + 2?", id=f"h{turn}")]}, cfg)
        if turn == 2:  # a fork: the latest conversation leaves out what came after it
            old = list(graph.get_state_history(cfg))[4].config
            graph.invoke({"messages": [HumanMessage("a fork", id="fork")]}, old)
    want = [f"{m.type}: {m.content}" for m in graph.get_state(cfg).values["messages"]]
    assert "human: a fork" in want and "human: what is 2 + 2?" not in want
    saver.close()
    recipe = _bash_block_with("jq -rs")
    run = subprocess.run(["bash", "-c", recipe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == want
