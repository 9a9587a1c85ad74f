"""A target the app went on with after a copy is *ahead* of its source, not different.

``import`` run again after the app continued on the store (or ``export`` after it
continued on PostgreSQL) finds every source checkpoint on the target, unchanged, and
more: new checkpoints that continue the source's newest checkpoint of their namespace,
and, at that newest checkpoint, the writes of the run that went on from it (its resume,
its tasks' writes, an interrupt slot holding the next question). That is reported as
ahead (exit 0), and left as it is. A real divergence is still a difference (exit 1):
both ends went on, a write added to an older checkpoint, a write changed. The rule
itself is checked on hand-made histories (``compare_histories`` is pure).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.migrate import compare_histories, copy_threads, open_endpoint
from tests.harness.bounded import within
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.migration import GRAPHS, build_sqlite_app, cfg, copy_of, go_on, histories

WENT_ON = ["agent", "nested", "review"]  # the threads go_on continues


@pytest.fixture(scope="module")
def sqlite_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite_app(tmp_path_factory.mktemp("app") / "app.db")


def url(path: Path) -> str:
    return "sqlite:///" + str(path)


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def lines_of(kind: str, text: str) -> list[str]:
    """The thread ids of ``kind`` lines (``AHEAD``, ``DIFFERS``), each once, sorted."""
    return sorted({line.split()[2].rstrip(":") for line in text.splitlines() if line.startswith(kind + " ")})


def read_store(path: Path) -> dict[str, Any]:
    with JsonlSaver(path) as saver, within(120, "reading the store"):
        return histories(saver)


def test_import_again_after_the_app_went_on_on_the_store_is_ahead(sqlite_app: Path, tmp_path: Path,
                                                                 capsys) -> None:
    store = tmp_path / "s"
    assert main(["import", url(sqlite_app), str(store)]) == 0
    with JsonlSaver(store) as saver:
        go_on(saver)
    went_on = read_store(store)
    capsys.readouterr()

    assert main(["import", url(sqlite_app), str(store)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and lines_of("AHEAD", out) == WENT_ON
    assert "3 thread(s) ahead on the target" in out, out
    assert f"copied nothing from {url(sqlite_app)} to {store}: 6 thread(s) already up to date there" in out

    code, report = run_json(["import", url(sqlite_app), str(store)], capsys)
    assert code == 0 and report["ok"] and report["mismatches"] == [] and report["checkpoints"] == 0
    assert [a["thread_id"] for a in report["ahead"]] == WENT_ON
    per = {t["thread_id"]: t for t in report["per_thread"]}
    assert per["agent"]["ahead_checkpoints"] > 0 and per["review"]["ahead_checkpoints"] > 0
    assert per["review"]["ahead_writes"] > 0 and per["nested"]["ahead_writes"] > 0  # the resumed checkpoints
    assert all(per[t]["ahead_checkpoints"] == per[t]["ahead_writes"] == 0 for t in ("counter", "fan"))
    assert read_store(store) == went_on  # left as the app left it


def test_export_again_after_the_app_went_on_on_postgresql_is_ahead(sqlite_app: Path, tmp_path: Path,
                                                                  pg_url: str, capsys) -> None:
    store = str(tmp_path / "s")
    assert main(["import", url(sqlite_app), store]) == 0
    assert main(["export", store, pg_url, "--setup"]) == 0
    with PostgresSaver.from_conn_string(pg_url) as saver:
        go_on(saver)
    capsys.readouterr()
    assert main(["export", store, pg_url]) == 0
    out, err = capsys.readouterr()
    assert err == "" and lines_of("AHEAD", out) == WENT_ON
    code, report = run_json(["export", store, pg_url], capsys)
    assert code == 0 and report["ok"] and [a["thread_id"] for a in report["ahead"]] == WENT_ON


def test_both_ends_went_on_is_a_difference_and_the_target_is_left_alone(
    sqlite_app: Path, tmp_path: Path, capsys
) -> None:
    """Both apps went on after an import: two histories under one thread id. The import
    again put the source's new checkpoints into the target before saying so (the
    target's latest state could become the source's); it now says so, dry run or not,
    and leaves the target's thread as the app left it."""
    for first in ("source", "target"):  # whichever went on first, the ids interleave or not
        mine = copy_of(sqlite_app, tmp_path / f"{first}.db")
        store = tmp_path / f"s-{first}"
        assert main(["import", url(mine), str(store)]) == 0
        with JsonlSaver(store) as saver, closing(sqlite3.connect(mine, check_same_thread=False)) as conn:
            ends = [SqliteSaver(conn), saver] if first == "source" else [saver, SqliteSaver(conn)]
            for end in ends:
                go_on(end)
            conn.commit()
        went_on = read_store(store)
        capsys.readouterr()
        for dry in (["--dry-run"], []):
            assert main(["import", url(mine), str(store), *dry]) == 1, first
            out, err = capsys.readouterr()
            assert lines_of("DIFFERS", err) == WENT_ON and lines_of("AHEAD", out) == [], (first, err)
            assert "both ends hold checkpoints the other lacks" in err and "--threads" in err, err
        assert read_store(store) == went_on, first


