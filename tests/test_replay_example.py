"""Run examples/crash_and_resume.py as a user would, in its own subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

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


def test_run_again_on_its_store_says_what_to_do(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    (workdir / "checkpoints").mkdir(parents=True)
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--store", str(workdir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # which directory, why it must be empty, and what to pass instead
    assert f"{workdir} is not empty" in proc.stderr
    assert "exactly one email" in proc.stderr and "--store" in proc.stderr.splitlines()[-1]
    assert "a new or empty directory" in proc.stderr
