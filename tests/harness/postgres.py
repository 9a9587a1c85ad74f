"""A fresh PostgreSQL database per test, on the real server (127.0.0.1:5432).

``pg_url`` yields the URL of a database made for the test (``CREATE DATABASE`` with a
unique name) and drops it afterwards, connections and all. Nothing is created in it:
``PostgresSaver(...).setup()`` / ``PostgresStore(...).setup()`` (or a copy's
``--setup``) make their tables. The server is part of the test environment, not an
option: when it cannot be reached the fixture FAILS with what to do (``.ci/run``
checks it before the suite starts).

The server is found through ``LANGGRAPH_JSONL_TEST_PG`` (a URL of a database to
connect to for ``CREATE DATABASE``), by default
``postgresql://postgres@127.0.0.1:5432/test`` (trust authentication).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

#: The server's database the harness connects to when ``LANGGRAPH_JSONL_TEST_PG`` is not set.
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
ADMIN_URL = os.environ.get("LANGGRAPH_JSONL_TEST_PG", DEFAULT_ADMIN_URL)


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def admin_connection():  # type: ignore[no-untyped-def]
    """An autocommit connection to the admin database; fails the test if unreachable."""
    try:
        import psycopg
    except ImportError:
        pytest.fail("psycopg is not installed: pip install -e '.[test]' (it is in the test extra)")
    try:
        return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {ADMIN_URL} ({str(exc).strip().splitlines()[-1]}). "
            "The tests need a real server and that database: start it (e.g. `service postgresql "
            "start`), create the database (`createdb -h 127.0.0.1 -U postgres test` for the "
            "default URL), or set LANGGRAPH_JSONL_TEST_PG to the URL of one where the user may "
            "CREATE DATABASE."
        )


def create_database() -> tuple[str, str]:
    """Make a fresh database; returns its name and URL."""
    name = f"lgj_test_{uuid.uuid4().hex[:16]}"
    with admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, _with_database(ADMIN_URL, name)


def drop_database(name: str) -> None:
    """Drop a database made by :func:`create_database`, closing its connections."""
    with admin_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of a fresh, empty database for this test (dropped afterwards)."""
    name, url = create_database()
    try:
        yield url
    finally:
        drop_database(name)
