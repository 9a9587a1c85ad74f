"""What ``benchmarks/server.py`` hands the LangGraph server: the graph and the
``AsyncSqliteSaver`` factory (not a benchmark itself; the server loads this file).

- ``graph``: the benchmark agent of ``_common.build_agent_graph`` (fake tool-calling chat
  model, one tool, no network), compiled without a checkpointer: the server gives it
  the one ``langgraph.json`` names.
- ``sqlite_checkpointer``: ``AsyncSqliteSaver`` on the file ``$BENCH_SQLITE_DB``, in the
  shape of this package's own factory (``langgraph_jsonl_checkpoint.server.checkpointer``):
  an async context manager the server enters once per OS thread that needs a
  checkpointer and leaves at shutdown. ``AsyncSqliteSaver``'s defaults: WAL, Python's
  ``synchronous=FULL``, tables made on first use.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from _common import build_agent_graph

#: The variable naming ``AsyncSqliteSaver``'s database file.
SQLITE_ENV = "BENCH_SQLITE_DB"

graph = build_agent_graph(None)


@asynccontextmanager
async def sqlite_checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    """``AsyncSqliteSaver`` on ``$BENCH_SQLITE_DB``, closed when the server lets it go.

    Yields:
        The saver, its tables set up.
    """
    async with AsyncSqliteSaver.from_conn_string(os.environ[SQLITE_ENV]) as saver:
        await saver.setup()
        yield saver
