"""Crash battery for retention: a SIGKILL at every file operation of a sweep (archive,
delete, keep_latest) and of a restore, and several processes sweeping one store.

After a kill at any operation the thread is whole in exactly one place: its log in
``threads/`` serving every checkpoint and write it served before, with its debug trace
and quarantine file in their places, or its bytes in ``archive/`` (a ``.swept`` file
and/or a ``.zst``, equal to the log, and a ``.companions.zst`` holding the trace and
quarantine file). The next sweep settles what the kill left, no temp file stays, and a
restore brings back the original, trace and quarantine file included.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.disk.archive import COMPANIONS, COMPRESSED, MOVED, ThreadArchive
from langgraph_jsonl_checkpoint.disk.paths import thread_file_stem
from tests.harness.answers import answers, diff_answers
from tests.harness.children import kill_at_op_child, read_text, spawn, sweep_child
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.raw_log import stray_temp_files
from tests.harness.reference_log import build_reference_log

pytestmark = pytest.mark.slow

ARCHIVE = {"default_ttl": 0, "strategy": "archive"}
#: Archive files of thread ``t`` (the reference store holds other threads too).
T_FILES = thread_file_stem("t") + ".*"


def _later() -> float:
    return time.time() + 3600


def _give_own_files(store: Path) -> dict[str, bytes]:
    """Give thread ``t`` a debug trace (the current file and a rotated one) and a
    quarantine file; their bytes by path in the store."""
    stem = thread_file_stem("t")
    (store / "traces").mkdir(mode=0o700, exist_ok=True)
    note = {"t": "quarantine", "seq": 0, "at": "2026-01-01T00:00:00Z", "offset": 4096, "bytes": 9}
    own = {
        f"traces/{stem}.jsonl": b'{"ev":"start","kind":"graph","run":"r2"}\n',
        f"traces/{stem}.1.jsonl": b'{"ev":"start","kind":"graph","run":"r1"}\n' * 40,
        f"threads/{stem}.quarantine": framing.frame(note) + b'{"t":"che\n',
    }
    for name, data in own.items():
        (store / name).write_bytes(data)
    return own


def _live(store: Path, own: dict[str, bytes]) -> dict[str, bytes]:
    """Those of ``own``'s files that are in their places in ``store``, with their bytes."""
    return {name: (store / name).read_bytes() for name in own if (store / name).exists()}


def _places(store: Path, original: bytes, own: dict[str, bytes]) -> list[str]:
    """Where thread ``t`` is now (each place's content, trace and quarantine file
    included, checked against ``original`` and ``own``)."""
    places = []
    saver = JsonlSaver(store, read_only=True)
    try:
        if saver.store.has_thread("t"):
            assert Path(saver.store.thread_log("t").path).read_bytes() == original, "threads/: log changed"
            assert _live(store, own) == own, "threads/: trace or quarantine file lost"
            places.append("threads")
        shelf = ThreadArchive(saver.store)
        files = [p for p in (store / "archive").glob(T_FILES)] if (store / "archive").exists() else []
        for f in files:
            assert f.name.endswith((MOVED, COMPRESSED, COMPANIONS)), f.name
            if f.name.endswith(COMPANIONS):
                continue
            entry = shelf._entry(str(f))
            assert shelf.read(entry) == original, f"archive: {f.name} differs from the log"
            assert shelf.companions(entry) == own, f"archive: {f.name} lost the trace or quarantine file"
        if any(not f.name.endswith(COMPANIONS) for f in files):
            places.append("archive")
    finally:
        saver.close()
    return places


def _kill_at_every_op(tmp_path: Path, base: Path, action: str):
    """Yield (k, store) for a copy of ``base`` SIGKILLed at file operation k of ``action``."""
    k = 1
    while True:
        store = tmp_path / f"{action}-{k}"
        shutil.copytree(base, store)
        p = spawn(kill_at_op_child, str(store), action, k, str(tmp_path / f"{action}-{k}.ops"))
        p.join(60)
        if p.exitcode == 0:
            return
        assert p.exitcode == -9, f"child failed at op {k}: exit {p.exitcode}"
        yield k, store
        k += 1
        assert k < 200


