"""Run examples/crash_and_resume.py as a user would, in its own subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.terminal import as_head_reads

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "crash_and_resume.py"
TOOL_CALLS_PAGE = EXAMPLE.parents[1] / "docs" / "tool-calls.md"


def _as_shown(output: str) -> str:
    """The example's output with what changes from run to run (pids, times, its
    directory) replaced, as the docs' copy of it is compared."""
    output = re.sub(r"pid \d+", "pid N", output)
    output = re.sub(r"\d{4}-\d\d-\d\dT[\d:.+]+", "TIME", output)
    return re.sub(r"work directory: .*", "work directory: DIR", output)


def _shown_on_the_page() -> str:
    page = TOOL_CALLS_PAGE.read_text()
    section = page[page.index("## The crash example"):]
    return section.split("```\n", 2)[1]


def test_crash_and_resume_example(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--store", str(workdir)],
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # process A really was SIGKILLed inside send_email, after the email was written
    assert "send_email: email written to the outbox" in proc.stdout, out
    assert "SIGKILL to process A" in proc.stdout, out
    assert "send_email    [call_email_1042] uncertain" in proc.stdout, out
    # process B stopped on the uncertain call, process C answered "skip"
    assert "interrupt: uncertain_tool_calls" in proc.stdout, out
    assert "resume with {'call_email_1042': 'skip'}" in proc.stdout, out
    assert "send_email    [call_email_1042] finished (resolved: skip)" in proc.stdout, out
    assert "OK: the email was sent exactly once" in proc.stdout, out
    # and the files agree: one email, one lookup, a checkpoint store
    emails = [json.loads(line) for line in (workdir / "outbox.jsonl").read_text().splitlines()]
    assert [e["to"] for e in emails] == ["ada@example.com"]
    assert (workdir / "lookups.log").read_text().splitlines() == ["1042"]
    assert any(p.is_file() and p.stat().st_size for p in (workdir / "checkpoints").rglob("*"))
    # docs/tool-calls.md shows this output: it is what a reader who runs it sees
    assert _as_shown(_shown_on_the_page()) == _as_shown(proc.stdout), (
        "docs/tool-calls.md's crash example output differs from the example's; paste it anew")


def _run(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLE), "--store", str(workdir)],
                          capture_output=True, text=True, timeout=120)


def test_run_again_on_its_store_starts_over(tmp_path: Path) -> None:
    """Run twice with ``--store ./demo``, the second run exited 2 ("is not empty (a run
    of this demo left it?)"): a newcomer could not run the demo again. It now removes
    what its last run left (its thread, the outbox, the lookups), says so, and runs; a
    thread of someone else's in its store is left alone."""
    workdir = tmp_path / "demo"
    first = _run(workdir)
    assert first.returncode == 0, first.stdout + first.stderr
    with JsonlSaver(workdir / "checkpoints") as saver:  # someone's own thread beside the demo's
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config("mine"), make_checkpoint(cp_id(1), {"m": ["mine"]}, v), {}, v)
    again = _run(workdir)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "starting over" in again.stdout and "support-ticket-1042" in again.stdout, out
    assert "OK: the email was sent exactly once" in again.stdout, out
    emails = [json.loads(line) for line in (workdir / "outbox.jsonl").read_text().splitlines()]
    assert [e["to"] for e in emails] == ["ada@example.com"]
    assert (workdir / "lookups.log").read_text().splitlines() == ["1042"]
    with JsonlSaver(workdir / "checkpoints") as saver:
        assert saver.get_tuple(config("mine")) is not None
        inputs = [t for t in saver.list(config("support-ticket-1042")) if t.metadata["source"] == "input"]
        assert len(inputs) == 1, inputs  # one run's history, not two


@pytest.mark.parametrize("leftover", ["notes.txt", "outbox.jsonl", "checkpoints/app.db"])
def test_a_folder_it_did_not_write_is_refused_and_left_alone(tmp_path: Path, leftover: str) -> None:
    workdir = tmp_path / "demo"
    (workdir / leftover).parent.mkdir(parents=True)
    (workdir / leftover).write_text('{"to": "bob@example.com"}\n')
    proc = _run(workdir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # which directory, what is not the demo's, and what to pass instead
    assert str(workdir) in proc.stderr and leftover.split("/")[0] in proc.stderr, proc.stderr
    assert "a new or empty directory" in proc.stderr and "--store" in proc.stderr.splitlines()[-1]
    assert sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*")) == sorted(
        {leftover, leftover.split("/")[0]})  # nothing removed, nothing added
    assert (workdir / leftover).read_text() == '{"to": "bob@example.com"}\n'


def _processes_naming(text: str) -> list[str]:
    """The command lines of the running processes that name ``text`` (the demo's children
    name its directory)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if any(text.encode() in w for w in words):
            found.append(" ".join(w.decode(errors="replace") for w in words))
    return found


def test_output_closed_early_ends_it_quietly_with_no_child_left(tmp_path: Path) -> None:
    """``python examples/crash_and_resume.py | head -5`` died with a BrokenPipeError
    traceback and left process A asleep in send_email (up to 60 s). It now ends quietly
    at its next line, its child killed and reaped."""
    workdir = tmp_path / "demo"
    head, code, err = as_head_reads([sys.executable, str(EXAMPLE), "--store", str(workdir)], 5, end_within=30)
    assert head[-1].startswith(b"    process A, pid "), head  # its child was at work
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code == 0, (code, err)
    assert _processes_naming(str(workdir)) == []  # process A killed and reaped, not asleep
