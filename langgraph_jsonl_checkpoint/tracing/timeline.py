"""A thread's debug trace read back as a timeline (what ``langgraph-jsonl trace`` prints).

Reads the rotated files oldest first and skips lines that are not whole JSON (a power
loss may cut the last one). Each start is paired with its end or error by run id; a
start without either (the process died, or the run is still going) is a row with no
duration.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from ..disk import files
from ..disk.paths import LogPaths, thread_file_stem
from ..disk.store import TEMP_DIR, THREADS_DIR


@dataclass(frozen=True)
class TimelineRow:
    """One graph run, node, model call or tool call.

    Attributes:
        kind: ``graph``, ``node``, ``model`` or ``tool``.
        name: Node, model or tool name.
        depth: Nesting (0 for a graph run).
        started_at: When it started (ISO 8601).
        seconds: How long it ran (``None``: no end recorded).
        status: ``ok``, ``error``, ``interrupted`` (it called ``interrupt()``: the run
            waits for an answer) or ``unfinished``.
        tokens: Token usage a model reported (``input_tokens``, ``output_tokens``, ``total_tokens``).
        error: The error, when it failed.
        step: The graph step (``langgraph_step``), if any.
        interrupt: What it asked, when it was interrupted (the values, as JSON).
    """

    kind: str
    name: str
    depth: int
    started_at: str
    seconds: float | None
    status: str
    tokens: dict[str, int] | None = None
    error: str | None = None
    step: int | None = None
    interrupt: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The row as JSON-able data."""
        return asdict(self)


#: A row's status by the event that ended it.
_STATUS = {"end": "ok", "error": "error", "interrupt": "interrupted"}


def trace_paths(store_path: str, thread_id: str) -> LogPaths:
    """The files of a thread in a store, for finding its trace files."""
    store_path = os.path.abspath(store_path)
    return LogPaths(os.path.join(store_path, THREADS_DIR), thread_file_stem(thread_id),
                    os.path.join(store_path, TEMP_DIR))


def read_events(store_path: str, thread_id: str) -> list[dict[str, Any]]:
    """Every readable event of a thread's trace, oldest first ([] if it has none)."""
    events: list[dict[str, Any]] = []
    for path in reversed(trace_paths(store_path, thread_id).trace_files()):
        try:
            data = files.read_whole(path)
        except OSError:
            continue
        for line in data.split(b"\n"):
            try:
                event = orjson.loads(line) if line else None
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and event.get("ev") in ("start", *_STATUS) and "run" in event:
                events.append(event)
    return events


def timeline(events: list[dict[str, Any]]) -> list[TimelineRow]:
    """Starts paired with their ends, in the order they started."""
    ends = {e["run"]: e for e in events if e["ev"] != "start"}
    rows = []
    for e in events:
        if e["ev"] != "start":
            continue
        end = ends.get(e["run"])
        rows.append(TimelineRow(
            kind=str(e.get("kind", "")), name=str(e.get("name", "")), depth=int(e.get("depth") or 0),
            started_at=str(e.get("at", "")),
            seconds=end.get("seconds") if end else None,
            status="unfinished" if end is None else _STATUS.get(end["ev"], "ok"),
            tokens=end.get("tokens") if end else None,
            error=end.get("error") if end else None,
            step=e.get("step"),
            interrupt=end.get("interrupt") if end else None,
        ))
    return rows
