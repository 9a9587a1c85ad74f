"""The tables LangGraph's SQL savers and stores make, and the columns ``SqliteSaver`` and
``PostgresSaver`` read: a source database of another program that happens to have a
``checkpoints`` table lacks some (:func:`lacking` names them, for the error)."""

from __future__ import annotations

from collections.abc import Callable

#: The tables ``SqliteSaver`` and ``SqliteStore`` make: an SQLite target holding tables,
#: none of them these, is another program's database.
LANGGRAPH_SQLITE_TABLES = frozenset({
    "checkpoints", "writes", "store", "store_migrations", "store_vectors", "vector_migrations",
})
#: The tables ``PostgresSaver.setup()`` and ``PostgresStore.setup()`` create (their
#: migration bookkeeping last).
POSTGRES_TABLES = (
    "checkpoints", "checkpoint_blobs", "checkpoint_writes", "store",
    "checkpoint_migrations", "store_migrations",
)
#: The tables ``PostgresSaver`` reads.
SAVER_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
#: The tables only ``PostgresStore.setup()`` creates (the journal's: not needed without it).
STORE_TABLES = ("store", "store_migrations")
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
