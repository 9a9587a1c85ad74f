"""What a copy says about a database it cannot open: a driver not installed, an SQLite file
that cannot be opened, a PostgreSQL database that does not exist; and a URL as a message
shows it (without its password)."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import MigrationError


def missing_extra(extra: str, exc: ImportError) -> MigrationError:
    """A URL needs an optional extra that is not installed: which, and how to install it."""
    return MigrationError(f"this needs the optional '{extra}' extra ({exc.name} is not installed): "
                          f"pip install 'langgraph-jsonl-checkpoint[{extra}]'")


def cannot_open(name: str, path: str, role: str, exc: sqlite3.Error) -> MigrationError:
    """Why the SQLite file ``path`` (a copy's ``role``: source or target) could not be
    opened, and what to do."""
    folder = os.path.dirname(os.path.abspath(path))
    if (role == "source" and os.path.exists(path + "-wal") and not os.path.exists(path + "-shm")
            and not os.access(folder, os.W_OK | os.X_OK)):  # SQLite must make the log's index
        return MigrationError(
            f"{name}: cannot read {path}: its write-ahead log {path}-wal (transactions not yet in the "
            f"file) is read through an index SQLite makes beside it, {path}-shm, and {folder} is not "
            "writable by this user. Copy the file and its -wal together to a directory you can write "
            "to and name the copy, or run this as a user who can write there."
        )
    if role == "source" and _left_hot_journal(path, exc):
        return MigrationError(f"{name}: cannot read {path}: {_hot_journal(path)}")
    if "database is locked" in str(exc):
        todo = ("Another process holds it locked (an app writing to it): run the same command again "
                "when it is done or stopped")
    elif role == "target":
        todo = "Name a file in a directory that exists and can be written to"
    else:
        todo = "Check the path and that the file can be read"
    return MigrationError(f"{name}: cannot open the SQLite file {path} ({exc}). {todo}.")


def _left_hot_journal(path: str, exc: BaseException) -> bool:
    """Whether ``exc`` (from reading the SQLite file ``path`` read-only) is SQLite failing
    to roll back the hot ``-journal`` beside it, which only a connection that can write does."""
    return "readonly" in str(exc) and os.path.isfile(path + "-journal")


def _hot_journal(path: str) -> str:
    """What a read-only source file's "attempt to write a readonly database" means when
    a ``-journal`` lies beside it (a hot journal: only a connection that can write rolls
    it back), and what to do."""
    return (f"{path}-journal holds the old pages of a write its app did not finish (it was killed or "
            "crashed), which SQLite rolls back on the next open that can write; the copy only reads. "
            f"Open the file once with your app, or run `sqlite3 {shlex.quote(path)} 'PRAGMA quick_check'`, "
            "then run the same command again")


def newer_saver(name: str, done: int, last: int) -> None:
    """Raise if a PostgreSQL target's checkpoint tables had migration ``done`` run, past
    the ``last`` the installed PostgresSaver knows: a newer release made them, and rows
    written as this one writes them may not fit (a column it does not fill)."""
    if done <= last:
        return
    try:
        from importlib.metadata import version

        installed = f" {version('langgraph-checkpoint-postgres')}"
    except Exception:  # noqa: BLE001 - the number is only for the message
        installed = ""
    raise MigrationError(
        f"{name}: the database's checkpoint tables were made by a newer langgraph-checkpoint-postgres "
        f"(they have had its migration {done}; the one installed here{installed} knows migrations up to "
        f"{last}), so rows written as this one writes them may not fit. Install the app's version here "
        "(pip install -U langgraph-checkpoint-postgres), then run the same command again."
    )


def reason(exc: BaseException, source: object = None) -> str:
    """An error as a copy's report says it: its type and first line; for an SQLite file
    another process held locked, or a ``source`` SQLite file an app crashed writing to
    while it was copied (its hot journal), what to do."""
    text = str(exc).strip().split("\n", 1)[0]
    said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    path = getattr(source, "path", None)  # an SQLite endpoint's file
    if isinstance(exc, sqlite3.OperationalError) and isinstance(path, str) and _left_hot_journal(path, exc):
        return f"{said} ({_hot_journal(path)})"
    if isinstance(exc, sqlite3.OperationalError) and "database is locked" in text:
        said += (" (another process held the SQLite file locked for 5 seconds: an app writing to "
                 "it. Run the same command again when it is done or stopped; the copy goes on "
                 "where it was)")
    return said


def what_to_do(reason: str, params: dict[str, Any], role: str) -> str:
    """What to do about a connection that failed for ``reason`` (psycopg's first line)."""
    unknown = re.search(r'role "(.+?)" does not exist', reason)  # the URL's user, or libpq's default
    if unknown:  # not the database: the user is unknown
        user = unknown.group(1)
        return (f"The server has no user (role) {user}: name one it has in the URL "
                f"(postgresql://user@host:port/database), or create it first (CREATE ROLE {_ident(user)} "
                "LOGIN, or createuser)")
    if role == "target" and "does not exist" in reason:
        return create_it(params)
    return "Is the server running and the URL right (postgresql://user@host:port/database)?"


def _ident(name: str) -> str:
    """``name`` as an SQL identifier (quoted where it must be)."""
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


def create_it(params: dict[str, Any]) -> str:
    """What to do about a target database that does not exist: make it (--setup makes tables)."""
    db = params.get("dbname", "")
    where = " ".join(f"-{flag} {shlex.quote(params[key])}"
                     for flag, key in (("h", "host"), ("p", "port"), ("U", "user")) if params.get(key))
    # The name as the URL decodes it (`my%20db` is `my db`): quoted where SQL and a shell need it.
    ident = _ident(db)
    return (f"--setup creates the tables, not the database: create it first (CREATE DATABASE {ident}, or "
            f"createdb {where} {shlex.quote(db)}), then run this again")


def redacted(url: str) -> str:
    """``url`` without its password (for messages and reports)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
