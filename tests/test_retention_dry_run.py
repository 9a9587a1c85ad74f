"""Dry runs of sweep and compact predict their real runs and change nothing.

The oracle is the real run on the same store right after the dry run (which changed
nothing): the same threads acted on, skipped or refused, the same error text, the same
exit status. Stores are made by real graph runs; damage is one byte changed inside a
record followed by valid records (as ``docs/cli.md#verify`` shows).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.raw_log import record_spans, write_in_place
from tests.harness.scratch import file_snapshot

HOUR = 3600.0


def _store(path: Path, tids: list[str], *, age: float = 2 * HOUR) -> str:
    """Threads of two agent turns each, idle for ``age`` seconds."""
    with JsonlSaver(path) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        for tid in tids:
            for turn in range(2):
                msg = HumanMessage(f"what is {turn} + 2?", id=f"{tid}-h{turn}")
                graph.invoke({"messages": [msg]}, {"configurable": {"thread_id": tid}})
        t = time.time() - age
        for tid in tids:
            os.utime(saver.store.thread_log(tid).path, (t, t))
    return str(path)


def _damage(store: str, tid: str) -> None:
    """Change one byte inside a record in the middle of the thread's log (its time kept)."""
    with JsonlSaver(store, read_only=True) as saver:
        path = saver.store.thread_log(tid).path
    st = os.stat(path)
    data = bytearray(Path(path).read_bytes())
    offset, length, _ = record_spans(bytes(data))[len(record_spans(bytes(data))) // 2]
    at = data.index(b'"', offset + 10)  # inside the record's JSON, before its checksum
    data[at + 1] = ord("X") if data[at + 1] != ord("X") else ord("Y")
    write_in_place(path, bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    status = main(args)
    return status, json.loads(capsys.readouterr().out)


def _dry_then_real(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: Callable[[str], list[str]]
) -> tuple[int, dict, int, dict]:
    """On a store of threads a, b and c, b damaged: the dry run of ``argv(store)`` (which
    must change nothing), then the real run; each one's exit status and JSON report."""
    store = _store(tmp_path / "s", ["a", "b", "c"])
    _damage(store, "b")
    files = file_snapshot(store)
    dry_status, dry = _run([*argv(store), "--dry-run"], capsys)
    assert file_snapshot(store) == files  # the dry run changed nothing
    real_status, real = _run(argv(store), capsys)
    return dry_status, dry, real_status, real


@pytest.mark.parametrize("strategy", ["delete", "keep_latest", "archive"])
def test_sweep_dry_run_refuses_a_damaged_thread_as_the_real_sweep_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    dry_status, dry, real_status, real = _dry_then_real(
        tmp_path, capsys, lambda store: ["sweep", store, "--ttl", "60", "--strategy", strategy, "--json"])

    assert real_status == 1 and [w for w, _ in map(dict.values, real["errors"])] == ["b"]
    assert dry_status == real_status
    assert dry["errors"] == real["errors"]
    assert sorted(dry["swept"]) == sorted(real["swept"]) == ["a", "c"]


@pytest.mark.parametrize("keep_latest", [False, True])
def test_compact_dry_run_refuses_a_damaged_thread_as_the_real_compact_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keep_latest: bool
) -> None:
    options = ["--keep-latest"] if keep_latest else []
    dry_status, dry, real_status, real = _dry_then_real(
        tmp_path, capsys, lambda store: ["compact", store, "--json", *options])

    assert real_status == 1 and [s["thread_id"] for s in real["skipped"]] == ["b"]
    assert dry_status == real_status
    assert dry["skipped"] == real["skipped"]
    assert [t["thread_id"] for t in dry["threads"]] == [t["thread_id"] for t in real["threads"]]
    assert [t["after"] for t in dry["threads"]] == [t["after"] for t in real["threads"]]


def test_keep_latest_dry_run_predicts_threads_pruned_already(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "s", ["a", "b", "c"])
    args = ["sweep", store, "--ttl", "60", "--strategy", "keep_latest"]
    assert main(args) == 0
    assert "3 thread(s) pruned" in capsys.readouterr().out
    _store(tmp_path / "s", ["d"])  # one more expired thread, not pruned yet (a, b, c keep their times)

    dry_status, dry = _run([*args, "--dry-run", "--json"], capsys)
    assert main([*args, "--dry-run"]) == 0
    dry_text = capsys.readouterr().out
    real_status, real = _run([*args, "--json"], capsys)

    assert dry_status == real_status == 0
    assert real["swept"] == ["d"] and real["unchanged"] == 3  # a, b, c: pruned already, still expired
    assert (dry["swept"], dry["unchanged"]) == (real["swept"], real["unchanged"])
    assert "d\twould be pruned" in dry_text and "a\twould be pruned" not in dry_text
    assert "1 thread(s) would be pruned, 3 pruned already, 0 pinned, 0 live, 0 active" in dry_text


def test_the_sweep_summary_counts_threads_pruned_already(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "s", ["a", "b", "c"])
    args = ["sweep", store, "--ttl", "60", "--strategy", "keep_latest"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "0 thread(s) pruned, 3 pruned already, 0 pinned, 0 live, 0 active"
    )


@pytest.mark.parametrize("strategy", ["delete", "keep_latest", "archive"])
def test_a_dry_sweep_on_a_writable_saver_writes_nothing(tmp_path: Path, strategy: str) -> None:
    store = _store(tmp_path / "s", [f"t-{i}" for i in range(4)])
    copy = tmp_path / "copy"  # a copy keeping file times: every sidecar and the catalog are stale
    shutil.copytree(store, copy, copy_function=shutil.copy2)
    files = file_snapshot(str(copy))

    with JsonlSaver(copy) as saver:
        report = saver.sweep({"default_ttl": 60, "strategy": strategy}, dry_run=True)
    assert sorted(t for t, _ in report.swept) == [f"t-{i}" for i in range(4)]
    assert file_snapshot(str(copy)) == files  # nothing written, not even a derived file


@pytest.mark.parametrize("strategy", ["delete", "keep_latest", "archive"])
def test_a_torn_tail_cut_away_is_not_activity(tmp_path: Path, strategy: str) -> None:
    # A run killed mid-append leaves a torn tail; the first writer to open the thread
    # (the sweep itself, or any writable saver reading it) sets it aside and cuts it.
    # The cut set the log's time to now: the dry run listed the thread as expired, the
    # real sweep then found it "active" and it stayed for another whole TTL.
    store = _store(tmp_path / "s", ["torn", "plain"])
    with JsonlSaver(store, read_only=True) as saver:
        path = saver.store.thread_log("torn").path
    st = os.stat(path)
    with open(path, "ab") as f:
        f.write(b'{"t":"checkpoint","ns":"","id":"1f1')  # a batch cut short by a kill
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    ttl = {"default_ttl": 60, "strategy": strategy}
    with JsonlSaver(store, ttl=ttl) as saver:
        dry = saver.sweep(dry_run=True)
    assert sorted(tid for tid, _ in dry.swept) == ["plain", "torn"]
    if strategy != "delete":  # a writable saver reads it first; with delete, the sweep is first
        with JsonlSaver(store) as reader:
            reader.get_tuple({"configurable": {"thread_id": "torn"}})
            reader.session_memory("torn")
        assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    with JsonlSaver(store, ttl=ttl) as saver:
        real = saver.sweep()
    assert sorted(tid for tid, _ in real.swept) == ["plain", "torn"], real
