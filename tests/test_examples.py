"""Run the example programs as a new user would, each in its own subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.bounded import within
from tests.harness.terminal import as_head_reads, sigint_as_in_a_terminal

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_resume.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_agent_resume_runs_and_resumes_in_new_process() -> None:
    proc = run_example()
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "OK: the resumed run finished with: The weather in Paris is sunny, 18 C." in proc.stdout, output
    # Process A really crashed part way, and process B finished the run.
    assert "died (exit code 3)" in proc.stdout, output
    assert "next node: ('tools',)" in proc.stdout, output


def test_agent_resume_keeps_files_with_store_option(tmp_path: Path) -> None:
    store = tmp_path / "checkpoints"
    proc = run_example("--store", str(store))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "The weather in Paris is sunny, 18 C." in proc.stdout, output
    files = [p for p in store.rglob("*") if p.is_file()]
    assert files, f"no checkpoint files written under {store}\n{output}"
    assert sum(p.stat().st_size for p in files) > 0


def test_agent_resume_run_again_on_the_same_thread_continues_it(tmp_path: Path) -> None:
    # Getting started runs the example with --thread t-1 to look at that thread; a
    # newcomer who runs it twice gets a second turn on it, not a failed check.
    store = tmp_path / "checkpoints"
    for turn in (1, 2):
        proc = run_example("--store", str(store), "--thread", "t-1")
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"run {turn}:\n{output}"
        assert "OK: the resumed run finished with: The weather in Paris is sunny, 18 C." in proc.stdout, (
            output
        )
    assert "the thread already holds 4 message(s); this run continues it" in proc.stdout, output


def _own_group_with_sigint() -> None:
    os.setsid()  # a terminal's Ctrl-C goes to the foreground group: the demo and its children
    sigint_as_in_a_terminal()


@pytest.mark.parametrize("example", ["agent_resume.py", "crash_and_resume.py"])
def test_ctrl_c_stops_an_example_with_one_line_and_no_traceback(example: str, tmp_path: Path) -> None:
    store = tmp_path / "demo"
    child = subprocess.Popen([sys.executable, str(EXAMPLES / example), "--store", str(store)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_own_group_with_sigint)
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "[1/3]" not in child.stdout.readline():
            pass
        time.sleep(0.5)  # a child process is at work
        assert child.poll() is None, "the example ended before it could be interrupted"
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130, (out, err)
    assert "Traceback" not in err and "Traceback" not in out, (out, err)
    assert f"stopped by Ctrl-C; what was saved is in {store}" in out, out


def test_agent_resume_run_again_after_a_cut_short_run_finishes_it_first(tmp_path: Path) -> None:
    # Ctrl-C between process A's crash and process B's resume (or any crash there) leaves
    # t-1 stopped before its tools node. Run again on t-1, the example must not put a new
    # question after an AI message whose tool call has no answer: the transcript a chat
    # model API rejects. It finishes the cut-short run first, then takes its new turn.
    store = tmp_path / "checkpoints"
    cut = subprocess.run([sys.executable, str(EXAMPLES / "agent_resume.py"), "step1", str(store), "t-1"],
                         capture_output=True, text=True, timeout=120)
    assert cut.returncode == 3, cut.stdout + cut.stderr  # process A's simulated crash
    proc = run_example("--store", str(store), "--thread", "t-1")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "stopped before ('tools',)" in proc.stdout, output

    with JsonlSaver(str(store), read_only=True) as saver, within(30):
        state = saver.get_tuple({"configurable": {"thread_id": "t-1"}})
    assert state is not None
    messages = state.checkpoint["channel_values"]["messages"]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    asked = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert asked and set(asked) <= answered, [m.type for m in messages]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"] * 2


def test_agent_resume_given_a_folder_that_is_not_a_store_says_so_without_a_traceback(
    tmp_path: Path,
) -> None:
    # `--store .` in a project folder: the saver refuses a non-empty directory that is not
    # a store; the example prints that one reason and exits 2, as a command would.
    (tmp_path / "notes.txt").write_text("mine\n")
    proc = run_example("--store", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"directory {tmp_path} is not empty" in proc.stderr, proc.stderr
    assert "--store" in proc.stderr.splitlines()[-1], proc.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine\n" and not (tmp_path / "STORE.json").exists()


def test_agent_resume_with_its_output_closed_early_ends_quietly(tmp_path: Path) -> None:
    """``python examples/agent_resume.py | head -3`` died with a BrokenPipeError
    traceback at its next line; it ends quietly (exit 0), as the crash demo does."""
    argv = [sys.executable, str(EXAMPLES / "agent_resume.py"), "--store", str(tmp_path / "s")]
    head, code, err = as_head_reads(argv, 3, end_within=120)
    assert all(head), head
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code == 0, (code, err)


def test_agent_resume_given_a_file_as_its_store_says_so_without_a_traceback(tmp_path: Path) -> None:
    # `--store app.db` (or any file): the saver refuses a path that is not a directory with
    # a ConfigError, which the example printed as a traceback.
    (tmp_path / "app.db").write_text("mine\n")
    proc = run_example("--store", str(tmp_path / "app.db"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "is not a directory" in proc.stderr and "--store" in proc.stderr.splitlines()[-1], proc.stderr
    assert (tmp_path / "app.db").read_text() == "mine\n"


@pytest.mark.parametrize("example", ["agent_resume.py", "crash_and_resume.py"])
def test_an_example_run_outside_the_virtualenv_says_to_activate_it(example: str) -> None:
    # A new terminal without `. .venv/bin/activate`: python has no langchain_core. The
    # example said so with a traceback; it now says what to do (`-S`: no site-packages).
    proc = subprocess.run([sys.executable, "-S", str(EXAMPLES / example)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "is not installed for" in proc.stderr and ". .venv/bin/activate" in proc.stderr, proc.stderr
