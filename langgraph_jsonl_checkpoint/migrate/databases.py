"""Database endpoints: ``SqliteSaver`` files and ``PostgresSaver`` databases.

Each opens LangGraph's own saver on the database, and answers what its API cannot
from the tables directly (threads: ``SELECT DISTINCT thread_id``; a checkpoint's write
slots with their ``task_path`` and ``idx``). The journal is a LangGraph store in the
same database (``PostgresStore``; ``SqliteStore`` in the same file), the place a
``ReplayAdapter(store=...)`` on that saver keeps it.

The drivers are optional: ``pip install 'langgraph-jsonl-checkpoint[postgres]'`` for
``psycopg`` and ``langgraph-checkpoint-postgres``, ``[sqlite]`` for
``langgraph-checkpoint-sqlite``; a URL needing one that is missing is a clear error.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any, Literal
from urllib.parse import quote

from langgraph.checkpoint.base import CheckpointTuple, writes_sort_key

from ..errors import MigrationError
from ..replay.journal import STORE_NAMESPACE
from . import sqlite_lock
from .db_errors import cannot_open, missing_extra, newer_saver, redacted, what_to_do
from .endpoints import (
    Chunk,
    Endpoint,
    Key,
    NewTarget,
    Place,
    StoredCheckpoint,
    WriteSlot,
    cannot_create,
    place_of_path,
)
from .journal import StoreJournalEnd
from .pg_lock import LockWatch
from .schema import (
    LANGGRAPH_SQLITE_TABLES,
    POSTGRES_COLUMNS,
    POSTGRES_TABLES,
    SAVER_TABLES,
    SQLITE_COLUMNS,
    STORE_TABLES,
    lacking,
)
from .store_tables import POSTGRES_ITEMS, SQLITE_ITEMS, lacking_ttl, postgres_setup_command

_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: str) -> bool:
    """Whether ``path`` starts as an SQLite database does."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def _in_wal_mode(path: str) -> bool:
    """Whether the SQLite file at ``path`` is in write-ahead log mode (its header's read
    and write versions are 2; 1 is rollback-journal mode)."""
    try:
        with open(path, "rb") as f:
            f.seek(18)
            return f.read(2) == b"\x02\x02"
    except OSError:
        return False


