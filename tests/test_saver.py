"""JsonlSaver behaviour beyond the conformance suite: write slots, ordering, isolation of
reads, index rebuild, serializers, shallow copies, concurrency and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph_jsonl_checkpoint import (
    AsyncJsonlSaver,
    ConfigError,
    DecodeError,
    EncodeError,
    ForeignFileError,
    FormatVersionError,
    JsonlCheckpointError,
    JsonlSaver,
    StoreError,
)
from langgraph_jsonl_checkpoint.disk.framing import frame
from tests.harness.answers import answers
from tests.harness.raw_log import ThreadFiles, sidecar_blocks, sidecar_summaries, write_in_place

CP_IDS = [f"1ef00000-0000-6000-8000-{i:012d}" for i in range(100)]


def _checkpoint(i: int, values: dict, versions: dict) -> dict:
    return {
        "v": 4,
        "id": CP_IDS[i],
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {},
        "updated_channels": list(values),
    }


def _put(saver: JsonlSaver, thread: str, i: int, values: dict, parent: str | None = None, ns: str = ""):
    versions = {k: saver.get_next_version(None, None) for k in values}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    if parent:
        config["configurable"]["checkpoint_id"] = parent
    return saver.put(config, _checkpoint(i, values, versions), {"step": i}, versions)


# -- write slots and ordering ---------------------------------------------------


def test_regular_write_slots_are_never_duplicated_by_a_retry(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    cfg = _put(saver, "t", 0, {"a": 1})
    saver.put_writes(cfg, [("a", "first"), ("b", 2)], "task-1", "~path")
    saver.put_writes(cfg, [("a", "retry"), ("b", 3)], "task-1", "~path")
    writes = saver.get_tuple(cfg).pending_writes
    assert writes == [("task-1", "a", "first"), ("task-1", "b", 2)]
    # and the same after a cold reopen (the log replays the same rule)
    assert JsonlSaver(tmp_path / "s").get_tuple(cfg).pending_writes == writes


def test_special_write_slots_are_replaced_by_the_latest(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    cfg = _put(saver, "t", 0, {"a": 1})
    for channel in WRITES_IDX_MAP:
        saver.put_writes(cfg, [(channel, "old")], "task-1")
        saver.put_writes(cfg, [(channel, "new")], "task-1")
    values = {c: v for _, c, v in saver.get_tuple(cfg).pending_writes}
    assert values == {c: "new" for c in WRITES_IDX_MAP}
    cold = {c: v for _, c, v in JsonlSaver(tmp_path / "s").get_tuple(cfg).pending_writes}
    assert cold == values


def test_pending_writes_follow_writes_sort_key_not_arrival(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    cfg = _put(saver, "t", 0, {"a": 1})
    saver.put_writes(cfg, [("x", "b2"), ("y", "b2y")], "task-b", "~__pregel_pull, 2")
    saver.put_writes(cfg, [("x", "a1")], "task-z", "~__pregel_pull, 1")
    saver.put_writes(cfg, [("x", "input")], "00000000-0000-0000-0000-000000000000", "")
    got = [(t, c, v) for t, c, v in saver.get_tuple(cfg).pending_writes]
    assert got == [
        ("00000000-0000-0000-0000-000000000000", "x", "input"),
        ("task-z", "x", "a1"),
        ("task-b", "x", "b2"),
        ("task-b", "y", "b2y"),
    ]


def test_writes_may_arrive_before_their_checkpoint(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    early = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": CP_IDS[0]}}
    saver.put_writes(early, [("a", 5)], "task")
    cfg = _put(saver, "t", 0, {"a": 1})
    assert saver.get_tuple(cfg).pending_writes == [("task", "a", 5)]


# -- reads are isolated from later mutation ----------------------------------------


def test_reads_and_puts_never_share_objects_with_the_caller(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    value = {"items": [1, 2], "nested": {"k": "v"}}
    cfg = _put(saver, "t", 0, {"a": value})
    value["items"].append(3)  # the graph mutates its state after put
    first = saver.get_tuple(cfg)
    assert first.checkpoint["channel_values"]["a"] == {"items": [1, 2], "nested": {"k": "v"}}
    first.checkpoint["channel_values"]["a"]["items"].append(99)  # the caller mutates a read
    first.metadata["step"] = 1000
    again = saver.get_tuple(cfg)
    assert again.checkpoint["channel_values"]["a"]["items"] == [1, 2]
    assert again.metadata["step"] == 0


def test_list_filters_metadata_and_respects_before_and_limit(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    parent = None
    for i in range(6):
        parent = _put(saver, "t", i, {"a": i}, parent["configurable"]["checkpoint_id"] if parent else None)
    base = {"configurable": {"thread_id": "t"}}
    ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(base)]
    assert ids == CP_IDS[:6][::-1]
    assert [t.metadata["step"] for t in saver.list(base, filter={"step": 3})] == [3]
    before = {"configurable": {"checkpoint_id": CP_IDS[4]}}
    assert [t.metadata["step"] for t in saver.list(base, before=before, limit=2)] == [3, 2]
    assert list(saver.list(base, filter={"step": 3}, limit=0)) == []


def test_list_without_config_covers_all_threads_and_namespaces(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _put(saver, "a", 0, {"x": 1})
    _put(saver, "b", 1, {"x": 1}, ns="child:1")
    _put(saver, "b", 2, {"x": 1})
    got = sorted(
        (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"])
        for t in saver.list(None)
    )
    assert got == [("a", ""), ("b", ""), ("b", "child:1")]
    assert len(list(saver.list({"configurable": {"thread_id": "b"}}))) == 2
    assert len(list(saver.list({"configurable": {"thread_id": "b", "checkpoint_ns": ""}}))) == 1


def test_non_string_thread_id_is_stringified(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    versions = {"a": saver.get_next_version(None, None)}
    saver.put(
        {"configurable": {"thread_id": 42, "checkpoint_ns": ""}},
        _checkpoint(0, {"a": 1}, versions),
        {},
        versions,
    )
    assert saver.get_tuple({"configurable": {"thread_id": "42"}}) is not None


def test_versions_sort_and_accept_integers() -> None:
    saver_cls = JsonlSaver
    v1 = saver_cls.get_next_version(None, None, None)  # type: ignore[arg-type]
    v2 = saver_cls.get_next_version(None, v1, None)  # type: ignore[arg-type]
    assert v1 < v2
    assert saver_cls.get_next_version(None, 7, None).startswith(f"{8:012}.")  # type: ignore[arg-type]
    assert v2 != saver_cls.get_next_version(None, v1, None)  # type: ignore[arg-type]
    # a version from another saver (32 digits wide) keeps its width, so order holds
    foreign = f"{41:032}.{0.5:016}"
    nxt = saver_cls.get_next_version(None, foreign, None)  # type: ignore[arg-type]
    assert nxt.startswith(f"{42:032}.") and nxt > foreign
    versions = [None]
    for _ in range(1200):
        versions.append(saver_cls.get_next_version(None, versions[-1], None))  # type: ignore[arg-type]
    assert versions[1:] == sorted(versions[1:])


# -- index ---------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage", "stale", "tampered", "past_eof"])
def test_index_faults_are_rebuilt_from_the_log(tmp_path: Path, damage: str) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=3)
    parent = None
    for i in range(10):
        parent = _put(
            saver,
            "t",
            i,
            {"m": list(range(i + 1))},
            parent["configurable"]["checkpoint_id"] if parent else None,
        )
        if i == 4 and damage == "stale":
            saver.close()  # writes the sidecar; later records are past it
            stale = next((tmp_path / "s" / "threads").glob("*.idx")).read_bytes()
    saver.close()
    (idx_file,) = (tmp_path / "s" / "threads").glob("*.idx")
    if damage == "missing":
        idx_file.unlink()
    elif damage == "truncated":
        idx_file.write_bytes(idx_file.read_bytes()[: idx_file.stat().st_size // 2])
    elif damage == "garbage":
        idx_file.write_bytes(b"\0" * 100)
    elif damage in ("tampered", "past_eof"):
        head, summaries = sidecar_summaries(idx_file.read_bytes())
        target = 4 if damage == "tampered" else len(summaries) - 1
        summaries[target]["o"] += 3 if damage == "tampered" else 10_000  # mid-record / past EOF
        idx_file.write_bytes(sidecar_blocks(head, summaries, cuts=(target,)))
    else:
        idx_file.write_bytes(stale)
    fresh = JsonlSaver(tmp_path / "s")
    history = list(fresh.list({"configurable": {"thread_id": "t"}}))
    assert [t.checkpoint["channel_values"]["m"] for t in history] == [list(range(i + 1)) for i in range(10)][
        ::-1
    ]


def test_a_second_process_sees_appends_without_reopening(tmp_path: Path) -> None:
    reader = JsonlSaver(tmp_path / "s")
    writer = JsonlSaver(tmp_path / "s")  # a separate instance: its own index and handles
    _put(writer, "t", 0, {"a": 1})
    assert reader.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["id"] == CP_IDS[0]
    _put(writer, "t", 1, {"a": 2}, CP_IDS[0])
    assert reader.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["id"] == CP_IDS[1]
    script = textwrap.dedent(f"""
        from langgraph_jsonl_checkpoint import JsonlSaver
        s = JsonlSaver({str(tmp_path / 's')!r})
        v = {{"a": s.get_next_version(None, None)}}
        cp = {{"v": 4, "id": {CP_IDS[2]!r}, "ts": "x", "channel_values": {{"a": 3}},
              "channel_versions": v, "versions_seen": {{}}, "updated_channels": ["a"]}}
        parent = {{"configurable": {{"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": {CP_IDS[1]!r}}}}}
        s.put(parent, cp, {{}}, v)
        """)
    subprocess.run([sys.executable, "-c", script], check=True)
    tup = reader.get_tuple({"configurable": {"thread_id": "t"}})
    assert tup.checkpoint["id"] == CP_IDS[2] and tup.checkpoint["channel_values"]["a"] == 3


# -- serializers and shallow copies ---------------------------------------------------


def test_encrypted_serializer_keeps_values_out_of_the_log(tmp_path: Path) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16)
    saver = JsonlSaver(tmp_path / "s", serde=serde)
    cfg = _put(saver, "t", 0, {"secret": "the launch code is 1234"})
    saver.put_writes(cfg, [("secret", "another secret value")], "task")
    raw = next((tmp_path / "s" / "threads").glob("*.jsonl")).read_bytes()
    assert b"launch code" not in raw and b"another secret" not in raw
    fresh = JsonlSaver(tmp_path / "s", serde=serde)
    tup = fresh.get_tuple(cfg)
    assert tup.checkpoint["channel_values"]["secret"] == "the launch code is 1234"
    assert tup.pending_writes == [("task", "secret", "another secret value")]


def test_with_an_encryption_key_plaintext_records_are_refused(tmp_path: Path) -> None:
    plain = JsonlSaver(tmp_path / "s")
    cfg = _put(plain, "t", 0, {"a": "plaintext planted"})
    encrypted = JsonlSaver(tmp_path / "s", serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16))
    with pytest.raises(ValueError, match="plaintext"):
        encrypted.get_tuple(cfg)


@pytest.mark.parametrize("way", ["plaintext under a key", "encrypted without the key", "another key"])
def test_a_value_the_serializer_cannot_read_is_a_clear_error_naming_thread_and_file(
    tmp_path: Path, way: str
) -> None:
    """Opened with another serializer than the one that wrote it, a store's values are
    refused with an error of the package (not the serializer's bare ValueError or
    NotImplementedError), naming the thread, the log and what to do; the head file's
    path and the log's path say the same."""
    key_a = EncryptedSerializer.from_pycryptodome_aes(key=b"a" * 16)
    key_b = EncryptedSerializer.from_pycryptodome_aes(key=b"b" * 16)
    writer, reader = {
        "plaintext under a key": (None, key_a),
        "encrypted without the key": (key_a, None),
        "another key": (key_a, key_b),
    }[way]
    saver = JsonlSaver(tmp_path / "s", serde=writer)
    cfg = _put(saver, "t", 0, {"a": "a value"})
    saver.close()  # (writes the head file too)
    log = str(next((tmp_path / "s" / "threads").glob("*.jsonl")))
    for first_read in ("head", "log"):
        if first_read == "log":
            for head in (tmp_path / "s" / "threads").glob("*.head"):
                head.unlink()
        fresh = JsonlSaver(tmp_path / "s", serde=reader)
        with pytest.raises(DecodeError) as caught:
            fresh.get_tuple(cfg)
        message = str(caught.value)
        assert "'t'" in message and log in message and "serde=" in message, message
        assert isinstance(caught.value, JsonlCheckpointError) and isinstance(caught.value, ValueError)
        fresh.close()


