"""Saying when a copy waits for a lock another PostgreSQL session holds.

A copy's statement waits, as PostgreSQL makes it, for as long as another session holds a
lock it needs (an app's transaction on the same rows, a migration's ``ALTER TABLE``, a
``LOCK TABLE``): in silence it could not be told from a hang. A :class:`LockWatch`, on a
connection of its own, looks every :data:`LOOK_EVERY` seconds for the copy's sessions
waiting for a lock for more than :data:`LOCK_WAIT_NOTICE` seconds and says so once (a
warning: the CLI prints it on stderr), naming the sessions that hold it; once no session
of the copy waits, a later wait is said again. Watching is a courtesy: when it cannot
connect or look, the copy goes on as it would have.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)

#: Seconds a statement waits for a lock before the wait is said.
LOCK_WAIT_NOTICE = 0.5

#: Seconds between two looks.
LOOK_EVERY = 0.25

_WAITING = """
SELECT a.pid, pg_blocking_pids(a.pid) FROM pg_stat_activity a
WHERE a.pid = ANY(%s) AND a.wait_event_type = 'Lock'
  AND clock_timestamp() - a.query_start > make_interval(secs => %s)
"""


class LockWatch:
    """Watches the sessions of a copy's connections (``add`` each, as a pool's
    ``configure``) on the database ``url`` (``name``: the URL as messages show it)."""

    def __init__(self, url: str, name: str) -> None:
        self.url = url
        self.name = name
        self.pids: frozenset[int] = frozenset()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, conn: Any) -> None:
        """Watch ``conn``'s session (started with the first one)."""
        with self._lock:
            self.pids = self.pids | {conn.info.backend_pid}
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="pg-lock-watch", daemon=True)
                self._thread.start()

    def close(self) -> None:
        """Stop watching."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                said = False
                while not self._stop.wait(LOOK_EVERY):
                    rows = conn.execute(_WAITING, (list(self.pids), LOCK_WAIT_NOTICE)).fetchall()
                    if rows and not said:
                        holders = sorted({int(p) for row in rows for p in (row[1] or [])})
                        self._say(holders)
                    said = bool(rows)
        except Exception:  # noqa: BLE001 - a courtesy: the copy goes on without it
            return

    def _say(self, holders: list[int]) -> None:
        who = ", ".join(str(p) for p in holders) or "another session"
        logger.warning(
            "waiting for a lock on the PostgreSQL database %s that another session holds (pid %s: an app's "
            "transaction, a migration or a LOCK TABLE); going on when it is let go, however long that is. "
            "`SELECT pid, state, query FROM pg_stat_activity WHERE pid IN (%s)` shows what it is doing; "
            "Ctrl-C stops the copy when the wait ends, a second Ctrl-C at once (the same command run "
            "again continues)", self.name, who, who)
