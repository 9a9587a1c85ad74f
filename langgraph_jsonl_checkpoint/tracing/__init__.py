"""A debug trace kept apart from the transcript: node, model and tool events with timings,
token usage and errors, one file per thread in the store's ``traces/`` folder.

- :mod:`.tracer`: :class:`JsonlTracer`, the LangChain callback handler that writes it;
- :mod:`.timeline`: reading it back as a timeline.

Nothing in the saver, recovery or replay reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from .timeline import TimelineRow, read_events, timeline

if TYPE_CHECKING:
    from .tracer import JsonlTracer


#: ``JsonlTracer`` is imported on first use: it subclasses LangChain's callback handler,
#: and reading a trace back (``langgraph-jsonl trace``) needs no LangChain.
__getattr__, __dir__ = lazy_names(__name__, {"JsonlTracer": ".tracer"})

__all__ = ["JsonlTracer", "TimelineRow", "read_events", "timeline"]