def test_an_unrelated_thread_of_the_same_id_on_the_target_is_left_alone(tmp_path: Path, capsys) -> None:
    """A new app on JsonlSaver has a thread "counter"; the old SQLite app has another one
    of that id. The import put the SQLite checkpoints into the store's thread (its
    latest state became the SQLite conversation, two roots in its history), and said so
    only afterwards; the dry run said nothing."""
    app = build_sqlite_app(tmp_path / "app.db")
    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        for i, n in enumerate((5, 6)):
            v = {"n": saver.get_next_version(None, None)}
            parent = config("counter", checkpoint_id=cp_id(90)) if i else config("counter")
            saver.put(parent, make_checkpoint(cp_id(90 + i), {"n": n}, v), {"source": "loop", "step": i}, v)
        before = [t.checkpoint for t in saver.list(config("counter"))]
    capsys.readouterr()
    for dry in (["--dry-run"], []):
        assert main(["import", url(app), str(store), *dry]) == 1
        out, err = capsys.readouterr()
        assert lines_of("DIFFERS", err) == ["counter"], err
        assert "both ends hold checkpoints the other lacks" in err and "2 only on" in err, err
    with JsonlSaver(store) as saver:
        assert [t.checkpoint for t in saver.list(config("counter"))] == before
        assert saver.get_tuple(cfg("agent")) is not None  # the other threads were copied


def _own_counter(store: Path) -> None:
    """A thread "counter" of the store's own: two checkpoints no SQLite app has."""
    with JsonlSaver(store) as saver:
        for i, n in enumerate((5, 6)):
            v = {"n": saver.get_next_version(None, None)}
            parent = config("counter", checkpoint_id=cp_id(90)) if i else config("counter")
            saver.put(parent, make_checkpoint(cp_id(90 + i), {"n": n}, v), {"source": "loop", "step": i}, v)


def test_a_refused_thread_is_counted_as_refused_not_as_copied(tmp_path: Path, capsys) -> None:
    """The summary said "copied 6 thread(s)" (and "copied 1 thread(s)" with --threads
    counter) when "counter" was refused, nothing put into it; the dry run did not
    mention it at all, and --json counted it among the threads as any other."""
    app = build_sqlite_app(tmp_path / "app.db")
    store = tmp_path / "s"
    _own_counter(store)
    capsys.readouterr()
    for dry in (["--dry-run"], []):
        assert main(["import", url(app), str(store), *dry]) == 1
        out, err = capsys.readouterr()
        assert lines_of("DIFFERS", err) == ["counter"], err
        assert ("would copy 5 thread(s) from" if dry else "copied 5 thread(s) from") in out, out
        assert ("would refuse 1 thread(s)" if dry else "refused 1 thread(s)") in out, out
        assert "counter" in out and "thread(s) differ" not in out, out
        code, report = run_json(["import", url(app), str(store), *dry], capsys)
        assert code == 1 and not report["ok"]
        # The dry run's JSON: 5 still to copy; the real run's, run again: 5 already up to date.
        assert report["copied"] == (5 if dry else 0) and report["refused"] == ["counter"], report
        assert len(report["up_to_date"]) == (0 if dry else 5), report
        per = {t["thread_id"]: t for t in report["per_thread"]}
        assert per["counter"]["refused"] and not per["agent"]["refused"]
    code, report = run_json(["import", url(app), str(store), "--threads", "counter"], capsys)
    assert code == 1 and report["copied"] == 0 and report["refused"] == ["counter"]
    assert main(["import", url(app), str(store), "--threads", "counter"]) == 1
    out, _ = capsys.readouterr()
    assert "copied 0 thread(s)" in out and "refused 1 thread(s)" in out, out
    assert "verified" not in out, out  # nothing was copied, nothing verified


