"""ReplayAdapter under real crashes: a child process runs the graph on a ``JsonlSaver``
and dies at a chosen point of a tool call's lifecycle (SIGKILL from the test, or
``os._exit``); the thread is then resumed by a different process (a fresh child, or
this test process) and the side effects (lines the tools append to a file) are counted
exactly.

Crash points (see ``replay_crashes.CRASH_POINTS``), for the side-effecting ``send_email``
call ``c2`` of a parallel batch whose siblings (``c1`` read-only, ``c3`` side-effecting)
have already finished:

================  ===================  ==========================================
point             c2's record          after resume
================  ===================  ==========================================
before_started    requested            runs (no interrupt)
before_effect     started (uncertain)  one interrupt; "retry" runs it once
after_effect      started (uncertain)  one interrupt; "skip" -> "outcome unknown"
before_finished   started (uncertain)  one interrupt; {"result": ...} is the result
after_finished    finished             recorded result, tool not called
================  ===================  ==========================================
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from langgraph_jsonl_checkpoint import ReplayAdapter
from langgraph_jsonl_checkpoint.replay.plan import SKIPPED_TEXT
from tests.harness.bounded import within
from tests.harness.replay_crashes import Crash, graph_for, open_store, resume, run_crash, run_resume, spec
from tests.harness.replay_tools import assert_transcript_complete, call, config, effects, tool_messages

BATCH = [
    [
        [
            call("lookup_order", "c1", order_id="42"),
            call("send_email", "c2", to="bob"),
            call("charge", "c3", amount=5),
        ]
    ]
]
CONFIRMED = "sent to bob (confirmed by hand)"

# point -> (c2's state before resume, answer, c2's ToolMessage content, c2's resolution)
MATRIX = {
    "before_started": ("requested", None, "sent to bob", None),
    "before_effect": ("uncertain", "retry", "sent to bob", None),
    "after_effect": ("uncertain", "skip", SKIPPED_TEXT, "skip"),
    "before_finished": ("uncertain", {"result": CONFIRMED}, CONFIRMED, "result"),
    "after_finished": ("finished", None, "sent to bob", None),
}


def crash(s: dict) -> Crash:
    c = run_crash(s)
    assert c.died, f"child did not die at its crash point: exit code {c.exitcode}\n{c.error}"
    return c


def tool_message(report: dict, call_id: str) -> dict:
    msgs = [m for m in report["messages"] if m["type"] == "tool" and m["tool_call_id"] == call_id]
    assert len(msgs) == 1, f"expected one ToolMessage for {call_id}: {report['messages']}"
    return msgs[0]


def assert_complete(report: dict) -> None:
    """The run finished and every AI tool call has exactly one ToolMessage."""
    assert report["next"] == [] and report["pending_interrupts"] == [], report
    calls = sorted(c for m in report["messages"] if m["type"] == "ai" for c in m["tool_calls"])
    answered = sorted(m["tool_call_id"] for m in report["messages"] if m["type"] == "tool")
    assert calls == answered
    assert report["messages"][-1]["type"] == "ai" and report["messages"][-1]["content"].startswith("done: ")


@pytest.mark.parametrize("point", list(MATRIX))
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_crash_at_each_lifecycle_point_then_resume_in_new_process(
    tmp_path: Path, mode: str, point: str
) -> None:
    before, answer, content, resolution = MATRIX[point]
    how = "kill" if mode == "sync" else "exit"
    s = spec(tmp_path / "store", plan=BATCH, mode=mode, answers={"c2": answer} if answer else None,
                crash={"call": "c2", "point": point, "how": how, "settle": ["c1", "c3"]})
    crash(s)
    # what the crash left: the siblings finished, c2 as the table says
    assert effects(s["effects"]) == {
        "c1": 1,
        "c3": 1,
        **({"c2": 1} if point in ("after_effect", "before_finished", "after_finished") else {}),
    }

    report = run_resume(s)
    assert report["before"]["c1"] == ["finished", "finished"]
    assert report["before"]["c3"] == ["finished", "finished"]
    assert report["before"]["c2"][1] == before

    if answer is None:
        assert report["interrupts"] == []
    else:
        # one interrupt for the node, naming only the uncertain call
        assert len(report["interrupts"]) == 1
        value = report["interrupts"][0]
        assert value["type"] == "uncertain_tool_calls" and "error" not in value
        assert [(c["id"], c["name"], c["args"]) for c in value["calls"]] == [
            ("c2", "send_email", {"to": "bob"})
        ]
        assert isinstance(value["calls"][0]["started_at"], str) and value["calls"][0]["started_at"]

    assert_complete(report)
    # exactly one effect per call: finished siblings were not re-run; c2 ran once in all
    assert report["effects"] == {"c1": 1, "c2": 1, "c3": 1}
    msg = tool_message(report, "c2")
    assert msg["content"] == content
    assert msg["status"] == ("error" if resolution == "skip" else "success")
    assert tool_message(report, "c1")["content"] == "order 42: shipped"
    assert tool_message(report, "c3")["content"] == "charged 5"
    assert {k: v["state"] for k, v in report["tool_calls"].items()} == {
        "c1": "finished",
        "c2": "finished",
        "c3": "finished",
    }
    assert report["tool_calls"]["c2"]["resolution"] == resolution
    assert report["tool_calls"]["c2"]["events"][0] == "requested"


@pytest.mark.parametrize(
    ("mode", "target", "name"), [("sync", "c1", "lookup_order"), ("async", "c4", "search")]
)
def test_idempotent_call_cut_off_by_crash_runs_again_without_asking(
    tmp_path: Path, mode: str, target: str, name: str
) -> None:
    # lookup_order is idempotent by name (ReplayAdapter(idempotent=[...])), search by
    # its metadata {"idempotent": True}
    plan = [
        [
            [
                call("lookup_order", "c1", order_id="42"),
                call("send_email", "c2", to="bob"),
                call("search", "c4", query="x"),
            ]
        ]
    ]
    others = [c for c in ("c1", "c2", "c4") if c != target]
    s = spec(tmp_path / "store", plan=plan, mode=mode,
                crash={"call": target, "point": "after_effect", "how": "kill", "settle": others})
    crash(s)
    report = resume(s)  # in this (test) process: also a new process for the store
    assert report["before"][target] == ["started", "uncertain"]
    assert report["interrupts"] == []
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 1, "c4": 1, target: 2}
    assert all(v["state"] == "finished" for v in report["tool_calls"].values())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrap_tool_call_plug_crash_then_skip(tmp_path: Path, mode: str) -> None:
    """``ToolNode(tools, wrap_tool_call=adapter.wrap_tool_call, awrap_tool_call=...)``."""
    s = spec(tmp_path / "store", plan=BATCH, plug="wrap", mode=mode, answers={"c2": "skip"},
                crash={"call": "c2", "point": "after_effect", "how": "kill", "settle": ["c1", "c3"]})
    crash(s)
    report = resume(s)
    assert [c["id"] for c in report["interrupts"][0]["calls"]] == ["c2"]
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 1, "c3": 1}
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    assert report["tool_calls"]["c2"]["resolution"] == "skip"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_create_agent_crash_with_two_uncertain_calls(tmp_path: Path, mode: str) -> None:
    """create_agent runs each call as its own task: one interrupt per uncertain call, all
    answered at once by ``ReplayAdapter.resume_command``."""
    s = spec(
        tmp_path / "store",
        plan=BATCH,
        plug="agent",
        mode=mode,
        answers={"c2": "skip", "c3": "retry"},
        crash={
            "call": "c2",
            "point": "after_effect",
            "how": "kill",
            "settle": ["c1"],
            "effects_of": ["c3"],
            "hold": ["c3"],
        },
    )
    crash(s)
    assert effects(s["effects"]) == {"c1": 1, "c2": 1, "c3": 1}
    report = run_resume(s) if mode == "sync" else resume(s)
    assert report["before"] == {
        "c1": ["finished", "finished"],
        "c2": ["started", "uncertain"],
        "c3": ["started", "uncertain"],
    }
    assert len(report["interrupts"]) == 2
    assert sorted(c["id"] for i in report["interrupts"] for c in i["calls"]) == ["c2", "c3"]
    assert all(len(i["calls"]) == 1 and i["type"] == "uncertain_tool_calls" for i in report["interrupts"])
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 1, "c3": 2}  # "retry" ran c3 exactly once more
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT
    assert tool_message(report, "c3")["content"] == "charged 5"
    assert {k: (v["state"], v["resolution"]) for k, v in report["tool_calls"].items()} == {
        "c1": ("finished", None), "c2": ("finished", "skip"), "c3": ("finished", None)}


def test_create_agent_crash_after_finished_replays_result(tmp_path: Path) -> None:
    s = spec(tmp_path / "store", plan=BATCH, plug="agent", mode="sync",
                crash={"call": "c2", "point": "after_finished", "how": "exit", "settle": ["c1", "c3"]})
    crash(s)
    report = resume(s)
    assert report["before"]["c2"] == ["finished", "finished"]
    assert report["interrupts"] == []
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 1, "c3": 1}
    assert tool_message(report, "c2")["content"] == "sent to bob"


def test_command_result_replayed_after_crash(tmp_path: Path) -> None:
    """A tool returning ``Command(update={"messages": [...], "status": ...})`` finished,
    then the process died before the node's writes were saved: the recorded Command is
    applied on resume, the tool is not called again."""
    plan = [[[call("set_status", "c1", status="shipped"), call("send_email", "c2", to="bob")]]]
    s = spec(
        tmp_path / "store",
        plan=plan,
        crash={"call": "c1", "point": "after_finished", "how": "kill", "settle": ["c2"]},
    )
    crash(s)
    report = resume(s)
    assert report["interrupts"] == []
    assert_complete(report)
    assert report["status"] == "shipped"
    assert tool_message(report, "c1")["content"] == "status is now shipped"
    assert report["effects"] == {"c1": 1, "c2": 1}


def test_failed_call_survives_crash_and_is_not_called_again(tmp_path: Path) -> None:
    """``explode`` failed (recorded), then the process died while a sibling finished."""
    plan = [[[call("explode", "c1", reason="disk full"), call("send_email", "c2", to="bob")]]]
    s = spec(
        tmp_path / "store",
        plan=plan,
        crash={"call": "c2", "point": "after_finished", "how": "exit", "settle": ["c1"]},
    )
    crash(s)
    assert effects(s["effects"]) == {"c1": 1, "c2": 1}

    saver, adapter = open_store(s)
    with saver:
        rec = {r.key.call_id: r for r in saver.tool_calls("t1")}
        assert rec["c1"].state == "failed" and rec["c1"].error == {
            "type": "ToolBoom",
            "message": "boom: disk full",
        }
        # the failure may have taken effect: a person is asked, the tool is not called
        graph = graph_for(s, saver, adapter)
        out = graph.invoke(None, config("t1"))
        ((asked,),) = [i.value["calls"] for i in out["__interrupt__"]]
        assert (asked["id"], asked["failed"]) == (
            "c1", {"error_type": "ToolBoom", "error_message": "boom: disk full"}
        )
        assert effects(s["effects"]) == {"c1": 1, "c2": 1}

    # in a new process the question is the same; the answer "skip" finishes the run
    saver, adapter = open_store(s)
    with saver:
        graph = graph_for(s, saver, adapter)
        out = graph.invoke(Command(resume={"c1": "skip"}), config("t1"))
        assert_transcript_complete(out["messages"])
        msgs = tool_messages(out["messages"])
        assert msgs["c1"][0].status == "error" and "boom: disk full" in msgs["c1"][0].content
        assert msgs["c2"][0].content == "sent to bob"
        assert effects(s["effects"]) == {"c1": 1, "c2": 1}
        states = {r.key.call_id: r.state for r in saver.tool_calls("t1")}
        assert states == {"c1": "finished", "c2": "finished"}


def test_no_adapter_reruns_the_whole_batch_after_a_crash(tmp_path: Path) -> None:
    """Control: the same crash with a plain ToolNode re-runs every call of the batch, so
    the effect counts above do tell the adapter's work apart."""
    s = spec(tmp_path / "store", plan=BATCH, plug="plain",
                crash={"call": "c2", "point": "after_effect", "how": "kill", "effects_of": ["c1", "c3"]})
    crash(s)
    report = resume(s)
    assert report["interrupts"] == []
    assert_complete(report)
    assert report["effects"] == {"c1": 2, "c2": 2, "c3": 2}