class SqliteEndpoint(Endpoint):
    """A ``SqliteSaver`` file (read-only: a dry run's target, opened so that SQLite makes
    no file beside it)."""

    saver: Any

    def __init__(
        self, path: str, name: str, *, role: str, read_only: bool = False, serde: Any = None
    ) -> None:
        SqliteSaver = _sqlite_saver_class()
        exists = os.path.isfile(path)
        if role == "source" and not exists:
            raise MigrationError(f"{name}: no such SQLite file ({os.path.abspath(path)})")
        if exists and role == "source" and not is_sqlite_file(path):  # read, never made: no "new file"
            what = "is empty (0 bytes)" if os.path.getsize(path) == 0 else "is not an SQLite database"
            raise MigrationError(
                f"{name}: {path} {what}, so not a file SqliteSaver wrote. Name the file your app's "
                "SqliteSaver writes to."
            )
        if exists and os.path.getsize(path) > 0 and not is_sqlite_file(path):
            raise MigrationError(
                f"{name}: {path} is not an SQLite database; give a new file or one SqliteSaver wrote"
            )
        self.path = path
        self.read_only = read_only
        self.immutable = False  # opened so (read-only, no -wal file then): see _fresh
        self._task_path: bool | None = None
        self.store_conn: sqlite3.Connection | None = None
        new_file = not os.path.exists(path)
        try:
            self.conn = self._connect(isolation_level="DEFERRED")
        except sqlite3.Error as exc:
            raise cannot_open(name, path, role, exc) from None
        try:
            tables = self._tables()
        except sqlite3.Error as exc:  # SQLite opens the file on the first statement
            self.conn.close()
            raise cannot_open(name, path, role, exc) from None
        if role == "source" and "checkpoints" not in tables:
            self.conn.close()
            raise MigrationError(
                f"{name}: {path} has no 'checkpoints' table: it is not a file SqliteSaver wrote"
            )
        if role == "source":
            lacks = lacking(SQLITE_COLUMNS, tables, self._columns)
            if lacks:
                self.conn.close()
                raise MigrationError(
                    f"{name}: {path} has a 'checkpoints' table, but not SqliteSaver's (it lacks {lacks}): "
                    "another program's database. Name the file your app's SqliteSaver writes to."
                )
        own = {t for t in tables if not t.startswith("sqlite_")}  # not SQLite's bookkeeping
        if role == "target" and own and not own & LANGGRAPH_SQLITE_TABLES:
            self.conn.close()
            shown = ", ".join(sorted(own)[:5]) + (", ..." if len(own) > 5 else "")
            raise MigrationError(
                f"{name}: {path} is an SQLite database of something else (its tables: {shown}; none of "
                "SqliteSaver's): a copy would add LangGraph's tables to it. Name a new file or one "
                "SqliteSaver wrote."
            )
        self._readable = {"checkpoints", "writes"} <= tables
        creates = [f"the SQLite file {path}"] if new_file else []
        if not new_file and not self._readable:
            creates = [f"SqliteSaver's tables in {path}"]
        saver = SqliteSaver(self.conn, serde=serde)
        if read_only:  # its setup() would write (journal_mode=WAL; an older file's task_path column)
            saver.is_setup, saver._has_task_path = True, self._has_task_path()  # what setup() finds
        super().__init__(saver, name, "sqlite", self._journal(tables, role), creates)

    def _connect(self, *, isolation_level: Literal["DEFERRED"] | None) -> sqlite3.Connection:
        # Said when it waits for another process's lock (sqlite_lock); a write transaction
        # takes the write lock as it begins, where the wait can be said.
        if not self.read_only:
            return sqlite_lock.connect(self.path, isolation_level=isolation_level and "IMMEDIATE")
        # Read-only; immutable (making no -wal and -shm files) if in write-ahead log mode with no
        # log there. In rollback-journal mode a read-only open makes no file, and it must take
        # SQLite's locks: an app's write transaction may be half in the file, its -journal beside.
        self.opened = self._stamp()
        self.immutable = not self.opened[0] and _in_wal_mode(self.path)
        uri = f"file:{quote(os.path.abspath(self.path))}?mode=ro{'&immutable=1' if self.immutable else ''}"
        return sqlite_lock.connect(self.path, uri=uri, isolation_level=isolation_level)

    def _stamp(self) -> tuple[bool, int, int]:
        return os.path.exists(self.path + "-wal"), os.stat(self.path).st_mtime_ns, os.path.getsize(self.path)

    def _fresh(self) -> None:
        """Reopen a file opened immutable once a -wal file appears or the file changes (an app
        started, or ran and stopped): immutable reads, lockless and cached, see old or torn pages."""
        if self.read_only and self.immutable and self._stamp() != self.opened:
            with self.saver.lock:
                if self.immutable:  # not reopened by another thread meanwhile
                    old, self.conn = self.conn, self._connect(isolation_level="DEFERRED")
                    self.saver.conn = self.conn
                    old.close()

    def read_checkpoints(self, thread_id: str, keys: Chunk) -> list[CheckpointTuple | None]:
        self._fresh()
        return super().read_checkpoints(thread_id, keys)

    def _tables(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def _journal(self, tables: set[str], role: str) -> StoreJournalEnd | None:
        try:
            from langgraph.store.sqlite import SqliteStore
        except ImportError:
            return None
        sql = "SELECT 1 FROM store WHERE prefix = ? LIMIT 1"  # a namespace as SqliteStore stores it
        if role == "source" and ("store" not in tables  # or only the app's items, maybe an older store's
                                 or self.conn.execute(sql, (".".join(STORE_NAMESPACE),)).fetchone() is None):
            return None
        # its own connection: the saver's and the store's transactions must not nest
        self.store_conn = self._connect(isolation_level=None)
        store = SqliteStore(self.store_conn)
        if self.read_only:
            store.is_setup = True  # its setup() would write (migrations); reading needs none
        return StoreJournalEnd(store, setup=store.setup, ready="store" in tables, items=self._journal_items)

    def _journal_items(self, thread_id: str) -> list[Any]:
        self._fresh()
        with self.saver.lock:  # read without the TTL columns an older SqliteStore's table lacks
            rows = self.conn.execute(SQLITE_ITEMS, (".".join(STORE_NAMESPACE), thread_id)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def readable(self) -> bool:
        return self._readable

    def thread_ids(self) -> list[str]:
        self._fresh()
        rows = self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        return sorted(str(r[0]) for r in rows)

    def stored_checkpoints(self, thread_id: str) -> dict[Key, StoredCheckpoint]:
        self._fresh()
        with self.saver.lock:  # the saver's connection, shared by the copy's threads
            if not {"checkpoints", "writes"} <= self._tables():  # a new file: empty
                return {}
            rows = self.conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints "
                "WHERE thread_id = ?", (thread_id,),
            ).fetchall()
            counts = self.conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, count(*) FROM writes WHERE thread_id = ? "
                "GROUP BY checkpoint_ns, checkpoint_id", (thread_id,),
            ).fetchall()
        return _stored(rows, counts)

    def tells_task_paths(self) -> bool:
        with self.saver.lock:
            return self._has_task_path()

    def _has_task_path(self) -> bool:
        """Whether the writes table has a ``task_path`` column (files SqliteSaver wrote
        before it had one do not); under the saver's lock."""
        if self._task_path is None:
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(writes)")}
            self._task_path = "task_path" in columns
        return self._task_path

    def write_slots(self, thread_id: str, ns: str, checkpoint_id: str) -> list[WriteSlot] | None:
        self._fresh()
        with self.saver.lock:  # the saver's connection, shared by the copy's threads
            path = "task_path" if self._has_task_path() else "''"
            rows = self.conn.execute(
                f"SELECT task_id, {path}, idx, channel FROM writes "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                (thread_id, ns, checkpoint_id),
            ).fetchall()
        return _sorted_slots(rows)

    def thread_write_slots(self, thread_id: str) -> dict[tuple[str, str], list[WriteSlot]] | None:
        self._fresh()
        with self.saver.lock:
            path = "task_path" if self._has_task_path() else "''"
            rows = self.conn.execute(
                f"SELECT checkpoint_ns, checkpoint_id, task_id, {path}, idx, channel FROM writes "
                "WHERE thread_id = ?", (thread_id,),
            ).fetchall()
        return _grouped_slots(rows)

    def size(self) -> int | None:
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    def place(self) -> Place | None:
        return place_of_path(self.path)

    def close(self) -> None:
        self.conn.close()
        if self.store_conn is not None:
            self.store_conn.close()


