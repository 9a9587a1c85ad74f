"""An encrypted store copied to a target the copy opens (a path, ``sqlite:///``,
``postgresql://``) stays encrypted: the target gets the source saver's serializer.

Read raw (the store's files, the SQLite file's bytes, PostgreSQL's blob and write rows),
nothing of the conversation is plaintext; a saver with the same serializer reads the
copy back equal to the source.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from psycopg.rows import dict_row

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.errors import DecodeError
from langgraph_jsonl_checkpoint.migrate import copy_threads
from tests.harness.bounded import within

SECRET = "card 4111-1111-1111-1111"
# What a leak would show. Not "4111" alone: the store's own numbers (an inode in the
# catalog and the sidecar, a checksum) may hold those four digits by chance.
NEEDLE = "4111-1111-1111-1111"
KEY = b"0123456789abcdef0123456789abcdef"
CFG: Any = {"configurable": {"thread_id": "t-1"}}


def serde() -> EncryptedSerializer:
    return EncryptedSerializer.from_pycryptodome_aes(key=KEY)


def graph(checkpointer: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [AIMessage(f"noted your {SECRET}", id="a1")]})
    g.add_edge(START, "agent")
    return g.compile(checkpointer=checkpointer)


def history(checkpointer: Any) -> list[Any]:
    with within(120, "reading the history"):
        return [(s.config["configurable"]["checkpoint_id"], s.values, s.next, s.metadata)
                for s in graph(checkpointer).get_state_history(CFG)]


@pytest.fixture
def encrypted(tmp_path: Path) -> Path:
    with JsonlSaver(tmp_path / "enc", serde=serde()) as saver, within(120, "the run"):
        graph(saver).invoke({"messages": [("user", f"my {SECRET}")]}, CFG)
    assert not _files_with(tmp_path / "enc", NEEDLE.encode())
    return tmp_path / "enc"


def _files_with(root: Path, needle: bytes) -> list[str]:
    hits = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                if needle in f.read():
                    hits.append(path)
    return hits


@contextmanager
def _sqlite(path: Path) -> Iterator[Any]:
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        yield SqliteSaver(conn, serde=serde())


@pytest.mark.parametrize("kind", ["store", "sqlite", "postgres"])
def test_an_encrypted_store_stays_encrypted_on_a_target_named_by_path_or_url(
    encrypted: Path, tmp_path: Path, pg_url: str, kind: str
) -> None:
    target = {"store": str(tmp_path / "copy"), "sqlite": "sqlite:///" + str(tmp_path / "app.db"),
              "postgres": pg_url}[kind]
    with JsonlSaver(encrypted, serde=serde(), read_only=True) as source:
        expected = history(source)
        dry = copy_threads(source, target, dry_run=True, setup=True)
        assert dry.ok and dry.checkpoints == len(expected)
        report = copy_threads(source, target, setup=True)
        assert report.ok and report.verified and report.checkpoints == len(expected), report.to_json()
        again = copy_threads(source, target)  # read back with the key: all there, nothing twice
        assert again.ok and again.checkpoints == 0 and sum(t.present for t in again.threads) == len(expected)

    if kind == "store":
        assert _files_with(tmp_path / "copy", NEEDLE.encode()) == []
        with JsonlSaver(tmp_path / "copy", serde=serde(), read_only=True) as copy:
            assert history(copy) == expected
        with JsonlSaver(tmp_path / "copy", read_only=True) as plain, pytest.raises(DecodeError):
            history(plain)  # without the key it cannot be read
    elif kind == "sqlite":
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("app.db*"))
        assert NEEDLE.encode() not in raw
        with _sqlite(tmp_path / "app.db") as copy:
            assert history(copy) == expected
    else:
        with psycopg.connect(pg_url) as conn:
            blobs = conn.execute("SELECT type, blob FROM checkpoint_blobs").fetchall()
            writes = conn.execute("SELECT type, blob FROM checkpoint_writes").fetchall()
            rows = conn.execute("SELECT checkpoint::text FROM checkpoints").fetchall()
        assert blobs and writes
        types = {t for t, _ in blobs + writes}
        assert "msgpack+aes" in types and all(t.endswith("+aes") or t == "empty" for t in types), types
        assert not [b for _, b in blobs + writes if b is not None and NEEDLE.encode() in bytes(b)]
        assert not [r for (r,) in rows if NEEDLE in r]
        with psycopg.connect(pg_url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            assert history(PostgresSaver(conn, serde=serde())) == expected


@pytest.mark.parametrize("command", ["export", "copy", "import"])
def test_the_move_commands_take_serde_for_both_ends(
    encrypted: Path, tmp_path: Path, pg_url: str, command: str, capsys, monkeypatch
) -> None:
    """``export STORE postgresql://... --serde X`` listed --serde in its help and ignored
    it: every thread failed to decode, and the summary still said "copied 1 thread(s)"
    and "verified: every copied thread's history equals the source's"; ``import`` and
    ``copy`` refused --serde. Each now reads and writes both ends with it (the copy of an
    encrypted store stays encrypted), and without it the summary does not claim the copy."""
    from langgraph_jsonl_checkpoint.cli import main

    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY.decode())
    spec = "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes"
    source = str(encrypted)
    if command == "import":  # an encrypted SqliteSaver app's file, into a new store
        with _sqlite(tmp_path / "app.db") as app, within(120, "the run"):
            graph(app).invoke({"messages": [("user", f"my {SECRET}")]}, CFG)
        source = "sqlite:///" + str(tmp_path / "app.db")
    target = {"export": pg_url, "copy": str(tmp_path / "copy"), "import": str(tmp_path / "imported")}[command]
    setup = ["--setup"] if command == "export" else []
    with within(120, "the copy without --serde"):
        assert main([command, source, target, *setup]) == 1
    out, err = capsys.readouterr()
    assert "PROBLEM thread t-1" in err and "--serde" in err
    assert "every copied thread's history equals" not in out and "1 thread(s) not copied" in out, out
    with within(120, "the copy with --serde"):
        assert main([command, source, target, "--serde", spec]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "verified" in out, (out, err)
    if command == "export":
        with psycopg.connect(pg_url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            assert history(PostgresSaver(conn, serde=serde()))[0][1]["messages"][-1].content.endswith(SECRET)
        with psycopg.connect(pg_url) as conn:
            blobs = conn.execute("SELECT blob FROM checkpoint_blobs").fetchall()
        assert blobs and not [b for (b,) in blobs if b is not None and NEEDLE.encode() in bytes(b)]
    else:
        assert _files_with(Path(target), NEEDLE.encode()) == []
        with JsonlSaver(target, serde=serde(), read_only=True) as copy:
            assert history(copy)[0][1]["messages"][-1].content.endswith(SECRET)
