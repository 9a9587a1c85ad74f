"""Sources a user may name by mistake or find in an odd state: a database of another
program that happens to have a ``checkpoints`` table (SQLite or PostgreSQL), an SQLite
write-ahead log that cannot be read where it lies. Each is a clear error (exit status 2)
naming the database and what to do; nothing is created."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint.cli import main
from tests.harness.migration import build_sqlite_app, cfg
from tests.harness.other_user import as_nobody
from tests.harness.state_graphs import build_counter_graph

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


def test_a_write_ahead_log_without_its_index_in_a_directory_this_user_cannot_write_is_named() -> None:
    """An app killed (or still running) left app.db-wal; app.db and app.db-wal were copied
    without app.db-shm, into a directory this user cannot write to (a backup, another
    user's app). SQLite must make the -shm file to read the log: the error said "unable to
    open database file. Check the path and that the file can be read" (it could be read).
    It names the log, the index SQLite cannot make there, and what to do."""
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        base.chmod(0o755)
        live = base / "live"
        live.mkdir()
        conn = sqlite3.connect(live / "app.db", check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        conn.execute("PRAGMA wal_autocheckpoint=0")  # every transaction stays in app.db-wal
        build_counter_graph().compile(checkpointer=saver).invoke({"n": 1}, cfg("t1"))
        backup = base / "backup"
        backup.mkdir(mode=0o755)
        for name in ("app.db", "app.db-wal"):  # copied while the app runs: the -shm left out
            shutil.copyfile(live / name, backup / name)
            (backup / name).chmod(0o644)
        conn.close()
        out = base / "out"
        out.mkdir()
        os.chown(out, 65534, 65534)
        source = "sqlite:///" + str(backup / "app.db")
        code, err = as_nobody(lambda: main(["import", source, str(out / "s")]))
        assert code == 2 and "Traceback" not in err, err
        assert f"{backup / 'app.db-wal'}" in err and f"{backup / 'app.db-shm'}" in err, err
        assert f"{backup} is not writable by this user" in err, err
        assert "Check the path and that the file can be read" not in err, err
        assert sorted(os.listdir(backup)) == ["app.db", "app.db-wal"]
        assert not (out / "s").exists()
    finally:
        shutil.rmtree(base)


def test_an_older_sqlitestore_of_the_app_s_memories_beside_the_threads_does_not_stop_the_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The app keeps its long-term memories in SqliteStore in the same file, made by an
    older langgraph-checkpoint-sqlite (its table without the TTL columns later versions
    add: expires_at, ttl_minutes). The import read it as the replay journal's store, and
    every thread was reported "copy stopped: OperationalError: no such column: expires_at".
    Holding no journal, it is left alone and every thread is copied."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
        conn.executescript(
            "CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value text NOT NULL, "
            "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
            "PRIMARY KEY (prefix, key)); CREATE TABLE store_migrations (v INTEGER PRIMARY KEY); "
            "INSERT INTO store_migrations VALUES (0), (1); "
            "INSERT INTO store (prefix, key, value) VALUES ('memories.u1', 'prefs', '{\"tea\": true}');"
        )
    before = db.read_bytes()
    assert main(["import", "sqlite:///" + str(db), str(tmp_path / "s")]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "PROBLEM" not in out.err, out.err
    assert out.out.startswith("copied 1 thread(s)"), out.out
    assert db.read_bytes() == before


def test_an_older_postgresstore_of_the_app_s_memories_beside_the_threads_does_not_stop_the_copy(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """As with SQLite: the database's PostgresStore holds the app's memories, made by an
    older langgraph-checkpoint-postgres (without expires_at, ttl_minutes). Every thread was
    reported "copy stopped: UndefinedColumn: column s.ttl_minutes does not exist"."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup"]) == 0
    capsys.readouterr()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE store DROP COLUMN expires_at CASCADE, DROP COLUMN ttl_minutes CASCADE")
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('memories.u1', 'prefs', %s)",
                     ('{"tea": true}',))
    assert main(["import", pg_url, str(tmp_path / "s")]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "PROBLEM" not in out.err, out.err
    assert out.out.startswith("copied 1 thread(s)"), out.out


def test_an_export_into_a_database_with_an_older_postgresstore_of_the_app_s_memories(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other way: the target database's PostgresStore (the app's memories, an older
    langgraph-checkpoint-postgres's table) holds no journal, and the store to export has
    none either; every thread was reported "copy stopped: UndefinedColumn", and --setup
    did not help (no table was missing). The copy has no journal to compare or carry."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["import", "sqlite:///" + str(db), str(tmp_path / "s")]) == 0
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup", "--threads", "none-such"]) == 1
    capsys.readouterr()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE store DROP COLUMN expires_at CASCADE, DROP COLUMN ttl_minutes CASCADE")
    assert main(["export", str(tmp_path / "s"), pg_url]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "PROBLEM" not in out.err, out.err
    assert out.out.startswith("copied 1 thread(s)"), out.out


def test_an_app_started_while_its_file_is_imported_is_read_as_it_writes(tmp_path: Path) -> None:
    """The import began with the app stopped (no -wal file: the file was opened immutable,
    without locks, so that reading it makes no file beside it); the app started meanwhile,
    wrote and checkpointed its log into the file. Threads then read as "database disk image
    is malformed" (or old pages, cached). Once a -wal file appears the source is read as
    any reader does, with SQLite's locks."""
    from langgraph_jsonl_checkpoint.migrate import open_endpoint

    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        for i in range(30):
            graph.invoke({"n": i}, cfg(f"t{i:02d}"))
    assert not Path(f"{db}-wal").exists()
    source = open_endpoint("sqlite:///" + str(db), role="source")
    try:
        assert len(source.thread_ids()) == 30
        assert len(source.stored_checkpoints("t00")) == _rows(db, "t00") > 0
        with closing(sqlite3.connect(db, check_same_thread=False)) as app:  # the app starts
            graph = build_counter_graph().compile(checkpointer=SqliteSaver(app))
            for i in range(30):
                graph.invoke({"n": i}, cfg(f"t{i:02d}"))
                graph.invoke({"n": i}, cfg(f"u{i:02d}"))
            app.execute("PRAGMA wal_checkpoint(FULL)")  # into the file, as autocheckpoint does
            assert len(source.thread_ids()) == 60
            for thread_id in ("t00", "t29", "u29"):
                assert len(source.stored_checkpoints(thread_id)) == _rows(db, thread_id)
    finally:
        source.close()



def test_an_app_run_and_stopped_between_two_reads_of_an_import_is_read_as_it_left_the_file(
    tmp_path: Path,
) -> None:
    """The app started, wrote and stopped (its log checkpointed into the file, the -wal
    removed) between two reads of the import: no -wal to be seen, but the file changed
    under an immutable connection's cached pages."""
    from langgraph_jsonl_checkpoint.migrate import open_endpoint

    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        for i in range(30):
            graph.invoke({"n": i}, cfg(f"t{i:02d}"))
    source = open_endpoint("sqlite:///" + str(db), role="source")
    try:
        assert len(source.thread_ids()) == 30
        with closing(sqlite3.connect(db, check_same_thread=False)) as app:
            graph = build_counter_graph().compile(checkpointer=SqliteSaver(app))
            for i in range(30):
                graph.invoke({"n": i}, cfg(f"u{i:02d}"))
        assert not Path(f"{db}-wal").exists()
        assert len(source.thread_ids()) == 60
        assert len(source.stored_checkpoints("u29")) == _rows(db, "u29") > 0
    finally:
        source.close()


def _rows(db: Path, thread_id: str) -> int:
    with closing(sqlite3.connect(db)) as conn:
        row = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()
    return int(row[0])


def test_setup_cut_short_is_finished_by_setup_again(tmp_path: Path, pg_url: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A first `export --setup` was killed (or stopped by a second Ctrl-C) while
    PostgresSaver.setup() ran its migrations: every table there, the last migrations not
    run (checkpoint_writes without task_path). Run again with --setup, the setup was skipped
    (no table missing) and every thread failed ("column task_path does not exist"): the
    user could not get past it. --setup now always runs the savers' own setup(), which
    runs only the migrations not run yet."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup", "--threads", "none-such"]) == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as a setup cut short left it
        conn.execute("ALTER TABLE checkpoint_writes DROP COLUMN task_path")
        conn.execute("DELETE FROM checkpoint_migrations WHERE v >= 9")
    capsys.readouterr()
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup"]) == 0, capsys.readouterr().err
    assert "PROBLEM" not in capsys.readouterr().err


def test_a_sqlite_url_of_a_path_under_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`sqlite:///~/app.db`: the shell does not expand `~` inside a URL, and the import said
    "no such SQLite file (<cwd>/~/app.db)". As a store path or a bare SQLite path, `~` is
    the home directory, in a URL too."""
    home = tmp_path / "home dir"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with closing(sqlite3.connect(home / "app.db", check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["import", "sqlite:///~/app.db", "~/store"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("copied 1 thread(s)")
    assert (home / "store").is_dir() and not (tmp_path / "~").exists()
    assert main(["copy", "~/store", "sqlite:///~/back.db"]) == 0, capsys.readouterr().err
    assert (home / "back.db").is_file()


def _app_and_an_older_postgressaver(tmp_path: Path, pg_url: str) -> Path:
    """An app's SQLite file with one thread, and ``pg_url`` set up as an older
    langgraph-checkpoint-postgres left it (migrations 9 on not run: no ``task_path``)."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup", "--threads", "none-such"]) == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_writes DROP COLUMN task_path")
        conn.execute("DELETE FROM checkpoint_migrations WHERE v >= 9")
    return db


