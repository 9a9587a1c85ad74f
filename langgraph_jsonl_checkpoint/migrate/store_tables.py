"""The replay journal's items read from a LangGraph SQL store's ``store`` table directly,
and what an older release's table lacks for writing them.

``SqliteStore.search`` and ``PostgresStore.search`` select the TTL columns (``expires_at``,
``ttl_minutes``) that later releases' migrations add, so the store of an app on an older
langgraph-checkpoint-sqlite/-postgres could not be read through them. The journal needs
none of those columns: its items are read with a query of their own (:data:`SQLITE_ITEMS`,
:data:`POSTGRES_ITEMS`), which changes nothing. Writing an item does set them (``put``):
:func:`lacking_ttl` says what a target's table lacks and what to run.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The columns ``put`` sets that an older release's ``store`` table lacks.
TTL_COLUMNS = ("expires_at", "ttl_minutes")
#: A thread's items under a namespace, oldest first (as the journal sorts ``search``'s).
SQLITE_ITEMS = ("SELECT value FROM store WHERE prefix = ? "  # value: JSON text, in a BLOB
                "AND json_extract(CAST(value AS TEXT), '$.thread_id') = ? "
                "ORDER BY created_at, updated_at DESC, key")
POSTGRES_ITEMS = ("SELECT value FROM store WHERE prefix = %s AND value->>'thread_id' = %s "
                  "ORDER BY created_at, updated_at DESC, key")


def postgres_setup_command(url: str) -> str:
    """A shell command running ``PostgresStore``'s own ``setup()`` on the database ``url``."""
    return ('python -c "import psycopg; from psycopg.rows import dict_row; '
            "from langgraph.store.postgres import PostgresStore; "
            f"PostgresStore(psycopg.connect({url!r}, autocommit=True, prepare_threshold=0, "
            'row_factory=dict_row)).setup()"'
            + (" (the URL's password in place of ***)" if ":***@" in url else ""))


def lacking_ttl(
    store: str, package: str, migrations: Sequence[str], columns: set[str], done: int, command: str
) -> str | None:
    """What a ``store`` table with ``columns`` lacks for the journal to be written into it
    and what to run, for an error (``None``: nothing). ``store`` is the class
    (``"PostgresStore"``), ``package`` its distribution, ``migrations`` its
    ``MIGRATIONS``, ``done`` the last one its ``store_migrations`` table records (-1:
    none), ``command`` a shell command running its ``setup()``."""
    lacks = [c for c in TTL_COLUMNS if c not in columns]
    if not lacks:
        return None
    first = min((i for i, sql in enumerate(migrations) if any(c in sql for c in lacks)), default=done + 1)
    last = len(migrations) - 1
    which = f"{store}'s migration(s) {first} to {last}" if last > first else f"{store}'s migration {first}"
    text = (f"the target's table 'store' ({store}'s, where the replay journal goes) lacks the column(s) "
            f"{', '.join(lacks)} that {which} add: it was made by an older {package}, and this version's "
            f"{store} cannot write the journal into it. Nothing was copied. ")
    if done >= first:  # its bookkeeping says they ran: setup() would skip them
        return text + (f"Its store_migrations table records them as run, so setup() skips them: delete "
                       f"those records (DELETE FROM store_migrations WHERE v >= {first}), then run the "
                       f"store's own setup(): {command}")
    return text + (f"Run them once with the store's own setup() (your app's store.setup() on this "
                   f"version does the same): {command}; or run this again with --setup, which runs it.")