def test_with_allowlist_copy_shares_the_store_state(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    clone = saver.with_allowlist([("tests.test_saver", "Point")])
    assert clone is not saver and clone.store is saver.store
    assert clone.codec.serde is clone.serde and saver.codec.serde is saver.serde
    _put(clone, "t", 0, {"a": [1]})
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None


# -- concurrency -------------------------------------------------------------------


def test_concurrent_puts_from_a_thread_pool_lose_nothing(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    cfg = _put(saver, "t", 0, {"a": 1})
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for j in range(20):
                saver.put_writes(cfg, [("ch", (n, j))], f"task-{n}-{j}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(saver.get_tuple(cfg).pending_writes) == 160
    assert len(JsonlSaver(tmp_path / "s").get_tuple(cfg).pending_writes) == 160


async def test_async_context_manager_and_methods(tmp_path: Path) -> None:
    async with AsyncJsonlSaver.from_conn_string(str(tmp_path / "s")) as saver:
        versions = {"a": saver.get_next_version(None, None)}
        cfg = await saver.aput(
            {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            _checkpoint(0, {"a": 1}, versions),
            {},
            versions,
        )
        await saver.aput_writes(cfg, [("a", 2)], "task")
        tup = await saver.aget_tuple(cfg)
        assert tup.pending_writes == [("task", "a", 2)]
        assert [t.checkpoint["id"] async for t in saver.alist(None)] == [CP_IDS[0]]
    with JsonlSaver.from_conn_string(str(tmp_path / "s")) as sync_saver:
        assert sync_saver.get_tuple(cfg) is not None


# -- bad input ------------------------------------------------------------------------


def test_missing_thread_id_says_what_to_pass(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    with pytest.raises(ConfigError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(ConfigError, match="list needs a thread_id"):
        list(saver.list({"configurable": {"checkpoint_ns": ""}}))
    # An empty one (InMemorySaver takes it; here it would be a log with no name) says so.
    with pytest.raises(ConfigError, match=r"needs a thread_id \(the one given is empty: ''\)"):
        saver.get_tuple({"configurable": {"thread_id": ""}})


@pytest.mark.parametrize("thread_id", [None, ""])
def test_a_run_without_a_thread_id_is_refused_before_anything_is_written(
    tmp_path: Path, thread_id: str | None
) -> None:
    """docs/options.md, "Thread ids": InMemorySaver files such a run under one nameless
    thread; here it is refused, and the store holds no thread afterwards."""
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [("ai", "x")]})
    builder.add_edge(START, "agent")
    with JsonlSaver.from_conn_string(str(tmp_path / "s")) as saver:
        graph = builder.compile(checkpointer=saver)
        with pytest.raises(ConfigError, match="needs a thread_id"):
            graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": thread_id}})
        assert list(saver.list(None)) == []
    assert os.listdir(tmp_path / "s" / "threads") == []


def test_a_number_as_thread_id_is_the_same_thread_as_its_text(tmp_path: Path) -> None:
    """docs/options.md, "Thread ids": ``5`` and ``"5"`` are one thread, as with InMemorySaver."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [("ai", "x")]})
    builder.add_edge(START, "agent")
    seen = []
    for saver in (InMemorySaver(), JsonlSaver(tmp_path / "s")):
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": 5}})
        graph.invoke({"messages": [("user", "again")]}, {"configurable": {"thread_id": "5"}})
        seen.append(
            (
                len(graph.get_state({"configurable": {"thread_id": 5}}).values["messages"]),
                [t.config["configurable"]["thread_id"] for t in saver.list(None)][:1],
            )
        )
    assert seen[0] == seen[1] == (4, ["5"])


def test_put_without_metadata_names_the_thread_and_what_to_pass(tmp_path: Path) -> None:
    """``put(config, checkpoint, None, versions)`` failed with "'NoneType' object has no
    attribute 'get'" from deep inside; now a ``ConfigError`` names the thread and what
    to pass, and nothing is stored."""
    with JsonlSaver(tmp_path / "s") as saver:
        v = {"m": saver.get_next_version(None, None)}
        with pytest.raises(ConfigError, match=r"thread 't': put needs the checkpoint's metadata as a dict"):
            saver.put({"configurable": {"thread_id": "t"}}, _checkpoint(1, {"m": ["x"]}, v), None, v)  # type: ignore[arg-type]
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None


def test_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        JsonlSaver(f)


def test_an_sqlite_file_given_as_the_store_says_how_to_import_it(tmp_path: Path, monkeypatch) -> None:
    """`SqliteSaver.from_conn_string("app.db")` changed to `JsonlSaver.from_conn_string(...)`
    with the file name left as it was: the error says it is an SQLite database and gives
    the command that brings its threads into a store (nothing is written to the file)."""
    import sqlite3
    from contextlib import closing

    monkeypatch.chdir(tmp_path)
    with closing(sqlite3.connect("my app.db")) as db, db:  # closed: Python 3.13 warns of one left open
        db.execute("create table checkpoints (x)")
    before = (tmp_path / "my app.db").read_bytes()
    with pytest.raises(ConfigError) as refused:
        JsonlSaver.from_conn_string("my app.db").__enter__()
    message = str(refused.value)
    assert "SQLite database" in message, message
    assert f"langgraph-jsonl import 'sqlite:///{tmp_path}/my app.db' ./checkpoints" in message, message
    assert (tmp_path / "my app.db").read_bytes() == before


def test_path_under_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    """`JsonlSaver("app.py/checkpoints")` raised a bare NotADirectoryError from makedirs:
    it is now a ConfigError naming the file in the way, and nothing is created."""
    (tmp_path / "app.py").write_text("x")
    with pytest.raises(ConfigError) as refused:
        JsonlSaver(tmp_path / "app.py" / "sub" / "checkpoints")
    message = str(refused.value)
    assert f"{tmp_path / 'app.py'} is a file" in message and "Pass a directory" in message, message
    assert (tmp_path / "app.py").read_text() == "x"


def test_non_store_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not a langgraph-jsonl-checkpoint store"):
        JsonlSaver(tmp_path / "d")


def test_a_project_folder_holding_a_store_names_the_store(tmp_path: Path) -> None:
    """JsonlSaver(".") or JsonlSaver("./app", read_only=True) given the folder that holds
    the store (a newcomer's slip): the refusal names the store to pass instead."""
    project = tmp_path / "app"
    JsonlSaver(project / "checkpoints").close()
    (project / "agent.py").write_text("graph = ...\n")
    for read_only in (False, True):
        with pytest.raises(StoreError, match="not a langgraph-jsonl-checkpoint store") as err:
            JsonlSaver(project, read_only=read_only)
        assert f"did you mean {project / 'checkpoints'}?" in str(err.value)
    assert sorted(p.name for p in project.iterdir()) == ["agent.py", "checkpoints"]


def test_a_read_only_store_that_does_not_exist_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as err:
        JsonlSaver(tmp_path / "nope", read_only=True)
    assert "Pass the directory your app's JsonlSaver writes" in str(err.value)
    assert not (tmp_path / "nope").exists()


def test_foreign_file_in_store_is_named(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    (tmp_path / "s" / "threads" / "intruder.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(ForeignFileError, match="intruder.jsonl"):
        list(saver.list(None))


def test_unknown_format_version_is_refused_naming_thread_and_file(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _put(saver, "t", 0, {"a": 1})
    saver.close()
    (log,) = (tmp_path / "s" / "threads").glob("*.jsonl")
    lines = log.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header.pop("c")
    header["format"] = 99
    log.write_bytes(frame(header) + b"".join(lines[1:]))
    with pytest.raises(FormatVersionError, match=r"'t'.*format version 99"):
        JsonlSaver(tmp_path / "s").get_tuple({"configurable": {"thread_id": "t"}})


def test_unencodable_value_fails_put_and_stores_nothing(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    cfg = _put(saver, "t", 0, {"a": 1})
    before = next((tmp_path / "s" / "threads").glob("*.jsonl")).read_bytes()
    with pytest.raises(EncodeError, match="threading.Lock|lock"):
        _put(saver, "t", 1, {"a": threading.Lock()}, cfg["configurable"]["checkpoint_id"])
    with pytest.raises(EncodeError):
        saver.put_writes(cfg, [("a", threading.Lock())], "task")
    assert next((tmp_path / "s" / "threads").glob("*.jsonl")).read_bytes() == before


def test_hostile_thread_ids_stay_inside_the_store_and_do_not_collide(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    ids = ["../escape", "/abs/path", "nul\0byte", "x" * 10_000, "Case", "case", "ｃａｓｅ", ".", ""]
    ids = [i for i in ids if i]  # the empty id is a missing thread_id
    for n, tid in enumerate(ids):
        _put(saver, tid, 0, {"who": n})
    files = sorted(p.name for p in (tmp_path / "s" / "threads").glob("*.jsonl"))
    assert len(files) == len(ids)
    assert all(len(name) < 100 for name in files)
    assert sorted(os.listdir(tmp_path)) == ["s"]
    for n, tid in enumerate(ids):
        assert saver.get_tuple({"configurable": {"thread_id": tid}}).checkpoint["channel_values"]["who"] == n
    assert sorted(saver.store.thread_ids()) == sorted(ids)


def test_listed_tuples_share_no_objects_with_each_other(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=2)
    parent = None
    values = []
    for i in range(5):
        values.append({"k": i, "items": [{"n": j} for j in range(i + 1)]})
        parent = _put(saver, "t", i, {"a": values[-1], "m": [{"n": j} for j in range(i + 1)]},
                      parent["configurable"]["checkpoint_id"] if parent else None)
        saver.put_writes(parent, [("a", {"w": i})], f"task-{i}")
    want = [(values[i], [{"n": j} for j in range(i + 1)], {"w": i}) for i in range(5)][::-1]
    got = []
    for tup in saver.list({"configurable": {"thread_id": "t"}}):
        cv = tup.checkpoint["channel_values"]
        got.append((json.loads(json.dumps(cv["a"])), json.loads(json.dumps(cv["m"])),
                    json.loads(json.dumps(tup.pending_writes[0][2]))))
        # mutate everything this tuple handed out before the next one is read
        cv["m"].append({"n": -1})
        for item in cv["m"]:
            item["n"] = "mutated"
        cv["a"]["k"] = "mutated"
        cv["a"]["items"].clear()
        tup.pending_writes[0][2]["w"] = "mutated"
        tup.checkpoint["channel_versions"]["a"] = "mutated"
    assert got == want


def _two_step_graph(saver: JsonlSaver, rendezvous: Any = None, on_first: Any = None):
    """Two steps; with a ``rendezvous`` barrier, every run waits inside the first step
    until all are there (a run refused earlier aborts the barrier), so two runs are
    inside the step at the same time whatever the scheduling."""
    import threading
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        steps: list

    def first(state: State) -> dict:
        if rendezvous is not None:
            try:
                rendezvous.wait(timeout=30)
            except threading.BrokenBarrierError:
                pass  # the other run was refused before it got here
        if on_first is not None:
            on_first(state)
        return {"steps": state["steps"] + ["first"]}

    builder = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("second", lambda state: {"steps": state["steps"] + ["second"]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


def _race(saver: JsonlSaver, configs: list) -> tuple[Any, list]:
    """Run the two-step graph once per config, all at once, inside the first step
    together; returns the graph and each run's result or JsonlCheckpointError."""
    outcomes: list = []
    start = threading.Barrier(len(configs), timeout=10)
    inside = threading.Barrier(len(configs))
    graph = _two_step_graph(saver, inside)

    def run(config) -> None:
        start.wait()
        try:
            outcomes.append(graph.invoke({"steps": []}, config, durability="sync"))
        except JsonlCheckpointError as exc:
            inside.abort()
            outcomes.append(exc)

    workers = [threading.Thread(target=run, args=(c,)) for c in configs]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return graph, outcomes


def test_two_runs_advancing_one_thread_at_once_do_not_fork_it_silently(tmp_path: Path) -> None:
    """With run ids (as LangGraph Platform passes them), the second of two concurrent
    runs on one thread gets a clear error; a deliberate fork from an old checkpoint
    (time travel) is still allowed."""
    from langgraph_jsonl_checkpoint import ConcurrentRunError

    configs = [{"configurable": {"thread_id": "shared", "run_id": f"run-{i}"}} for i in range(2)]
    graph, outcomes = _race(JsonlSaver(tmp_path / "s", concurrent_runs="allow"), configs)
    errors = [o for o in outcomes if isinstance(o, ConcurrentRunError)]
    assert len(errors) == 1, outcomes
    assert "'shared'" in str(errors[0]) and "meanwhile" in str(errors[0])
    # The advice holds whatever mode this saver has: told to a saver already refusing
    # (the other writer is not), "open the saver with concurrent_runs='refuse'" misled.
    assert "open the saver with concurrent_runs='refuse' or 'wait'" not in str(errors[0])
    assert "every saver that writes this store, in every process" in str(errors[0])
    # time travel from the oldest checkpoint, by a third run, forks on purpose and works
    history = list(graph.get_state_history({"configurable": {"thread_id": "shared"}}))
    oldest = {"configurable": {**history[-1].config["configurable"], "run_id": "run-2"}}
    assert graph.invoke(None, oldest, durability="sync")["steps"] == ["first", "second"]


def test_run_ids_in_metadata_refuse_a_put_behind_another_runs_checkpoint(tmp_path: Path) -> None:
    """Puts made without LangGraph's Runtime (a saver driven directly, or a run the
    tracker no longer remembers) are still checked by their metadata run_id."""
    from langgraph_jsonl_checkpoint import ConcurrentRunError

    saver = JsonlSaver(tmp_path / "s")

    def put(i: int, parent: str | None, run_id: str):
        versions = {"a": saver.get_next_version(None, None)}
        cfg = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "run_id": run_id}}
        if parent:
            cfg["configurable"]["checkpoint_id"] = parent
        return saver.put(cfg, _checkpoint(i, {"a": i}, versions), {"step": i}, versions)

    put(0, None, "a")
    put(1, CP_IDS[0], "b")  # run b continues from a's checkpoint: a new run, allowed
    with pytest.raises(ConcurrentRunError, match="run a tried to continue from checkpoint") as refused:
        put(2, CP_IDS[0], "a")  # run a continues from its own checkpoint behind b's
    assert "every saver that writes this store, in every process" in str(refused.value)  # as the other check
    put(3, CP_IDS[0], "c")  # a third run forking from there on purpose: allowed
    assert [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "t"}})] == [
        CP_IDS[3], CP_IDS[1], CP_IDS[0]]


def test_a_run_at_the_address_of_a_finished_run_is_not_held_to_its_head(tmp_path: Path) -> None:
    """Runs are told apart by their Runtime, and a finished run's Runtime address can be
    taken by a later one. LangGraph replays a subgraph without reading its checkpoint (the
    parent hands the state over) and puts after an old one: with the Runtime of an
    earlier run of that subgraph at the same address, the put was refused as a moved head
    (LangGraph's test_stateful_subgraph_loads_latest_after_replay, now and then). The
    same object stands for the reused address here; each run has a task of its own."""
    from langgraph_jsonl_checkpoint import ConcurrentRunError
    from langgraph_jsonl_checkpoint.saver.runs import CONFIG_KEY_RUNTIME, CONFIG_KEY_TASK_ID

    saver = JsonlSaver(tmp_path / "s")
    reused, other = object(), object()

    def config(runtime: object, task: str, parent: str | None = None) -> dict:
        cfg = {"thread_id": "t", "checkpoint_ns": "sub", CONFIG_KEY_RUNTIME: runtime,
               CONFIG_KEY_TASK_ID: task}
        if parent:
            cfg["checkpoint_id"] = parent
        return {"configurable": cfg}

    def put(i: int, cfg: dict) -> None:
        versions = {"a": saver.get_next_version(None, None)}
        saver.put(cfg, _checkpoint(i, {"a": i}, versions), {"step": i}, versions)

    saver.get_tuple(config(reused, "task-1"))  # the first invocation's subgraph run
    put(0, config(reused, "task-1"))
    saver.get_tuple(config(other, "task-2"))  # the second invocation's
    put(1, config(other, "task-2", CP_IDS[0]))
    put(2, config(reused, "task-3", CP_IDS[0]))  # the replay's: from checkpoint 0, no read
    listed = saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": "sub"}})
    assert [t.checkpoint["id"] for t in listed] == [CP_IDS[2], CP_IDS[1], CP_IDS[0]]
    with pytest.raises(ConcurrentRunError):  # one run behind another is still refused
        put(3, config(other, "task-2", CP_IDS[1]))


def test_a_saver_driven_directly_may_branch_anywhere(tmp_path: Path) -> None:
    """Without a LangGraph run (no Runtime in the config) and without run ids, puts on
    an old checkpoint are deliberate branches, even right after a latest read."""
    saver = JsonlSaver(tmp_path / "s")
    first = _put(saver, "t", 0, {"a": 1})
    saver.get_tuple({"configurable": {"thread_id": "t"}})
    _put(saver, "t", 1, {"a": 2}, parent=CP_IDS[0])
    _put(saver, "t", 2, {"a": 3}, parent=CP_IDS[0])
    assert first["configurable"]["checkpoint_id"] == CP_IDS[0]
    assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) == 3


def test_without_run_ids_the_run_that_falls_behind_is_refused_too(tmp_path: Path) -> None:
    """Without run ids, the saver recognises each LangGraph run by its Runtime: of two
    runs racing on one thread, one gets ConcurrentRunError and nothing of its failed
    step is stored; time travel afterwards still forks on purpose."""
    from langgraph_jsonl_checkpoint import ConcurrentRunError

    cfg = {"configurable": {"thread_id": "shared"}}
    graph, outcomes = _race(JsonlSaver(tmp_path / "s", concurrent_runs="allow"), [cfg] * 2)
    errors = [o for o in outcomes if isinstance(o, ConcurrentRunError)]
    assert len(errors) == 1, outcomes
    assert "another run has written" in str(errors[0]) and "'shared'" in str(errors[0])
    finished = [o for o in outcomes if isinstance(o, dict)]
    assert finished == [{"steps": ["first", "second"]}]
    # The winner's 4 checkpoints; plus the loser's input checkpoint if it was written
    # before the winner's (then its first step was refused; else its input put was); or
    # plus the loser's first 2 if the winner read the thread only after they were
    # written (it then continued from them, and the loser's next step was refused).
    stored = list(graph.checkpointer.list(cfg))
    assert len(stored) in (4, 5, 6)
    # whatever the interleaving, no checkpoint got two children: the thread did not fork
    parents = [t.parent_config["configurable"]["checkpoint_id"] for t in stored if t.parent_config]
    assert len(parents) == len(set(parents)), parents
    assert graph.get_state(cfg).values == {"steps": ["first", "second"]}
    # the refused run resumes cleanly once the other is done
    assert graph.invoke(None, cfg, durability="sync") == {"steps": ["first", "second"]}
    history = list(graph.get_state_history(cfg))
    assert graph.invoke(None, history[-1].config, durability="sync")["steps"] == ["first", "second"]


def test_a_run_started_after_another_ran_a_step_continues_from_it(tmp_path: Path) -> None:
    """The interleaving behind the 6-checkpoint outcome of the race above, made certain:
    run A is held inside its first step while run B starts, reads A's checkpoints, and
    finishes on top of them; A's next put is then refused. Six checkpoints, one chain."""
    from langgraph_jsonl_checkpoint import ConcurrentRunError

    inside, release = threading.Event(), threading.Event()

    def hold_run_a(state: dict) -> None:
        if state["steps"] == ["hold"]:
            inside.set()
            release.wait(timeout=30)

    graph = _two_step_graph(JsonlSaver(tmp_path / "s", concurrent_runs="allow"), on_first=hold_run_a)
    cfg = {"configurable": {"thread_id": "shared"}}
    outcome: list = []

    def run_a() -> None:
        try:
            outcome.append(graph.invoke({"steps": ["hold"]}, cfg, durability="sync"))
        except ConcurrentRunError as exc:
            outcome.append(exc)

    a = threading.Thread(target=run_a)
    a.start()
    assert inside.wait(timeout=30)
    assert graph.invoke({"steps": []}, cfg, durability="sync") == {"steps": ["first", "second"]}
    release.set()
    a.join()
    assert len(outcome) == 1 and isinstance(outcome[0], ConcurrentRunError)
    stored = list(graph.checkpointer.list(cfg))
    assert len(stored) == 6
    parents = [t.parent_config["configurable"]["checkpoint_id"] for t in stored if t.parent_config]
    assert len(parents) == len(set(parents)) == 5
    assert graph.get_state(cfg).values == {"steps": ["first", "second"]}


def test_concurrent_runs_unchecked_keeps_both_branches(tmp_path: Path) -> None:
    """concurrent_runs='unchecked' stores every put as given, like LangGraph's own savers."""
    graph, outcomes = _race(JsonlSaver(tmp_path / "s", concurrent_runs="unchecked"),
                            [{"configurable": {"thread_id": "shared"}}] * 2)
    assert all(isinstance(o, dict) for o in outcomes), outcomes
    assert len(list(graph.checkpointer.list({"configurable": {"thread_id": "shared"}}))) == 8


async def test_async_runs_racing_on_one_thread_one_is_refused(tmp_path: Path) -> None:
    import asyncio

    from langgraph_jsonl_checkpoint import ConcurrentRunError

    inside = threading.Barrier(2)
    graph = _two_step_graph(AsyncJsonlSaver(tmp_path / "s", concurrent_runs="allow"), inside)
    cfg = {"configurable": {"thread_id": "shared"}}

    async def run():
        try:
            return await graph.ainvoke({"steps": []}, cfg, durability="sync")
        except ConcurrentRunError:
            inside.abort()
            raise

    outcomes = await asyncio.gather(run(), run(), return_exceptions=True)
    assert sum(isinstance(o, ConcurrentRunError) for o in outcomes) == 1, outcomes
    assert (await graph.aget_state(cfg)).values == {"steps": ["first", "second"]}


def test_two_processes_racing_on_one_thread_one_is_refused(tmp_path: Path) -> None:
    """The head check runs under the thread's writer lock, so it holds across processes."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    inside = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_race_child, args=(str(tmp_path / "s"), inside, queue)) for _ in range(2)]
    JsonlSaver(tmp_path / "s")  # create the store before the children race
    for p in procs:
        p.start()
    results = sorted(queue.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
    assert results == ["ConcurrentRunError", "ok"], results


def _race_child(store: str, inside, queue) -> None:
    graph = _two_step_graph(JsonlSaver(store, concurrent_runs="allow"), inside)
    try:
        graph.invoke({"steps": []}, {"configurable": {"thread_id": "shared"}}, durability="sync")
        queue.put("ok")
    except Exception as exc:  # reported to the parent
        inside.abort()
        queue.put(type(exc).__name__)


# -- compact ------------------------------------------------------------------------


def test_compact_keeps_every_answer_and_drops_superseded_records(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=2, snapshot_ratio=0)
    items: list = []
    parent = None
    for i in range(12):
        items = items + [f"item-{i}"]
        ns = "child:1" if i in (4, 5) else ""
        cfg = _put(saver, "t", i, {"items": items, "n": i}, parent=parent if ns == "" else None, ns=ns)
        if ns == "":
            parent = cfg["configurable"]["checkpoint_id"]
        saver.put_writes(cfg, [("items", [f"w-{i}"]), ("n", i)], f"task-{i}")
        saver.put_writes(cfg, [("items", ["retried, not stored"])], f"task-{i}")  # same slot
        saver.put_writes(cfg, [("__error__", f"first error {i}")], f"task-e{i}")
        saver.put_writes(cfg, [("__error__", f"second error {i}")], f"task-e{i}")  # replaces
    orphan = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": CP_IDS[99]}}
    saver.put_writes(orphan, [("items", ["before its checkpoint"])], "task-orphan")
    before = answers(saver, "t")
    files = ThreadFiles.of(tmp_path / "s", "t")
    raw_before = Path(files.log).read_bytes()
    assert b'"t":"snapshot"' in raw_before and b"second error 3" in raw_before

    size_before, size_after = saver.compact("t")

    raw_after = Path(files.log).read_bytes()
    assert (size_before, size_after) == (len(raw_before), len(raw_after))
    assert size_after < 0.8 * size_before, (size_before, size_after)
    assert b'"t":"snapshot"' not in raw_after and b"retried, not stored" not in raw_after
    assert b"first error" not in raw_after
    for reader in (saver, JsonlSaver(tmp_path / "s"), JsonlSaver(tmp_path / "s", read_only=True)):
        assert answers(reader, "t") == before
    # the orphan write is still waiting for its checkpoint
    versions = {"items": saver.get_next_version(None, None)}
    saver.put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        _checkpoint(99, {"items": []}, versions),
        {},
        versions,
    )
    assert saver.get_tuple(orphan).pending_writes == [("task-orphan", "items", ["before its checkpoint"])]
    from langgraph_jsonl_checkpoint.maintenance.verify import verify

    report = verify(saver)
    assert report.ok and report.records > 0, report.findings


@pytest.mark.parametrize("snapshot_every", [64, 8])
def test_compact_run_again_leaves_the_log_as_it_is(tmp_path: Path, snapshot_every: int) -> None:
    """A nightly `langgraph-jsonl compact`: the second run, with nothing new to drop, grew
    an 80-turn conversation's log by 4% (where a delta chain ended it stored the list as
    a delta on a value many turns back instead of in full)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [AIMessage(f"reply {len(state['messages'])}")]})
    builder.add_edge(START, "agent")
    saver = JsonlSaver(tmp_path / "s", snapshot_every=snapshot_every)
    graph = builder.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "t"}}
    for turn in range(80):
        graph.invoke({"messages": [("user", f"turn {turn}")]}, cfg)
    before = answers(saver, "t")
    first = saver.compact("t")
    assert first[1] <= first[0]
    second = saver.compact("t")
    assert second == (first[1], first[1]), (first, second)
    assert saver.compact("t") == second
    assert answers(JsonlSaver(tmp_path / "s"), "t") == before


def test_compact_of_a_live_agent_thread_then_the_run_goes_on_like_in_memory(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.harness.flow_graphs import build_agent_graph

    ours = build_agent_graph().compile(checkpointer=JsonlSaver(tmp_path / "s"))
    ref = build_agent_graph().compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "agent"}}
    for turn in range(3):
        for graph in (ours, ref):
            graph.invoke({"messages": [HumanMessage(f"what is {turn} + 2?", id=f"h{turn}")]}, cfg)
        if turn == 1:
            history = [s.values for s in ours.get_state_history(cfg)]
            ours.checkpointer.compact("agent")
            assert [s.values for s in ours.get_state_history(cfg)] == history
    assert ours.get_state(cfg).values == ref.get_state(cfg).values
    assert [s.values for s in ours.get_state_history(cfg)] == [s.values for s in ref.get_state_history(cfg)]