@pytest.mark.parametrize("form", ["value", "resume_command"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_uncertain_call_and_tool_interrupt_in_one_batch(tmp_path: Path, mode: str, form: str) -> None:
    """The adapter's own interrupt and a tool's ``interrupt()`` in the same ToolNode task:
    each resume value must reach the interrupt it answers, and nothing runs twice."""
    plan = [
        [
            [
                call("lookup_order", "c1", order_id="42"),
                call("send_email", "c2", to="bob"),
                call("approve", "c3", action="refund"),
            ]
        ]
    ]
    # dies when approve (c3) is about to start, while send_email (c2) is past its effect
    s = spec(tmp_path / "store", plan=plan, mode=mode,
                crash={"call": "c3", "point": "before_started", "how": "kill", "settle": ["c1"],
                       "effects_of": ["c2"], "hold": ["c2"]})
    crash(s)
    saver, adapter = open_store(s)
    with saver:
        assert {r.key.call_id: r.effective_state for r in saver.tool_calls("t1")} == {
            "c1": "finished", "c2": "uncertain", "c3": "requested"}
        graph = graph_for(s, saver, adapter)
        cfg = config("t1")

        def run(inp):
            if mode == "async":
                return asyncio.run(graph.ainvoke(inp, cfg))
            return graph.invoke(inp, cfg)

        run(None)
        (first,) = graph.get_state(cfg).interrupts
        assert first.value["type"] == "uncertain_tool_calls" and [c["id"] for c in first.value["calls"]] == [
            "c2"
        ]
        if form == "value":
            run(Command(resume={"c2": "skip"}))
        else:
            run(ReplayAdapter.resume_command([first], {"c2": "skip"}))
        (second,) = graph.get_state(cfg).interrupts
        assert second.value == {"approve": "refund"}
        out = run(
            Command(resume="approved by Ann")
            if form == "value"
            else Command(resume={second.id: "approved by Ann"})
        )
        assert_transcript_complete(out["messages"])
        msgs = tool_messages(out["messages"])
        assert msgs["c2"][0].content == SKIPPED_TEXT
        assert msgs["c3"][0].content == "refund: approved by Ann"
        assert effects(s["effects"]) == {"c1": 1, "c2": 1, "c3": 1}


@pytest.mark.parametrize("form", ["value", "resume_command"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_crash_during_retry_asks_again(tmp_path: Path, mode: str, form: str) -> None:
    """The person answered "retry" and the retried call was killed after its effect too.
    That is a new uncertainty: the person must be asked again, not the old "retry"
    reused (that would send the email a third time without asking)."""
    crash_c2 = {"call": "c2", "point": "after_effect", "how": "kill", "settle": ["c1", "c3"]}
    s = spec(tmp_path / "store", plan=BATCH, mode=mode, crash=crash_c2, answers={"c2": "skip"})
    crash(s)
    # resume: Command(resume={"c2": "retry"}) or resume_command(interrupts, {"c2": "retry"})
    crash({**s, "resume_with": {"c2": "retry"}, "resume_form": form, "crash": {**crash_c2, "settle": []}})
    assert effects(s["effects"]) == {"c1": 1, "c2": 2, "c3": 1}

    report = run_resume(s)
    assert report["before"]["c2"] == ["started", "uncertain"]
    assert [c["id"] for i in report["interrupts"] for c in i["calls"]] == ["c2"]
    assert_complete(report)
    assert report["effects"] == {"c1": 1, "c2": 2, "c3": 1}
    assert tool_message(report, "c2")["content"] == SKIPPED_TEXT


@pytest.mark.parametrize("form", ["value", "resume_command"])
@pytest.mark.parametrize("answer", ["skip", "retry"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tools_own_answer_is_not_taken_for_the_adapters_question(
    tmp_path: Path, mode: str, answer: str, form: str
) -> None:
    """A side-effecting tool asks for approval with its own ``interrupt()``; the person
    answers "yes" and the process dies inside the tool, after its effect. LangGraph
    still holds that "yes" for the task's first interrupt slot: the adapter's question
    goes after it, so the person is asked cleanly (no ``error`` about an answer they
    never gave), and their answer is the one acted on.

    Answered by interrupt id (``resume_command``, as ``create_agent`` needs), "retry"
    ran the tool again on the dead run's "yes", which LangGraph still held as the plain
    value (a by-id answer leaves it in place): the refund was made twice without anyone
    approving it again. A retried tool now asks its own question again either way."""
    plan = [[[call("approve", "c1", action="refund")]]]
    s = spec(tmp_path / "store", plan=plan, mode=mode,
             crash={"call": "c1", "point": "after_effect", "how": "kill"},
             resume_with="yes", resume_form="value")
    cfg = config("t1")

    def run(graph, inp):
        with within(60, "a run of the approve graph"):
            if mode == "async":
                return asyncio.run(graph.ainvoke(inp, cfg))
            return graph.invoke(inp, cfg)

    saver, adapter = open_store(s)
    with saver:
        graph = graph_for(s, saver, adapter)
        run(graph, {"messages": [HumanMessage("go", id="human-0")]})
        assert [i.value for i in graph.get_state(cfg).interrupts] == [{"approve": "refund"}]
    crash(s)  # resumes the thread with Command(resume="yes"); dies after approve's effect
    assert effects(s["effects"]) == {"c1": 1}

    saver, adapter = open_store(s)
    with saver:
        assert [r.effective_state for r in saver.tool_calls("t1")] == ["uncertain"]
        graph = graph_for(s, saver, adapter)
        run(graph, None)
        (asked,) = graph.get_state(cfg).interrupts
        assert asked.value["type"] == "uncertain_tool_calls"
        assert [c["id"] for c in asked.value["calls"]] == ["c1"]
        assert "error" not in asked.value
        by_id = form == "resume_command"
        out = run(graph, ReplayAdapter.resume_command([asked], {"c1": answer}) if by_id
                  else Command(resume={"c1": answer}))
        if answer == "retry":  # the tool runs again from its start: it asks again
            (again,) = graph.get_state(cfg).interrupts
            assert again.value == {"approve": "refund"}
            assert effects(s["effects"]) == {"c1": 1}
            yes_again = "yes again"
            out = run(graph, Command(resume={again.id: yes_again}) if by_id else Command(resume=yes_again))
        assert_transcript_complete(out["messages"])
        assert graph.get_state(cfg).next == ()
        content = tool_messages(out["messages"])["c1"][0].content
        if answer == "skip":
            assert content == SKIPPED_TEXT and effects(s["effects"]) == {"c1": 1}
        else:
            assert content == "refund: yes again" and effects(s["effects"]) == {"c1": 2}
