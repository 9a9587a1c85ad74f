"""What a source database must hold to be one LangGraph's SQL savers wrote: the tables and
columns ``SqliteSaver`` and ``PostgresSaver`` read. Another program's database that happens
to have a ``checkpoints`` table lacks some (:func:`lacking` names them, for the error)."""

from __future__ import annotations

from collections.abc import Callable

#: The columns the SQL savers read, by table: a source whose tables lack one is another
#: program's database that happens to have a ``checkpoints`` table.
SQLITE_COLUMNS = {
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
                    "checkpoint", "metadata"),
    "writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"),
}
POSTGRES_COLUMNS = {
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "checkpoint",
                    "metadata"),
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version", "type", "blob"),
    "checkpoint_writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx",
                          "channel", "type", "blob"),
}


def lacking(wanted: dict[str, tuple[str, ...]], tables: set[str], columns: Callable[[str], set[str]]) -> str:
    """What of the saver's tables and columns (``wanted``) a database lacks, for a message
    (``""``: nothing); ``columns(table)`` gives a table's column names."""
    missing = []
    for table, names in wanted.items():
        if table not in tables:
            missing.append(f"a '{table}' table")
            continue
        have = columns(table)
        missing += [f"{table}.{c}" for c in names if c not in have]
    return ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
