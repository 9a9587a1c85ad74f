"""Moving threads between checkpointers: SQLite in, PostgreSQL out, and back.

:func:`copy_threads` copies threads between any two LangGraph checkpointers (endpoints
by URL: a store directory, ``sqlite:///path.db``, ``postgresql://...``; or objects),
with the replay adapter's journal, idempotently, and verifies the copy. The CLI's
``import``, ``copy`` and ``export postgresql://...`` are thin layers over it.

Modules: :mod:`.endpoints` (URLs to savers, what their storage tells beyond the API),
:mod:`.databases` (SQLite and PostgreSQL), :mod:`.journal` (the journal carried over),
:mod:`.copy` (the engine), :mod:`.verify` (decoded comparison), :mod:`.report`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .copy import copy_thread, copy_threads
    from .endpoints import Endpoint
    from .report import CopyInterrupted, CopyReport, ThreadCopy
    from .urls import is_database_url, open_endpoint
    from .verify import HistoryComparison, compare_histories, compare_threads

#: The public names, imported on first use by the module defining them (PEP 562): the
#: endpoints import LangGraph and the saver, which `langgraph-jsonl threads` does without.
_LAZY = {
    "copy_thread": ".copy", "copy_threads": ".copy", "Endpoint": ".endpoints",
    "CopyInterrupted": ".report", "CopyReport": ".report", "ThreadCopy": ".report",
    "is_database_url": ".urls", "open_endpoint": ".urls",
    "HistoryComparison": ".verify", "compare_histories": ".verify", "compare_threads": ".verify",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "CopyInterrupted",
    "CopyReport",
    "Endpoint",
    "HistoryComparison",
    "ThreadCopy",
    "compare_histories",
    "compare_threads",
    "copy_thread",
    "copy_threads",
    "is_database_url",
    "open_endpoint",
]