def test_export_counts_a_refused_thread_as_refused(tmp_path: Path, capsys) -> None:
    """``export STORE sqlite:///...`` whose database holds another "counter"."""
    app = build_sqlite_app(tmp_path / "app.db")
    store = tmp_path / "s"
    _own_counter(store)
    capsys.readouterr()
    assert main(["export", str(store), url(app)]) == 1
    out, err = capsys.readouterr()
    assert lines_of("DIFFERS", err) == ["counter"], err
    assert "copied 0 thread(s)" in out and "refused 1 thread(s)" in out and "counter" in out, out
    code, report = run_json(["export", str(store), url(app)], capsys)
    assert code == 1 and report["copied"] == 0 and report["refused"] == ["counter"]


def test_a_write_added_to_an_older_checkpoint_is_a_difference(sqlite_app: Path, tmp_path: Path) -> None:
    assert copy_threads(url(sqlite_app), str(tmp_path / "s")).ok
    with JsonlSaver(tmp_path / "s") as saver:
        older = list(saver.list(cfg("counter")))[1]  # not the newest: no run goes on from it
        saver.put_writes(older.config, [("n", 7)], "task-x", "~x")
    report = copy_threads(url(sqlite_app), str(tmp_path / "s"))
    assert not report.ok and [t.thread_id for t in report.mismatched] == ["counter"] and report.ahead == []
    assert any("pending write(s) on the target" in m for m in report.mismatched[0].mismatches)


def _event(codec: Any, cid: str, call: str, ev: str, second: int) -> dict[str, Any]:
    """A journal event of the agent thread's tool call ``call``, cells in ``codec``."""
    event = {"ev": ev, "ns": "tools:x", "cp": cid, "call": call, "at": f"2026-01-01T00:00:{second:02d}+00:00"}
    if ev == "requested":
        event |= {"name": "send_email", "args": codec.encode({"to": "bob"}, "args")}
    if ev == "started":
        event["proc"] = {"host": "gone", "pid": 1}
    if ev == "finished":
        event["result"] = codec.encode("sent", "result")
    return event


@pytest.mark.parametrize("target", ["store", "SQLite file"])
def test_a_journal_that_went_on_is_ahead_and_one_that_went_elsewhere_differs(tmp_path: Path,
                                                                             target: str) -> None:
    with JsonlSaver(tmp_path / "src") as saver:
        graph = GRAPHS["agent"]().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "add 1 2")]}, cfg("agent"))
        cid = saver.get_tuple(cfg("agent")).config["configurable"]["checkpoint_id"]
        saver.record_tool_events("agent", [_event(saver.codec, cid, "k1", "requested", 0),
                                           _event(saver.codec, cid, "k1", "started", 1)])
    dst = str(tmp_path / "dst") if target == "store" else url(tmp_path / "dst.db")
    assert copy_threads(str(tmp_path / "src"), dst).journal_records == 2
    end = open_endpoint(dst, role="target")
    try:  # the app went on there: k1 finished, k2 asked for
        have = end.journal.events("agent")
        (k1,) = have
        k2 = type(k1)(k1.ns, k1.checkpoint_id, "k2")
        finished = _event(end.journal.codec, cid, "k1", "finished", 2)
        asked = _event(end.journal.codec, cid, "k2", "requested", 3)
        end.journal.add("agent", {k1: [finished], k2: [asked]}, {k1: [*have[k1], finished], k2: [asked]})
    finally:
        end.close()
    again = copy_threads(str(tmp_path / "src"), dst)
    assert again.ok and again.journal_records == 0, again.to_json()
    assert [t.thread_id for t in again.ahead] == ["agent"] and again.ahead[0].ahead_journal_records == 2

    with JsonlSaver(tmp_path / "src") as saver:  # the source's k1 went on otherwise: a conflict
        saver.record_tool_events("agent", [_event(saver.codec, cid, "k1", "failed", 5)])
    third = copy_threads(str(tmp_path / "src"), dst)
    assert not third.ok and third.ahead == []
    assert any("journal differs" in m for m in third.mismatched[0].mismatches)


