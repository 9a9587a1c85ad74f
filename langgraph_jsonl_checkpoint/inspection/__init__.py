"""Reading a store for people: thread summaries and status, history, a checkpoint's
state as a conversation, diffs, the tool-call table, search, following a run, and
transcripts to share. What the ``langgraph-jsonl`` command shows, as a library.

Every function takes a :class:`~..saver.jsonl_saver.JsonlSaver` (open it with
``read_only=True``: nothing here writes, or takes a writer lock) and reads through its
public reads or the same read-only log views they use.
"""
