"""``tail -f`` follows a run in another process, and every reading command works while
another process writes: the writer (``tests/harness/cli_writer.py``) writes one turn at
a time, each only once the test has seen the previous one through a reader; the
reader processes never open a thread's lock file, so they cannot take the writer lock."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.terminal import sigint_as_in_a_terminal

ROOT = Path(__file__).resolve().parents[1]
TURNS = 4


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


class Lines:
    """A process's stdout lines, read in a thread; ``next(timeout)`` never hangs."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.pump = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self.pump.start()

    def close(self) -> str:
        """Wait for the process's end; its stderr. Closes its pipes, even when it did
        not end in time (generous: on a machine loaded 3x over, a follower took more than
        30 s to be scheduled and exit)."""
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise
        finally:
            self.pump.join(timeout=30)
            err = self.proc.stderr.read() if self.proc.stderr else ""
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        return err

    def _pump(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.queue.put(line)
        self.queue.put(None)

    def next(self, timeout: float = 30.0) -> str:
        line = self.queue.get(timeout=timeout)
        assert line is not None, "the process closed its output"
        return line


def _lock_files_open(pid: int) -> list[str]:
    """The ``.lock`` files a process has open (from /proc), and any flock it holds."""
    found = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.endswith(".lock"):
                found.append(target)
    except FileNotFoundError:
        return found
    with open("/proc/locks") as locks:
        found += [line for line in locks if line.split()[4:5] == [str(pid)] or f" {pid} " in line]
    return found


def test_tail_follows_a_writer_in_another_process_without_its_lock(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    gate.mkdir()
    JsonlSaver(store).close()  # the store exists; the thread is made by the writer
    writer = subprocess.Popen([sys.executable, "-m", "tests.harness.cli_writer", str(store), "t", str(TURNS),
                               str(gate)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(), cwd=ROOT)
    written = Lines(writer)
    # the follower starts first: it waits for the thread, creating nothing meanwhile
    errors = tmp_path / "tail.err"
    with open(errors, "w") as err:
        tail = subprocess.Popen([sys.executable, "-m", "langgraph_jsonl_checkpoint", "tail", str(store), "t",
                                 "-f", "-n", "100", "--poll", "0.05", "--json"],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=_env(),
                                preexec_fn=sigint_as_in_a_terminal)
    followed = Lines(tail)
    deadline = time.monotonic() + 30
    while "waiting for thread t to appear" not in errors.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # a few polls
    assert "waiting for thread t to appear" in errors.read_text()
    assert list((store / "threads").iterdir()) == []
    (gate / "0").touch()
    assert written.next() == "turn 0 written\n"
    seen: list[dict] = []
    history_lengths = []
    try:
        for turn in range(TURNS):
            # everything of this turn reaches the follower: the last answer is "result: add=..."
            while not any(e["kind"] == "message" and e["message"]["text"] == f"result: add={2 * turn}"
                          for e in seen):
                seen.append(json.loads(followed.next()))
            assert _lock_files_open(tail.pid) == []
            # the other reading commands, in this process, while the writer is alive
            assert main(["history", str(store), "t", "--json"]) == 0
            assert main(["threads", str(store)]) == 0
            assert main(["search", str(store), f"add {turn} {turn}"]) == 0
            assert main(["show", str(store), "t"]) == 0
            history_lengths.append(_history_length(store))
            if turn + 1 < TURNS:
                (gate / str(turn + 1)).touch()
                assert written.next() == f"turn {turn + 1} written\n"
        assert writer.wait(timeout=60) == 0
    finally:
        tail.send_signal(signal.SIGINT)  # how a person ends `tail -f`
        writer.kill()
        followed.close()
        written.close()
    assert tail.returncode == 0, errors.read_text()
    assert "Traceback" not in errors.read_text()
    assert history_lengths == sorted(history_lengths) and len(set(history_lengths)) == TURNS
    # the follower printed each message exactly once, in the thread's order
    with JsonlSaver(store) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        final = graph.get_state({"configurable": {"thread_id": "t"}})
    printed = [e["message"]["id"] for e in seen if e["kind"] == "message"]
    assert printed == [m.id for m in final.values["messages"]]


def _history_length(store: Path) -> int:
    proc = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "history", str(store), "t",
                           "--json"], capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr
    return len(json.loads(proc.stdout))


def test_tail_without_follow_prints_the_last_events_and_stops(cli_store, capsys) -> None:
    assert main(["tail", str(cli_store.path), "decided", "-n", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines if not line.startswith(" ")]) == 3
    assert "done: c1=order 1042: shipped" in lines[-1]
    started = time.monotonic()
    assert main(["tail", str(cli_store.path), "decided", "-n", "100", "--json"]) == 0
    assert time.monotonic() - started < 30
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    kinds = [(e["tool"] or {}).get("event") for e in events if e["kind"] == "tool"]
    assert kinds.count("ask") == 1 and kinds.count("answer") == 1
    assert {"requested", "started", "finished"} <= set(kinds)


def test_a_thread_with_a_live_run_in_another_process_reads_running(tmp_path: Path, capsys) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    gate.mkdir()
    JsonlSaver(store).close()
    writer = subprocess.Popen([sys.executable, "-m", "tests.harness.cli_writer", str(store), "t", "hold",
                               str(gate)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(), cwd=ROOT)
    lines = Lines(writer)
    try:
        assert lines.next() == "in run\n"
        assert main(["threads", str(store), "--json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["status"] == "running" and row["next"] == ["step"]
        assert row["run"]["pid"] == writer.pid
        assert main(["show", str(store), "t", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["status"] == "running"
        (gate / "release").touch()
        assert lines.next() == "run ended\n"
        assert writer.wait(timeout=60) == 0
    finally:
        writer.kill()
        lines.close()
    assert main(["threads", str(store), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "done" and row["run"] is None


def test_tail_follow_ended_by_ctrl_c_exits_1_for_a_damaged_thread(
    cli_store, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following shows the readable part of a damaged log as it grows; when Ctrl-C ends
    it, the exit status says the thread is damaged, as `tail` without -f says it."""
    from langgraph_jsonl_checkpoint.cli import conversation

    polls = []

    def ctrl_c_on_the_third_poll(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(conversation, "time", SimpleNamespace(sleep=ctrl_c_on_the_third_poll))
    for thread, status in (("damaged", 1), ("agent", 0)):
        polls.clear()
        assert main(["tail", str(cli_store.path), thread, "-f", "--poll", "0.01"]) == status, thread
        assert len(polls) == 3 and capsys.readouterr().out.strip()


def test_tail_follow_says_when_the_thread_is_deleted_and_when_it_comes_back(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A followed thread deleted (by the app, a sweep) went silent: the follower went on
    polling a log that was gone, saying nothing. It now says so once, waits, and says
    when a new run starts the thread again, whose messages it follows."""
    from langchain_core.messages import HumanMessage

    from langgraph_jsonl_checkpoint.cli import conversation

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        build_agent_graph().compile(checkpointer=saver).invoke(
            {"messages": [HumanMessage("before the delete")]}, {"configurable": {"thread_id": "t"}})
    polls = []

    def poll(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) in (2, 6):
            with JsonlSaver(store) as other:
                if len(polls) == 2:
                    other.delete_thread("t")
                else:
                    build_agent_graph().compile(checkpointer=other).invoke(
                        {"messages": [HumanMessage("after the delete")]},
                        {"configurable": {"thread_id": "t"}})
        if len(polls) == 9:
            raise KeyboardInterrupt

    monkeypatch.setattr(conversation, "time", SimpleNamespace(sleep=poll))
    assert main(["tail", str(store), "t", "-f", "--poll", "0.01"]) == 0
    out, err = capsys.readouterr()
    assert "before the delete" in out and "after the delete" in out
    assert out.index("before the delete") < out.index("after the delete")
    assert err.count("thread t was deleted") == 1, err
    assert err.count("thread t is back") == 1, err



def test_tail_follow_through_an_archive_and_a_restore_says_what_is_true_while_following(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A followed thread archived by a sweep: the follower said "Bring it back with
    `restore ...`, then run this again" while it went on following (nothing to run
    again); brought back, it said "appeared again (a new run started it)" of a restore.
    It now says the follow goes on once the thread is back, and that it is back."""
    pytest.importorskip("zstandard")
    from langchain_core.messages import HumanMessage

    from langgraph_jsonl_checkpoint.cli import conversation

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        build_agent_graph().compile(checkpointer=saver).invoke(
            {"messages": [HumanMessage("before the sweep")]}, {"configurable": {"thread_id": "t"}})
    polls = []

    def poll(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            assert main(["sweep", str(store), "--ttl", "0", "--strategy", "archive"]) == 0
        if len(polls) == 5:
            assert main(["restore", str(store), "--thread", "t"]) == 0
        if len(polls) == 8:
            raise KeyboardInterrupt

    monkeypatch.setattr(conversation, "time", SimpleNamespace(sleep=poll))
    assert main(["tail", str(store), "t", "-f", "--poll", "0.01"]) == 0
    err = capsys.readouterr().err
    assert err.count("thread t was archived") == 1, err
    assert "then run this again" not in err and "following goes on once it is back" in err, err
    assert "a new run started it" not in err and err.count("thread t is back") == 1, err

def test_tail_follow_piped_into_head_ends_when_head_does(cli_store) -> None:
    """`langgraph-jsonl tail STORE T -f | head -1` did not end when head did: with nothing
    new to write, the follower never wrote again to learn that its reader had gone. It
    now watches its output while it waits, and ends quietly (exit 0) within a poll."""
    import select

    tail = subprocess.Popen([sys.executable, "-m", "langgraph_jsonl_checkpoint", "tail", str(cli_store.path),
                             "agent", "-f", "-n", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0, env=_env())
    try:
        assert tail.stdout is not None and tail.stderr is not None
        read, deadline = b"", time.monotonic() + 60
        while b"\n" not in read:  # what `head -1` reads; then it ends
            assert select.select([tail.stdout], [], [], max(0.0, deadline - time.monotonic()))[0], read
            chunk = os.read(tail.stdout.fileno(), 4096)
            assert chunk, tail.stderr.read()
            read += chunk
        tail.stdout.close()
        assert tail.wait(timeout=30) == 0
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()
        err = tail.stderr.read().decode()
        tail.stderr.close()
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_tail_follow_with_standard_output_closed_says_so_at_once(cli_store) -> None:
    """`langgraph-jsonl tail STORE T -f >&-` with nothing to show yet waited for ever (until
    its first event, the first it could not write): it says at once that it cannot write
    to standard output, exit status 2, as other commands do."""
    done = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "tail", str(cli_store.path),
                           "agent", "-f", "-n", "0"], preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE,
                          text=True, timeout=60, env=_env())
    assert done.returncode == 2, done.stderr
    assert "cannot write to standard output" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_tail_of_a_thread_with_nothing_to_show_says_so_and_what_shows_it(tmp_path: Path, capsys) -> None:
    """`tail STORE T` of a thread whose state holds no messages (a counter graph) printed
    nothing and exited 0: no word that there is nothing to show, nor where its state is.
    It says so on stderr, naming the `show` command (which runs as pasted)."""
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class Count(TypedDict):
        n: int

    builder = StateGraph(Count)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    store = tmp_path / "my store"
    with JsonlSaver(store) as saver:
        graph = builder.compile(checkpointer=saver)
        for thread in ("c-1", "-dash"):
            graph.invoke({"n": 1}, {"configurable": {"thread_id": thread}})
    for thread in ("c-1", "-dash"):
        argv = ["tail", str(store), thread] if thread != "-dash" else ["tail", str(store), "--", thread]
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert out == "", out
        assert "no message or tool-call event" in err, err
        show = err.split("`")[1].split()
        assert show[:2] == ["langgraph-jsonl", "show"], err
        import shlex

        assert main(shlex.split(err.split("`")[1])[1:]) == 0, err
        assert "n: 2" in capsys.readouterr().out  # the state tail had nothing of
    # What a reader of --json or -n 0 asked for is all they get: no note.
    assert main(["tail", str(store), "c-1", "--json"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["tail", str(store), "c-1", "-n", "0"]) == 0
    assert capsys.readouterr().err == ""


TAIL_CTRL_C_IN_THE_BACKLOG = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import importlib
follow = importlib.import_module("langgraph_jsonl_checkpoint.inspection.follow")
real = follow.ThreadFollower.read_new
def read_new(self):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the lines to show first are read
    return real(self)
follow.ThreadFollower.read_new = read_new
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("follow", [[], ["-f"]])
def test_ctrl_c_before_tail_showed_anything_says_it_stopped_with_130(
    tmp_path: Path, follow: list[str]
) -> None:
    """Ctrl-C while `tail` (with -f or not) read the lines it shows first ended it with
    exit status 0 and nothing printed, as if the thread had nothing to show: the Ctrl-C
    that ends following was taken for one at any point. Before anything is shown it is
    the usual stop (one line, 130); once following, it still ends `tail -f` with 0."""
    from langchain_core.messages import HumanMessage

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        build_agent_graph().compile(checkpointer=saver).invoke(
            {"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "t"}})
    run = subprocess.run([sys.executable, "-c", TAIL_CTRL_C_IN_THE_BACKLOG, "tail", str(store), "t", *follow],
                         capture_output=True, text=True, timeout=60, env=_env())
    assert run.returncode == 130, (run.returncode, run.stdout, run.stderr)
    assert run.stderr.startswith("interrupted: langgraph-jsonl tail stopped before it finished"), run.stderr
    assert "Traceback" not in run.stderr
