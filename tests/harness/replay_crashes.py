"""Crashes for the ``ReplayAdapter`` tests: injected at a point of a call, or a child that dies.

- Crash injection (:func:`install_crash`): at a point of one call's lifecycle, call a
  ``crash`` function. Points inside the adapter (before ``started`` is durable, after
  ``finished`` is durable, ...) wrap the adapter journal's ``record``; points inside
  the tool use the tools' hooks. In-process tests pass a function that raises a
  ``BaseException``; child processes really die.
- Child processes: :func:`run_crash` runs a graph on a ``JsonlSaver`` in a child until
  its crash point, where the child dies: it tells the test, which SIGKILLs it, or it
  calls ``os._exit``. :func:`run_resume` resumes the thread in another fresh child and
  returns a report. Children are forked by a small fork server (see ``_ForkServer``), a
  helper process that imports this module.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from tests.harness.replay_tools import (
    IDEMPOTENT_BY_NAME,
    Hooks,
    Plan,
    all_of,
    await_until,
    build_graph,
    config,
    effects,
    effects_present,
    make_tools,
    settled,
    wait_until,
)

HERE = Path(__file__).resolve()
CRASH_EXIT = 71  # exit code of a child that crashed itself with os._exit
# Where a child can die, for the call named in its spec:
#   before_started   the adapter is about to record ``started`` (not durable yet)
#   before_effect    inside the tool, ``started`` durable, effect not done
#   after_effect     inside the tool, effect done, tool has not returned
#   before_finished  the tool returned; ``finished`` not recorded yet
#   after_finished   ``finished`` is durable; the node's checkpoint writes are not
CRASH_POINTS = ("before_started", "before_effect", "after_effect", "before_finished", "after_finished")
# the points inside the adapter: (event, crash before or after it is recorded)
JOURNAL_POINTS = {"before_started": ("started", "before"), "before_finished": ("finished", "before"),
                  "after_finished": ("finished", "after")}


# ---------------------------------------------------------------------------
# crash injection (used in child processes, and in-process with an exception)
# ---------------------------------------------------------------------------


class CrashAt(Hooks):
    """Tool hooks that wait for ``ready()`` and then call ``crash()`` at ``point`` of
    ``call_id``; calls in ``hold`` block forever after their effect (they never finish)."""

    def __init__(
        self,
        point: str | None,
        call_id: str | None,
        ready: Callable[[], bool],
        crash: Callable[[], None],
        hold: Sequence[str] = (),
    ) -> None:
        self.point, self.call_id, self.ready, self.crash, self.hold = point, call_id, ready, crash, set(hold)

    def at(self, point: str, call_id: str) -> None:
        if (point, call_id) == (self.point, self.call_id):
            wait_until(self.ready, what="the crash point's preconditions")
            self.crash()
        if point == "after_effect" and call_id in self.hold:
            time.sleep(3600)

    async def aat(self, point: str, call_id: str) -> None:
        if (point, call_id) == (self.point, self.call_id):
            await await_until(self.ready, what="the crash point's preconditions")
            self.crash()
        if point == "after_effect" and call_id in self.hold:
            await asyncio.sleep(3600)


def install_crash(adapter: Any, *, point: str, call_id: str, ready: Callable[[], bool] = lambda: True,
                  crash: Callable[[], None], hold: Sequence[str] = ()) -> Hooks:
    """Arrange for ``crash()`` at ``point`` (see ``CRASH_POINTS``) of ``call_id``.

    Journal points wrap ``adapter.journal.record`` (the async journal methods of
    ``SaverJournal`` go through it; for a ``StoreJournal`` both ``record`` and ``arecord``
    are wrapped). Returns the hooks to give the tools (tool points, held calls).
    """
    if point not in JOURNAL_POINTS:
        return CrashAt(point, call_id, ready, crash, hold)
    ev, when = JOURNAL_POINTS[point]
    journal = adapter.journal
    original, aoriginal = journal.record, journal.arecord
    is_store = type(journal).__name__ == "StoreJournal"

    def hit(events: list[dict[str, Any]]) -> bool:
        return any(e["ev"] == ev and e["call"] == call_id for e in events)

    def record(thread_id: str, events: list[dict[str, Any]]) -> None:
        if hit(events) and when == "before":
            wait_until(ready, what="the crash point's preconditions")
            crash()
        original(thread_id, events)
        if hit(events) and when == "after":
            wait_until(ready, what="the crash point's preconditions")
            crash()

    async def arecord(thread_id: str, events: list[dict[str, Any]]) -> None:
        if hit(events) and when == "before":
            await await_until(ready, what="the crash point's preconditions")
            crash()
        await aoriginal(thread_id, events)
        if hit(events) and when == "after":
            await await_until(ready, what="the crash point's preconditions")
            crash()

    journal.record = record
    if is_store:
        journal.arecord = arecord
    return CrashAt(None, None, ready, crash, hold)


# ---------------------------------------------------------------------------
# child processes
# ---------------------------------------------------------------------------


@dataclass
class Crash:
    exitcode: int | None
    how: str
    error: str | None = None

    @property
    def died(self) -> bool:
        """The child died at its crash point (and not for another reason)."""
        return self.exitcode == (-signal.SIGKILL if self.how == "kill" else CRASH_EXIT)


def spec(store: Path, *, plan: Plan, plug: str = "tool_node", mode: str = "sync", thread: str = "t1",
         crash: dict | None = None, answers: Any = None, **extra: Any) -> dict:
    """A child spec.

    ``crash = {"call", "point", "how": "kill"|"exit", "settle": [ids], "effects_of": [ids],
    "hold": [ids]}``: die at ``point`` of ``call`` once the ``settle`` calls are
    finished/failed in the journal and the ``effects_of`` calls have taken effect;
    ``hold`` calls block after their effect. ``answers``: what the resume phase answers
    uncertain calls with (through ``ReplayAdapter.resume_command``). ``resume_with``
    (extra): the crash phase resumes the thread (``None``, then these answers, through
    ``resume_command`` or, with ``resume_form="value"``, as ``Command(resume=answers)``)
    instead of starting it.
    """
    return {"store": str(store), "effects": str(store.parent / "effects.log"), "plug": plug, "mode": mode,
            "plan": plan, "thread": thread, "crash": crash, "answers": answers, **extra}


# Children are forked by a small fork server: a helper process that imported this module
# (langgraph, langchain...) once and forks one child per request, so a child starts in
# milliseconds instead of a second. Each child is a separate process that has never run
# a graph. (multiprocessing's own forkserver re-imports the test runner's __main__ in
# every child, which costs as much as a fresh interpreter.)
#
# Protocol, one JSON object per line: the test writes ``{"phase", "spec"}`` to the
# server's stdin; the server answers ``{"kind": "started", "pid"}``, the child writes
# ``{"kind": "crashpoint"}`` / ``{"kind": "ok", "payload"}`` / ``{"kind": "error",
# "payload": traceback}`` and the server, once the child is gone, ``{"kind": "exit",
# "code"}`` (negative: killed by that signal).
class _ForkServer:
    def __init__(self) -> None:
        import subprocess
        import tempfile

        self.errors = tempfile.TemporaryFile()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE.parents[2]), os.environ.get("PYTHONPATH", "")]),
        }
        serve = "from tests.harness import replay_crashes; replay_crashes._serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", serve],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                     text=True, env=env)
        import threading

        self.lock = threading.Lock()

    def run(
        self, phase: str, s: dict, *, on_crashpoint: Callable[[int], None], timeout: float
    ) -> tuple[int, list[dict]]:
        import threading

        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps({"phase": phase, "spec": s}) + "\n")
            self.proc.stdin.flush()
            started = self._read()
            assert started["kind"] == "started", started
            pid = started["pid"]
            timer = threading.Timer(timeout, lambda: _kill(pid))
            timer.start()
            try:
                messages = []
                while (msg := self._read())["kind"] != "exit":
                    messages.append(msg)
                    if msg["kind"] == "crashpoint":
                        on_crashpoint(pid)
            finally:
                timer.cancel()
            return msg["code"], messages

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.errors.seek(0)
            raise RuntimeError(
                "the fork server died:\n" + self.errors.read().decode(errors="replace")[-3000:]
            )
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        for f in (self.proc.stdout, self.errors):
            if f is not None:
                f.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_server: _ForkServer | None = None


def _fork_server() -> _ForkServer:
    global _server
    if _server is None or _server.proc.poll() is not None:
        import atexit

        _server = _ForkServer()
        atexit.register(_server.close)
    return _server


def _send(msg: dict) -> None:
    os.write(1, (json.dumps(msg, default=str) + "\n").encode())


def _serve() -> None:
    """The fork server's loop (runs in the helper process)."""
    import langchain.agents  # noqa: F401  (import before forking)

    from langgraph_jsonl_checkpoint import JsonlSaver  # noqa: F401

    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the child
            code = 0
            try:
                out = (_crash_phase if req["phase"] == "crash" else resume)(req["spec"])
                _send({"kind": "ok", "payload": out})
            except BaseException:
                import traceback

                _send({"kind": "error", "payload": traceback.format_exc()})
                code = 1
            os._exit(code)
        _send({"kind": "started", "pid": pid})
        _, status = os.waitpid(pid, 0)
        _send({"kind": "exit", "code": os.waitstatus_to_exitcode(status)})


