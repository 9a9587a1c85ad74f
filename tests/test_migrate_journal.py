"""The replay adapter on PostgreSQL, and its journal carried between stores and PostgreSQL.

- ``ReplayAdapter(store=PostgresStore(...))`` with ``PostgresSaver`` under the adapter's
  crash battery: a child process runs the graph against the real server and is
  SIGKILLed at each point of a side-effecting call's lifecycle; a fresh child resumes.
- A thread whose ``send_email`` was cut off (uncertain) in a ``JsonlSaver`` store is
  exported to PostgreSQL: the adapter there still holds it behind the question, a
  person's answer is kept, and the email is still sent once; imported back, the store
  knows the answer and asks nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.migrate import copy_threads
from langgraph_jsonl_checkpoint.replay.plan import SKIPPED_TEXT
from tests.harness.replay_crashes import resume, run_crash, run_resume, spec
from tests.harness.replay_tools import effects
from tests.test_replay_crash import BATCH, MATRIX, assert_complete, tool_message


def setup_postgres(url: str) -> None:
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
    with PostgresStore.from_conn_string(url) as store:
        store.setup()


@pytest.mark.parametrize("point", list(MATRIX))
def test_replay_adapter_on_postgres_survives_sigkill_at_each_point(
    tmp_path: Path, pg_url: str, point: str
) -> None:
    before, answer, content, resolution = MATRIX[point]
    setup_postgres(pg_url)
    s = spec(tmp_path / "store", plan=BATCH, answers={"c2": answer} if answer else None, pg_url=pg_url,
             crash={"call": "c2", "point": point, "how": "kill", "settle": ["c1", "c3"]})
    c = run_crash(s)
    assert c.died, f"child did not die at its crash point: exit code {c.exitcode}\n{c.error}"
    report = run_resume(s)
    assert report["before"]["c1"] == ["finished", "finished"] and report["before"]["c2"][1] == before
    assert len(report["interrupts"]) == (0 if answer is None else 1)
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 1, "c3": 1}
    assert tool_message(report, "c2")["content"] == content
    assert report["tool_calls"]["c2"]["resolution"] == resolution


def test_an_uncertain_call_stays_uncertain_across_export_and_import(tmp_path: Path, pg_url: str) -> None:
    s = spec(tmp_path / "store", plan=BATCH,
             crash={"call": "c2", "point": "after_effect", "how": "kill", "settle": ["c1", "c3"]})
    assert run_crash(s).died
    assert effects(s["effects"]) == {"c1": 1, "c2": 1, "c3": 1}

    exported = copy_threads(s["store"], pg_url, setup=True)
    assert exported.ok and exported.journal_records > 0, exported.to_json()
    again = copy_threads(s["store"], pg_url)
    assert again.ok and again.journal_records == 0  # nothing twice

    # On PostgreSQL the adapter asks about c2, exactly as it would have on the store.
    on_pg = resume({**s, "pg_url": pg_url, "answers": {"c2": "skip"}})
    assert on_pg["before"] == {"c1": ["finished", "finished"], "c2": ["started", "uncertain"],
                               "c3": ["finished", "finished"]}
    assert [c["id"] for c in on_pg["interrupts"][0]["calls"]] == ["c2"]
    assert_complete(on_pg)
    assert tool_message(on_pg, "c2")["content"] == SKIPPED_TEXT
    assert on_pg["effects"] == {"c1": 1, "c2": 1, "c3": 1}  # the email was not sent again

    # Back to a store: the decision taken on PostgreSQL is there, nothing is asked again.
    back = tmp_path / "back"
    imported = copy_threads(pg_url, str(back))
    assert imported.ok and imported.journal_records > exported.journal_records
    with JsonlSaver(back) as saver:
        c2 = next(r for r in saver.tool_calls("t1") if r.key.call_id == "c2")
        assert (c2.state, c2.resolution) == ("finished", "skip")
    final = resume({**s, "store": str(back)})
    assert final["interrupts"] == [] and final["messages"] == on_pg["messages"]
    assert final["effects"] == {"c1": 1, "c2": 1, "c3": 1}
