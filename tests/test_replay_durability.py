"""The replay adapter's promise under every durability mode, with real crashes.

A child process runs the agent on a ``JsonlSaver`` and is killed with SIGKILL right after
``send_email`` wrote its email; a fresh process resumes the thread.

- ``"async"`` (LangGraph's default): the checkpoint the tool node runs from is saved in
  the background, here slowed to 1 s (a busy disk). The adapter holds the side-effecting
  call until that checkpoint is durable, so the resumed run finds the journal and asks
  about the uncertain call; the email is sent once.
- ``"exit"``: nothing is saved until the run ends, so the killed run's checkpoint never
  existed. The next tool node lists the call as from a lost run; the re-planned call is
  held until a person answers; the email is sent once.
- ``"sync"``: as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint.replay.plan import SKIPPED_TEXT
from tests.harness.replay_crashes import run_crash, run_resume, spec
from tests.harness.replay_tools import call, effects

EMAIL = [[[call("send_email", "c2", to="bob")]]]
#: The email and a read-only lookup in one parallel batch.
EMAIL_AND_LOOKUP = [[[call("lookup_order", "c1", order_id="42"), call("send_email", "c2", to="bob")]]]
KILL_AFTER_EMAIL = {"call": "c2", "point": "after_effect", "how": "kill"}


def tool_message(report: dict, call_id: str) -> dict:
    found = [m for m in report["messages"] if m["type"] == "tool" and m["tool_call_id"] == call_id]
    assert len(found) == 1, report["messages"]
    return found[0]


def crash(s: dict) -> None:
    c = run_crash(s, timeout=60)
    assert c.died, f"the child did not die at its crash point: {c.exitcode}\n{c.error}"
    assert effects(s["effects"])["c2"] == 1, "the email was not written before the kill"


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_async_durability_the_email_goes_out_once_and_a_person_is_asked(
    tmp_path: Path, plug: str, mode: str
) -> None:
    s = spec(tmp_path / "store", plan=EMAIL, plug=plug, mode=mode, durability="async", slow_put=1.0,
             crash=KILL_AFTER_EMAIL, answers={"c2": "skip"})
    crash(s)
    report = run_resume(s, timeout=60)
    assert report["before"]["c2"] == ["started", "uncertain"]
    asked = [c for i in report["interrupts"] for c in i["calls"]]
    assert [(c["id"], c["name"], c["args"]) for c in asked] == [("c2", "send_email", {"to": "bob"})]
    assert "lost_run" not in asked[0]  # its checkpoint was saved: an ordinary uncertain call
    assert report["effects"] == {"c2": 1}
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    assert report["next"] == [] and report["messages"][-1]["content"].startswith("done")


def test_async_durability_idempotent_calls_are_not_held_back(tmp_path: Path) -> None:
    """The lookup runs at once; only the email waits for the checkpoint. Killed after the
    email, the lookup (idempotent) may run again; the email does not."""
    s = spec(tmp_path / "store", plan=EMAIL_AND_LOOKUP, durability="async", slow_put=1.0,
             crash={**KILL_AFTER_EMAIL, "settle": ["c1"]}, answers={"c2": "skip"})
    crash(s)
    report = run_resume(s, timeout=60)
    assert [c["id"] for i in report["interrupts"] for c in i["calls"]] == ["c2"]
    assert report["effects"]["c2"] == 1 and report["effects"]["c1"] in (1, 2)


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_exit_durability_the_lost_call_is_asked_about_before_it_runs_again(
    tmp_path: Path, plug: str, mode: str
) -> None:
    s = spec(tmp_path / "store", plan=EMAIL, plug=plug, mode=mode, durability="exit",
             crash=KILL_AFTER_EMAIL, new_input="go", answers={"c2": "skip"})
    crash(s)
    report = run_resume(s, timeout=60)
    # nothing of the killed run was saved; the journal still knows the started call
    assert report["before"]["c2"] == ["started", "uncertain"]
    # the user asks again; the re-planned email is held until a person answers
    asked = [c for i in report["interrupts_after_input"] for c in i["calls"]]
    assert len(asked) == 1 and asked[0]["lost_run"] is True, asked
    assert (asked[0]["id"], asked[0]["name"], asked[0]["args"]) == ("c2", "send_email", {"to": "bob"})
    assert asked[0]["started_at"] and asked[0]["checkpoint_id"]
    assert report["effects"] == {"c2": 1}  # not re-run without a decision
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    # both records are settled: the lost one by the person's answer
    states = sorted((r["state"], r["resolution"]) for r in report["records"] if r["call"] == "c2")
    assert states == [("finished", "skip"), ("finished", "skip")], report["records"]


def test_exit_durability_retry_runs_the_email_again_once(tmp_path: Path) -> None:
    s = spec(tmp_path / "store", plan=EMAIL, durability="exit", crash=KILL_AFTER_EMAIL,
             new_input="go", answers={"c2": "retry"})
    crash(s)
    report = run_resume(s, timeout=60)
    assert report["effects"] == {"c2": 2}  # the person said it did not go out
    assert tool_message(report, "c2")["content"] == "sent to bob"
    lost = [r for r in report["records"] if r["call"] == "c2" and r["events"][-1] == "superseded"]
    assert len(lost) == 1, report["records"]


def test_a_lost_call_no_new_call_matches_is_asked_about_on_its_own(tmp_path: Path) -> None:
    """After the crash the conversation goes elsewhere: the lost email is still asked
    about (by the next tool node), and the answer settles it."""
    s = spec(tmp_path / "store", plan=EMAIL, durability="exit", crash=KILL_AFTER_EMAIL, new_input="go",
             resume_plan=[[[call("lookup_order", "c9", order_id="7")]]], answers={"c2": "skip"})
    crash(s)
    report = run_resume(s, timeout=60)
    asked = [c for i in report["interrupts_after_input"] for c in i["calls"]]
    assert [(c["id"], c["lost_run"]) for c in asked] == [("c2", True)]
    assert report["effects"] == {"c2": 1, "c9": 1}
    assert {r["call"]: (r["state"], r["resolution"]) for r in report["records"]} == {
        "c2": ("finished", "skip"), "c9": ("finished", None)
    }


#: A lookup first, then the email: the lost email is asked about at the lookup's tool
#: node (no call there matches it), before the model asks for it again.
LOOKUP_THEN_EMAIL = [[[call("lookup_order", "c1", order_id="42")], [call("send_email", "c2", to="bob")]]]


def lost_then_rerequested(
    tmp_path: Path, plug: str, mode: str, answer: str, pg_url: str | None = None
) -> dict:
    """Killed inside the email under "exit"; the user sends the input again; the person
    answers about the lost email at the lookup's node; then the model asks for the same
    email (same id, same arguments) again."""
    extra = {"pg_url": pg_url} if pg_url else {}
    s = spec(tmp_path / "store", plan=LOOKUP_THEN_EMAIL, plug=plug, mode=mode, durability="exit",
             crash={**KILL_AFTER_EMAIL, "settle": ["c1"]}, new_input="go", answers={"c2": answer}, **extra)
    crash(s)
    report = run_resume(s, timeout=60)
    asked = [c for i in report["interrupts_after_input"] for c in i["calls"]]
    assert [(c["id"], c["lost_run"]) for c in asked] == [("c2", True)], asked
    assert report["pending_interrupts"] == [] and report["next"] == [], report
    return report


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_exit_durability_a_lost_call_answered_skip_is_not_run_when_asked_for_again(
    tmp_path: Path, plug: str, mode: str
) -> None:
    report = lost_then_rerequested(tmp_path, plug, mode, "skip")
    assert report["effects"]["c2"] == 1, "the email went out again after the person said skip"
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    assert report["messages"][-1]["content"].startswith("done")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_exit_durability_a_lost_call_answered_retry_runs_once_when_asked_for_again(
    tmp_path: Path, mode: str
) -> None:
    report = lost_then_rerequested(tmp_path, "tool_node", mode, "retry")
    assert report["effects"]["c2"] == 2  # the person said it did not go out: once more
    assert tool_message(report, "c2")["content"] == "sent to bob"


@pytest.mark.parametrize("plug", ["tool_node", "agent"])
def test_sync_durability_is_unchanged(tmp_path: Path, plug: str) -> None:
    s = spec(tmp_path / "store", plan=EMAIL, plug=plug, durability="sync", slow_put=0.3,
             crash=KILL_AFTER_EMAIL, answers={"c2": "skip"})
    crash(s)
    report = run_resume(s, timeout=60)
    assert [c["id"] for i in report["interrupts"] for c in i["calls"]] == ["c2"]
    assert report["effects"] == {"c2": 1}


# ---------------------------------------------------------------------------
# PostgresSaver + ReplayAdapter(store=PostgresStore): the same crashes on the real server
# ---------------------------------------------------------------------------


def setup_postgres(url: str) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
    with PostgresStore.from_conn_string(url) as store:
        store.setup()


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
def test_postgres_async_durability_the_email_goes_out_once_and_a_person_is_asked(
    tmp_path: Path, pg_url: str, plug: str
) -> None:
    """PostgresSaver's background save of the checkpoint the tool node runs from is slowed
    to 1 s; the adapter (journal in PostgresStore) checks the saver for it before
    ``started``, so the killed run's call is found and asked about, never re-sent."""
    setup_postgres(pg_url)
    s = spec(tmp_path / "store", plan=EMAIL, plug=plug, durability="async", slow_put=1.0,
             crash=KILL_AFTER_EMAIL, answers={"c2": "skip"}, pg_url=pg_url)
    crash(s)
    report = run_resume(s, timeout=60)
    assert report["before"]["c2"] == ["started", "uncertain"]
    asked = [c for i in report["interrupts"] for c in i["calls"]]
    assert [(c["id"], c["name"], c["args"]) for c in asked] == [("c2", "send_email", {"to": "bob"})]
    assert "lost_run" not in asked[0]
    assert report["effects"] == {"c2": 1}
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    assert report["next"] == [] and report["messages"][-1]["content"].startswith("done")


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
def test_postgres_exit_durability_the_lost_call_is_asked_about_before_it_runs_again(
    tmp_path: Path, pg_url: str, plug: str
) -> None:
    setup_postgres(pg_url)
    s = spec(tmp_path / "store", plan=EMAIL, plug=plug, durability="exit", crash=KILL_AFTER_EMAIL,
             new_input="go", answers={"c2": "skip"}, pg_url=pg_url)
    crash(s)
    report = run_resume(s, timeout=60)
    assert report["before"]["c2"] == ["started", "uncertain"]
    asked = [c for i in report["interrupts_after_input"] for c in i["calls"]]
    assert len(asked) == 1 and asked[0]["lost_run"] is True, asked
    assert (asked[0]["id"], asked[0]["name"], asked[0]["args"]) == ("c2", "send_email", {"to": "bob"})
    assert report["effects"] == {"c2": 1}
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    states = sorted((r["state"], r["resolution"]) for r in report["records"] if r["call"] == "c2")
    assert states == [("finished", "skip"), ("finished", "skip")], report["records"]


