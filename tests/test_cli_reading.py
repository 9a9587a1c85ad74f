"""The reading commands of ``langgraph-jsonl`` through ``main(argv)``, on a store made by
real graph runs (an agent with tools, an interrupt, Send fan-out, a SIGKILLed replay
agent, the same resumed and waiting on its uncertain call, the same decided by a
person, a damaged log): each answer is compared with what LangGraph itself reports
for the thread (``get_state``, ``get_state_history``) or with the replay journal."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.inspection.values import jsonable
from tests.harness import flow_graphs
from tests.harness.cli_store import EXPECTED_STATUS, BuiltStore, config
from tests.harness.replay_crashes import graph_for, open_store, spec
from tests.harness.replay_tools import call


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, object]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def state_graph(store: Path, thread_id: str):  # type: ignore[no-untyped-def]
    """A graph on a read-only saver that can answer for ``thread_id``, as LangGraph sees it."""
    saver = JsonlSaver(store, read_only=True)
    if thread_id in ("crashed", "uncertain", "decided"):
        s = spec(store, plan=[[[call("lookup_order", "c1", order_id="1042"),
                                call("send_email", "c2", to="ada@example.com")]]], thread=thread_id)
        _, adapter = open_store(s)
        return graph_for(s, saver, adapter), saver
    builders = {"agent": flow_graphs.build_agent_graph, "review": flow_graphs.build_review_graph,
                "fan": flow_graphs.build_fanout_graph}
    return builders[thread_id]().compile(checkpointer=saver), saver


def tree(path: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``path`` with its size, mtime and content hash, but the listing
    cache (``LISTING.idx``: derived, the one file ``threads`` writes; see
    ``tests/test_listing_cache.py``)."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.name != "LISTING.idx":
            st = p.stat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(path))] = (st.st_size, st.st_mtime_ns, digest)
    return out


# -- threads ------------------------------------------------------------------------------


def test_threads_status_of_every_thread_matches_how_it_was_made(cli_store: BuiltStore, capsys) -> None:
    code, rows = run_json(capsys, "threads", str(cli_store.path))
    assert code == 1  # the damaged thread is a problem found; the others are still listed
    by_id = {r["thread_id"]: r for r in rows}
    assert {t: r["status"] for t, r in by_id.items()} == EXPECTED_STATUS
    assert by_id["uncertain"]["waiting_for"] == ["uncertain_tool_calls"]
    assert by_id["review"]["waiting_for"] == ["interrupt"]
    assert by_id["crashed"]["next"] == ["tools"] and by_id["crashed"]["waiting_for"] == []
    assert "langgraph-jsonl repair" in by_id["damaged"]["problem"]
    assert all(r["run"] is None for r in rows)  # the killed runs' processes are gone
    for r in rows:
        assert set(r) == {"thread_id", "status", "checkpoints", "created_at", "updated_at", "size", "latest",
                          "next", "waiting_for", "problem", "run", "path"}
        assert r["size"] >= os.path.getsize(r["path"]) > 0
    for tid in ("agent", "review", "fan", "uncertain", "decided"):
        graph, saver = state_graph(cli_store.path, tid)
        with saver:
            history = list(graph.get_state_history(config(tid)))
            live = graph.get_state(config(tid))
        row = by_id[tid]
        assert row["checkpoints"] == len(history)
        assert row["latest"] == live.config["configurable"]["checkpoint_id"]
        assert (row["created_at"], row["updated_at"]) == (history[-1].created_at, history[0].created_at)
        assert row["status"] == ("waiting" if live.interrupts else "interrupted" if live.next else "done")


def test_threads_filters_sorts_and_cuts(cli_store: BuiltStore, capsys) -> None:
    store = str(cli_store.path)
    _, rows = run_json(capsys, "threads", store, "--status", "waiting")
    assert sorted(r["thread_id"] for r in rows) == ["review", "uncertain"]
    _, rows = run_json(capsys, "threads", store, "--sort", "size")
    assert [r["size"] for r in rows] == sorted((r["size"] for r in rows), reverse=True)
    _, rows = run_json(capsys, "threads", store, "--sort", "updated", "--limit", "2")
    _, everything = run_json(capsys, "threads", store)
    newest = sorted((r for r in everything if r["updated_at"]), key=lambda r: r["updated_at"], reverse=True)
    assert [r["thread_id"] for r in rows] == [r["thread_id"] for r in newest[:2]]
    _, rows = run_json(capsys, "threads", store, "--since", "2999-01-01")
    assert rows == []
    assert main(["threads", store, "--since", "yesterday-ish"]) == 2
    assert "--since: cannot read 'yesterday-ish'" in capsys.readouterr().err


@pytest.mark.parametrize("sort", ["id", "size"])
@pytest.mark.parametrize("limit", [0, 1, 3, 100])
def test_threads_first_page_is_the_full_listings_and_reads_only_its_threads(
    cli_store: BuiltStore, capsys, monkeypatch: pytest.MonkeyPatch, sort: str, limit: int
) -> None:
    """``--limit`` sorted by id or size (no filter) reads only the threads it shows (the
    order comes from the catalog and the file sizes): the same rows as summarising every
    thread and cutting; the exit status covers the threads read."""
    from langgraph_jsonl_checkpoint.inspection import threads as threads_module

    store = str(cli_store.path)
    _, everything = run_json(capsys, "threads", store, "--sort", sort)
    read: list[str] = []
    real = threads_module.summarize_thread

    def counting(saver: JsonlSaver, thread_id: str):  # type: ignore[no-untyped-def]
        read.append(thread_id)
        return real(saver, thread_id)

    monkeypatch.setattr(threads_module, "summarize_thread", counting)
    code, rows = run_json(capsys, "threads", store, "--sort", sort, "--limit", str(limit))
    assert rows == everything[:limit]
    assert sorted(read) == sorted(r["thread_id"] for r in rows if r["thread_id"] is not None)
    assert code == (1 if any(r["status"] == "damaged" for r in rows) else 0)
    read.clear()
    (cli_store.path / "LISTING.idx").unlink(missing_ok=True)  # the listing cache (derived)
    _, rows = run_json(capsys, "threads", store, "--sort", sort, "--limit", str(limit), "--status", "done")
    assert len(read) == len(everything)  # a filter needs every thread's status: without a cache, read
    assert rows == [r for r in everything if r["status"] == "done"][:limit]


# -- history and show -----------------------------------------------------------------------


@pytest.mark.parametrize("thread_id", ["agent", "fan", "uncertain", "decided"])
def test_history_lists_what_langgraph_lists(cli_store: BuiltStore, capsys, thread_id: str) -> None:
    code, rows = run_json(capsys, "history", str(cli_store.path), thread_id)
    assert code == 0
    graph, saver = state_graph(cli_store.path, thread_id)
    with saver:
        history = list(graph.get_state_history(config(thread_id)))
    assert [r["checkpoint_id"] for r in rows] == [s.config["configurable"]["checkpoint_id"] for s in history]
    assert [sorted(r["next"]) for r in rows] == [sorted(s.next) for s in history]
    assert [(r["step"], r["source"], r["created_at"]) for r in rows] == [
        (s.metadata["step"], s.metadata["source"], s.created_at) for s in history
    ]
    code, limited = run_json(capsys, "history", str(cli_store.path), thread_id, "--limit", "2")
    assert limited == rows[:2]


@pytest.mark.parametrize("thread_id", ["agent", "review", "fan", "crashed", "uncertain", "decided"])
def test_show_gives_the_state_langgraph_gives(cli_store: BuiltStore, capsys, thread_id: str) -> None:
    code, shown = run_json(capsys, "show", str(cli_store.path), thread_id)
    assert code == 0
    graph, saver = state_graph(cli_store.path, thread_id)
    with saver:
        live = graph.get_state(config(thread_id))
        history = list(graph.get_state_history(config(thread_id)))
    assert shown["checkpoint_id"] == live.config["configurable"]["checkpoint_id"]
    messages = live.values.get("messages", [])
    assert [(m["id"], m["role"]) for m in shown["messages"]] == [(m.id, m.type) for m in messages]
    assert [m["text"] for m in shown["messages"]] == [m.content for m in messages]
    assert [[c["id"] for c in m["tool_calls"]] for m in shown["messages"]] == [
        [c["id"] for c in getattr(m, "tool_calls", [])] for m in messages
    ]
    stored = {k: v for k, v in shown["values"].items() if not k.startswith(("branch:", "join:", "__"))}
    assert set(stored) <= set(live.values)
    for channel, value in live.values.items():  # a channel never written reads as its default
        assert stored[channel] == jsonable(value) if channel in stored else not value, channel
    assert sorted(q["interrupt_id"] for q in shown["waiting"]) == sorted(i.id for i in live.interrupts)
    # each message's checkpoint is the first one (oldest first) whose state holds it
    oldest_first = list(reversed(history))
    for m in shown["messages"]:
        first = next(s for s in oldest_first if any(x.id == m["id"] for x in s.values.get("messages", [])))
        assert m["checkpoint_id"] == first.config["configurable"]["checkpoint_id"]
        assert m["at"] == first.created_at


def test_show_of_an_older_checkpoint_and_its_text(cli_store: BuiltStore, capsys) -> None:
    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        older = list(graph.get_state_history(config("agent")))[3]
    cid = older.config["configurable"]["checkpoint_id"]
    _, shown = run_json(capsys, "show", str(cli_store.path), "agent", cid)
    assert shown["checkpoint_id"] == cid
    assert [m["id"] for m in shown["messages"]] == [m.id for m in older.values["messages"]]
    assert main(["show", str(cli_store.path), "decided"]) == 0
    text = capsys.readouterr().out
    assert "calls send_email({\"to\":\"ada@example.com\"})  [c2]" in text
    assert "status: done" in text
    assert "tool   send_email [c2] (error) -> This tool call was interrupted" in text
    assert main(["show", str(cli_store.path), "uncertain"]) == 0
    text = capsys.readouterr().out
    assert "status: waiting (uncertain_tool_calls)" in text and "waiting for an answer:" in text
    # how to answer, with the held call's id (a newcomer found the question, not the answer)
    assert 'answer: graph.invoke(Command(resume={"c2": "retry" | "skip" | {"result": ...}}), config)' in text
    assert main(["show", str(cli_store.path), "agent", "1f000000-0000-6000-8000-000000000000"]) == 2
    assert "has no checkpoint 1f000000" in capsys.readouterr().err


def test_show_of_a_past_checkpoint_gives_its_own_status_not_the_threads(
    cli_store: BuiltStore, capsys
) -> None:
    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        history = list(graph.get_state_history(config("agent")))
    latest, first = history[0], history[-1]
    assert first.metadata["source"] == "input" and first.next == ("__start__",)
    latest_id = latest.config["configurable"]["checkpoint_id"]
    first_id = first.config["configurable"]["checkpoint_id"]
    _, shown = run_json(capsys, "show", str(cli_store.path), "agent", first_id)
    assert (shown["status"], shown["next"]) == ("past", ["__start__"])
    assert shown["latest_checkpoint_id"] == latest_id
    assert main(["show", str(cli_store.path), "agent", first_id]) == 0
    text = capsys.readouterr().out
    assert "interrupted" not in text, text
    assert f"status: past checkpoint (the thread's latest is {latest_id}); next from it: __start__" in text
    # The latest checkpoint named by its id is the thread's status, as without an id.
    _, shown = run_json(capsys, "show", str(cli_store.path), "agent", latest_id)
    assert (shown["status"], shown["latest_checkpoint_id"]) == ("done", latest_id)

def test_show_of_a_past_checkpoint_that_asked_says_what_it_asked(tmp_path: Path, capsys) -> None:
    """A question left behind (the state was updated instead of answering it) is what
    that checkpoint asked, not something the thread waits for now."""
    with JsonlSaver(tmp_path / "s") as saver:
        graph = flow_graphs.build_review_graph().compile(checkpointer=saver)
        graph.invoke({"topic": "teapots"}, config("r"), durability="sync")
        asked = graph.get_state(config("r"))
        assert asked.interrupts
        graph.update_state(config("r"), {"topic": "kettles"})
        latest_id = graph.get_state(config("r")).config["configurable"]["checkpoint_id"]
    asked_id = asked.config["configurable"]["checkpoint_id"]
    assert asked_id != latest_id
    _, shown = run_json(capsys, "show", str(tmp_path / "s"), "r", asked_id)
    assert shown["status"] == "past" and [q["interrupt_id"] for q in shown["waiting"]] == [
        i.id for i in asked.interrupts
    ]
    assert main(["show", str(tmp_path / "s"), "r", asked_id]) == 0
    text = capsys.readouterr().out
    assert f"status: past checkpoint (the thread's latest is {latest_id})" in text
    assert "waiting for an answer" not in text and "asked at this checkpoint:" in text, text


def test_the_store_may_come_from_the_environment(cli_store: BuiltStore, capsys, monkeypatch) -> None:
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", str(cli_store.path))
    _, rows = run_json(capsys, "history", "agent", "--limit", "4")
    _, shown = run_json(capsys, "show", "agent", rows[3]["checkpoint_id"])
    assert shown["checkpoint_id"] == rows[3]["checkpoint_id"]
    _, shown = run_json(capsys, "show", str(cli_store.path), "agent")
    assert shown["checkpoint_id"] == rows[0]["checkpoint_id"]
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE")
    assert main(["show", "agent"]) == 2
    assert "LANGGRAPH_JSONL_STORE" in capsys.readouterr().err


def test_a_missing_operand_is_named_with_a_usage_line_that_marks_the_optional_ones(
    cli_store: BuiltStore, capsys, monkeypatch
) -> None:
    store = str(cli_store.path)
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE", raising=False)
    usage = "usage: langgraph-jsonl show [STORE] THREAD [CHECKPOINT]"
    # The store is named, the thread is not: say the thread is missing, not the store.
    assert main(["show", store]) == 2
    err = capsys.readouterr().err
    assert "show: name a thread (THREAD)" in err and usage in err, err
    assert "name the store" not in err and f"langgraph-jsonl threads {store}" in err
    # Nothing named: the thread and the store are missing.
    assert main(["show"]) == 2
    err = capsys.readouterr().err
    assert "show: name a thread (THREAD)" in err and "STORE" in err and "LANGGRAPH_JSONL_STORE" in err
    assert usage in err
    # With the store in the environment, only the thread.
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", store)
    assert main(["show"]) == 2
    err = capsys.readouterr().err
    assert "show: name a thread (THREAD)" in err and "LANGGRAPH_JSONL_STORE" not in err
    monkeypatch.delenv("LANGGRAPH_JSONL_STORE")
    # Operands after the thread: each named, the store still taken for the store.
    assert main(["diff", store, "agent"]) == 2
    err = capsys.readouterr().err
    assert "diff: name the checkpoints to compare (A B)" in err
    assert "usage: langgraph-jsonl diff [STORE] THREAD A B" in err
    assert main(["diff", store, "agent", "x"]) == 2
    assert "diff: name the checkpoints to compare (B)" in capsys.readouterr().err
    # --help's usage line marks the same operands optional.
    help_usage = " ".join(main_help("show").split())
    assert "[STORE] THREAD [CHECKPOINT]" in help_usage, help_usage
    assert "[STORE] TEXT" in " ".join(main_help("search").split())
    assert "[STORE] [THREAD]" in " ".join(main_help("export").split())


def main_help(command: str) -> str:
    """The usage line of a command's ``--help``."""
    from langgraph_jsonl_checkpoint.cli import build_parser

    (sub,) = (a for a in build_parser()._actions if a.dest == "command")
    return sub.choices[command].format_usage()


