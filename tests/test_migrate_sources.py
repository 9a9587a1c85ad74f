"""Sources a user may name by mistake or find in an odd state: a database of another
program that happens to have a ``checkpoints`` table (SQLite or PostgreSQL). Each is a
clear error (exit status 2) naming the database and what to do; nothing is created."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from langgraph_jsonl_checkpoint.cli import main

# Another program's "checkpoints" table: without LangGraph's thread_id column (a query on it
# failed with a traceback), or with one but none of the rest (an empty store was made, and
# a thread of 0 checkpoints "copied" and "verified", exit status 0).
FOREIGN_TABLES = {
    "no-thread-id": ("CREATE TABLE checkpoints (id INTEGER, name TEXT); "
                     "INSERT INTO checkpoints VALUES (1, 'x')"),
    "thread-id-only": ("CREATE TABLE checkpoints (thread_id TEXT, step INTEGER); "
                       "INSERT INTO checkpoints VALUES ('t1', 1)"),
}


@pytest.mark.parametrize("schema", sorted(FOREIGN_TABLES))
def test_an_sqlite_file_whose_checkpoints_table_is_not_sqlitesavers_is_refused(
    tmp_path: Path, schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "training.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executescript(FOREIGN_TABLES[schema])
    source = "sqlite:///" + str(db)
    assert main(["import", source, str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {source}: {db} has a 'checkpoints' table, but not SqliteSaver's "
                          "(it lacks "), err
    assert "Name the file your app's SqliteSaver writes to." in err, err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("schema", sorted(FOREIGN_TABLES))
def test_a_postgresql_database_whose_checkpoints_table_is_not_postgressavers_is_refused(
    tmp_path: Path, pg_url: str, schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in FOREIGN_TABLES[schema].split("; "):
            conn.execute(statement)
    assert main(["import", pg_url, str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {pg_url}: the database has a 'checkpoints' table, but not "
                          "PostgresSaver's (it lacks "), err
    assert "Name the database your app's PostgresSaver writes to." in err, err
    assert not (tmp_path / "s").exists()