@pytest.mark.parametrize("plug", ["tool_node", "wrap", "agent"])
def test_postgres_exit_durability_a_lost_call_answered_skip_is_not_run_when_asked_for_again(
    tmp_path: Path, pg_url: str, plug: str
) -> None:
    setup_postgres(pg_url)
    report = lost_then_rerequested(tmp_path, plug, "sync", "skip", pg_url=pg_url)
    assert report["effects"]["c2"] == 1, "the email went out again after the person said skip"
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT


# ---------------------------------------------------------------------------
# in one process: another checkpointer with a store journal; a checkpoint never saved
# ---------------------------------------------------------------------------


class _Died(BaseException):
    """Stands in for the process dying inside the tool (nothing handles it)."""


def test_store_journal_with_another_checkpointer_asks_about_a_lost_run(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from langgraph_jsonl_checkpoint import ReplayAdapter
    from tests.harness.replay_tools import HookMap, build_graph, config, make_tools

    saver, store = InMemorySaver(), InMemoryStore()

    def graph(hooks=None):
        adapter = ReplayAdapter(store=store)  # a new adapter, as after a restart
        tools = make_tools(tmp_path / "effects.log", hooks=hooks)
        return build_graph("tool_node", tools=tools, plan=EMAIL, checkpointer=saver, adapter=adapter), adapter

    def die() -> None:
        raise _Died()

    g, _ = graph(HookMap({("after_effect", "c2"): die}))
    with pytest.raises(_Died):
        g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    # (an exception, unlike a kill, still saves the state under "exit": lose it here)
    saver.delete_thread("t")
    g, adapter = graph()
    g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    asked = [c for i in g.get_state(config("t")).interrupts for c in i.value["calls"]]
    assert [(c["id"], c.get("lost_run")) for c in asked] == [("c2", True)]
    assert effects(tmp_path / "effects.log") == {"c2": 1}
    out = g.invoke(ReplayAdapter.resume_command(g.get_state(config("t")).interrupts, {"c2": "skip"}),
                   config("t"), durability="exit")
    assert out["messages"][-2].content == SKIPPED_TEXT
    assert effects(tmp_path / "effects.log") == {"c2": 1}
    assert sorted(r.state for r in adapter.tool_calls("t")) == ["finished", "finished"]
    # the open-call items are gone once settled: nothing is asked again
    assert adapter.journal.orphans("t", saver) == []


def test_a_lost_call_of_an_idempotent_tool_is_closed_without_asking(tmp_path: Path) -> None:
    """In one process (so mutation testing sees it): a lookup started in a run whose state
    was lost is closed as superseded, nobody is asked, and the re-planned lookup runs."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from langgraph_jsonl_checkpoint import ReplayAdapter
    from tests.harness.replay_crashes import IDEMPOTENT_BY_NAME
    from tests.harness.replay_tools import HookMap, build_graph, config, make_tools

    lookup = [[[call("lookup_order", "c1", order_id="42")]]]
    saver, store = InMemorySaver(), InMemoryStore()

    def graph(hooks=None):
        adapter = ReplayAdapter(store=store, idempotent=IDEMPOTENT_BY_NAME)
        tools = make_tools(tmp_path / "effects.log", hooks=hooks)
        g = build_graph("tool_node", tools=tools, plan=lookup, checkpointer=saver, adapter=adapter)
        return g, adapter

    def die() -> None:
        raise _Died()

    g, _ = graph(HookMap({("after_effect", "c1"): die}))
    with pytest.raises(_Died):
        g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    saver.delete_thread("t")  # the run's state is lost; the journal in the store is not
    g, adapter = graph()
    g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    assert g.get_state(config("t")).interrupts == ()
    assert effects(tmp_path / "effects.log") == {"c1": 2}
    events = sorted(r.events[-1] for r in adapter.tool_calls("t"))
    assert events == ["finished", "superseded"], events
    assert adapter.journal.orphans("t", saver) == []


def test_a_lost_call_no_new_call_matches_is_asked_about_and_settled_in_one_process(tmp_path: Path) -> None:
    """In one process (so mutation testing sees it; the test above resumes in a child): an
    email sent in a run whose state was lost, then a conversation that goes elsewhere. The
    next tool node asks about the lost email on its own; the answer settles it."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from langgraph_jsonl_checkpoint import ReplayAdapter
    from tests.harness.replay_crashes import IDEMPOTENT_BY_NAME
    from tests.harness.replay_tools import HookMap, build_graph, config, make_tools

    saver, store = InMemorySaver(), InMemoryStore()

    def graph(plan, hooks=None):
        adapter = ReplayAdapter(store=store, idempotent=IDEMPOTENT_BY_NAME)
        tools = make_tools(tmp_path / "effects.log", hooks=hooks)
        return build_graph("tool_node", tools=tools, plan=plan, checkpointer=saver, adapter=adapter), adapter

    def die() -> None:
        raise _Died()

    g, _ = graph(EMAIL, HookMap({("after_effect", "c2"): die}))
    with pytest.raises(_Died):
        g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    saver.delete_thread("t")  # the run's state is lost; the journal in the store is not
    g, adapter = graph([[[call("lookup_order", "c9", order_id="7")]]])
    g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"), durability="exit")
    interrupts = g.get_state(config("t")).interrupts
    assert [(c["id"], c["lost_run"]) for i in interrupts for c in i.value["calls"]] == [("c2", True)]
    g.invoke(ReplayAdapter.resume_command(interrupts, {"c2": "skip"}), config("t"), durability="exit")
    assert g.get_state(config("t")).interrupts == ()
    assert effects(tmp_path / "effects.log") == {"c2": 1, "c9": 1}
    settled = {r.key.call_id: (r.state, r.resolution) for r in adapter.tool_calls("t")}
    assert settled == {"c2": ("finished", "skip"), "c9": ("finished", None)}
    assert adapter.journal.orphans("t", saver) == []


@pytest.mark.parametrize("again_id", ["c2", "c3"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("answer", ["skip", {"result": "sent before the crash"}])
def test_a_lost_call_answered_on_its_own_keeps_its_answer_when_asked_for_again(
    tmp_path: Path, mode: str, answer: object, again_id: str
) -> None:
    """In one process, journal in a store: the lost email is asked about at the lookup's
    node; when the model then asks for the same email again (same tool and arguments;
    with the same call id, or a new one as a real model gives), the person's answer is
    given to it (once) and the email is not sent again."""
    import asyncio

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from langgraph_jsonl_checkpoint import ReplayAdapter
    from tests.harness.replay_crashes import IDEMPOTENT_BY_NAME
    from tests.harness.replay_tools import HookMap, build_graph, config, make_tools

    saver, store = InMemorySaver(), InMemoryStore()

    def graph(plan, hooks=None):
        adapter = ReplayAdapter(store=store, idempotent=IDEMPOTENT_BY_NAME)
        tools = make_tools(tmp_path / "effects.log", asynchronous=mode == "async", hooks=hooks)
        g = build_graph("tool_node", tools=tools, plan=plan, checkpointer=saver, adapter=adapter)
        return g, adapter

    def invoke(g, inp):
        if mode == "async":
            return asyncio.run(g.ainvoke(inp, config("t"), durability="exit"))
        return g.invoke(inp, config("t"), durability="exit")

    def die() -> None:
        raise _Died()

    g, _ = graph(LOOKUP_THEN_EMAIL, HookMap({("after_effect", "c2"): die}))
    with pytest.raises(_Died):
        invoke(g, {"messages": [HumanMessage("go", id="h0")]})
    saver.delete_thread("t")  # the run's state is lost; the journal in the store is not
    again = [call("send_email", again_id, to="bob")]
    g, adapter = graph([[[call("lookup_order", "c1", order_id="42")], again]])
    invoke(g, {"messages": [HumanMessage("go", id="h0")]})
    interrupts = g.get_state(config("t")).interrupts
    assert [(c["id"], c["lost_run"]) for i in interrupts for c in i.value["calls"]] == [("c2", True)]
    out = invoke(g, ReplayAdapter.resume_command(interrupts, {"c2": answer}))
    assert g.get_state(config("t")).interrupts == ()
    assert effects(tmp_path / "effects.log")["c2"] == 1 and effects(tmp_path / "effects.log")["c3"] == 0
    told = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == again_id]
    expected = SKIPPED_TEXT if answer == "skip" else "sent before the crash"
    assert [m.content for m in told] == [expected]
    resolution = "skip" if answer == "skip" else "result"
    assert sorted((r.state, r.resolution) for r in adapter.tool_calls("t") if r.key.call_id != "c1") == [
        ("finished", resolution), ("finished", resolution)
    ]
    assert adapter.journal.orphans("t", saver, carrying=True) == []  # given once, then done


def test_a_checkpoint_never_saved_holds_the_tool_and_says_why(tmp_path: Path) -> None:
    import time

    from langchain_core.messages import HumanMessage

    from langgraph_jsonl_checkpoint import CheckpointNotSavedError, JsonlSaver, ReplayAdapter
    from tests.harness.replay_crashes import _slow_down_tool_checkpoints
    from tests.harness.replay_tools import build_graph, config, make_tools

    saver = JsonlSaver(tmp_path / "store")
    _slow_down_tool_checkpoints(saver, 3.0)
    adapter = ReplayAdapter(saver, durable_timeout=0.3)
    g = build_graph("tool_node", tools=make_tools(tmp_path / "effects.log"), plan=EMAIL,
                    checkpointer=saver, adapter=adapter, handle_tool_errors=False)
    started = time.monotonic()
    with pytest.raises(CheckpointNotSavedError) as caught:
        g.invoke({"messages": [HumanMessage("go", id="h0")]}, config("t"))  # durability="async"
    assert time.monotonic() - started < 3.0 + 2.0
    err = caught.value
    assert (err.thread_id, err.call_id) == ("t", "c2") and err.checkpoint_id
    assert "'t'" in str(err) and "not saved within 0.3 s" in str(err) and "durable_timeout" in str(err)
    assert effects(tmp_path / "effects.log") == {}  # the email was never started
    assert [r.state for r in saver.tool_calls("t")] == ["requested"]
    saver.close()


def test_the_tools_command_shows_a_lost_run(tmp_path: Path) -> None:
    """`langgraph-jsonl tools` marks a call whose run was lost until a person answers."""
    import contextlib
    import io
    import json

    from langgraph_jsonl_checkpoint.cli import main

    s = spec(tmp_path / "store", plan=EMAIL, durability="exit", crash=KILL_AFTER_EMAIL)
    crash(s)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["tools", s["store"], "t1", "--json"]) == 0
    rows = json.loads(out.getvalue())
    assert [(r["call_id"], r["state"], r["decision"], r["lost_run"]) for r in rows] == [
        ("c2", "uncertain", "lost run", True)
    ]