def run_crash(s: dict, timeout: float = 30.0) -> Crash:
    """Run the graph in a child process until its crash point, where it dies: SIGKILLed
    by this process (``how="kill"``) or by its own ``os._exit`` (``how="exit"``)."""
    how = (s.get("crash") or {}).get("how", "kill")
    code, messages = _fork_server().run("crash", s, timeout=timeout,
                                        on_crashpoint=lambda pid: _kill(pid) if how == "kill" else None)
    errors = [m["payload"] for m in messages if m["kind"] == "error"]
    if any(m["kind"] == "ok" for m in messages):
        errors.append("the child finished without reaching its crash point")
    return Crash(code, how, "\n".join(errors) or None)


def run_resume(s: dict, timeout: float = 30.0) -> dict:
    """Resume the crashed thread in a fresh child process; returns :func:`resume`'s report."""
    code, messages = _fork_server().run("resume", s, timeout=timeout, on_crashpoint=lambda pid: None)
    ok = [m["payload"] for m in messages if m["kind"] == "ok"]
    if code != 0 or not ok:
        raise AssertionError(f"resume child failed (exit code {code}): {messages}")
    assert ok[0]["pid"] != os.getpid()
    return ok[0]


def _crash_now(how: str) -> None:
    if how == "exit":
        os._exit(CRASH_EXIT)
    _send({"kind": "crashpoint"})
    time.sleep(120)  # the test SIGKILLs us now
    os._exit(99)  # reached only if it never did


