"""Copying threads between checkpointers (``langgraph_jsonl_checkpoint.migrate``), against
real SQLite files written by real graphs and the real PostgreSQL server.

LangGraph is the oracle: a copy is right when the graphs, compiled with the target,
read exactly what they read with the source (``tests/harness/migration.py``), and
when a run resumed on the target goes on as it would have on the source.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.errors import MigrationError
from langgraph_jsonl_checkpoint.migrate import CopyInterrupted, compare_threads, copy_threads, open_endpoint
from tests.harness.bounded import within
from tests.harness.migration import (
    GRAPHS,
    build_sqlite_app,
    cfg,
    copy_of,
    go_on,
    histories,
    record_uncertain_call,
    sqlite_write_slots,
)


@pytest.fixture(scope="module")
def sqlite_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SqliteSaver file with the reference threads (shared: tests copy it to change it)."""
    return build_sqlite_app(tmp_path_factory.mktemp("app") / "app.db")


def sqlite_url(path: Path) -> str:
    return "sqlite:///" + str(path)  # an absolute path after the third slash


def read_sqlite(path: Path) -> dict[str, Any]:
    with (
        closing(sqlite3.connect(path, check_same_thread=False)) as conn,
        conn,
        within(120, "reading the SQLite file"),
    ):
        return histories(SqliteSaver(conn))


def read_store(path: Path) -> dict[str, Any]:
    with JsonlSaver(path) as saver, within(120, "reading the store"):
        return histories(saver)


def read_postgres(url: str) -> dict[str, Any]:
    with PostgresSaver.from_conn_string(url) as saver, within(120, "reading PostgreSQL"):
        return histories(saver)


