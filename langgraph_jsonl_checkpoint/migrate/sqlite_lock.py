"""Waiting for an SQLite file another process holds locked, and saying so.

SQLite waits for a lock another connection holds (an app in a write transaction) for
up to :data:`BUSY_TIMEOUT` seconds, then fails with "database is locked". A copy's
connection says that wait once it has lasted :data:`LOCK_WAIT_NOTICE` seconds (in a
warning: the CLI prints it on stderr), instead of looking hung: each statement outside
a transaction, or the one that begins it (a copy's target begins each with ``BEGIN
IMMEDIATE``, taking the write lock there), is tried with the short wait first, then,
said, with the rest of it; a failed try changed nothing. A statement inside a
transaction already open is not tried twice (it is not safe to), nor are the rows of an
``executemany`` in autocommit mode, nor a script, nor a commit: they wait in silence,
as SQLite does.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any, Literal, TypeVar

logger = logging.getLogger(__name__)

#: Seconds a statement waits for a lock another process holds before it fails.
BUSY_TIMEOUT = 5.0

#: Seconds of that wait before it is said (once, until the lock is had).
LOCK_WAIT_NOTICE = 0.5

_T = TypeVar("_T")


def connect(
    file: str, *, uri: str | None = None, isolation_level: Literal["DEFERRED", "IMMEDIATE"] | None
) -> sqlite3.Connection:
    """An SQLite connection to ``file`` (opened by its ``file:`` ``uri`` if given) that says
    when it waits for another process's lock."""
    conn = sqlite3.connect(uri or file, uri=uri is not None, check_same_thread=False,
                           isolation_level=isolation_level, timeout=BUSY_TIMEOUT,
                           factory=NoticingConnection)
    assert isinstance(conn, NoticingConnection)
    conn.file = file
    return conn


class NoticingConnection(sqlite3.Connection):
    """An SQLite connection whose statements say a wait for another process's lock
    (see the module's doc). ``file`` is the path the warning names."""

    file = ""
    said = False  # the wait under way was said (once, until the lock is had)

    def cursor(self, factory: Any = None) -> Any:  # noqa: D102 - sqlite3's
        return super().cursor(factory or NoticingCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:  # noqa: D102 - sqlite3's
        return self.cursor().execute(sql, parameters)  # (sqlite3's calls no cursor() of ours)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:  # noqa: D102 - sqlite3's
        return self.cursor().executemany(sql, seq_of_parameters)

    def noticing(self, run: Callable[[], _T], *, atomic: bool = True) -> _T:
        """``run()`` (one statement, or ``atomic=False``: several, each committed on its own),
        saying a wait for a lock past :data:`LOCK_WAIT_NOTICE`."""
        if self.in_transaction or not atomic:  # not to be tried twice: waits as SQLite does
            return run()
        self._wait(LOCK_WAIT_NOTICE)
        try:
            try:
                return run()
            except sqlite3.OperationalError as exc:
                if "database is locked" not in str(exc) or self.in_transaction:
                    raise
            if not self.said:
                self.said = True
                logger.warning("waiting for the lock on the SQLite file %s, which another process "
                               "holds (an app writing to it); going on when it is let go, for up to "
                               "%g seconds a statement, then failing", self.file, BUSY_TIMEOUT)
            self._wait(BUSY_TIMEOUT - LOCK_WAIT_NOTICE)
            result = run()
            self.said = False
            return result
        finally:
            self._wait(BUSY_TIMEOUT)

    def _wait(self, seconds: float) -> None:
        """Let the next statements wait up to ``seconds`` for a lock."""
        sqlite3.Connection.cursor(self).execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")


class NoticingCursor(sqlite3.Cursor):
    """A cursor of a :class:`NoticingConnection`: its statements say a wait for a lock."""

    connection: NoticingConnection

    def execute(self, sql: str, parameters: Any = (), /) -> NoticingCursor:  # noqa: D102 - sqlite3's
        self.connection.noticing(lambda: super(NoticingCursor, self).execute(sql, parameters))
        return self

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> NoticingCursor:  # noqa: D102
        rows = list(seq_of_parameters)  # tried twice: an iterator would be used up
        # In autocommit mode each row is committed on its own: tried again, some twice.
        atomic = self.connection.isolation_level is not None
        self.connection.noticing(lambda: super(NoticingCursor, self).executemany(sql, rows), atomic=atomic)
        return self
