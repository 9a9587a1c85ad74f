"""Head files: a short thread's latest checkpoint, served to a read that finds its log
not indexed in the process, only while the log holds exactly the bytes it was made from.

The tuple a head serves must be the tuple the log gives (the differential suite compares
a fresh saver's first read with InMemorySaver's for every scenario); here: when a head is
written, that every change to the log makes it stale, that damage it cannot see is still
found, and that the reads it must not serve do not get it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk import head_file
from langgraph_jsonl_checkpoint.errors import CorruptLogError
from langgraph_jsonl_checkpoint.saver import heads, reads
from tests.harness.bounded import within
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _head(store: Path, thread: str = "t") -> Path:
    return Path(ThreadFiles.of(store, thread).head)


def _fill(store: Path, thread: str = "t", n: int = 6, **kwargs: object) -> None:
    """``n`` checkpoints of a growing message list (stored as deltas), with writes."""
    saver = JsonlSaver(store, **kwargs)  # type: ignore[arg-type]
    _put_turns(saver, thread, n)
    saver.close()


def _put_turns(saver: JsonlSaver, thread: str, n: int, start: int = 1) -> None:
    parent = saver.get_tuple(config(thread))
    parent_config = parent.config if parent else config(thread)
    messages = list(parent.checkpoint["channel_values"]["messages"]) if parent else []
    for i in range(start, start + n):
        turn = [HumanMessage(f"question {i}", id=f"h{i}"), AIMessage(f"answer {i}", id=f"a{i}")]
        messages = messages + turn
        versions = {"messages": f"{i:032}.{1:016}", "step": f"{i:032}.{2:016}"}
        parent_config = saver.put(
            parent_config,
            make_checkpoint(cp_id(i), {"messages": messages, "step": {"i": i, "t": {i, -i}}}, versions),
            {"step": i, "source": "loop"}, versions,
        )
        saver.put_writes(parent_config, [("messages", [AIMessage(f"pending {i}", id=f"p{i}")]), ("step", i)],
                         f"task-{i}", f"~{i}")


def _from_the_log(store: Path, thread: str = "t") -> object:
    """The latest tuple as a saver that indexes the log gives it (the head set aside)."""
    head = _head(store, thread)
    kept = head.read_bytes() if head.exists() else None
    head.unlink(missing_ok=True)
    saver = JsonlSaver(store, read_only=True)  # writes no head of its own
    try:
        with within(10):
            return saver.get_tuple(config(thread))
    finally:
        saver.close()
        if kept is not None:
            head.write_bytes(kept)


def _served_from_head(saver: JsonlSaver, thread: str = "t") -> object:
    """A first read of the thread; asserts that the log was not indexed for it."""
    with within(10):
        tup = saver.get_tuple(config(thread))
    assert not saver.store.thread_log(thread).exists(), "the log was indexed: the head was not used"
    return tup


def test_close_writes_the_head_and_a_fresh_saver_serves_it_without_indexing_the_log(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    assert _head(store).exists()
    expected = _from_the_log(store)
    saver = JsonlSaver(store)
    got = _served_from_head(saver)
    assert got == expected
    assert got.pending_writes and got.checkpoint["channel_values"]["step"]["t"] == {6, -6}  # type: ignore[attr-defined]
    assert type(got.checkpoint["channel_values"]["messages"][-1]) is AIMessage  # type: ignore[attr-defined]
    # Each read decodes afresh: changing one result changes no later one.
    got.checkpoint["channel_values"]["messages"].append(HumanMessage("changed"))  # type: ignore[attr-defined]
    got.metadata["step"] = -1  # type: ignore[attr-defined]
    assert _served_from_head(saver) == expected
    saver.close()


def test_a_log_let_go_from_the_open_set_gets_its_head(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, max_open_threads=1)
    _put_turns(saver, "a", 3)
    assert not _head(store, "a").exists()  # still open
    _put_turns(saver, "b", 3)
    _put_turns(saver, "c", 3)  # "a" and "b" let go
    assert _head(store, "a").exists() and _head(store, "b").exists()
    saver.close()
    fresh = JsonlSaver(store)
    for thread in "abc":
        assert _served_from_head(fresh, thread) == _from_the_log(store, thread)
    fresh.close()


def _appended_by_another_saver(store: Path, append: Callable[[JsonlSaver], object]) -> None:
    """``append`` through another saver, leaving the head file as it was before (as if
    that saver had written none: an older release, or one killed before its let-go)."""
    old_head = _head(store).read_bytes()
    other = JsonlSaver(store)
    append(other)
    other.close()
    _head(store).write_bytes(old_head)


def test_an_append_by_another_saver_makes_the_head_stale(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    _appended_by_another_saver(store, lambda other: _put_turns(other, "t", 1, start=7))
    saver = JsonlSaver(store)
    got = saver.get_tuple(config("t"))
    assert got is not None and got.config["configurable"]["checkpoint_id"] == cp_id(7)
    assert saver.store.thread_log("t").exists()  # indexed: the head named other bytes
    saver.close()


def test_a_pending_write_appended_after_the_head_is_served(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)

    def late_write(other: JsonlSaver) -> None:
        latest = other.get_tuple(config("t"))
        assert latest is not None
        other.put_writes(latest.config, [("step", 99)], "late-task", "~late")

    _appended_by_another_saver(store, late_write)
    got = JsonlSaver(store).get_tuple(config("t"))
    assert got is not None and ("late-task", "step", 99) in got.pending_writes  # type: ignore[operator]


@pytest.mark.parametrize("damage", ["torn", "other-thread", "garbage", "newer-version"])
def test_a_damaged_or_foreign_head_is_ignored(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "s"
    _fill(store)
    _fill(store, "u", n=2)
    expected = _from_the_log(store)
    head = _head(store)
    if damage == "torn":
        record_line = head.read_bytes().split(b"\n")[0]
        head.write_bytes(record_line[: len(record_line) // 2])
    elif damage == "other-thread":
        head.write_bytes(_head(store, "u").read_bytes())
    elif damage == "garbage":
        head.write_bytes(b"not a head\n")
    else:
        record = json.loads(head.read_bytes().split(b"\n")[0])
        record.pop("c")
        record["v"] = head_file.HEAD_VERSION + 1
        from langgraph_jsonl_checkpoint.disk import framing

        head.write_bytes(framing.frame(record))
    saver = JsonlSaver(store)
    with within(10):
        assert saver.get_tuple(config("t")) == expected
    assert saver.store.thread_log("t").exists()
    saver.close()


def test_damage_inside_the_log_is_still_found(tmp_path: Path) -> None:
    """A byte changed in a record the latest checkpoint does not need leaves the size and
    the last record as they were; the head names the log's CRC, so it is not used and
    the read reports the damage as it did before heads."""
    store = tmp_path / "s"
    _fill(store)
    log = Path(ThreadFiles.of(store, "t").log)
    data = bytearray(log.read_bytes())
    at = data.index(b"question 2")
    data[at] = ord("Q")
    with open(log, "r+b") as f:  # same inode, same size
        f.write(bytes(data))
    with pytest.raises(CorruptLogError):
        JsonlSaver(store).get_tuple(config("t"))


def test_a_log_rewritten_by_compaction_is_indexed_and_gets_a_new_head(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    saver = JsonlSaver(store)
    before = saver.get_tuple(config("t"))
    saver.compact("t")
    saver.close()
    expected = _from_the_log(store)
    assert expected == before
    fresh = JsonlSaver(store)
    assert _served_from_head(fresh) == expected
    fresh.close()


def test_reads_a_head_must_not_serve_index_the_log(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    saver = JsonlSaver(store)
    named = saver.get_tuple(config("t", checkpoint_id=cp_id(6)))
    assert named is not None and saver.store.thread_log("t").exists()
    saver.close()
    saver = JsonlSaver(store)
    assert saver.get_tuple(config("t", ns="child")) is None
    assert saver.store.thread_log("t").exists()
    saver.close()


def test_a_read_only_saver_reads_heads_and_writes_none(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    expected = _from_the_log(store)
    saver = JsonlSaver(store, read_only=True)
    assert _served_from_head(saver) == expected
    saver.close()
    _head(store).unlink()
    saver = JsonlSaver(store, read_only=True)
    assert saver.get_tuple(config("t")) == expected
    saver.close()
    assert not _head(store).exists()


def test_no_head_for_a_log_over_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s"
    _fill(store, n=2)
    assert _head(store).exists()
    monkeypatch.setattr(heads, "HEAD_LOG_BYTES", os.path.getsize(ThreadFiles.of(store, "t").log) + 100)
    saver = JsonlSaver(store)
    _put_turns(saver, "t", 2, start=3)  # outgrows the bound
    saver.close()
    assert not _head(store).exists()  # the stale head is removed, none written


def test_a_log_deleted_by_another_saver_gets_no_head_from_one_that_still_holds_it(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    holder = JsonlSaver(store)
    assert holder.get_tuple(config("t", checkpoint_id=cp_id(6))) is not None  # indexed: open
    other = JsonlSaver(store)
    other.delete_thread("t")
    other.close()
    assert not _head(store).exists()
    holder.close()  # lets its log go: the file it indexed is gone
    assert not _head(store).exists()
    assert not JsonlSaver(store).store.has_files("t")


def test_a_head_rewritten_in_place_is_whole_and_replaces_a_longer_one(tmp_path: Path) -> None:
    """The head is written over the one before (no new file, no rename): what was longer
    is cut to the new record, and a second saver serves the new head."""
    store = tmp_path / "s"
    _fill(store, n=2)
    old = _head(store).read_bytes()
    _head(store).write_bytes(old + b" " * 50_000)  # longer than any head written next
    saver = JsonlSaver(store, max_open_threads=1)
    _put_turns(saver, "t", 1, start=3)
    _put_turns(saver, "u", 1)  # "t" let go: its head written again
    assert _head(store).stat().st_size < len(old) + 1_000
    assert _served_from_head(JsonlSaver(store)) == _from_the_log(store)
    saver.close()


def test_a_link_where_the_head_goes_is_replaced_not_written_through(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store, n=2)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"not the store's\n")
    _head(store).unlink()
    _head(store).symlink_to(elsewhere)
    saver = JsonlSaver(store, max_open_threads=1)
    _put_turns(saver, "t", 1, start=3)
    _put_turns(saver, "u", 1)  # "t" let go: its head written
    assert elsewhere.read_bytes() == b"not the store's\n"
    assert not _head(store).is_symlink()
    assert _served_from_head(JsonlSaver(store)) == _from_the_log(store)
    saver.close()


def test_delete_thread_removes_the_head(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    saver = JsonlSaver(store)
    saver.delete_thread("t")
    assert not _head(store).exists()
    assert saver.get_tuple(config("t")) is None
    saver.close()


def test_an_encrypted_store_keeps_its_values_encrypted_in_the_head(tmp_path: Path) -> None:
    pytest.importorskip("Crypto")
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16)
    store = tmp_path / "s"
    _fill(store, serde=serde)
    assert b"question" not in _head(store).read_bytes()
    saver = JsonlSaver(store, serde=serde)
    got = _served_from_head(saver)
    assert got.checkpoint["channel_values"]["messages"][-1].content == "answer 6"  # type: ignore[attr-defined]
    saver.close()


def test_a_fresh_process_reads_the_same_tuple_from_the_head(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _fill(store)
    expected = _from_the_log(store)
    code = (
        "import sys; from langgraph_jsonl_checkpoint import JsonlSaver\n"
        "s = JsonlSaver(sys.argv[1]); t = s.get_tuple({'configurable': {'thread_id': 't'}})\n"
        "assert not s.store.thread_log('t').exists()\n"
        "print(repr(t))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(store)], capture_output=True, text=True, timeout=60,
                         cwd=os.getcwd())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr(expected)


def test_verify_reports_a_current_head_that_disagrees_with_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    _fill(store)
    assert main(["verify", str(store)]) == 0
    head = _head(store)
    record = json.loads(head.read_bytes().split(b"\n")[0])
    record.pop("c")
    record["md"] = {"json": {"step": 1, "source": "forged"}}
    from langgraph_jsonl_checkpoint.disk import framing

    head.write_bytes(framing.frame(record))  # still names the log's bytes
    capsys.readouterr()
    assert main(["verify", str(store)]) != 0
    assert str(head) in capsys.readouterr().out
    # And a read serves what the head says (that is why verify checks it).
    saver = JsonlSaver(store, read_only=True)
    assert reads.head_tuple(saver.store.thread_log("t"), saver.codec) is not None
    saver.close()


def _cut_last_record(store: Path, thread: str = "t") -> None:
    """The log loses its last line (same file, same inode); its sidecar, written by the
    last close, still says that record was durable."""
    log = Path(ThreadFiles.of(store, thread).log)
    lines = log.read_bytes().splitlines(keepends=True)
    with open(log, "r+b") as f:
        f.truncate(sum(map(len, lines[:-1])))


@pytest.mark.parametrize("way", ["read", "compact"])
def test_a_log_refused_as_cut_gets_no_head_and_stays_refused(tmp_path: Path, way: str) -> None:
    """A log that holds fewer records than its index says were durable is refused; a
    saver that found it so must not write a head for the bytes that are left, or the
    next process would be served an older checkpoint, silently, from it."""
    store = tmp_path / "s"
    _fill(store)
    _cut_last_record(store)
    saver = JsonlSaver(store)
    with pytest.raises(CorruptLogError, match="durable"), within(10):
        if way == "read":
            saver.get_tuple(config("t"))
        else:
            saver.compact("t")
    paths = saver.store.log_paths("t")
    saver.close()
    assert head_file.read_head(paths, "t") is None  # no head names the bytes left
    for _ in range(2):  # every later process too
        fresh = JsonlSaver(store)
        with pytest.raises(CorruptLogError, match="durable"), within(10):
            fresh.get_tuple(config("t"))
        fresh.close()


def test_a_fifo_where_the_head_goes_is_replaced_without_waiting_for_a_reader(tmp_path: Path) -> None:
    """Opening a FIFO for writing waits for a reader: the head's writer, which runs as a
    run ends, must not. It replaces the FIFO with the head file."""
    store = tmp_path / "s"
    _fill(store, n=2)
    _head(store).unlink()
    os.mkfifo(_head(store))
    saver = JsonlSaver(store, max_open_threads=1)
    with within(20, "a let-go writing the head where a FIFO is"):
        _put_turns(saver, "t", 1, start=3)
        _put_turns(saver, "u", 1)  # "t" let go: its head written
    assert _head(store).is_file()
    assert _served_from_head(JsonlSaver(store)) == _from_the_log(store)
    saver.close()
