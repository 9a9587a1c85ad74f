"""A deterministic tool-calling agent, and a saver that reports what it acknowledged.

``ScriptedModel`` is a fake chat model whose reply depends only on the conversation so
far; ``build_agent`` puts it in the agent loop of ``flow_graphs.tool_agent_graph``, so a
run resumed in another process produces exactly the messages of an uninterrupted run.
``AckingSaver`` appends a line to an ack file after each ``put`` / ``put_writes``
returned (the line survives a SIGKILL of the writer); ``read_acks`` reads them back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import WRITES_IDX_MAP

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.flow_graphs import tool_agent_graph

#: Tool rounds the scripted model asks for before answering (odd rounds call two tools).
AGENT_TOOL_ROUNDS = 5
AGENT_QUESTION = "sum the numbers please"


class ScriptedModel(BaseChatModel):
    """A fake chat model whose reply depends only on the conversation so far.

    It asks for ``rounds`` rounds of tool calls (two parallel calls on odd rounds), then
    answers with the tool results. Ids derive from the conversation length, so a resumed
    run in another process produces exactly the messages an uninterrupted run does.
    """

    rounds: int = AGENT_TOOL_ROUNDS

    @property
    def _llm_type(self) -> str:
        return "crashkit-scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        n = len(messages)
        tool_results = [m for m in messages if isinstance(m, ToolMessage)]
        done_rounds = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        if done_rounds < self.rounds:
            calls = [{"name": "add", "args": {"a": n, "b": done_rounds}, "id": f"call-add-{n}"}]
            if done_rounds % 2:
                calls.append({"name": "multiply", "args": {"a": n, "b": 3}, "id": f"call-mul-{n}"})
            msg = AIMessage(content=f"round {done_rounds}", tool_calls=calls, id=f"ai-{n}")
        else:
            total = sum(int(m.content) for m in tool_results)
            msg = AIMessage(content=f"total {total}", id=f"ai-{n}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def build_agent(checkpointer: Any, rounds: int = AGENT_TOOL_ROUNDS):
    return tool_agent_graph(ScriptedModel(rounds=rounds)).compile(checkpointer=checkpointer)


def agent_input() -> dict:
    return {"messages": [HumanMessage(content=AGENT_QUESTION, id="human-0")]}


def message_summary(messages: Sequence[Any]) -> list[tuple]:
    return [
        (type(m).__name__, m.id, str(m.content), tuple(c["id"] for c in getattr(m, "tool_calls", []) or []))
        for m in messages
    ]


class AckingSaver(JsonlSaver):
    """A ``JsonlSaver`` that appends a line to ``ack_fd`` after each call *returned*.

    Lines: ``P <ns> <checkpoint_id>`` after ``put``; ``W <ns> <checkpoint_id> <task_id>
    <idx>`` per write slot after ``put_writes``. ``os.write`` to a regular file survives
    SIGKILL of the writer (it is in the kernel as soon as the call returns).
    """

    ack_fd: int = -1

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[override]
        out = super().put(config, checkpoint, metadata, new_versions)
        c = out["configurable"]
        _ack(self.ack_fd, f"P {c['checkpoint_ns'] or '-'} {c['checkpoint_id']}\n")
        return out

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        super().put_writes(config, writes, task_id, task_path)
        c = config["configurable"]
        lines = "".join(
            f"W {c.get('checkpoint_ns') or '-'} {c['checkpoint_id']} {task_id} "
            f"{WRITES_IDX_MAP.get(ch, i)} {ch}\n"
            for i, (ch, _) in enumerate(writes)
        )
        _ack(self.ack_fd, lines)


def _ack(fd: int, text: str) -> None:
    if fd >= 0 and text:
        os.write(fd, text.encode())


@dataclass
class Acks:
    checkpoints: list[tuple[str, str]] = field(default_factory=list)  # (ns, id)
    writes: list[tuple[str, str, str, int, str]] = field(default_factory=list)  # (ns, cp, task, idx, channel)


def read_acks(path: str) -> Acks:
    acks = Acks()
    if not os.path.exists(path):
        return acks
    with open(path, "rb") as f:
        data = f.read().decode()
    # Only whole lines count: a line is written by one os.write after the call returned.
    for line in data.splitlines(keepends=True):
        if not line.endswith("\n"):
            continue
        parts = line.split()
        ns = "" if parts[1] == "-" else parts[1]
        if parts[0] == "P":
            acks.checkpoints.append((ns, parts[2]))
        elif parts[0] == "W":
            acks.writes.append((ns, parts[2], parts[3], int(parts[4]), parts[5] if len(parts) > 5 else ""))
    return acks
