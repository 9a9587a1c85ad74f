"""A source thread that cannot be read (a damaged row of an SqliteSaver database) is
counted and named as not copied in full, in the summary, the dry run's and ``--json``:
it was counted among the threads "copied", with only "1 thread(s) not copied, or only in
part" to say otherwise, and never named there."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.migrate.endpoints import CHUNK
from tests.harness.bounded import within
from tests.harness.migration import cfg
from tests.harness.state_graphs import build_counter_graph

RUNS = 3  # each run of the counter graph makes 5 checkpoints: 15 a thread, two chunks


@pytest.fixture(scope="module")
def damaged_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Threads t1 (whole), t2 (its first checkpoint's blob damaged: nothing readable)
    and t3 (its last one's damaged: its first chunk readable)."""
    db = tmp_path_factory.mktemp("damaged") / "app.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn, conn:
        graph = build_counter_graph().compile(checkpointer=SqliteSaver(conn))
        for tid in ("t1", "t2", "t3"):
            for n in range(RUNS):
                graph.invoke({"n": n}, cfg(tid))
    with closing(sqlite3.connect(db)) as conn, conn:
        for tid, pick in (("t2", min), ("t3", max)):
            ids = [r[0] for r in conn.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?",
                                              (tid,))]
            assert len(ids) > CHUNK
            # 0xc1 is never used by msgpack: the blob cannot be deserialized
            conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE thread_id = ? AND checkpoint_id = ?",
                         (b"\xc1\xc1", tid, pick(ids)))
    return db


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_unreadable_source_thread_is_not_counted_as_copied(
    damaged_db: Path, tmp_path: Path, capsys, dry_run: bool
) -> None:
    argv = ["import", "sqlite:///" + str(damaged_db), str(tmp_path / "s"), *(["--dry-run"] * dry_run)]
    with within(60, "import"):
        assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "PROBLEM thread t2: cannot read the thread from" in err, err
    assert "PROBLEM thread t3: cannot read the thread from" in err, err
    verb = "would copy" if dry_run else "copied"
    assert f"{verb} 1 thread(s) from " in out, out
    would = " would" if dry_run else ""
    assert (f"2 thread(s){would} not {'be ' * dry_run}copied in full (see each one's PROBLEM): "
            f"'t2' (none of its checkpoints{would} on the target), "
            f"'t3' ({CHUNK} of its checkpoints{would} on the target)") in out, out

    with within(60, "import --json"):
        assert main([*argv, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    # Run again (the text run above put t1 unless a dry run): t1 is up to date, not copied.
    assert report["threads"] == 3 and report["copied"] == (1 if dry_run else 0), report
    assert report["up_to_date"] == ([] if dry_run else ["t1"]), report
    assert report["incomplete"] == ["t2", "t3"], report
    assert [p["thread_id"] for p in report["problems"]] == ["t2", "t3"], report
    per_thread = {t["thread_id"]: t for t in report["per_thread"]}
    assert per_thread["t3"]["checkpoints"] + per_thread["t3"]["present"] == CHUNK, per_thread["t3"]


def test_run_again_the_part_on_the_target_is_still_named(damaged_db: Path, tmp_path: Path, capsys) -> None:
    """Run again, nothing more is put into t3: what the target holds of it is still said."""
    argv = ["import", "sqlite:///" + str(damaged_db), str(tmp_path / "s")]
    with within(60, "import"):
        assert main(argv) == 1
        capsys.readouterr()
        assert main(argv) == 1
    out = capsys.readouterr().out
    assert "copied nothing from " in out and ": 1 thread(s) already up to date there" in out, out
    assert f"'t3' ({CHUNK} of its checkpoints on the target)" in out, out
