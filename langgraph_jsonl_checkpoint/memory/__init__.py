"""Session memory: what a model is told about a thread after a resume.

- :mod:`.model`: :class:`SessionMemory`, the budget, the rule-based text (pure);
- :mod:`.builder`: the memory folded from log records one at a time (pure);
- :mod:`.keeper`: the memory kept beside a log, caught up after each append, on disk;
- :mod:`.sent`: the tasks a ``Send`` queued, named by their node and tool calls, and
  the results they wrote before their checkpoint came (pure);
- :mod:`.answers`: a person's answer told as decisions, call by call; call keys (pure);
- :mod:`.inject`: the memory placed after the system prompt, for custom graphs and as
  ``create_agent`` middleware.
"""

from .builder import MemoryBuilder
from .inject import awith_session_memory, insert_memory, session_memory_middleware, with_session_memory
from .keeper import MemoryKeeper
from .model import DEFAULT_BUDGET, MemoryItem, SessionMemory, Summariser, fit_budget, render

__all__ = [
    "DEFAULT_BUDGET",
    "MemoryBuilder",
    "awith_session_memory",
    "insert_memory",
    "session_memory_middleware",
    "with_session_memory",
    "MemoryItem",
    "MemoryKeeper",
    "SessionMemory",
    "Summariser",
    "fit_budget",
    "render",
]
