"""Reading a store for people: thread summaries and status, history, a checkpoint's
state as a conversation, diffs, the tool-call table, search, following a run, and
transcripts to share. What the ``langgraph-jsonl`` command shows, as a library::

    from langgraph_jsonl_checkpoint import JsonlSaver
    from langgraph_jsonl_checkpoint.inspection import thread_summaries, read_transcript

    with JsonlSaver("./checkpoints", read_only=True) as saver:
        for summary in thread_summaries(saver):
            print(summary.thread_id, summary.status, summary.waiting_for)
        transcript = read_transcript(saver, "t-1")

Every function takes a :class:`~..saver.jsonl_saver.JsonlSaver` (open it with
``read_only=True``: nothing here writes, or takes a writer lock) and reads through its
public reads or the same read-only log views they use. ``thread_summaries`` and
``summarize_thread`` also take a :class:`~.checkpoints.StoreReader` (a store read without
a saver, as ``langgraph-jsonl threads`` does: no LangGraph graph runtime imported).
"""

from .checkpoints import StoreReader
from .diff import ChannelDiff, diff_states
from .export import export_store, export_thread, transcript_jsonl, transcript_markdown
from .follow import FollowEvent, ThreadFollower, follow
from .history import HistoryEntry, checkpoint_history
from .html_page import transcript_html
from .search import SearchHit, search_messages
from .status import STATUSES, next_tasks, thread_status, waiting_interrupts
from .threads import ThreadSummary, select_threads, summarize_thread, thread_summaries
from .tool_table import ToolCallRow, ToolCallTable, tool_calls, tool_table
from .transcript import Transcript, diff_checkpoints, read_transcript

__all__ = [
    "STATUSES",
    "ChannelDiff",
    "FollowEvent",
    "HistoryEntry",
    "SearchHit",
    "StoreReader",
    "ThreadFollower",
    "ThreadSummary",
    "ToolCallRow",
    "ToolCallTable",
    "Transcript",
    "checkpoint_history",
    "diff_checkpoints",
    "diff_states",
    "export_store",
    "export_thread",
    "follow",
    "next_tasks",
    "read_transcript",
    "search_messages",
    "select_threads",
    "summarize_thread",
    "thread_status",
    "thread_summaries",
    "tool_calls",
    "tool_table",
    "transcript_html",
    "transcript_jsonl",
    "transcript_markdown",
    "waiting_interrupts",
]
