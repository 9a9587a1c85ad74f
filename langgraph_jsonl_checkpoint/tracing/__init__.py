"""A debug trace kept apart from the transcript: node, model and tool events with timings,
token usage and errors, one file per thread in the store's ``traces/`` folder.

- :mod:`.tracer`: :class:`JsonlTracer`, the LangChain callback handler that writes it;
- :mod:`.timeline`: reading it back as a timeline.

Nothing in the saver, recovery or replay reads it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .timeline import TimelineRow, read_events, timeline

if TYPE_CHECKING:
    from .tracer import JsonlTracer


def __getattr__(name: str) -> Any:
    """``JsonlTracer``, imported on first use (PEP 562): it subclasses LangChain's callback
    handler, and reading a trace back (``langgraph-jsonl trace``) needs no LangChain."""
    if name == "JsonlTracer":
        value = importlib.import_module(".tracer", __name__).JsonlTracer
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

__all__ = ["JsonlTracer", "TimelineRow", "read_events", "timeline"]