# The rule, on hand-made histories: one namespace "" and a subgraph's "sub".

def tup(i: int, parent: int | None, writes: list[tuple[str, str, Any]] = (), ns: str = "",
        value: Any = None) -> CheckpointTuple:
    cid = cp_id(i)
    return CheckpointTuple(
        config=config("t", ns, cid),
        checkpoint=make_checkpoint(cid, {"x": i if value is None else value}, {"x": f"{i:032d}.0"}),
        metadata={"step": i},
        parent_config=config("t", ns, cp_id(parent)) if parent is not None else None,
        pending_writes=list(writes),
    )


SOURCE = [tup(1, None), tup(2, 1, [("a", "x", 1)]),
          tup(3, 2, [("b", "y", "kept"), ("c", "__interrupt__", "q1")]),
          tup(10, None, ns="sub"), tup(11, 10, [("d", "__interrupt__", "q")], ns="sub")]


def test_the_rule_ahead() -> None:
    """Writes of the run that went on from the newest checkpoints (a resume, the task's
    writes, the interrupt slot holding the next question), checkpoints continuing them,
    a new namespace."""
    target = [tup(1, None), tup(2, 1, [("a", "x", 1)]),
              tup(3, 2, [("00", "__resume__", "yes"), ("b", "y", "kept"), ("b", "y2", 2),
                         ("c", "__interrupt__", "q2"), ("c", "z", 3)]),
              tup(4, 3), tup(5, 4),
              tup(10, None, ns="sub"), tup(11, 10, [("d", "__interrupt__", "q"), ("d", "w", 1)], ns="sub"),
              tup(12, 11, ns="sub"), tup(20, None, ns="other"), tup(21, 20, ns="other")]
    c = compare_histories(SOURCE, target)
    assert c.differences == [] and c.is_ahead
    assert c.ahead_checkpoints == 5  # 4, 5, 12, 20, 21
    assert c.ahead_writes == 5  # the resume, y2, the newer interrupt, z, w
    assert compare_histories(SOURCE, SOURCE).ahead == [] and not compare_histories(SOURCE, SOURCE).is_ahead


@pytest.mark.parametrize("change, why", [
    (lambda t: t[:2] + [tup(3, 2, [("b", "y", "changed"), ("c", "__interrupt__", "q1")])] + t[3:],
     "a regular write changed"),
    (lambda t: t[:2] + [tup(3, 2, [("c", "__interrupt__", "q1")])] + t[3:], "a write gone"),
    (lambda t: t[:2] + [tup(3, 2, [("b", "y", "kept"), ("c", "__error__", "boom")])] + t[3:],
     "a special write's slot gone"),
    (lambda t: [t[0], tup(2, 1, [("a", "x", 1), ("e", "x", 2)])] + t[2:], "a write on an older checkpoint"),
    (lambda t: t + [tup(4, 2)], "a branch from an older checkpoint"),
    (lambda t: t + [tup(4, None)], "a new root"),
    (lambda t: t[:2] + t[3:] + [tup(4, 2)], "the newest checkpoint missing"),
    (lambda t: t[:3], "a namespace missing"),
    (lambda t: t[:2] + [tup(3, 2, t[2].pending_writes, value="other")] + t[3:], "a value changed"),
])
def test_the_rule_differences(change: Any, why: str) -> None:
    c = compare_histories(SOURCE, change(list(SOURCE)))
    assert c.differences and not c.is_ahead, why