def _stored(rows: list[Any], counts: list[Any]) -> dict[Key, StoredCheckpoint]:
    """``(ns, id, parent)`` rows and ``(ns, id, writes)`` counts as stored checkpoints."""
    writes = {(str(r[0]), str(r[1])): int(r[2]) for r in counts}
    return {
        (str(r[0]), str(r[1])): StoredCheckpoint(r[2] or None, writes.get((str(r[0]), str(r[1])), 0))
        for r in rows
    }


def _grouped_slots(rows: list[Any]) -> dict[tuple[str, str], list[WriteSlot]]:
    """``(ns, checkpoint_id, task_id, task_path, idx, channel)`` rows by checkpoint, sorted."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        groups.setdefault((str(r[0]), str(r[1])), []).append(r[2:])
    return {k: _sorted_slots(v) for k, v in groups.items()}


def _sorted_slots(rows: list[Any]) -> list[WriteSlot]:
    slots = [WriteSlot(str(r[0]), str(r[1] or ""), int(r[2]), str(r[3])) for r in rows]
    slots.sort(key=lambda s: writes_sort_key(s.task_path, s.task_id, s.idx))
    return slots


def open_sqlite(path: str, name: str, *, role: str, dry_run: bool = False, serde: Any = None) -> Endpoint:
    """A ``SqliteSaver`` endpoint on the file ``path`` (a target file is created, except
    by a dry run: a :class:`~.endpoints.NewTarget` stands in for it), with ``serde``
    (LangGraph's default when ``None``)."""
    if role == "target" and os.path.isdir(path):
        raise MigrationError(f"{name}: {path} is a directory; name an SQLite file (a new one, or one "
                             "SqliteSaver wrote)")
    if role == "target" and not os.path.exists(path):
        why = cannot_create(path, parents=False)  # SQLite makes no directory
        if why is not None:
            raise MigrationError(
                f"{name}: cannot create the SQLite file {path}: {why}. Name a file in a directory "
                "that exists and can be written to."
            )
    if dry_run and role == "target" and not os.path.exists(path):
        _sqlite_saver_class()  # the same error as a real run when the extra is missing
        return NewTarget(name, "sqlite", journal=_has_sqlite_store(), creates=[f"the SQLite file {path}"])
    return SqliteEndpoint(path, name, role=role, read_only=role == "source" or dry_run, serde=serde)


def _sqlite_saver_class() -> Any:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise missing_extra("sqlite", exc) from None
    return SqliteSaver


def _has_sqlite_store() -> bool:
    try:
        import langgraph.store.sqlite  # noqa: F401
    except ImportError:
        return False
    return True


class PostgresEndpoint(Endpoint):
    """A ``PostgresSaver`` database, with ``PostgresStore`` for the journal."""

    def __init__(self, url: str, *, role: str, workers: int = 1, serde: Any = None) -> None:
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from langgraph.store.postgres import PostgresStore
            from psycopg.conninfo import conninfo_to_dict
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise missing_extra("postgres", exc) from None
        name = redacted(url)
        try:
            named = bool(conninfo_to_dict(url).get("dbname", "").strip())
        except psycopg.ProgrammingError as exc:  # libpq cannot parse it
            raise MigrationError(f"{name}: not a PostgreSQL URL ({str(exc).strip()}). Give "
                                 "postgresql://user@host:port/database") from None
        if not named:  # libpq would connect to the user's own: postgres's is the maintenance database
            raise MigrationError(
                f"{name}: the URL names no database (the server's default would be used, often its "
                "'postgres' maintenance database). Name one: postgresql://user@host:port/database"
            )
        try:  # once by hand, for a clear error (a pool would retry until its timeout)
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.OperationalError as exc:
            # psycopg's first line says what failed; a line after it may ask a question of its own
            first = " ".join(str(exc).strip().split("\n", 1)[0].split()).rstrip(".")
            reason = first or type(exc).__name__
            raise MigrationError(f"cannot connect to PostgreSQL at {name}: {reason}. "
                                 + what_to_do(reason, conninfo_to_dict(url), role)) from None
        options = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        self.watch = LockWatch(url, name)  # says a wait for another session's lock
        self.pool, self.store_pool = (  # one for the saver, one for the store
            ConnectionPool(url, min_size=1, max_size=max(1, workers), kwargs=options, open=True,
                           configure=self.watch.add) for _ in range(2))
        tables = self._tables()
        if role == "source" and "checkpoints" not in tables:
            self.close()
            raise MigrationError(
                f"{name}: the database has no 'checkpoints' table: PostgresSaver never wrote to it"
            )
        lacks = lacking(POSTGRES_COLUMNS, tables, self._columns) if role == "source" else ""
        if lacks:
            self.close()
            raise MigrationError(
                f"{name}: the database has a 'checkpoints' table, but not PostgresSaver's (it lacks "
                f"{lacks}): another program's tables. Name the database your app's PostgresSaver writes to."
            )
        store = PostgresStore(self.store_pool)
        ready = "store" in tables
        empty = not ready or not self._query(  # none, or only the app's own items (its memories)
            "SELECT 1 FROM store WHERE prefix = %s LIMIT 1", (".".join(STORE_NAMESPACE),))
        journal: StoreJournalEnd | None = StoreJournalEnd(
            store, setup=store.setup, ready=ready, empty=empty,
            items=lambda t: [r["value"] for r in self._query(POSTGRES_ITEMS, (".".join(STORE_NAMESPACE), t))])
        if role == "source" and empty:
            journal = None
        super().__init__(PostgresSaver(self.pool, serde=serde), name, "postgres", journal)
        if role == "source" and (stale := self.unmigrated()):  # an older version's tables
            self.close()
            raise MigrationError(f"{name}: its checkpoint tables lack {stale}. Run them once (your app's "
                                 "PostgresSaver.from_conn_string(URL).setup() with this version), then "
                                 "run this again.")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self.pool.connection() as conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def _tables(self) -> set[str]:
        rows = self._query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {r["table_name"] for r in rows}

    def _columns(self, table: str) -> set[str]:
        rows = self._query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s", (table,),
        )
        return {r["column_name"] for r in rows}

    def missing_tables(self, *, journal: bool = True) -> list[str]:
        have = self._tables()
        return [t for t in POSTGRES_TABLES if t not in have and (journal or t not in STORE_TABLES)]

    def readable(self) -> bool:
        return set(SAVER_TABLES) <= self._tables()

    def unmigrated(self) -> str | None:
        last = len(getattr(self.saver, "MIGRATIONS", ())) - 1
        if "checkpoint_migrations" not in self._tables():  # tables made otherwise: cannot tell
            return None
        done = self._query("SELECT coalesce(max(v), -1) AS v FROM checkpoint_migrations")[0]["v"]
        newer_saver(self.name, done, last)  # raises if a newer langgraph-checkpoint-postgres made them
        return None if done >= last else f"PostgresSaver's migration(s) {done + 1} to {last}"

    def unmigrated_journal(self) -> str | None:
        from langgraph.store.postgres.base import MIGRATIONS

        if self.journal is None or "store" not in (tables := self._tables()):
            return None
        done = (self._query("SELECT coalesce(max(v), -1) AS v FROM store_migrations")[0]["v"]
                if "store_migrations" in tables else -1)
        return lacking_ttl("PostgresStore", "langgraph-checkpoint-postgres", MIGRATIONS,
                           self._columns("store"), done, postgres_setup_command(self.name))

    def thread_ids(self) -> list[str]:
        return sorted(str(r["thread_id"]) for r in self._query("SELECT DISTINCT thread_id FROM checkpoints"))

    def stored_checkpoints(self, thread_id: str) -> dict[Key, StoredCheckpoint]:
        if not self.readable():  # a dry run's target without its tables: empty
            return {}
        rows = self._query(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id FROM checkpoints "
            "WHERE thread_id = %s", (thread_id,),
        )
        counts = self._query(
            "SELECT checkpoint_ns, checkpoint_id, count(*) AS n FROM checkpoint_writes "
            "WHERE thread_id = %s GROUP BY checkpoint_ns, checkpoint_id", (thread_id,),
        )
        return _stored(
            [(r["checkpoint_ns"], r["checkpoint_id"], r["parent_checkpoint_id"]) for r in rows],
            [(r["checkpoint_ns"], r["checkpoint_id"], r["n"]) for r in counts],
        )

    def write_slots(self, thread_id: str, ns: str, checkpoint_id: str) -> list[WriteSlot] | None:
        rows = self._query(
            "SELECT task_id, task_path, idx, channel FROM checkpoint_writes "
            "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, checkpoint_id),
        )
        return _sorted_slots([(r["task_id"], r["task_path"], r["idx"], r["channel"]) for r in rows])

    def tells_task_paths(self) -> bool:
        return True

    def thread_write_slots(self, thread_id: str) -> dict[tuple[str, str], list[WriteSlot]] | None:
        rows = self._query(
            "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel FROM checkpoint_writes "
            "WHERE thread_id = %s", (thread_id,),
        )
        fields = ("checkpoint_ns", "checkpoint_id", "task_id", "task_path", "idx", "channel")
        return _grouped_slots([tuple(r[f] for f in fields) for r in rows])

    def size(self) -> int | None:
        rows = self._query("SELECT pg_database_size(current_database()) AS n")
        return int(rows[0]["n"]) if rows else None

    def place(self) -> Place | None:
        """The server (start time and port: any user may read them), database and schema."""
        row = self._query(
            "SELECT pg_postmaster_start_time() AS started, inet_server_port() AS port, "
            "current_database() AS db, current_schema() AS schema"
        )[0]
        key = ("postgres", row["started"], row["port"], row["db"], row["schema"])
        return Place("PostgreSQL database", key, f"database {row['db']}, schema {row['schema']}")

    def close(self) -> None:
        self.watch.close()
        for pool in (getattr(self, "pool", None), getattr(self, "store_pool", None)):
            if pool is not None:
                pool.close()


def open_postgres(url: str, *, role: str, workers: int = 1, serde: Any = None) -> Endpoint:
    """A ``PostgresSaver`` endpoint on the database ``url`` names (pools of ``workers``
    connections for the saver and the store), with ``serde`` (LangGraph's default if ``None``)."""
    return PostgresEndpoint(url, role=role, workers=workers, serde=serde)
