"""A real ``langgraph dev`` server for tests: a project written into a temp folder, the
server started on a free port of 127.0.0.1, waited for (bounded), stopped.

The project's graph is an agent node on LangChain's fake chat model (no network, no
key): ``"slow"`` in the last message makes it sleep first (for double-texting),
``"ask"`` makes it ``interrupt()`` for an answer. The checkpointer is this package's
factory; the store lives outside the project folder (the server watches its folder).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

GRAPH_SOURCE = '''
import asyncio

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt

model = FakeListChatModel(responses=["hello from the fake model"])


async def agent(state: MessagesState) -> dict:
    last = state["messages"][-1].content
    if "slow" in last:
        await asyncio.sleep(SLOW_SECONDS)
    if "ask" in last:
        answer = interrupt({"question": "approve?"})
        return {"messages": [AIMessage(content=f"approved: {answer}")]}
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_edge(START, "agent")
graph = builder.compile()
'''

#: How long the graph's "slow" turn sleeps, in seconds.
SLOW_SECONDS = 3.0
#: Longest wait for the server to answer ``/ok``.
START_TIMEOUT = 90.0
#: The checkpointer entry of ``langgraph.json`` (the dotted form the server loads).
CHECKPOINTER_PATH = "langgraph_jsonl_checkpoint.server.checkpointer"


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_project(folder: Path, *, ttl: dict[str, Any] | None = None) -> Path:
    """Write the graph and ``langgraph.json`` (with ``ttl`` in the checkpointer block)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.py").write_text(GRAPH_SOURCE.replace("SLOW_SECONDS", repr(SLOW_SECONDS)))
    checkpointer: dict[str, Any] = {"path": CHECKPOINTER_PATH}
    if ttl is not None:
        checkpointer["ttl"] = ttl
    config = {"graphs": {"agent": "./graph.py:graph"}, "checkpointer": checkpointer, "dependencies": ["."]}
    (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
    return folder


class DevServer:
    """One ``langgraph dev`` process.

    Args:
        project: The project folder (see :func:`write_project`).
        store: The store directory (``LANGGRAPH_JSONL_STORE``).
        log: Where the server's output goes.
        env: More environment variables.
    """

    def __init__(self, project: Path, store: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.project = project
        self.store = store
        self.log = log
        self.env = env or {}
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DevServer:
        """Start the server and wait until it answers (at most :data:`START_TIMEOUT`).

        Raises:
            RuntimeError: It could not start; the message holds the end of its output.
        """
        exe = shutil.which("langgraph", path=os.path.dirname(sys.executable)) or shutil.which("langgraph")
        if exe is None:
            raise RuntimeError(
                "the langgraph command is not installed: pip install -e '.[test]' "
                "(it brings langgraph-cli[inmem]) to run the LangGraph server tests"
            )
        self.port = free_port()
        env = {**os.environ, "LANGGRAPH_JSONL_STORE": str(self.store), **self.env}
        env.pop("LANGSMITH_API_KEY", None)
        env["LANGSMITH_TRACING"] = "false"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [exe, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"langgraph dev exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/ok", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(
            f"langgraph dev did not answer on {self.url} within {START_TIMEOUT:.0f} s:\n{self.tail()}"
        )

    def stop(self) -> None:
        """Stop the server (SIGINT to its process group, then SIGKILL after 20 s)."""
        p, self.process = self.process, None
        if p is None or p.poll() is not None:
            return
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)

    def output(self) -> str:
        """Everything the server printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 40) -> str:
        """The last lines of the server's output."""
        return "\n".join(self.output().splitlines()[-lines:])