@pytest.mark.parametrize("action", ["sweep-archive", "restore"])
def test_kill_at_every_file_operation_leaves_the_thread_whole_in_one_place(
    tmp_path: Path, action: str
) -> None:
    base = tmp_path / "base"
    build_reference_log(base, puts=8, thread_id="t")
    own = _give_own_files(base)
    saver = JsonlSaver(base)
    want = answers(saver, "t")
    original = Path(saver.store.thread_log("t").path).read_bytes()
    if action == "restore":
        assert "t" in [t for t, _ in saver.sweep(ARCHIVE, now=_later()).swept]
    saver.close()
    n = 0
    for k, store in _kill_at_every_op(tmp_path, base, action):
        n += 1
        places = _places(store, original, own)
        assert len(places) == 1, f"op {k}: thread t is in {places or 'no place'}"
        # Recovery: the next sweep settles what the kill left; then a restore.
        fresh = JsonlSaver(store)
        report = fresh.sweep(ARCHIVE, now=_later())
        assert not report.errors, f"op {k}: {report.errors}"
        assert [a.path.endswith(COMPRESSED) for a in fresh.archived("t")] == [True], f"op {k}"
        fresh.restore("t")
        assert not diff_answers(answers(fresh, "t"), want), f"op {k}"
        assert _live(store, own) == own, f"op {k}: trace or quarantine file not restored"
        assert not list((store / "archive").glob(T_FILES)), f"op {k}: archive files left"
        fresh.close()
        assert not stray_temp_files(store), f"op {k}: temp files left"
    assert n >= 8, f"only {n} file operations: the shim did not see the action's I/O"


@pytest.mark.parametrize("strategy", ["delete", "keep_latest"])
def test_kill_at_every_file_operation_of_a_sweep_leaves_old_or_new(tmp_path: Path, strategy: str) -> None:
    base = tmp_path / "base"
    build_reference_log(base, puts=8, thread_id="t")
    saver = JsonlSaver(base)
    before = answers(saver, "t")
    saver.close()
    done = tmp_path / "done"
    shutil.copytree(base, done)
    with JsonlSaver(done) as finished:
        finished.sweep({"default_ttl": 0, "strategy": strategy}, now=_later())
        after = answers(finished, "t")
    for k, store in _kill_at_every_op(tmp_path, base, f"sweep-{strategy}"):
        got = answers(JsonlSaver(store), "t")
        assert not diff_answers(got, before) or not diff_answers(got, after), f"op {k}: neither old nor new"


def test_several_processes_sweeping_at_once_archive_each_thread_once(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    graph = build_agent_graph().compile(checkpointer=saver)
    threads = [f"t{i}" for i in range(30)]
    for tid in threads:
        graph.invoke({"messages": [("user", "what is 1 + 2?")]}, {"configurable": {"thread_id": tid}})
    want = {tid: answers(saver, tid) for tid in threads[:3]}
    saver.close()

    start_at = time.time() + 1.0
    procs = [
        spawn(sweep_child, str(store), "archive", start_at, str(tmp_path / f"out{i}"),
              str(tmp_path / f"err{i}"))
        for i in range(3)
    ]
    for p in procs:
        p.join(120)
    for i, p in enumerate(procs):
        assert p.exitcode == 0, read_text(str(tmp_path / f"err{i}"))
    reports = [json.loads((tmp_path / f"out{i}").read_text()) for i in range(3)]
    swept = [t for r in reports for t in r["swept"]]
    assert sorted(swept) == sorted(threads), "each thread archived exactly once between them"
    assert not any(r["errors"] for r in reports), [r["errors"] for r in reports]
    with JsonlSaver(store) as after:
        assert sorted(a.thread_id for a in after.archived()) == sorted(threads)
        assert list(after.store.thread_ids()) == []
        for tid, answer in want.items():
            after.restore(tid)
            assert not diff_answers(answers(after, tid), answer), tid
    assert not list((store / "archive").glob(f"*{MOVED}"))