# -- diff, tools ----------------------------------------------------------------------------


def test_diff_names_the_messages_and_values_that_changed(cli_store: BuiltStore, capsys) -> None:
    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        history = list(graph.get_state_history(config("agent")))
    new, old = history[0], history[4]
    a, b = old.config["configurable"]["checkpoint_id"], new.config["configurable"]["checkpoint_id"]
    code, diff = run_json(capsys, "diff", str(cli_store.path), "agent", a, b)
    assert code == 0
    channels = {c["channel"]: c for c in diff["channels"]}
    added = {m["id"] for m in channels["messages"]["messages"] if m["kind"] == "added"}
    assert added == {m.id for m in new.values["messages"]} - {m.id for m in old.values["messages"]}
    assert all(m["kind"] == "added" for m in channels["messages"]["messages"])
    _, same = run_json(capsys, "diff", str(cli_store.path), "agent", b, b)
    assert same["channels"] == []
    assert main(["diff", str(cli_store.path), "agent", a, b]) == 0
    out = capsys.readouterr().out
    assert f"messages: {len(added)} added" in out


def test_tools_table_follows_the_journal_and_the_persons_decision(cli_store: BuiltStore, capsys) -> None:
    rows = {}
    for tid in ("crashed", "uncertain", "decided"):
        code, table = run_json(capsys, "tools", str(cli_store.path), tid)
        assert code == 0
        rows[tid] = {r["call_id"]: r for r in table}
        with JsonlSaver(cli_store.path, read_only=True) as saver:
            journal = {r.key.call_id: r for r in saver.tool_calls(tid)}
        assert set(rows[tid]) == set(journal) == {"c1", "c2"}
        assert rows[tid]["c1"]["state"] == "finished" and rows[tid]["c1"]["outcome"] == "order 1042: shipped"
        assert rows[tid]["c1"]["attempts"] == 1 and rows[tid]["c1"]["seconds"] >= 0
        assert rows[tid]["c2"]["args"] == {"to": "ada@example.com"}
    assert rows["crashed"]["c2"]["state"] == "uncertain" and rows["crashed"]["c2"]["decision"] is None
    assert rows["uncertain"]["c2"]["state"] == "uncertain" and rows["uncertain"]["c2"]["decision"] == "asked"
    decided = rows["decided"]["c2"]
    assert (decided["state"], decided["decision"], decided["decided_by"]) == ("decided", "skip", "person")
    assert decided["outcome"].startswith("This tool call was interrupted by a crash")
    assert main(["tools", str(cli_store.path), "decided"]) == 0
    assert "skip (person)" in capsys.readouterr().out
    assert all(r["source"] == "journal" for table in rows.values() for r in table.values())


