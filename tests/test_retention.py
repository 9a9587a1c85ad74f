"""Retention on stores made by real graph runs: sweep (delete, keep_latest, archive),
pinned and live threads, restore (with the thread's debug trace and quarantine file,
and from an archive of a release that kept the log only), DeltaChannel threads, the
policy and the CLI.

The oracle for what a kept or restored thread serves is the thread itself before the
sweep (``answers``: every checkpoint of every namespace with its writes) and, for
``keep_latest``, ``InMemorySaver`` fed the same runs and pruned the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import (
    ConfigError,
    CorruptLogError,
    ForeignFileError,
    JsonlSaver,
    JsonlTracer,
    RestoreError,
    ThreadBusyError,
)
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk import companions
from langgraph_jsonl_checkpoint.disk.archive import ThreadArchive
from langgraph_jsonl_checkpoint.disk.paths import LogPaths
from langgraph_jsonl_checkpoint.disk.runlock import MAINTENANCE
from langgraph_jsonl_checkpoint.maintenance.restore import restore
from langgraph_jsonl_checkpoint.maintenance.retention import RetentionPolicy, ttl_from_environment
from tests.harness.answers import answers, diff_answers, mem_prune_keep_latest
from tests.harness.bounded import within
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.state_graphs import build_delta_graph

HOUR = 3600.0
DATA = Path(__file__).parent / "data"


def _cfg(tid: str, **metadata: object) -> dict:
    return {"configurable": {"thread_id": tid}, "metadata": metadata}


def _age(saver: JsonlSaver, tid: str, seconds: float) -> None:
    """Make a thread look idle for ``seconds`` (its log's modification time)."""
    path = saver.store.thread_log(tid).path
    t = time.time() - seconds
    os.utime(path, (t, t))


def _store_of_agents(path: Path, threads: dict[str, dict]) -> tuple[JsonlSaver, InMemorySaver]:
    """Threads of two agent turns each (``threads``: id -> run metadata), run on a
    JsonlSaver and, the same way, on an InMemorySaver."""
    saver = JsonlSaver(path)
    mem = InMemorySaver()
    for checkpointer in (saver, mem):
        graph = build_agent_graph().compile(checkpointer=checkpointer)
        for tid, metadata in threads.items():
            for turn in range(2):
                msg = HumanMessage(f"what is {turn} + 2?", id=f"{tid}-h{turn}")
                graph.invoke({"messages": [msg]}, _cfg(tid, **metadata))
    return saver, mem


def test_a_state_edit_that_does_not_say_leaves_the_pin_as_the_run_set_it(tmp_path: Path) -> None:
    # The LangGraph server's update_state (and update_state without metadata) writes a
    # checkpoint without the thread's metadata: the run before it pinned the thread, and
    # the edit must not unpin it. A checkpoint that says "pinned": false does unpin it.
    saver, _ = _store_of_agents(tmp_path / "s", {"edited": {"pinned": True}, "unpinned": {"pinned": True}})
    graph = build_agent_graph().compile(checkpointer=saver)
    graph.update_state(_cfg("edited"), {"messages": [HumanMessage("edited", id="e1")]})
    graph.update_state(_cfg("edited", note="no pin"), {"messages": [HumanMessage("again", id="e2")]})
    graph.update_state(_cfg("unpinned", pinned=False), {"messages": [HumanMessage("unpin", id="u1")]})
    graph.update_state(_cfg("unpinned"), {"messages": [HumanMessage("edited", id="u2")]})
    before = answers(saver, "edited")
    for tid in ("edited", "unpinned"):
        _age(saver, tid, 2 * HOUR)

    dry = saver.sweep({"default_ttl": 60, "strategy": "delete"}, dry_run=True)
    report = saver.sweep({"default_ttl": 60, "strategy": "delete"})

    assert dry.pinned == report.pinned == ["edited"]
    assert dry.swept == report.swept == [("unpinned", "delete")]
    assert not diff_answers(answers(saver, "edited"), before)
    saver.close()


def test_a_pin_given_as_text_means_what_it_says(tmp_path: Path) -> None:
    """Metadata from a form, an environment variable or an HTTP query is text: a thread
    run with ``"pinned": "false"`` was pinned (``bool("false")``) and never expired."""
    threads = {"text-false": {"pinned": "false"}, "text-no": {"pinned": " No "},
               "text-true": {"pinned": "true"}, "zero": {"pinned": 0}}
    saver, _ = _store_of_agents(tmp_path / "s", threads)
    for tid in threads:
        _age(saver, tid, 2 * HOUR)
    report = saver.sweep({"default_ttl": 60, "strategy": "delete"})
    assert report.pinned == ["text-true"]
    assert sorted(report.swept) == [("text-false", "delete"), ("text-no", "delete"), ("zero", "delete")]
    saver.close()


def test_the_sweep_limit_s_remainder_is_not_promised_to_the_next_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``sweep_limit`` 1, three expired threads and one of them pinned, the CLI said
    "2 left for the next sweep": the threads past the limit are not looked at, so a
    pinned one is counted among them, and the next sweep keeps it."""
    saver, _ = _store_of_agents(tmp_path / "s", {"a": {}, "b": {"pinned": True}, "c": {}})
    for tid in ("a", "b", "c"):
        _age(saver, tid, 2 * HOUR)
    saver.close()
    monkeypatch.setenv("LANGGRAPH_JSONL_TTL", '{"default_ttl": 60, "strategy": "delete", "sweep_limit": 1}')
    assert main(["sweep", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "left for the next sweep" not in out
    assert "2 expired thread(s) not looked at (sweep_limit 1 reached; the next sweep looks at them)" in out


@pytest.mark.parametrize("strategy", ["delete", "keep_latest", "archive"])
def test_expired_threads_go_pinned_and_active_ones_stay(tmp_path: Path, strategy: str) -> None:
    threads = {"old": {}, "old-2": {}, "pinned": {"pinned": True}, "new": {}}
    saver, mem = _store_of_agents(tmp_path / "s", threads)
    before = {tid: answers(saver, tid) for tid in ("old", "old-2", "pinned", "new")}
    for tid in ("old", "old-2", "pinned"):
        _age(saver, tid, 2 * HOUR)

    report = saver.sweep({"default_ttl": 60, "strategy": strategy})

    assert sorted(report.swept) == [("old", strategy), ("old-2", strategy)]
    assert report.pinned == ["pinned"] and report.active == 1 and not report.errors
    for tid in ("pinned", "new"):  # untouched: every checkpoint and write as before
        assert not diff_answers(answers(saver, tid), before[tid]), tid
    fresh = JsonlSaver(tmp_path / "s")  # and as another process sees it
    for tid in ("old", "old-2"):
        if strategy == "keep_latest":
            mem_prune_keep_latest(mem, tid)  # ids differ between the two runs: compare the rest
            got, want = answers(fresh, tid)["list"], answers(mem, tid)["list"]
            assert len(got) == len(want) == 1
            ((g,), (w,)) = got.values(), want.values()
            assert g.checkpoint["channel_values"] == w.checkpoint["channel_values"]
            assert (g.metadata["step"], g.metadata["source"]) == (w.metadata["step"], w.metadata["source"])
            assert g.pending_writes == w.pending_writes == []
        else:
            assert fresh.get_tuple(_cfg(tid)) is None
            assert not fresh.store.has_thread(tid)
    archived = sorted(a.thread_id for a in fresh.archived())
    assert archived == (["old", "old-2"] if strategy == "archive" else [])
    assert not os.listdir(tmp_path / "s" / "tmp")
    fresh.close()
    saver.close()


def test_archive_and_restore_round_trip_equal_the_original(tmp_path: Path) -> None:
    saver, _ = _store_of_agents(tmp_path / "s", {"t-1": {}, "t-2": {}})
    before = answers(saver, "t-1")
    log_bytes = Path(saver.store.thread_log("t-1").path).read_bytes()
    report = saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    assert sorted(t for t, _ in report.swept) == ["t-1", "t-2"]
    (entry,) = saver.archived("t-1")
    assert entry.path.endswith(".jsonl.zst") and entry.size < len(log_bytes)

    # A late write for an archived checkpoint is refused like one for a deleted thread.
    graph = build_agent_graph().compile(checkpointer=saver)
    assert graph.get_state({"configurable": {"thread_id": "t-1"}}).values == {}

    restored = JsonlSaver(tmp_path / "s").restore("t-1")
    assert restored.path == entry.path and not os.path.exists(entry.path)
    fresh = JsonlSaver(tmp_path / "s")
    assert not diff_answers(answers(fresh, "t-1"), before)
    assert Path(fresh.store.thread_log("t-1").path).read_bytes() == log_bytes
    assert saver.get_tuple({"configurable": {"thread_id": "t-1"}}) == fresh.get_tuple(
        {"configurable": {"thread_id": "t-1"}}
    )  # the first saver (its log object cached) sees it back at once
    # ... and the graph continues where it stopped.
    graph.invoke({"messages": [HumanMessage("what is 5 + 2?", id="h5")]}, _cfg("t-1"))
    assert len(list(fresh.list({"configurable": {"thread_id": "t-1"}}))) > len(before["list"])

    with pytest.raises(RestoreError, match="thread 't-1' is in the store .*no archive left to restore"):
        fresh.restore("t-1")
    fresh.close()
    saver.close()


def _traced_turns(saver: JsonlSaver, tid: str, turns: int, *, first: int = 0) -> None:
    """``turns`` agent turns on ``tid`` with a ``JsonlTracer`` rotating at 1 KiB (so the
    trace spans the current file and rotated ones)."""
    tracer = JsonlTracer(saver, max_bytes=1024)
    graph = build_agent_graph().compile(checkpointer=saver)
    for turn in range(first, first + turns):
        msg = HumanMessage(f"what is {turn} + 2?", id=f"{tid}-h{turn}")
        graph.invoke({"messages": [msg]}, {**_cfg(tid), "callbacks": [tracer]})
    tracer.close()


def _own_files(paths: LogPaths) -> dict[str, bytes]:
    """A thread's trace files and quarantine file that exist, by name, with their bytes."""
    return {os.path.basename(p): Path(p).read_bytes()
            for p in (*paths.trace_files(), paths.quarantine) if os.path.exists(p)}


def test_archive_and_restore_bring_back_the_trace_and_the_quarantine_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    _traced_turns(saver, "t-1", 3)
    _traced_turns(saver, "t-2", 1)
    paths = saver.store.thread_log("t-1").paths
    with open(paths.log, "ab") as f:  # a torn tail: the next append cuts it into quarantine
        f.write(b'{"t":"checkpoint","ns":"","id":"torn')
    _traced_turns(saver, "t-1", 1, first=3)
    kept, other = _own_files(paths), _own_files(saver.store.thread_log("t-2").paths)
    assert set(kept) == {os.path.basename(p) for p in (*paths.trace_files(), paths.quarantine)}
    assert main(["trace", str(store), "t-1", "--json"]) == 0
    timeline = capsys.readouterr().out
    before = answers(saver, "t-1")

    report = saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    assert sorted(t for t, _ in report.swept) == ["t-1", "t-2"] and not report.errors
    assert _own_files(paths) == {}  # nothing of the thread left beside the live ones
    assert not any(b"torn" in p.read_bytes() for p in (store / "threads").iterdir() if p.is_file())

    saver.restore("t-1")
    assert _own_files(paths) == kept  # byte for byte
    assert not diff_answers(answers(saver, "t-1"), before)
    assert main(["trace", str(store), "t-1", "--json"]) == 0
    assert capsys.readouterr().out == timeline
    assert not list((store / "archive").glob(paths.name + ".*"))
    assert _own_files(saver.store.thread_log("t-2").paths) == {}  # still archived
    saver.restore("t-2")
    assert _own_files(saver.store.thread_log("t-2").paths) == other
    assert not os.listdir(store / "archive") and not os.listdir(store / "tmp")
    saver.close()


def test_a_swept_delete_removes_the_trace_as_delete_thread_does(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    paths = saver.store.thread_log("t").paths
    assert _own_files(paths)
    report = saver.sweep({"default_ttl": 0, "strategy": "delete"}, now=time.time() + HOUR)
    assert report.swept == [("t", "delete")]
    assert _own_files(paths) == {} and not os.path.exists(tmp_path / "s" / "archive")
    saver.close()


def test_a_second_restore_says_the_thread_is_back_already(tmp_path: Path) -> None:
    """Restoring a thread restored already said the store "has no archive of thread",
    as for a typo, though the thread is right there."""
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    saver.restore("t")
    with pytest.raises(RestoreError, match=r"thread 't' is in the store \(its log is .*\.jsonl\)"
                                           r": it has no archive left to restore"):
        saver.restore("t")
    with pytest.raises(RestoreError, match="has no archive of thread 'typo'"):
        saver.restore("typo")
    saver.close()


def test_restore_refuses_a_thread_started_anew(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 2)
    paths = saver.store.thread_log("t").paths
    archived_trace = _own_files(paths)
    before = answers(saver, "t")
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    _traced_turns(saver, "t", 1, first=9)  # a run starts the thread anew, traced
    new_trace = _own_files(paths)
    assert new_trace and new_trace != archived_trace
    with pytest.raises(RestoreError, match="has a log again"):
        saver.restore("t")
    assert len(saver.archived("t")) == 1  # kept
    assert _own_files(paths) == new_trace  # the new thread's trace is its own, untouched

    saver.delete_thread("t")  # the new thread goes (its trace with it): the old one comes back
    saver.restore("t")
    assert _own_files(paths) == archived_trace
    assert not diff_answers(answers(saver, "t"), before)
    saver.close()


def test_restore_of_a_thread_started_anew_says_how_to_keep_or_remove_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI has no delete command: the refusal names the commands that get past it."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    _traced_turns(saver, "t", 2)
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    _traced_turns(saver, "t", 1, first=9)
    saver.close()
    assert main(["restore", str(store), "--thread", "t"]) == 2
    err = capsys.readouterr().err
    assert f"langgraph-jsonl copy {store} OTHER_STORE --threads t" in err, err
    assert f"JsonlSaver({str(store)!r}).delete_thread('t')" in err, err
    with JsonlSaver(store) as saver:  # following it
        saver.delete_thread("t")
    assert main(["restore", str(store), "--thread", "t"]) == 0


def test_restore_refuses_while_a_trace_was_written_after_archiving(tmp_path: Path) -> None:
    """A traced run that saved no checkpoint of the thread (its graph has another
    checkpointer) leaves a trace but no log: restoring would overwrite it."""
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    paths = saver.store.thread_log("t").paths
    archived_trace = _own_files(paths)
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    tracer = JsonlTracer(saver)
    build_agent_graph().compile(checkpointer=InMemorySaver()).invoke(
        {"messages": [HumanMessage("what is 1 + 2?", id="x")]}, {**_cfg("t"), "callbacks": [tracer]})
    tracer.close()
    stray = _own_files(paths)
    assert stray and not saver.store.has_thread("t")
    with pytest.raises(RestoreError, match="move or delete them"):
        saver.restore("t")
    assert _own_files(paths) == stray and len(saver.archived("t")) == 1 and not saver.store.has_thread("t")
    for p in paths.trace_files():
        if os.path.exists(p):
            os.unlink(p)
    saver.restore("t")
    assert _own_files(paths) == archived_trace
    saver.close()


def _tree(path: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``path``: its bytes and modification time."""
    return {str(p.relative_to(path)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_dry_restore_predicts_the_restore_of_an_archiving_a_crash_cut_short(tmp_path: Path) -> None:
    """A crash after the log moved to ``.swept``, before its trace left its place: the
    restore settles first (the trace copy goes, the log is compressed) and succeeds. Its
    dry run, on a writable saver, says so (the copy is not a file in the way) and
    writes nothing."""
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 2)
    paths = saver.store.thread_log("t").paths
    archived_trace = {p: Path(p).read_bytes() for p in paths.trace_files() if os.path.exists(p)}
    assert archived_trace
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    (entry,) = saver.archived("t")
    moved = Path(entry.path[: -len(".jsonl.zst")] + ".jsonl.swept")
    moved.write_bytes(ThreadArchive(saver.store).read(entry))  # as the crash left it
    os.unlink(entry.path)
    for p, data in archived_trace.items():
        Path(p).write_bytes(data)
    files = _tree(tmp_path / "s")

    dry = restore(saver, "t", dry_run=True)
    assert saver.restore("t", dry_run=True) == dry.archive  # the saver's method, dry
    assert _tree(tmp_path / "s") == files
    assert (dry.archive.path, dry.log, dry.dry_run) == (str(moved), paths.log, True)
    real = restore(saver, "t")
    assert (real.log, real.companions, real.dry_run) == (dry.log, dry.companions, False)
    assert sorted(real.companions) == sorted(archived_trace)
    assert {p: Path(p).read_bytes() for p in real.companions} == archived_trace
    saver.close()


def test_a_dry_restore_is_refused_while_a_run_works_on_the_thread(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    held = saver.store.run_lock("t")
    assert held.try_acquire("a run")
    try:
        for dry_run in (True, False):
            with pytest.raises(RestoreError, match="thread 't': a run is working on it"):
                restore(saver, "t", dry_run=dry_run)
    finally:
        held.release()
    assert restore(saver, "t", dry_run=True).dry_run
    saver.close()


def test_an_archive_of_the_log_alone_still_restores(tmp_path: Path) -> None:
    """``tests/data/archive-v1``: archived by a release whose archive held the log only
    (the thread's trace was dropped); it restores as it did, with no trace."""
    sys.path.insert(0, str(DATA))
    import make_archive_v1 as v1

    store = tmp_path / "archive-v1"
    shutil.copytree(DATA / "archive-v1", store)
    saver = JsonlSaver(store)
    (entry,) = saver.archived(v1.THREAD)
    log_bytes = ThreadArchive(saver.store).read(entry)
    saver.restore(v1.THREAD)
    paths = saver.store.thread_log(v1.THREAD).paths
    assert Path(paths.log).read_bytes() == log_bytes and _own_files(paths) == {}
    assert not os.listdir(store / "archive")
    graph = build_agent_graph().compile(checkpointer=saver)
    assert graph.get_state(_cfg(v1.THREAD)).values["messages"][-1].content == v1.LAST_REPLY
    saver.close()


def _damage(path: str, how: str) -> None:
    """Damage an archive file: a byte flipped mid-file, or its last bytes cut off."""
    data = bytearray(Path(path).read_bytes())
    if how == "flipped":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[-8:]
    Path(path).write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["flipped", "cut short"])
def test_a_damaged_archive_is_refused_and_kept(tmp_path: Path, how: str) -> None:
    """An archive under the 64 KiB of head that listing reads, damaged: it was said to be
    "not an archived thread log of this store... Move it out"; it is listed as the
    thread's (from the file name: the thread asked for, or the thread's tombstone), and
    refused as damaged, naming the thread and the file, by a restore and its dry run."""
    saver, _ = _store_of_agents(tmp_path / "s", {"t": {}, "u": {}})
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    (entry,) = saver.archived("t")
    assert os.path.getsize(entry.path) < 64 * 1024
    _damage(entry.path, how)
    before = sorted(os.listdir(tmp_path / "s" / "archive"))
    assert [(e.thread_id, e.path, e.archived_at) for e in saver.archived("t")] == [
        (entry.thread_id, entry.path, entry.archived_at)]
    assert sorted(e.thread_id for e in saver.archived()) == ["t", "u"]
    for dry_run in (True, False):
        with pytest.raises(CorruptLogError) as caught:
            saver.restore("t", dry_run=dry_run)
        said = str(caught.value)
        assert said.startswith(f"thread 't': archive {entry.path} is damaged ("), said
        assert "nothing was changed" in said and "from a backup" in said and "Move it out" not in said
    assert sorted(os.listdir(tmp_path / "s" / "archive")) == before and not saver.store.has_thread("t")
    saver.restore("u")  # the other thread's archive is whole
    assert saver.store.has_thread("u")
    os.unlink(saver.store.log_paths("t").tombstone)  # the file name alone does not tell the thread
    with pytest.raises(CorruptLogError, match=f"^archive {entry.path} is damaged .* nothing was changed"):
        saver.archived()
    assert [e.path for e in saver.archived("t")] == [entry.path]  # the thread asked for: it tells
    saver.close()


@pytest.mark.parametrize("content", [b"not zstd at all\n", b"zstd, not a log\n"])
def test_a_foreign_file_in_the_archive_is_said_to_be_foreign(tmp_path: Path, content: bytes) -> None:
    """A file named as an archive that is not zstd, or a whole zstd frame that holds no
    log of this store: not ours (not damaged)."""
    import zstandard

    saver, _ = _store_of_agents(tmp_path / "s", {"t": {}})
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    (entry,) = saver.archived("t")
    data = zstandard.ZstdCompressor().compress(content) if content.startswith(b"zstd") else content
    Path(entry.path).write_bytes(data)
    for call in (saver.archived, lambda: saver.restore("t", dry_run=True), lambda: saver.restore("t")):
        with pytest.raises(ForeignFileError, match="is not an archived thread log of this store"):
            call()
    saver.close()


def test_a_damaged_companions_file_is_refused_and_kept(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    paths = saver.store.thread_log("t").paths
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    (companions_file,) = (tmp_path / "s" / "archive").glob("*.companions.zst")
    data = bytearray(companions_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    companions_file.write_bytes(bytes(data))
    before = sorted(os.listdir(tmp_path / "s" / "archive"))
    for dry_run in (True, False):  # the refusal names the thread, as a damaged log's does
        with pytest.raises(CorruptLogError) as refused:
            saver.restore("t", dry_run=dry_run)
        assert str(refused.value).startswith(
            f"thread 't': companions file {companions_file} is damaged"), refused.value
    assert sorted(os.listdir(tmp_path / "s" / "archive")) == before  # nothing changed
    assert not saver.store.has_thread("t") and _own_files(paths) == {}
    companions_file.unlink()  # as the message says: the thread comes back without them
    saver.restore("t")
    assert saver.store.has_thread("t") and _own_files(paths) == {}
    saver.close()


def test_the_companions_format_round_trips_and_refuses_what_is_cut_short() -> None:
    own = {"traces/t-1.jsonl": b'{"ev":"start"}\n' * 3, "threads/t-1.quarantine": b"", "x": b"\n\n"}
    packed = companions.pack("t 1", own)
    assert companions.unpack(packed) == ("t 1", own)
    assert companions.thread_in(packed[:40]) is None and companions.thread_in(packed[:60]) == "t 1"
    assert companions.unpack(companions.pack("t", {})) == ("t", {})
    for cut in (len(packed) - 1, len(packed) - 5, packed.index(b"\n") + 3):
        with pytest.raises(ValueError, match="offset|cut short"):
            companions.unpack(packed[:cut])


@pytest.mark.parametrize("strategy", ["keep_latest", "archive"])
def test_delta_channel_threads_stay_whole(tmp_path: Path, strategy: str) -> None:
    saver = JsonlSaver(tmp_path / "s")
    mem = InMemorySaver()
    for cp in (saver, mem):
        graph = build_delta_graph().compile(checkpointer=cp)
        graph.invoke({"n": 0, "target": 16}, {"configurable": {"thread_id": "d"}})
    want = build_delta_graph().compile(checkpointer=mem).get_state(_cfg("d")).values
    before = answers(saver, "d")
    saver.sweep({"default_ttl": 0, "strategy": strategy}, now=time.time() + HOUR)
    if strategy == "archive":
        saver.restore("d")
        assert not diff_answers(answers(saver, "d"), before)
    fresh = JsonlSaver(tmp_path / "s")
    graph = build_delta_graph().compile(checkpointer=fresh)
    assert graph.get_state({"configurable": {"thread_id": "d"}}).values == want
    # The thread runs on as it does on InMemorySaver.
    for cp in (fresh, mem):
        build_delta_graph().compile(checkpointer=cp).invoke({"target": 22}, _cfg("d"))
    want = build_delta_graph().compile(checkpointer=mem).get_state(_cfg("d")).values
    assert graph.get_state(_cfg("d")).values == want
    fresh.close()
    saver.close()


def _blocked_run(
    saver: JsonlSaver, tid: str, inside: threading.Event, release: threading.Event
) -> threading.Thread:
    """A real graph run on ``tid`` that waits inside its node until ``release``."""
    from langgraph.graph import START, MessagesState, StateGraph

    def node(state: MessagesState) -> dict:
        inside.set()
        release.wait(30)
        return {"messages": [("ai", "done")]}

    g = StateGraph(MessagesState)
    g.add_node("n", node)
    g.add_edge(START, "n")
    graph = g.compile(checkpointer=saver)
    t = threading.Thread(target=graph.invoke, args=({"messages": [("user", "go")]}, _cfg(tid)))
    t.start()
    return t


@pytest.mark.parametrize("mode", ["refuse", "hold"])
def test_a_sweep_never_touches_a_thread_with_a_live_run(tmp_path: Path, mode: str) -> None:
    saver, _ = _store_of_agents(tmp_path / "s", {"busy": {}, "idle": {}})
    runner = JsonlSaver(tmp_path / "s", concurrent_runs=mode)
    inside, release = threading.Event(), threading.Event()
    run = _blocked_run(runner, "busy", inside, release)
    try:
        assert inside.wait(30)
        sweeper = JsonlSaver(tmp_path / "s")
        dry = sweeper.sweep({"default_ttl": 0, "strategy": "delete"}, now=time.time() + HOUR, dry_run=True)
        assert dry.live == ["busy"] and dry.swept == [("idle", "delete")]
        report = sweeper.sweep({"default_ttl": 0, "strategy": "delete"}, now=time.time() + HOUR)
        assert report.live == ["busy"] and report.swept == [("idle", "delete")]
        assert sweeper.store.has_thread("busy")
    finally:
        release.set()
        run.join(30)
    latest = runner.get_tuple(_cfg("busy")).checkpoint["channel_values"]["messages"]
    assert latest[-1].content == "done"
    runner.close()
    saver.close()


def test_a_run_waits_out_a_sweep_instead_of_being_refused(tmp_path: Path) -> None:
    saver, _ = _store_of_agents(tmp_path / "s", {"t": {}})
    graph = build_agent_graph().compile(checkpointer=JsonlSaver(tmp_path / "s"))  # "refuse"
    held = saver.store.run_lock("t")
    assert held.try_acquire(MAINTENANCE)  # what a sweep holds while it works on a thread
    threading.Timer(0.5, held.release).start()
    started = time.monotonic()
    with within(30):
        graph.invoke({"messages": [HumanMessage("what is 1 + 1?", id="x")]}, _cfg("t"))
    assert time.monotonic() - started >= 0.45
    # Another run holding it is still refused at once.
    other = saver.store.run_lock("t")
    assert other.try_acquire("someone else")
    try:
        with pytest.raises(ThreadBusyError):
            graph.invoke({"messages": [HumanMessage("what is 1 + 2?", id="y")]}, _cfg("t"))
    finally:
        other.release()
    saver.close()


def test_hold_never_refuses_and_goes_ahead_after_busy_timeout(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", concurrent_runs="hold", busy_timeout=0.3)
    inside, release = threading.Event(), threading.Event()
    run = _blocked_run(saver, "t", inside, release)
    try:
        assert inside.wait(30)
        graph = build_agent_graph().compile(checkpointer=saver)
        started = time.monotonic()
        with within(30):
            graph.invoke({"messages": [HumanMessage("what is 2 + 2?", id="z")]}, _cfg("t"))
        assert time.monotonic() - started >= 0.25  # it waited, then went ahead
    finally:
        release.set()
        run.join(30)
    saver.close()


def test_policy_in_the_servers_terms() -> None:
    assert RetentionPolicy.of(30) == RetentionPolicy(default_ttl=30, strategy="delete")
    p = RetentionPolicy.of({"default_ttl": 5, "strategy": "keep_latest", "sweep_interval_minutes": 2,
                            "sweep_limit": 7})
    assert (p.default_ttl, p.strategy, p.sweep_interval_minutes, p.sweep_limit) == (5, "keep_latest", 2, 7)
    for bad, match in [({"default_ttl": 5, "strategy": "drop"}, "strategy must be one of"),
                       ({"strategy": "delete"}, "default_ttl"), ({"default_ttl": -1}, "default_ttl"),
                       ({"default_ttl": 1, "ttl": 2}, "unknown keys")]:
        with pytest.raises(ConfigError, match=match):
            RetentionPolicy.of(bad)
    with pytest.raises(ConfigError, match="sweep needs a retention policy"):
        JsonlSaver(":memory:").sweep()


def test_environment_precedence_as_the_server_reads_it() -> None:
    server_block = json.dumps({"path": "x", "ttl": {"strategy": "keep_latest", "default_ttl": 60}})
    assert ttl_from_environment({}) is None
    assert ttl_from_environment({"LANGGRAPH_CHECKPOINTER": json.dumps({"path": "x"})}) is None
    got = ttl_from_environment({"LANGGRAPH_CHECKPOINTER": server_block})
    assert (got.strategy, got.default_ttl, got.sweep_interval_minutes) == ("keep_latest", 60, 5.0)
    got = ttl_from_environment({"LANGGRAPH_CHECKPOINTER": server_block, "LANGGRAPH_THREAD_TTL": "15"})
    assert (got.strategy, got.default_ttl) == ("delete", 15)
    got = ttl_from_environment({"LANGGRAPH_THREAD_TTL": "15",
                                "LANGGRAPH_JSONL_TTL": '{"default_ttl": 1440, "strategy": "archive"}'})
    assert (got.strategy, got.default_ttl) == ("archive", 1440)
    with pytest.raises(ConfigError, match="LANGGRAPH_JSONL_TTL"):
        ttl_from_environment({"LANGGRAPH_JSONL_TTL": "soon"})


def test_sweep_limit_leaves_the_rest_for_the_next_sweep(tmp_path: Path) -> None:
    saver, _ = _store_of_agents(tmp_path / "s", {f"t{i}": {} for i in range(5)})
    policy = {"default_ttl": 0, "strategy": "delete", "sweep_limit": 2}
    first = saver.sweep(policy, now=time.time() + HOUR)
    assert len(first.swept) == 2 and first.limited == 3
    assert len(saver.sweep(policy, now=time.time() + HOUR).swept) == 2
    assert len(saver.sweep(policy, now=time.time() + HOUR).swept) == 1
    assert list(saver.store.thread_ids()) == []
    saver.close()


def test_cli_sweep_archived_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saver, _ = _store_of_agents(tmp_path / "s", {"old": {}, "pinned": {"pinned": True}, "new": {}})
    before = answers(saver, "old")
    for tid in ("old", "pinned"):
        _age(saver, tid, 2 * HOUR)
    saver.close()
    store = str(tmp_path / "s")

    assert main(["sweep", store, "--ttl", "60", "--strategy", "archive", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "old\twould be archived" in out and "pinned\tpinned: kept" in out
    assert "1 thread(s) would be archived, 1 pinned, 0 live, 1 active" in out
    assert JsonlSaver(store).store.has_thread("old")  # a dry run changes nothing

    os.environ["LANGGRAPH_JSONL_TTL"] = '{"default_ttl": 60, "strategy": "archive"}'
    try:
        assert main(["sweep", store, "--json"]) == 0
    finally:
        del os.environ["LANGGRAPH_JSONL_TTL"]
    report = json.loads(capsys.readouterr().out)
    assert report["swept"] == ["old"] and report["pinned"] == ["pinned"] and report["strategy"] == "archive"

    assert main(["archived", store]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["THREAD", "ARCHIVED", "SIZE", "FILE"] and row.split()[0] == "old"
    assert main(["archived", store, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["thread_id"] == "old" and listed["path"].endswith(".jsonl.zst") and listed["size"] > 0
    assert main(["restore", store, "--thread", "old"]) == 0
    assert "thread old: restored from" in capsys.readouterr().out
    assert not diff_answers(answers(JsonlSaver(store), "old"), before)

    assert main(["sweep", store]) == 2
    err = capsys.readouterr().err
    assert "--ttl MINUTES, or set one of the variables the server reads, LANGGRAPH_JSONL_TTL" in err
    assert main(["restore", store, "--thread", "old"]) == 2
    assert "thread 'old' is in the store" in capsys.readouterr().err


def test_cli_sweep_ttl_option_keeps_the_environments_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cron job's LANGGRAPH_JSONL_TTL says archive; a person tries a shorter TTL by
    # hand. The threads must be archived (restorable), not deleted.
    saver, _ = _store_of_agents(tmp_path / "s", {"old": {}})
    _age(saver, "old", 2 * HOUR)
    saver.close()
    store = str(tmp_path / "s")
    monkeypatch.setenv("LANGGRAPH_JSONL_TTL", '{"default_ttl": 10080, "strategy": "archive"}')
    assert main(["sweep", store, "--ttl", "60", "--dry-run"]) == 0
    assert "old\twould be archived" in capsys.readouterr().out
    assert main(["sweep", store, "--ttl", "60", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["strategy"], report["default_ttl"], report["swept"]) == ("archive", 60, ["old"])
    assert [a.thread_id for a in JsonlSaver(store, read_only=True).archived()] == ["old"]
    # --strategy still says what happens, whichever part the variable gave
    assert main(["sweep", store, "--ttl", "60", "--strategy", "delete", "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "delete"


def test_maintenance_is_not_activity(tmp_path: Path) -> None:
    """compact and prune keep a log's modification time: a nightly compact must not keep
    every thread alive; a keep_latest sweep of a pruned thread changes nothing."""
    saver, _ = _store_of_agents(tmp_path / "s", {"t": {}})
    _age(saver, "t", 2 * HOUR)
    saver.compact("t")
    saver.prune(["t"])
    assert saver.store.thread_log("t").modified_at() < time.time() - HOUR
    first = saver.sweep({"default_ttl": 60, "strategy": "keep_latest"})
    assert first.swept == [] and first.unchanged == 1
    graph = build_agent_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("what is 4 + 2?", id="later")]}, _cfg("t"))
    assert saver.sweep({"default_ttl": 60, "strategy": "delete"}).active == 1  # a write is activity
    saver.close()


def test_a_log_another_sweeper_moved_meanwhile_is_skipped_not_reported(tmp_path: Path) -> None:
    """Several processes sweep at once: a log listed by this sweep may be archived by
    another before this one reads its header. That is no error (it was found at 20-40%
    by test_crash_retention's three sweepers)."""
    saver = JsonlSaver(tmp_path / "s")
    graph = build_agent_graph().compile(checkpointer=saver)
    for tid in ("t1", "t2"):
        graph.invoke({"messages": [("user", "what is 1 + 2?")]}, _cfg(tid))
    listed = list(saver.store.log_activity())
    gone = listed[0][0]
    os.remove(gone)  # as another sweeper's archive step does, between listing and reading
    with pytest.raises(FileNotFoundError):
        saver.store.thread_id_at(gone)
    saver.store.log_activity = lambda: iter(listed)  # type: ignore[method-assign]
    report = saver.sweep({"default_ttl": 1, "strategy": "archive"}, now=time.time() + 3600)
    assert report.errors == []
    assert [t for t, _ in report.swept] == ["t2"]
    saver.close()


def test_a_listing_leaves_out_a_log_removed_after_the_directory_was_read(tmp_path: Path) -> None:
    from langgraph_jsonl_checkpoint.disk import catalog

    saver = JsonlSaver(tmp_path / "s")
    graph = build_agent_graph().compile(checkpointer=saver)
    for tid in ("t1", "t2"):
        graph.invoke({"messages": [("user", "what is 1 + 2?")]}, _cfg(tid))
    saver.close()
    threads = str(tmp_path / "s" / "threads")

    def read_then_vanish(path: str, name: str) -> str:
        if name.startswith("t1-"):
            raise FileNotFoundError(path)
        return "t2"

    listing = catalog.list_logs(threads, catalog.Catalog(), read_then_vanish)
    assert [(os.path.basename(p)[:2], tid, err) for p, tid, err in listing.entries()] == [("t2", "t2", None)]
    assert listing.ids == ["t2"] and listing.changed


def test_an_archived_threads_size_counts_its_companions_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``archived`` reports the bytes an archiving keeps on disk: the compressed log and
    the companions file that holds its trace (the listing and ``--json`` alike)."""
    saver = JsonlSaver(tmp_path / "s")
    _traced_turns(saver, "t", 1)
    saver.sweep({"default_ttl": 0, "strategy": "archive"}, now=time.time() + HOUR)
    (entry,) = saver.archived("t")
    (companions_file,) = (tmp_path / "s" / "archive").glob("*.companions.zst")
    kept = Path(entry.path).stat().st_size + companions_file.stat().st_size
    assert entry.size == kept
    saver.close()
    capsys.readouterr()
    assert main(["archived", str(tmp_path / "s"), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["size"] == kept


def test_a_restored_thread_counts_as_active_for_a_whole_ttl(tmp_path: Path) -> None:
    """What docs/retention.md says: the restore writes the log anew, so the thread is
    active from then on; the next sweep with the same TTL leaves it, one a TTL later
    takes it again."""
    saver, _ = _store_of_agents(tmp_path / "s", {"t": {}})
    _age(saver, "t", 2 * HOUR)
    policy = {"default_ttl": 60, "strategy": "archive"}
    with within(30):
        assert saver.sweep(policy).swept == [("t", "archive")]
        saver.restore("t")
        assert saver.sweep(policy).active == 1
        assert saver.store.has_thread("t")
        assert saver.sweep(policy, now=time.time() + 2 * HOUR).swept == [("t", "archive")]
    saver.close()