def open_store(s: dict) -> tuple[Any, Any]:
    """A new ``JsonlSaver`` on the spec's store and a new ``ReplayAdapter`` on it. With
    ``s["slow_put"]`` (seconds), saving a checkpoint whose last message asks for tools
    takes that long (a busy disk). With ``s["pg_url"]``: ``PostgresSaver`` on that
    database and ``ReplayAdapter(store=PostgresStore(...))`` (tables already set up),
    slowed the same way with ``slow_put``."""
    from langgraph_jsonl_checkpoint import JsonlSaver, ReplayAdapter

    if s.get("pg_url"):
        saver, adapter = _open_postgres(s["pg_url"])
        if s.get("slow_put"):
            _slow_down_tool_checkpoints(saver, s["slow_put"])
        return saver, adapter
    saver = JsonlSaver(s["store"])
    if s.get("slow_put"):
        _slow_down_tool_checkpoints(saver, s["slow_put"])
    adapter = ReplayAdapter(saver, idempotent=IDEMPOTENT_BY_NAME)
    return saver, adapter


def _open_postgres(url: str) -> tuple[Any, Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    from langgraph_jsonl_checkpoint import ReplayAdapter

    conns = [psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
             for _ in range(2)]
    saver = PostgresSaver(conns[0])
    store = PostgresStore(conns[1])
    saver.close = lambda: [c.close() for c in conns]  # type: ignore[attr-defined]
    return saver, ReplayAdapter(store=store, idempotent=IDEMPOTENT_BY_NAME)


def journal_calls(s: dict, saver: Any, adapter: Any) -> list[Any]:
    """Every tool call's record of the spec's thread, from wherever the adapter keeps them."""
    if s.get("pg_url"):
        return adapter.journal.all(s["thread"])
    return saver.tool_calls(s["thread"])


def _asks_for_tools(checkpoint: dict) -> bool:
    messages = checkpoint.get("channel_values", {}).get("messages") or []
    return bool(messages) and bool(getattr(messages[-1], "tool_calls", None))


def _slow_down_tool_checkpoints(saver: Any, seconds: float) -> None:
    put, aput = saver.put, saver.aput

    def slow_put(config: Any, checkpoint: Any, *args: Any) -> Any:
        if _asks_for_tools(checkpoint):
            time.sleep(seconds)
        return put(config, checkpoint, *args)

    async def slow_aput(config: Any, checkpoint: Any, *args: Any) -> Any:
        if _asks_for_tools(checkpoint):
            await asyncio.sleep(seconds)
        return await aput(config, checkpoint, *args)

    saver.put, saver.aput = slow_put, slow_aput


def graph_for(s: dict, saver: Any, adapter: Any, hooks: Hooks | None = None, **tool_node_kwargs: Any) -> Any:
    """The spec's graph on ``saver``/``adapter``."""
    tools = make_tools(s["effects"], asynchronous=s["mode"] == "async", hooks=hooks)
    if s.get("answer_pending") and s["plug"] in ("tool_node", "wrap"):
        tool_node_kwargs["answer_pending"] = True
    return build_graph(s["plug"], tools=tools, plan=s["plan"], checkpointer=saver, adapter=adapter,
                       **tool_node_kwargs)


def _crash_phase(s: dict) -> None:
    saver, adapter = open_store(s)
    c = s["crash"]
    ready = all_of(settled(lambda: journal_calls(s, saver, adapter), c.get("settle", [])),
                   effects_present(s["effects"], c.get("effects_of", [])))
    hooks = install_crash(adapter, point=c["point"], call_id=c["call"], ready=ready,
                          crash=lambda: _crash_now(c.get("how", "kill")), hold=c.get("hold", []))
    graph = graph_for(s, saver, adapter, hooks)
    cfg = config(s["thread"])
    inputs: list[Any] = [{"messages": [HumanMessage(s.get("user", "go"), id="human-0")]}]
    if "resume_with" in s:  # resume a crashed thread instead: None, then the answers
        inputs = [None, "answers"]
    for inp in inputs:
        if inp == "answers":
            from langgraph_jsonl_checkpoint import ReplayAdapter

            if s.get("resume_form") == "value":  # Command(resume={call id: answer})
                inp = Command(resume=s["resume_with"])
            else:  # Command(resume={interrupt id: {call id: answer}})
                inp = ReplayAdapter.resume_command(graph.get_state(cfg).interrupts, s["resume_with"])
        if s["mode"] == "async":
            asyncio.run(graph.ainvoke(inp, cfg, durability=s.get("durability", "sync")))
        else:
            graph.invoke(inp, cfg, durability=s.get("durability", "sync"))


def resume(s: dict) -> dict:
    """Resume a crashed thread (new saver and adapter on the store): ``invoke(None)``; if
    that stops on interrupts and ``s["answers"]`` is set, answer them all with
    ``ReplayAdapter.resume_command``. With ``s["new_input"]`` (text), send that as a new
    human message instead of resuming (after one ``invoke(None)`` if
    ``s["resume_first"]``: a thread waiting on the interrupt). Returns a JSON-able report,
    with the last history the model was given (``model_input``)."""
    from langgraph_jsonl_checkpoint import ReplayAdapter
    from tests.harness.replay_tools import MODEL_INPUTS

    saver, adapter = open_store(s)
    try:
        graph = graph_for({**s, "plan": s.get("resume_plan", s["plan"])}, saver, adapter, None)
        cfg = config(s["thread"])

        def run(inp: Any) -> Any:
            durability = s.get("durability", "sync")
            if s["mode"] == "async":
                return asyncio.run(graph.ainvoke(inp, cfg, durability=durability))
            return graph.invoke(inp, cfg, durability=durability)

        report: dict[str, Any] = {"pid": os.getpid()}
        report["before"] = {
            r.key.call_id: [r.state, r.effective_state] for r in journal_calls(s, saver, adapter)
        }
        if s.get("new_input") is None or s.get("resume_first"):
            run(None)
        snap = graph.get_state(cfg)
        report["interrupts"] = [i.value for i in snap.interrupts]
        if s.get("new_input") is not None:
            MODEL_INPUTS.clear()
            run({"messages": [HumanMessage(s["new_input"], id="human-1")]})
            snap = graph.get_state(cfg)
            report["interrupts_after_input"] = [i.value for i in snap.interrupts]
        if snap.interrupts and s.get("answers") is not None:
            run(ReplayAdapter.resume_command(snap.interrupts, s["answers"]))
            snap = graph.get_state(cfg)
        report["next"] = list(snap.next)
        report["pending_interrupts"] = [i.value for i in snap.interrupts]
        report["messages"] = [_summary(m) for m in snap.values.get("messages", [])]
        report["status"] = snap.values.get("status")
        report["model_input"] = [_summary(m) for m in MODEL_INPUTS[-1]] if MODEL_INPUTS else None
        report["tool_calls"] = {r.key.call_id: {"state": r.state, "effective": r.effective_state,
                                                "resolution": r.resolution, "events": r.events,
                                                "superseded_from": r.superseded_from}
                                for r in journal_calls(s, saver, adapter)}
        report["records"] = [{"call": r.key.call_id, "checkpoint_id": r.key.checkpoint_id, "state": r.state,
                              "resolution": r.resolution, "lost_run": r.lost_run, "events": r.events}
                             for r in journal_calls(s, saver, adapter)]
        report["effects"] = dict(effects(s["effects"]))
        return report
    finally:
        saver.close()


def _summary(m: Any) -> dict:
    """A message as JSON-able facts."""
    return {
        "type": m.type,
        "content": m.content,
        "tool_call_id": getattr(m, "tool_call_id", None),
        "status": getattr(m, "status", None),
        "tool_calls": [c["id"] for c in getattr(m, "tool_calls", [])],
    }