def test_tools_without_a_journal_says_so_and_lists_the_calls_the_messages_hold(
    cli_store: BuiltStore, tmp_path: Path, capsys
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        messages = graph.get_state(config("agent")).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(calls) >= 2 and {c["id"] for c in calls} == set(answers)
    code, table = run_json(capsys, "tools", str(cli_store.path), "agent")
    assert code == 0
    listed = [(r["call_id"], r["name"], r["args"]) for r in table]
    assert listed == [(c["id"], c["name"], c["args"]) for c in calls]
    for r in table:
        assert (r["source"], r["state"], r["answered"]) == ("messages", "answered", True)
        assert r["outcome"] == answers[r["call_id"]].content
        assert r["checkpoint_id"] and r["requested_at"]
    assert main(["tools", str(cli_store.path), "agent"]) == 0
    out = capsys.readouterr().out
    assert "no tool journal (the thread did not run with ReplayAdapter)" in out
    for c in calls:
        line = next(line for line in out.splitlines() if line.startswith(c["id"]))
        assert c["name"] in line and "answered" in line and answers[c["id"]].content in line, line

    # A call nobody answered (the run stopped before its tool node), on a thread of its own.
    store = tmp_path / "s"
    with JsonlSaver(store) as writer:
        g = flow_graphs.build_agent_graph().compile(checkpointer=writer, interrupt_before=["tools"])
        g.invoke({"messages": [HumanMessage("add 2 3", id="h-1")]}, config("t"), durability="sync")
        g.update_state(config("t"), {"messages": [
            AIMessage("", id="ai-x", tool_calls=[{"name": "multiply", "args": {"a": 1}, "id": "call-x"}]),
            ToolMessage("boom", tool_call_id="call-x", name="multiply", status="error", id="tm-x"),
        ]})
    code, table = run_json(capsys, "tools", str(store), "t")
    assert code == 0 and capsys.readouterr().err == ""
    states = {r["call_id"]: (r["state"], r["answered"], r["outcome"]) for r in table}
    assert states == {"call-add-1": ("unanswered", False, ""), "call-x": ("failed", True, "boom")}


# -- search ------------------------------------------------------------------------------


def test_search_with_no_match_says_so_instead_of_a_bare_header(cli_store: BuiltStore, capsys) -> None:
    # No message matching printed the table's header line alone (and "0 message(s)" on
    # stderr): as `threads` and `archived` do, the one line now says what was searched.
    assert main(["search", str(cli_store.path), "no such words here"]) == 1  # the damaged thread
    said = f"no message matches 'no such words here' in {len(EXPECTED_STATUS)} thread(s)"
    assert capsys.readouterr().out.splitlines() == [said]
    assert main(["search", str(cli_store.path), "shipped", "--role", "human", "--thread", "decided"]) == 0
    said = "no message matches 'shipped' (--role human) in 1 thread(s)"
    assert capsys.readouterr().out.splitlines() == [said]
    assert main(["search", str(cli_store.path), "shipped", "--thread", "decided", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


def test_search_limit_0_does_not_say_no_message_matches(cli_store: BuiltStore, capsys) -> None:
    # `search STORE shipped --limit 0` said "no message matches 'shipped' in 1 thread(s)",
    # though messages match: --limit 0 asked for none (as `threads --limit 0` says).
    assert main(["search", str(cli_store.path), "shipped", "--thread", "decided"]) == 0
    assert "no message matches" not in capsys.readouterr().out  # it matches
    assert main(["search", str(cli_store.path), "shipped", "--thread", "decided", "--limit", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == ["--limit 0 lists no message"]
    assert main(["search", str(cli_store.path), "shipped", "--limit", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_search_finds_each_message_with_its_thread_and_checkpoint(cli_store: BuiltStore, capsys) -> None:
    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        messages = graph.get_state(config("agent")).values["messages"]
        history = list(reversed(list(graph.get_state_history(config("agent")))))
    for m in messages:
        if not m.content:
            continue
        _, hits = run_json(capsys, "search", str(cli_store.path), m.content.upper(), "--thread", "agent")
        assert m.id in [h["message_id"] for h in hits], m
        hit = next(h for h in hits if h["message_id"] == m.id)
        first = next(s for s in history if any(x.id == m.id for x in s.values.get("messages", [])))
        assert hit["checkpoint_id"] == first.config["configurable"]["checkpoint_id"] and hit["role"] == m.type
    _, hits = run_json(capsys, "search", str(cli_store.path), "ada@example.com")
    assert sorted(h["thread_id"] for h in hits) == ["crashed", "decided", "uncertain"]  # the tool call args
    assert all(h["role"] == "ai" and "ada@example.com" in h["snippet"] for h in hits)
    _, tool_hits = run_json(capsys, "search", str(cli_store.path), "shipped", "--role", "tool")
    assert [h["thread_id"] for h in tool_hits] == ["decided"] and tool_hits[0]["role"] == "tool"
    _, none = run_json(capsys, "search", str(cli_store.path), "shipped", "--role", "human")
    assert none == []
    _, late = run_json(capsys, "search", str(cli_store.path), "ada@example.com", "--since", "2999-01-01")
    assert late == []
    assert main(["search", str(cli_store.path), ""]) == 2


# -- export ------------------------------------------------------------------------------


def test_export_markdown_and_jsonl_hold_the_conversation(
    cli_store: BuiltStore, capsys, tmp_path: Path
) -> None:
    graph, saver = state_graph(cli_store.path, "decided")
    with saver:
        messages = graph.get_state(config("decided")).values["messages"]
    assert main(["export", str(cli_store.path), "decided", "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["kind"] == "thread" and lines[0]["status"] == "done"
    assert [(x["id"], x["text"]) for x in lines[1:]] == [(m.id, m.content) for m in messages]
    assert all(x["message"]["type"] == x["role"] for x in lines[1:])
    out = tmp_path / "t.md"
    assert main(["export", str(cli_store.path), "decided", "--format", "md", "-o", str(out)]) == 0
    md = out.read_text()
    positions = [md.index(m.content) for m in messages if m.content]
    assert positions == sorted(positions)
    assert all(f"cp-{x['checkpoint_id']}" in md for x in lines[1:])
    exported = main(["export", str(cli_store.path), "--all", str(tmp_path / "all"), "--format", "md"])
    assert exported == 1  # the damaged thread: its readable part
    written = sorted(p.name for p in (tmp_path / "all").iterdir())
    assert "index.md" in written and len(written) == len(EXPECTED_STATUS) + 1
    assert main(["export", str(cli_store.path), "--all", str(cli_store.path / "inside")]) == 2
    assert not (cli_store.path / "inside").exists()


def test_export_to_a_file_takes_its_format_from_the_file_s_extension(
    cli_store: BuiltStore, capsys, tmp_path: Path
) -> None:
    """`export STORE t -o t.html` without --format wrote Markdown into t.html; the
    extension now chooses (.html, .jsonl, .md), --format still wins, and else md."""
    store = str(cli_store.path)
    for name, starts in [("t.html", "<!DOCTYPE html>"), ("t.jsonl", '{"kind":'), ("t.md", "# Thread"),
                         ("t.txt", "# Thread")]:
        assert main(["export", store, "decided", "-o", str(tmp_path / name)]) == 0
        assert (tmp_path / name).read_text().lstrip().startswith(starts), name
    assert main(["export", store, "decided", "--format", "md", "-o", str(tmp_path / "x.html")]) == 0
    assert (tmp_path / "x.html").read_text().startswith("# Thread")
    assert main(["export", store, "decided", "-o", str(tmp_path / "y.html"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "html"


# -- reading never writes ------------------------------------------------------------------


def test_reading_commands_change_nothing_in_the_store(cli_store: BuiltStore, capsys, tmp_path: Path) -> None:
    before = tree(cli_store.path)
    store = str(cli_store.path)
    graph, saver = state_graph(cli_store.path, "agent")
    with saver:
        ids = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config("agent"))]
    for argv in (["threads", store], ["history", store, "agent"], ["show", store, "uncertain"],
                 ["show", store, "damaged"], ["diff", store, "agent", ids[-1], ids[0]],
                 ["tools", store, "decided"], ["tail", store, "decided", "-n", "50"],
                 ["search", store, "order"], ["verify", store],
                 ["export", store, "--all", str(tmp_path / "x"), "--format", "html"]):
        for as_json in ((), ("--json",)):
            assert main([*argv, *as_json]) in (0, 1), argv
            capsys.readouterr()
    assert tree(cli_store.path) == before


def test_errors_are_one_line_on_stderr_with_exit_2(cli_store: BuiltStore) -> None:
    for argv in (["history", str(cli_store.path), "typo"], ["show", str(cli_store.path), "agent", "nope"],
                 ["tail", str(cli_store.path), "typo"], ["export", str(cli_store.path)]):
        run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *argv],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2, (argv, run.stderr)
        assert run.stderr.startswith("error: ") and "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("argv", [
    ["show"], ["history"], ["tools"], ["memory"], ["tail", "-n", "50"], ["export"],
    ["export", "--format", "jsonl"],
])
def test_a_damaged_thread_s_readable_part_is_shown_with_exit_1(
    cli_store: BuiltStore, capsys, tmp_path: Path, argv: list[str]
) -> None:
    """What a damaged log still holds is shown (the valid prefix, with a warning), and
    the exit status says a problem was found, as `threads` and `verify` say it."""
    store = str(cli_store.path)
    command, options = argv[0], argv[1:]
    for as_json in ((), ("--json",)):
        assert main([command, store, "damaged", *options, *as_json]) == 1, argv
        assert capsys.readouterr().out.strip(), argv  # something was shown
        assert main([command, store, "agent", *options, *as_json]) == 0, argv
        capsys.readouterr()
    if command == "export":
        out = tmp_path / "damaged.txt"
        assert main(["export", store, "damaged", *options, "-o", str(out)]) == 1
        assert "both 2 3" in out.read_text()


def test_diff_within_a_damaged_thread_s_readable_part_exits_1(cli_store: BuiltStore, capsys) -> None:
    """Both checkpoints are in the readable part, so the diff is shown; what comes after
    them in the log could not be read, which the exit status says, as for `show`."""
    store = str(cli_store.path)
    for thread, status in (("damaged", 1), ("agent", 0)):
        _, rows = run_json(capsys, "history", store, thread)
        newest, oldest = rows[0]["checkpoint_id"], rows[-1]["checkpoint_id"]
        for as_json in ((), ("--json",)):
            assert main(["diff", store, thread, oldest, newest, *as_json]) == status, thread
            assert capsys.readouterr().out.strip()


def test_the_damage_warning_is_printed_by_every_command_that_reads_one_thread(cli_store: BuiltStore) -> None:
    for command in ("show", "tools", "memory", "tail", "export"):
        run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", command,
                              str(cli_store.path), "damaged"], capture_output=True, text=True, timeout=60)
        err = run.stderr
        assert run.returncode == 1, (command, err)
        assert "thread 'damaged': log " in err and "(read-only)" in err and "serving the" in err, err
        assert "langgraph-jsonl repair" in err and "Traceback" not in err, err


@pytest.mark.parametrize("argv", [["threads"], ["search", "both 2 3"], ["export", "--all", "{tmp}"]])
def test_a_command_over_every_thread_states_a_damaged_log_once(
    cli_store: BuiltStore, tmp_path: Path, argv: list[str]
) -> None:
    """``threads``, ``search`` and ``export --all`` say per thread what was damaged; the
    saver's own warning said it a second time, worded otherwise, on stderr."""
    argv = [a.replace("{tmp}", str(tmp_path / "out")) for a in argv]
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", argv[0],
                          str(cli_store.path), *argv[1:]], capture_output=True, text=True, timeout=60)
    said = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in said, said
    assert "damaged" in said and said.count("langgraph-jsonl repair") <= 1, said
    assert "serving the" not in said, said


def test_search_says_which_threads_it_searched_only_in_part(cli_store: BuiltStore, capsys) -> None:
    """A damaged log is searched up to the damage (what a read-only saver serves); a
    match after it cannot be found, so the search says so and exits 1."""
    store = str(cli_store.path)
    for scope in ((), ("--thread", "damaged")):
        code, hits = run_json(capsys, "search", store, "both 2 3", *scope)
        assert code == 1, scope
        assert "damaged" in [h["thread_id"] for h in hits]  # the readable part was searched
        main(["search", store, "both 2 3", *scope])
        err = capsys.readouterr().err
        assert ("1 thread(s) searched only in part: their log is damaged, and only its readable part "
                "was searched (damaged; ") in err, err
        quoted = shlex.quote(store)
        assert (f"`langgraph-jsonl verify {quoted}` says where, `langgraph-jsonl repair {quoted} "
                "--thread damaged` keeps what can be read") in err, err
    assert main(["search", store, "both 2 3", "--thread", "agent"]) == 0
    assert "only in part" not in capsys.readouterr().err
    _, one = run_json(capsys, "search", store, "both 2 3", "--limit", "1")
    _, none = run_json(capsys, "search", store, "both 2 3", "--limit", "0")
    assert len(one) == 1 and none == []


def test_export_all_of_a_store_with_a_damaged_thread_exits_1(
    cli_store: BuiltStore, capsys, tmp_path: Path
) -> None:
    code, listing = run_json(capsys, "export", str(cli_store.path), "--all", str(tmp_path / "json"))
    assert code == 1
    files = {f["thread_id"]: f for f in listing["files"] if f["thread_id"]}  # type: ignore[index]
    assert set(files) == set(EXPECTED_STATUS)
    assert all(f["path"] for f in files.values())  # the damaged thread's readable part too
    assert files["damaged"]["problem"].startswith("only the readable part was exported: the log is damaged")
    assert all(f["problem"] is None for t, f in files.items() if t != "damaged")
    assert main(["export", str(cli_store.path), "--all", str(tmp_path / "md")]) == 1
    captured = capsys.readouterr()
    assert "damaged: only the readable part was exported: the log is damaged at byte offset" in captured.err
    assert f"wrote {len(EXPECTED_STATUS) + 1} file(s)" in captured.out


def test_memory_says_when_its_fixed_part_is_over_the_budget(cli_store: BuiltStore, capsys) -> None:
    """``--budget`` folds older items into counts; the header, the goal's start and the
    counts are always kept, so a small budget cannot be met: the text printed used to
    be longer than asked for without a word. It now says so, with the length."""
    store = str(cli_store.path)
    assert main(["memory", store, "agent", "--budget", "4000"]) == 0
    full = capsys.readouterr()
    assert full.err == "" and len(full.out.rstrip("\n")) <= 4000
    assert main(["memory", store, "agent", "--budget", "60"]) == 0
    small = capsys.readouterr()
    printed = len(small.out.rstrip("\n"))
    assert printed > 60
    assert f"{printed} characters" in small.err and "--budget 60" in small.err, small.err


def test_reading_commands_take_the_thread_as_repair_does_with_thread(
    cli_store: BuiltStore, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every repair hint reads `repair STORE --thread T`; a user who then wrote
    `show STORE --thread T` got "unrecognized arguments". The reading commands take
    `--thread` too, and print what they print for the operand."""
    store = str(cli_store.path)
    for argv in (["show", store, "{t}"], ["history", store, "{t}"], ["tools", store, "{t}"],
                 ["tail", store, "{t}"], ["memory", store, "{t}"]):
        as_operand = [a.format(t="agent") for a in argv]
        assert main([*as_operand, "--json"]) == 0
        want = capsys.readouterr().out
        by_option = [a for a in argv if a != "{t}"] + ["--thread", "agent"]
        assert main([*by_option, "--json"]) == 0, argv
        assert capsys.readouterr().out == want, argv
    checkpoint = json.loads(_run(capsys, "history", store, "agent", "--json"))[1]["checkpoint_id"]
    assert main(["show", store, checkpoint, "--thread", "agent", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint_id"] == checkpoint
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", store)  # the store from the environment
    assert main(["show", "--thread", "agent", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["thread_id"] == "agent"
    assert main(["show", store, "x", "y", "--thread", "agent"]) == 2
    assert "too many operands" in capsys.readouterr().err
    # The usage line it ends with is whole (it ended "history [STORE] ", --thread left out).
    assert main(["history", store, "agent", "--thread", "agent"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("usage: langgraph-jsonl history [STORE] --thread THREAD\n"), err
    assert main(["show", store, "x", "y", "--thread", "agent"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("usage: langgraph-jsonl show [STORE] [CHECKPOINT] --thread THREAD\n"), err


def _run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show_of_a_thread_with_no_checkpoint_yet_says_what_it_has(tmp_path: Path, capsys) -> None:
    """A thread whose log holds only the replay journal (durability="exit" journals tool
    calls before any checkpoint) has no state to show: ``show`` pointed at ``history``,
    which lists nothing for it. It now says the thread has no checkpoint yet and where
    its tool calls are; ``history`` lists nothing and ``tools`` lists the call."""
    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        event = {"ev": "requested", "ns": "tools:x", "cp": "c-0", "call": "c1", "name": "send_email",
                 "at": "2026-01-01T00:00:00+00:00"}
        saver.record_tool_events("only journal", [event])
    for extra in ([], ["--json"]):
        assert main(["show", str(store), "only journal", *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "'only journal' has no checkpoint yet" in err and "history" not in err, err
        assert "`langgraph-jsonl tools`" in err
    code, rows = run_json(capsys, "history", str(store), "only journal")
    assert (code, rows) == (0, [])
    code, calls = run_json(capsys, "tools", str(store), "only journal")
    assert code == 0 and [(c["call_id"], c["state"]) for c in calls] == [("c1", "requested")]


@pytest.mark.parametrize("thread", ["t-1", "a b", "-dash"])
@pytest.mark.parametrize("command", ["show", "diff"])
def test_a_checkpoint_the_thread_lacks_names_the_history_command_that_lists_its_own(
    tmp_path: Path, capsys, thread: str, command: str
) -> None:
    """`show STORE THREAD CHECKPOINT` with a mistyped id said "`langgraph-jsonl history`
    lists its checkpoints": run as given, that command named no store and no thread and
    was refused. The command it names now runs, and lists the thread's checkpoints."""
    from tests.harness.checkpoints import cp_id, make_checkpoint

    store = tmp_path / "my demo" / "s"
    with JsonlSaver(store) as saver:
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config(thread), make_checkpoint(cp_id(1), {"m": ["x"]}, v), {}, v)
    missing = "1f000000-0000-6000-8000-000000000000"
    argv = [command, str(store), "--", thread, missing, *([missing] if command == "diff" else [])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"has no checkpoint {missing}" in err, err
    suggested = re.findall(r"`(langgraph-jsonl history [^`]*)`", err)
    assert len(suggested) == 1, err
    assert main(shlex.split(suggested[0])[1:]) == 0, suggested
    assert cp_id(1) in capsys.readouterr().out


@pytest.mark.parametrize("command", ["show", "export"])
def test_a_thread_whose_every_checkpoint_is_past_the_damage_says_so_with_exit_1(
    tmp_path: Path, command: str
) -> None:
    """A log cut right after its header (every checkpoint lost to the damage) made `show`
    and `export` say the thread "has no checkpoint yet ... (a run with durability='exit'
    stores its checkpoints when it ends)" and exit 2, as for a thread never saved; the
    warning above it said the opposite. Now the error names the damage and the repair,
    and the exit status is 1 (a damaged thread), as `history`'s is."""
    from tests.harness.checkpoints import config as raw_config
    from tests.harness.checkpoints import cp_id, make_checkpoint
    from tests.harness.raw_log import ThreadFiles, write_in_place

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        v = {"m": saver.get_next_version(None, None)}
        saver.put(raw_config("t"), make_checkpoint(cp_id(1), {"m": ["x"]}, v), {}, v)
    log = ThreadFiles.of(store, "t").log
    with open(log, "rb") as f:
        header = f.readline()
    write_in_place(log, header + b'{"t":"chec')
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", command, str(store), "t"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("error: thread 't' has no checkpoint before the damage"), last
    assert "durability='exit'" not in last and "langgraph-jsonl repair" in last, last
    assert "Traceback" not in run.stderr