def test_a_database_of_an_older_postgressaver_asks_for_setup(tmp_path: Path, pg_url: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Exported into the database an app on an older langgraph-checkpoint-postgres uses (its
    last migrations not run: checkpoint_writes without task_path): every thread failed with
    "UndefinedColumn: column task_path ... does not exist" and nothing said what to do. The
    copy stops before copying anything and names --setup, which runs them."""
    db = _app_and_an_older_postgressaver(tmp_path, pg_url)
    capsys.readouterr()
    assert main(["copy", "sqlite:///" + str(db), pg_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {pg_url}: the target's checkpoint tables lack PostgresSaver's "
                          "migration(s) 9"), err
    assert "Run again with --setup" in err, err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0


def test_a_dry_run_into_a_database_of_an_older_postgressaver_says_what_the_copy_would(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dry run of that export reported OK (exit 0), while the real run then stopped
    asking for --setup. It says the same as the real run, changing nothing; with --setup
    (which would run them) it goes through."""
    db = _app_and_an_older_postgressaver(tmp_path, pg_url)
    capsys.readouterr()
    assert main(["copy", "sqlite:///" + str(db), pg_url]) == 2
    real = capsys.readouterr().err
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--dry-run"]) == 2
    assert capsys.readouterr().err == real
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--dry-run", "--setup"]) == 0, capsys.readouterr()
    with psycopg.connect(pg_url) as conn:  # nothing changed
        assert conn.execute("SELECT max(v) FROM checkpoint_migrations").fetchone()[0] == 8
        assert conn.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                            "'checkpoint_writes' AND column_name = 'task_path'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0


def test_a_source_database_of_an_older_postgressaver_says_to_set_it_up(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Imported from the database of an app on an older langgraph-checkpoint-postgres: every
    thread was "cannot read the thread ...: UndefinedColumn: column cw.task_path does not
    exist" and an empty store was made. It says which migrations the tables lack and how
    to run them; nothing is created."""
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["copy", "sqlite:///" + str(db), pg_url, "--setup"]) == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE checkpoint_writes DROP COLUMN task_path")
        conn.execute("DELETE FROM checkpoint_migrations WHERE v >= 9")
    capsys.readouterr()
    assert main(["import", pg_url, str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {pg_url}: its checkpoint tables lack PostgresSaver's migration(s) 9"), err
    assert "PostgresSaver.from_conn_string(URL).setup()" in err, err
    assert not (tmp_path / "s").exists()


def test_a_sqlite_url_is_percent_decoded_as_a_file_url_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`sqlite:///my%20db.sqlite` named `my%20db.sqlite` as it was written: the import of a
    file with a space or `%` in its path said "no such SQLite file", and a copy into one made
    a file with `%20` in its name. The path of the URL is percent-decoded (as SQLAlchemy and
    RFC 3986 have it, and as libpq does a `postgresql://` URL's database); a file that is
    not there is named decoded; a `?` (a query, which this does not take) is refused."""
    from urllib.parse import quote

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "my dir"
    folder.mkdir()
    db = folder / "app db 100%.sqlite"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    url = "sqlite:///" + quote(str(db))
    assert "%20" in url and "%25" in url
    assert main(["import", url, "store"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("copied 1 thread(s)")
    assert main(["copy", "store", "sqlite:///new%20file%2525.db"]) == 0, capsys.readouterr().err
    assert (tmp_path / "new file%25.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my dir", "new file%25.db", "store"]
    capsys.readouterr()
    assert main(["import", "sqlite:///gone%20away.db", "other"]) == 2
    err = capsys.readouterr().err
    assert f"no such SQLite file ({tmp_path / 'gone away.db'})" in err, err
    assert main(["copy", "store", "sqlite:///app.db?mode=ro"]) == 2
    err = capsys.readouterr().err
    assert "?mode=ro" in err and "%3F" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my dir", "new file%25.db", "store"]


def test_a_postgresql_url_s_database_is_decoded_and_its_create_hint_quoted(
        tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """libpq percent-decodes a `postgresql://` URL's database (`my%20db` is `my db`), as a
    `sqlite:///` URL's path now is; the hint for a target database that does not exist said
    `CREATE DATABASE my db` (an SQL error) and `createdb ... my db` (two names to a shell).
    Both are quoted now, and the statement the hint gives makes the database the URL names."""
    import shlex
    import uuid

    from tests.harness.postgres import admin_connection, drop_database

    name = f"lgj test {uuid.uuid4().hex[:8]}"
    url = pg_url.rsplit("/", 1)[0] + "/" + name.replace(" ", "%20")
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["export", "sqlite:///" + str(db), url, "--setup"]) == 2
    err = capsys.readouterr().err
    assert f'CREATE DATABASE "{name}",' in err and f" {shlex.quote(name)})" in err, err
    statement = err.split("(CREATE DATABASE ", 1)[1].split(", or createdb", 1)[0]
    try:
        with admin_connection() as conn:
            conn.execute(f"CREATE DATABASE {statement}")
        assert main(["export", "sqlite:///" + str(db), url, "--setup"]) == 0, capsys.readouterr().err
    finally:
        drop_database(name)


@pytest.mark.parametrize("extra", [[], ["--setup"], ["--dry-run"]])
def test_a_database_of_a_newer_postgressaver_names_the_versions_and_the_upgrade(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """Exported into the database of an app on a newer langgraph-checkpoint-postgres (a
    migration this one does not know, here a NOT NULL column): the dry run said all was
    well, and the copy failed each thread with "NotNullViolation: null value in column
    ...", nothing saying why or what to do. It stops before copying anything, dry run or
    --setup or not, naming both migration numbers and the upgrade to install."""
    from langgraph.checkpoint.postgres import PostgresSaver

    db = build_sqlite_app(tmp_path / "app.db")
    from langgraph.store.postgres import PostgresStore

    with PostgresSaver.from_conn_string(pg_url) as saver, PostgresStore.from_conn_string(pg_url) as store:
        saver.setup()
        store.setup()
        last = len(saver.MIGRATIONS) - 1
    with psycopg.connect(pg_url, autocommit=True) as conn:  # what a later release might do
        conn.execute("ALTER TABLE checkpoints ADD COLUMN newer_column text NOT NULL")
        conn.execute("INSERT INTO checkpoint_migrations (v) VALUES (%s)", (last + 1,))
    capsys.readouterr()
    assert main(["copy", "sqlite:///" + str(db), pg_url, *extra]) == 2
    err = capsys.readouterr().err
    assert "newer langgraph-checkpoint-postgres" in err, err
    assert f"migration {last + 1}" in err and f"up to {last}" in err, err
    assert "pip install -U langgraph-checkpoint-postgres" in err, err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0


def test_a_sqlite_url_with_two_slashes_says_the_url_to_give(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`sqlite://app.db` (two slashes, a common slip) said only the URL's two forms; it now
    gives the URL of that file, which runs as pasted."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    assert main(["import", "sqlite://app.db", "s"]) == 2
    err = capsys.readouterr().err
    suggested = re.search(r"did you mean (\S+)\?", err)
    assert suggested is not None and suggested.group(1) == "sqlite:///app.db", err
    assert main(["import", suggested.group(1), "s"]) == 0
    assert main(["import", "sqlite://", "t"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_url_naming_a_driver_says_the_url_to_give(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`sqlite+aiosqlite:///app.db` (SQLAlchemy's form, which AsyncSqliteSaver users write)
    was refused as an unknown kind of URL, with no hint; and `export STORE` took it for a
    thread id. Each says the URL to give (the driver is not one this uses), which runs as
    pasted; nothing is created first."""
    monkeypatch.chdir(tmp_path)
    with closing(sqlite3.connect(tmp_path / "app.db", check_same_thread=False)) as conn, conn:
        build_counter_graph().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 1}, cfg("t1"))
    for argv, meant in [(["import", "sqlite+aiosqlite:///app.db", "s"], "sqlite:///app.db"),
                        (["copy", "SQLite+pysqlite:///app.db", "s"], "sqlite:///app.db"),
                        (["import", "postgresql+psycopg://u@h:5/db", "s"], "postgresql://u@h:5/db"),
                        (["import", "postgres+psycopg://u:pw@h/db", "s"], "postgres://u:***@h/db")]:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        suggested = re.search(r"did you mean (\S+)\?", err)
        assert suggested is not None and suggested.group(1) == meant, err
        assert ":pw@" not in err, err
        assert not (tmp_path / "s").exists()
    assert main(["import", "sqlite:///app.db", "s"]) == 0
    capsys.readouterr()
    assert main(["export", "s", "sqlite+aiosqlite:///out.db"]) == 2
    err = capsys.readouterr().err
    suggested = re.search(r"did you mean (\S+)\?", err)
    assert suggested is not None and suggested.group(1) == "sqlite:///out.db", err
    assert not (tmp_path / "out.db").exists()
    assert main(["export", "s", suggested.group(1)]) == 0