PARALLEL = [("b", "x", 1), ("a", "x", 2), ("b", "y", 3)]  # two tasks' writes at an older checkpoint


@pytest.mark.parametrize("writes, task_order, equal", [
    ([("a", "x", 2), ("b", "x", 1), ("b", "y", 3)], True, False),  # the tasks in another order
    ([("a", "x", 2), ("b", "x", 1), ("b", "y", 3)], False, True),  # ... with no task paths to keep it
    ([("a", "x", 2), ("b", "y", 3), ("b", "x", 1)], False, False),  # a task's own writes in another order
    ([("a", "x", 2), ("b", "x", 1), ("b", "y", 4)], False, False),  # a value changed
    ([("a", "x", 2), ("b", "x", 1)], False, False),  # a write gone
    ([("a", "x", 2), ("b", "x", 1), ("c", "y", 3)], False, False),  # a write of another task
])
def test_without_task_paths_only_each_task_s_order_of_writes_is_compared(
    writes: list[Any], task_order: bool, equal: bool
) -> None:
    """A source that cannot tell task paths (a saver object): its copy orders a step's
    tasks' writes by task id, so only each task's own writes are compared in order."""
    source = [tup(1, None), tup(2, 1, PARALLEL), tup(3, 2)]
    target = [tup(1, None), tup(2, 1, writes), tup(3, 2)]
    c = compare_histories(source, target, task_order=task_order)
    assert (c.differences == []) == equal and c.ahead == [], c.differences
    if not task_order:  # the newest checkpoint's rule (a run going on adds writes) too
        newest = compare_histories(source[:2], target[:2], task_order=False)
        assert (newest.differences == [] and newest.ahead == []) == equal, newest.differences


def test_a_store_copied_to_sqlite_and_back_is_up_to_date_not_different(tmp_path: Path, capsys) -> None:
    """A store's threads (JsonlSaver's 12-digit channel versions) copied to SQLite are
    widened there to SqliteSaver's 32 digits. Copied back into the same store, every
    checkpoint was reported as differing (``channel_versions differs``, ``versions_seen
    differs``: the same versions, zero-padded), exit status 1, though each thread was
    whole on both ends; after the app went on in SQLite, the way back said so too. The
    versions are now compared at one width: up to date, then the new checkpoints copied."""
    store, db = tmp_path / "s", tmp_path / "app.db"
    with JsonlSaver(store) as saver:
        agent = GRAPHS["agent"]().compile(checkpointer=saver)
        agent.invoke({"messages": [("user", "add 2 3")]}, cfg("agent"))
        review = GRAPHS["review"]().compile(checkpointer=saver)
        review.invoke({"topic": "tea"}, cfg("review"))  # waits for a person
    assert main(["copy", str(store), url(db)]) == 0
    capsys.readouterr()

    code, report = run_json(["copy", url(db), str(store)], capsys)
    assert (code, report["mismatches"], report["copied"]) == (0, [], 0), report["mismatches"]
    assert report["ok"] and sorted(report["up_to_date"]) == ["agent", "review"], report

    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        review = GRAPHS["review"]().compile(checkpointer=SqliteSaver(conn))
        review.invoke(Command(resume="yes"), cfg("review"))  # the app went on in SQLite
        conn.commit()
    code, report = run_json(["copy", url(db), str(store)], capsys)
    assert (code, report["mismatches"], report["copied"]) == (0, [], 1), report["mismatches"]
    assert report["up_to_date"] == ["agent"] and report["checkpoints"] > 0, report
    with JsonlSaver(store) as saver:
        state = GRAPHS["review"]().compile(checkpointer=saver).get_state(cfg("review"))
    assert state.next == () and state.values["topic"] == "tea", state  # 'topic' was lost