def pg_count(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def jsonl_write_slots(path: Path) -> list[tuple[Any, ...]]:
    out = []
    with JsonlSaver(path, read_only=True) as saver:
        for thread_id in saver.store.thread_ids():
            log = saver.store.thread_log(thread_id)
            with log.mutex:
                idx = log.refresh()
                for ns, ids in idx.checkpoints.items():
                    for cid in ids:
                        out += [(thread_id, ns, cid, task, w.task_path, i, w.channel)
                                for task, i, w in idx.sorted_writes(ns, cid)]
    return sorted(out)


def test_sqlite_to_jsonl_to_postgres_to_jsonl_reads_the_same_everywhere(
    sqlite_app: Path, tmp_path: Path, pg_url: str
) -> None:
    source = read_sqlite(sqlite_app)
    # the threads are what the test claims: a fork, interrupts, subgraphs, Send, deltas
    assert len({h[1] for h in source["agent"]["history"]}) < len(source["agent"]["history"])  # a fork
    assert source["review"]["history"][0][3] == ("review",)
    assert any(ns for ns, *_ in source["nested"]["raw"])
    assert len({r[4] for r in sqlite_write_slots(sqlite_app) if r[0] == "fan"}) > 2  # task paths

    first = copy_threads(sqlite_url(sqlite_app), str(tmp_path / "store"))
    assert first.ok and first.verified and len(first.threads) == len(GRAPHS), first.to_json()
    assert first.checkpoints == sum(len(h["raw"]) for h in source.values())
    assert read_store(tmp_path / "store") == source

    second = copy_threads(str(tmp_path / "store"), pg_url, setup=True)
    assert second.ok and second.checkpoints == first.checkpoints and second.writes == first.writes
    assert read_postgres(pg_url) == source

    third = copy_threads(pg_url, str(tmp_path / "back"))
    assert third.ok and third.checkpoints == first.checkpoints
    assert read_store(tmp_path / "back") == source
    # every write kept its task, task path, idx and channel, end to end
    assert jsonl_write_slots(tmp_path / "back") == sqlite_write_slots(sqlite_app)


def test_a_graph_resumed_on_the_target_continues_as_on_the_source(
    sqlite_app: Path, tmp_path: Path, pg_url: str
) -> None:
    mine = copy_of(sqlite_app, tmp_path / "mine.db")
    assert copy_threads(sqlite_url(mine), pg_url, setup=True).ok
    assert copy_threads(sqlite_url(mine), str(tmp_path / "store")).ok
    with closing(sqlite3.connect(mine, check_same_thread=False)) as conn, conn:
        expected = go_on(SqliteSaver(conn))
    with PostgresSaver.from_conn_string(pg_url) as saver:
        assert go_on(saver) == expected
    with JsonlSaver(tmp_path / "store") as saver:
        assert go_on(saver) == expected
    assert expected["review"]["approved"] is True and expected["nested"]["answer"] == "42"


def test_running_again_copies_nothing_and_duplicates_nothing(
    sqlite_app: Path, tmp_path: Path, pg_url: str
) -> None:
    first = copy_threads(sqlite_url(sqlite_app), pg_url, setup=True)
    rows = {t: pg_count(pg_url, t) for t in ("checkpoints", "checkpoint_writes", "checkpoint_blobs")}
    again = copy_threads(sqlite_url(sqlite_app), pg_url)
    assert again.ok and again.checkpoints == 0 and again.writes == 0
    assert sum(t.present for t in again.threads) == first.checkpoints
    assert {t: pg_count(pg_url, t) for t in rows} == rows
    assert rows["checkpoints"] == first.checkpoints and rows["checkpoint_writes"] == first.writes

    copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"))
    size = sum(p.stat().st_size for p in (tmp_path / "s").rglob("*.jsonl"))
    assert copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s")).checkpoints == 0
    assert sum(p.stat().st_size for p in (tmp_path / "s").rglob("*.jsonl")) == size


def test_a_subset_by_glob_and_a_dry_run(sqlite_app: Path, tmp_path: Path) -> None:
    dry = copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"), threads=["a*", "fan"], dry_run=True)
    assert [t.thread_id for t in dry.threads] == ["agent", "fan"] and dry.dry_run and not dry.verified
    assert not (tmp_path / "s").exists()  # nothing written, nothing created
    real = copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"), threads=["a*", "fan"])
    assert (real.checkpoints, real.writes) == (dry.checkpoints, dry.writes) and real.checkpoints > 0
    with JsonlSaver(tmp_path / "s") as saver:
        assert sorted(saver.store.thread_ids()) == ["agent", "fan"]


def test_verification_lists_what_differs(sqlite_app: Path, tmp_path: Path) -> None:
    assert copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s")).ok
    with JsonlSaver(tmp_path / "s") as saver:  # the target gains a write the source lacks
        older = list(saver.list(cfg("counter")))[1]  # not the newest: no run adds writes to it
        saver.put_writes(older.config, [("n", 7)], "task-x", "~x")
    report = copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"))
    assert not report.ok and [t.thread_id for t in report.mismatched] == ["counter"]
    assert any("pending write" in m for m in report.mismatched[0].mismatches)
    src = open_endpoint(sqlite_url(sqlite_app), role="source")
    dst = open_endpoint(str(tmp_path / "s"), role="target")
    try:
        assert compare_threads(src, dst, "agent") == []
        assert compare_threads(src, dst, "counter") != []
    finally:
        src.close()
        dst.close()


def test_a_damaged_source_thread_is_reported_and_the_others_copied(sqlite_app: Path, tmp_path: Path) -> None:
    assert copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s")).ok
    with JsonlSaver(tmp_path / "s") as saver:
        log = saver.store.thread_log("agent").path
    data = bytearray(Path(log).read_bytes())
    middle = data.index(b'"t":"checkpoint"', len(data) // 2)
    data[middle + 40] ^= 0x01  # one flipped bit in a committed record
    Path(log).write_bytes(bytes(data))
    (tmp_path / "s" / "threads" / (Path(log).stem + ".idx")).unlink(missing_ok=True)
    before = {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()}
    report = copy_threads(str(tmp_path / "s"), str(tmp_path / "t"))
    assert [t.thread_id for t in report.problems] == ["agent"] and not report.ok
    assert "damaged at byte offset" in report.problems[0].problem  # not its readable part passed off as whole
    assert "langgraph-jsonl repair" in report.problems[0].problem
    assert {p: p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()} == before
    assert sorted(t.thread_id for t in report.threads if not t.problem) == sorted(set(GRAPHS) - {"agent"})
    assert all(t.checkpoints > 0 for t in report.threads if not t.problem)


def test_clear_errors_for_endpoints_that_cannot_be_used(
    sqlite_app: Path, tmp_path: Path, pg_url: str
) -> None:
    with pytest.raises(MigrationError, match="cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:1/x"):
        copy_threads(sqlite_url(sqlite_app), "postgresql://postgres@127.0.0.1:1/x")
    with pytest.raises(MigrationError, match=r"no checkpoints, .*--setup"):
        copy_threads(sqlite_url(sqlite_app), pg_url)
    with pytest.raises(MigrationError, match=r"unknown kind of target URL \(mysql://\)"):
        copy_threads(sqlite_url(sqlite_app), "mysql://db/app")
    with pytest.raises(MigrationError, match="no such SQLite file"):
        copy_threads(sqlite_url(tmp_path / "nope.db"), str(tmp_path / "s"))
    with pytest.raises(MigrationError, match="PostgresSaver never wrote to it"):
        copy_threads(pg_url, str(tmp_path / "s"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(MigrationError, match="not a source to copy from"):
        copy_threads(str(tmp_path / "notes.txt"), str(tmp_path / "s"))
    assert not (tmp_path / "s").exists()


def test_checkpointer_objects_as_endpoints(tmp_path: Path) -> None:
    """An ``InMemorySaver`` (its write slots read from its dicts) into a ``JsonlSaver``."""
    memory = InMemorySaver()
    for thread_id in ("fan", "nested", "delta"):
        graph = GRAPHS[thread_id]().compile(checkpointer=memory)
        graph.invoke({"fan": {"items": ["a", "b", "c"]}, "nested": {"trail": []},
                      "delta": {"target": 12}}[thread_id], cfg(thread_id))
    with JsonlSaver(tmp_path / "s") as saver:
        report = copy_threads(memory, saver)
        assert report.ok and [t.thread_id for t in report.threads] == ["delta", "fan", "nested"]
        with within(120, "reading both"):
            threads = ["fan", "nested", "delta"]
            assert histories(saver, threads) == histories(memory, threads)


def _writes_by_task(raw: list[Any]) -> list[Any]:
    """``histories()``'s raw checkpoints with each one's pending writes ordered by task (each
    task's own in their order)."""
    return [(*r[:4], sorted(r[4], key=lambda w: w[0])) for r in raw]


def test_a_saver_object_source_without_task_paths_verifies_a_send_fan_out(tmp_path: Path) -> None:
    """A ``SqliteSaver`` object as source tells no task paths (LangGraph's API has none),
    so the target orders a step's parallel writes by task id, not as the source did: the
    copy is still equal (each task's writes in order, LangGraph reads the same), while a
    write whose value changed on the source since is still a difference."""
    with closing(sqlite3.connect(tmp_path / "app.db", check_same_thread=False)) as conn, conn:
        source = SqliteSaver(conn)
        GRAPHS["fan"]().compile(checkpointer=source).invoke({"items": list("abcdefgh")}, cfg("fan"))
        with JsonlSaver(tmp_path / "s") as saver:
            report = copy_threads(source, saver)
            assert report.ok, report.to_json()
            assert report.threads[0].writes >= 8 and report.threads[0].mismatches == []
            with within(120, "reading both"):
                mine, theirs = histories(saver, ["fan"])["fan"], histories(source, ["fan"])["fan"]
            assert (mine["history"], mine["subgraphs"]) == (theirs["history"], theirs["subgraphs"])
            assert _writes_by_task(mine["raw"]) == _writes_by_task(theirs["raw"])
            assert copy_threads(source, saver).ok  # run again: all there, still equal

            # the source's value of one worker's write changes: a difference, not hidden
            row = conn.execute(
                "SELECT rowid, checkpoint_id FROM writes WHERE thread_id = 'fan' AND channel = 'results' "
                "ORDER BY rowid LIMIT 1"
            ).fetchone()
            kind, value = source.serde.dumps_typed(["changed"])
            conn.execute("UPDATE writes SET type = ?, value = ? WHERE rowid = ?", (kind, value, row[0]))
            conn.commit()
            changed = copy_threads(source, saver)
            assert not changed.ok
            assert changed.threads[0].mismatches == [
                f"checkpoint {row[1]}: pending writes differ (task, channel, value or order)"]

            # and one write gone from the source: a difference too
            conn.execute("DELETE FROM writes WHERE rowid = ?", (row[0],))
            conn.commit()
            fewer = copy_threads(source, saver)
            assert not fewer.ok and len(fewer.threads[0].mismatches) == 1
            assert "pending write(s) on the target" in fewer.threads[0].mismatches[0]


def test_the_journal_goes_into_sqlite_store_and_back(tmp_path: Path) -> None:
    """Tool-call events of a store's thread land in ``SqliteStore`` in the SQLite file (what
    ``ReplayAdapter(store=SqliteStore(...))`` reads), and come back unchanged."""
    from langgraph.store.sqlite import SqliteStore

    from langgraph_jsonl_checkpoint.replay.journal import StoreJournal

    with JsonlSaver(tmp_path / "s") as saver:
        graph = GRAPHS["agent"]().compile(checkpointer=saver)
        graph.invoke({"messages": [("user", "add 1 2")]}, cfg("agent"))
        cid = saver.get_tuple(cfg("agent")).config["configurable"]["checkpoint_id"]
        record_uncertain_call(saver, cid)
        before = [(r.key, r.state, r.effective_state, r.args) for r in saver.tool_calls("agent")]
    report = copy_threads(str(tmp_path / "s"), sqlite_url(tmp_path / "app.db"))
    assert report.ok and report.journal_records == 2
    with closing(sqlite3.connect(tmp_path / "app.db", check_same_thread=False)) as conn, conn:
        records = StoreJournal(SqliteStore(conn)).all("agent")
        assert [(r.key, r.state, r.effective_state, r.args) for r in records] == before
    back = copy_threads(sqlite_url(tmp_path / "app.db"), str(tmp_path / "back"))
    assert back.ok and back.journal_records == 2
    with JsonlSaver(tmp_path / "back") as saver:
        assert [(r.key, r.state, r.effective_state, r.args) for r in saver.tool_calls("agent")] == before


@pytest.mark.parametrize("how", ["KeyboardInterrupt", "stop"])
def test_an_interrupted_copy_says_how_far_it_got_and_a_rerun_completes_it(
    sqlite_app: Path, tmp_path: Path, how: str
) -> None:
    """Ctrl-C in the caller's thread (a ``KeyboardInterrupt`` while it waits) or ``stop``
    set: the copies under way stop at their next step, ``CopyInterrupted`` (itself a
    ``KeyboardInterrupt``) tells how many threads were done, and the copy run again ends
    equal to one run through."""
    stop = threading.Event()

    def track(ids: list[str]) -> Any:
        for n, thread_id in enumerate(ids):
            if n == 2:
                if how == "stop":
                    stop.set()
                else:
                    raise KeyboardInterrupt
            yield thread_id

    with pytest.raises(CopyInterrupted) as caught:
        copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"), track=track, stop=stop, workers=1)
    assert isinstance(caught.value, KeyboardInterrupt) and caught.value.total == len(GRAPHS)
    done = len(caught.value.report.threads)
    assert 2 <= done < len(GRAPHS) and stop.is_set()
    copied = sum(t.checkpoints for t in caught.value.report.threads)
    part = [t.checkpoints for t in caught.value.under_way]  # the thread under way, if stopped after a put
    assert len(part) <= 1 and all(n > 0 for n in part)  # one worker
    more = f", {part[0]} of them by 1 thread(s) stopped part-way" if part else ""
    assert str(caught.value) == (f"interrupted after {done} of {len(GRAPHS)} threads ({copied + sum(part)} "
                                 f"checkpoint(s) copied{more}); run the same command again to continue")
    rest = copy_threads(sqlite_url(sqlite_app), str(tmp_path / "s"))
    assert rest.ok and rest.verified and sum(t.present for t in rest.threads) > 0
    assert read_store(tmp_path / "s") == read_sqlite(sqlite_app)


def test_an_interrupted_copy_counts_the_checkpoints_of_the_thread_it_stopped_part_way(
    sqlite_app: Path, tmp_path: Path
) -> None:
    """Stopped in the middle of the first thread: no thread is done, but checkpoints were
    copied, and the message says so (not a bare "0 of 6 threads")."""
    stop = threading.Event()

    class StopsAfterFive(InMemorySaver):
        puts = 0

        def put(self, *args: Any, **kwargs: Any) -> Any:
            self.puts += 1
            if self.puts == 5:
                stop.set()  # the copy stops before its next put
            return super().put(*args, **kwargs)

    target = StopsAfterFive()
    with pytest.raises(CopyInterrupted) as caught:
        copy_threads(sqlite_url(sqlite_app), target, stop=stop, workers=1)
    assert caught.value.report.threads == [] and target.puts == 5
    assert [(t.thread_id, t.checkpoints) for t in caught.value.under_way] == [("agent", 5)]
    assert str(caught.value) == (f"interrupted after 0 of {len(GRAPHS)} threads (5 checkpoint(s) copied, "
                                 "5 of them by 1 thread(s) stopped part-way); run the same command again "
                                 "to continue")
    rest = copy_threads(sqlite_url(sqlite_app), target)
    assert rest.ok and sum(t.present for t in rest.threads) == 5


def test_a_put_the_target_refuses_is_not_counted_as_copied(sqlite_app: Path, tmp_path: Path) -> None:
    """A target that refuses a write (an SQLite file another process holds locked: "database
    is locked") stopped the thread's copy, and the report counted the checkpoint it was
    putting as copied: "'agent' (1 of its checkpoints on the target)" with none there.
    Only what the target took is counted now."""

    class RefusesTheThird(InMemorySaver):
        puts = 0

        def put(self, *args: Any, **kwargs: Any) -> Any:
            self.puts += 1
            if self.puts == 3:
                raise RuntimeError("database is locked")
            return super().put(*args, **kwargs)

    target = RefusesTheThird()
    report = copy_threads(sqlite_url(sqlite_app), target, threads=["agent"], workers=1)
    (agent,) = report.threads
    assert agent.problem is not None and "database is locked" in agent.problem, agent.problem
    held = len(list(target.list({"configurable": {"thread_id": "agent"}})))
    assert (held, agent.checkpoints) == (2, 2), agent
    assert "'agent' (2 of its checkpoints on the target)" in report.summary(), report.summary()


def test_a_locked_sqlite_target_says_what_to_do(sqlite_app: Path, tmp_path: Path) -> None:
    """An SQLite target another process holds locked (an app writing to it) stopped each
    thread with a bare "OperationalError: database is locked". It now says who holds
    it and what to do."""

    class Locked(InMemorySaver):
        def put(self, *args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("database is locked")

    report = copy_threads(sqlite_url(sqlite_app), Locked(), threads=["agent"], workers=1)
    (agent,) = report.threads
    assert agent.problem is not None and agent.problem.startswith(
        "copy to Locked stopped: OperationalError: database is locked (another process held the "
        "SQLite file locked"), agent.problem
    assert "Run the same command again" in agent.problem, agent.problem