def test_compact_of_an_absent_thread_or_a_read_only_store(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    assert saver.compact("nobody") == (0, 0)
    _put(saver, "t", 0, {"a": 1})
    with pytest.raises(ConfigError, match="opened read-only"):
        JsonlSaver(tmp_path / "s", read_only=True).compact("t")


def test_listed_tuples_share_no_mutable_object(tmp_path: Path) -> None:
    """list() reads each record once for many tuples: the messages it revives for one
    tuple must not share tool calls, content blocks or metadata with another's."""
    from langchain_core.messages import AIMessage

    saver = JsonlSaver(tmp_path / "s")  # no snapshot: every tuple rebuilds from record 1
    msgs: list = []
    parent = None
    for i in range(6):
        msgs = msgs + [AIMessage(
            [{"type": "text", "text": f"block {i}"}], id=f"a{i}",
            tool_calls=[{"name": "f", "args": {"x": i}, "id": f"c{i}", "type": "tool_call"}],
            response_metadata={"model": "m", "n": [i]},
        )]
        cfg = _put(saver, "t", i, {"messages": msgs, "extra": {"nested": [i]}}, parent=parent)
        parent = cfg["configurable"]["checkpoint_id"]
    tuples = list(saver.list({"configurable": {"thread_id": "t"}}))
    first = tuples[0].checkpoint["channel_values"]["messages"][0]
    first.tool_calls[0]["args"]["x"] = "mutated"
    first.content[0]["text"] = "mutated"
    first.response_metadata["n"].append("mutated")
    tuples[0].checkpoint["channel_values"]["extra"]["nested"].append("mutated")
    for tup in tuples[1:]:
        other = tup.checkpoint["channel_values"]["messages"][0]
        assert other.tool_calls[0]["args"] == {"x": 0}
        assert other.content[0]["text"] == "block 0"
        assert other.response_metadata["n"] == [0]
    for tup in tuples[1:]:
        assert "mutated" not in tup.checkpoint["channel_values"]["extra"]["nested"]
    again = saver.get_tuple(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": CP_IDS[5]}}
    )
    assert again.checkpoint["channel_values"]["messages"][0].tool_calls[0]["args"] == {"x": 0}


def test_the_run_tracker_keeps_no_reference_to_a_finished_run(tmp_path: Path) -> None:
    """The tracker notes runs by the id of LangGraph's Runtime: a finished run's
    Runtime (its context, its previous result) is freed."""
    import gc
    import weakref
    from dataclasses import dataclass

    @dataclass
    class Context:
        payload: bytes

    graph = _two_step_graph(JsonlSaver(tmp_path / "s"))
    context = Context(b"x" * 1000)
    ref = weakref.ref(context)
    graph.invoke({"steps": []}, {"configurable": {"thread_id": "t"}}, context=context, durability="sync")
    del context
    gc.collect()
    assert ref() is None
    assert len(graph.checkpointer._runs._runs) >= 1  # the run was tracked


def test_repeated_reads_of_a_list_kept_in_stored_form_share_nothing(tmp_path: Path) -> None:
    """The newest value of a list channel is kept in stored form (no delta chain walk on
    the next read); every read still decodes its own objects, nested ones included, and
    they equal what a fresh process reads from disk."""
    from langchain_core.messages import AIMessage, HumanMessage

    saver = JsonlSaver(tmp_path / "s")
    msgs: list = []
    parent = None
    for i in range(5):
        msgs = msgs + [
            HumanMessage(f"q{i}", id=f"h{i}"),
            AIMessage([{"type": "text", "text": f"block {i}"}], id=f"a{i}",
                      tool_calls=[{"name": "f", "args": {"x": i}, "id": f"c{i}", "type": "tool_call"}],
                      response_metadata={"n": [i]}),
        ]
        cfg = _put(saver, "t", i, {"messages": msgs, "log": [{"i": i}] * (i + 1)}, parent=parent)
        parent = cfg["configurable"]["checkpoint_id"]
    latest = {"configurable": {"thread_id": "t"}}
    first = saver.get_tuple(latest).checkpoint["channel_values"]
    first["messages"][1].tool_calls[0]["args"]["x"] = "mutated"
    first["messages"][1].content[0]["text"] = "mutated"
    first["messages"][1].response_metadata["n"].append("mutated")
    first["messages"].append(HumanMessage("extra"))
    first["log"][0]["i"] = "mutated"
    second = saver.get_tuple(latest).checkpoint["channel_values"]
    fresh = JsonlSaver(tmp_path / "s").get_tuple(latest).checkpoint["channel_values"]
    assert second == fresh
    assert second["messages"] == msgs and len(second["messages"]) == 10
    assert second["messages"][1].tool_calls[0]["args"] == {"x": 0}
    assert second["messages"][1].content[0]["text"] == "block 0"
    assert second["messages"][1].response_metadata["n"] == [0]
    assert second["log"] == [{"i": 4}] * 5


def test_value_caches_are_bounded_by_the_items_they_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation's witness and its newest list in stored form hold its objects; the
    store bounds the items all logs' caches hold together, dropping the least recently
    used log's first, and a thread whose caches were dropped still reads and writes the
    same (its next put compares encodings, and still stores a delta)."""
    from langchain_core.messages import HumanMessage

    from langgraph_jsonl_checkpoint.disk import store as store_module
    from langgraph_jsonl_checkpoint.disk.summary import ValueKind

    # each thread below caches its 1-message list twice (witness + stored form): 2 items
    monkeypatch.setattr(store_module, "WARM_ITEMS", 4)
    saver = JsonlSaver(tmp_path / "s")
    parents: dict[str, str] = {}
    for tid in ("a", "b", "c"):
        cfg = _put(saver, tid, 0, {"messages": [HumanMessage("hi", id="h0")]})
        parents[tid] = cfg["configurable"]["checkpoint_id"]

    def cached(tid: str) -> bool:
        return bool(saver.store.thread_log(tid).derived and saver.store.thread_log(tid).derived.held())

    assert saver.store.thread_log("c").derived.held() == 2
    assert [cached(t) for t in "abc"] == [False, True, True]
    saver.get_tuple({"configurable": {"thread_id": "a"}})
    assert [cached(t) for t in "abc"] == [True, False, True]
    msgs = [HumanMessage("hi", id="h0"), HumanMessage("again", id="h1")]
    _put(saver, "b", 1, {"messages": msgs}, parent=parents["b"])  # 4 items: only b stays
    assert [cached(t) for t in "abc"] == [False, True, False]
    idx = saver.store.thread_log("b").refresh()
    entry = idx.checkpoints[""][CP_IDS[1]]
    assert idx.blob("", "messages", entry.versions["messages"]).kind == ValueKind.DELTA
    assert (
        saver.get_tuple({"configurable": {"thread_id": "b"}}).checkpoint["channel_values"]["messages"] == msgs
    )
    assert (
        JsonlSaver(tmp_path / "s")
        .get_tuple({"configurable": {"thread_id": "b"}})
        .checkpoint["channel_values"]["messages"]
        == msgs
    )


def test_verify_in_a_live_process_rebuilds_from_the_records_not_from_memory(tmp_path: Path) -> None:
    """The saver keeps its newest lists in memory; verify must still rebuild every
    snapshot's values from the log's delta records, so damage to one is reported even by
    the process that wrote it."""
    from langchain_core.messages import HumanMessage

    from langgraph_jsonl_checkpoint.disk.framing import parse_line
    from langgraph_jsonl_checkpoint.maintenance.verify import verify

    # one snapshot, with the 4th checkpoint: verify rebuilds only the newest version
    saver = JsonlSaver(tmp_path / "s", snapshot_every=4, snapshot_ratio=0)
    msgs: list = []
    parent = None
    for i in range(4):
        msgs = msgs + [HumanMessage(f"m{i}", id=f"h{i}")]
        cfg = _put(saver, "t", i, {"messages": msgs}, parent=parent)
        parent = cfg["configurable"]["checkpoint_id"]
    assert not verify(saver).findings
    assert verify(saver).snapshots_checked == 1
    (log_file,) = (tmp_path / "s" / "threads").glob("*.jsonl")
    lines = log_file.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if b'"t":"checkpoint"' in line)
    rec = parse_line(lines[last][:-1])
    assert "tail" in rec["values"]["messages"]  # a delta, rebuilt only from records
    rec["values"]["messages"]["tail"]["msgs"][0]["content"] = "m9"  # same length
    lines[last] = frame(rec)
    write_in_place(str(log_file), b"".join(lines))
    findings = verify(saver).findings
    assert any("state hash does not match" in f.problem for f in findings), findings


def test_a_log_past_max_open_threads_is_let_go_with_its_caches(tmp_path: Path) -> None:
    """The value-cache budget must not hold logs the open-log bound let go (their file
    descriptors close when the last reference goes)."""
    import gc
    import weakref

    from langchain_core.messages import HumanMessage

    saver = JsonlSaver(tmp_path / "s", max_open_threads=2)
    _put(saver, "a", 0, {"messages": [HumanMessage("hi", id="h0")]})
    first = weakref.ref(saver.store.thread_log("a"))
    for tid in ("b", "c", "d"):
        _put(saver, tid, 0, {"messages": [HumanMessage("hi", id="h0")]})
    gc.collect()
    assert first() is None
    assert (
        saver.get_tuple({"configurable": {"thread_id": "a"}})
        .checkpoint["channel_values"]["messages"][0]
        .content
        == "hi"
    )


def test_a_listing_under_way_goes_on_after_the_saver_is_closed(tmp_path: Path) -> None:
    """A list() begun before close() (a history a caller was still paging through, an
    ``async with`` block that ended under it) stopped with CorruptLogError '... log
    disappeared while reading', which sends a user to repair a log that is whole. A
    closed saver opens again what it is asked for, and so does a listing under way."""
    saver = JsonlSaver(tmp_path / "s")
    ids = [_put(saver, "t", i, {"n": i}, parent=CP_IDS[i - 1] if i else None)["configurable"]["checkpoint_id"]
           for i in range(10)]
    listing = saver.list({"configurable": {"thread_id": "t"}})
    first = [next(listing) for _ in range(3)]
    saver.close()
    rest = list(listing)
    assert [t.config["configurable"]["checkpoint_id"] for t in first + rest] == ids[::-1]
    assert [t.checkpoint["channel_values"]["n"] for t in rest] == list(range(6, -1, -1))
    saver.close()

