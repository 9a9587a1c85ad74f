"""A debug trace kept apart from the transcript: node, model and tool events with timings,
token usage and errors, one file per thread in the store's ``traces/`` folder.

- :mod:`.tracer`: :class:`JsonlTracer`, the LangChain callback handler that writes it;
- :mod:`.timeline`: reading it back as a timeline.

Nothing in the saver, recovery or replay reads it.
"""

from .timeline import TimelineRow, read_events, timeline
from .tracer import JsonlTracer

__all__ = ["JsonlTracer", "TimelineRow", "read_events", "timeline"]
