"""The transcripts of ``docs/cli.md``: real sessions, run again by the tests.

Each ````console```` block of the page holds commands (lines starting ``$ ``), each
followed by what it printed (stdout and stderr, in order). The session runs in one folder:
the page's setup block (the ````bash```` block that runs the two examples) makes
``./demo``, the tracer example of ``docs/session-memory.md`` adds a traced thread to
``./demo/checkpoints``, and then every console block runs in ``./demo``, in page order,
one ``bash`` per block (so a variable set by one command is seen by the next of the same
block, and a repair, sweep or restore changes what later blocks see).

What is compared (:func:`normalise`): the words and the lines. Digits, checkpoint ids,
long hex runs (hashes, the example's random thread id) and runs of spaces (table columns
widen with the numbers) are masked, and blank lines at the end of an output are left
out (a blank line parts two commands of a block); the session folder is shown as ``~/demo``. A command
must exit 0 (one that shows an error says so: ``... || echo "exit status $?"``).

The PostgreSQL database of the ``export`` transcript is shown as :data:`SHOWN_DATABASE`;
the run uses a fresh database of its own in its place (and prints its URL back as shown).

``python -m tests.harness.cli_transcripts`` runs the session and rewrites the page's
console blocks with what it printed (then review the diff).
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_jsonl_checkpoint.maintenance.retention import TTL_VARIABLES
from tests.harness.doc_blocks import ROOT, blocks

PAGE = ROOT / "docs" / "cli.md"
#: The database the ``export`` transcript names.
SHOWN_DATABASE = "postgresql://postgres@127.0.0.1:5432/app"
#: How the session folder is shown.
SHOWN_FOLDER = "~/demo"
_CONSOLE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
_STATUS = "\x1fstatus "


@dataclass
class Step:
    """One command of a console block and what the page shows it printed."""

    command: str
    shown: list[str] = field(default_factory=list)


@dataclass
class ConsoleBlock:
    """One console block: its place on the page, its steps, and its span in the text."""

    line: int
    steps: list[Step]
    start: int
    end: int

    @property
    def name(self) -> str:
        """``docs/cli.md:120`` (a test id)."""
        return f"docs/cli.md:{self.line}"


def console_blocks(text: str | None = None) -> list[ConsoleBlock]:
    """The page's console blocks, in order."""
    text = PAGE.read_text() if text is None else text
    out = []
    for m in _CONSOLE.finditer(text):
        steps: list[Step] = []
        for line in m.group(1).splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                assert steps, f"docs/cli.md: a console block must start with a `$ ` command: {line!r}"
                steps[-1].shown.append(line)
        out.append(ConsoleBlock(text.count("\n", 0, m.start()) + 1, steps, m.start(1), m.end(1)))
    return out


def setup_script() -> str:
    """The page's setup block: the bash block that runs the examples into ./demo."""
    (block,) = [b for b in blocks("bash")
                if b.path == "docs/cli.md" and "examples/crash_and_resume.py" in b.text]
    return block.text


def tracer_program() -> str:
    """The tracer example of docs/session-memory.md (adds thread weather-1 and its trace)."""
    (block,) = [b for b in blocks("python")
                if b.path == "docs/session-memory.md" and "JsonlTracer(saver)" in b.text]
    return block.text


def tracer_step() -> str:
    """The command the page gives to run the tracer example (its program saved as
    ``tracer.py`` beside ``./demo``), e.g. ``cd demo && python ../tracer.py``."""
    prose = " ".join(PAGE.read_text().split())
    found = re.search(r"`(cd demo && python \.\./tracer\.py)`", prose)
    assert found, ("docs/cli.md does not say how to run the tracer example in ./demo "
                   "(`cd demo && python ../tracer.py`)")
    return found.group(1)


def session_env() -> dict[str, str]:
    """The environment the session runs in: this Python's scripts first, UTC, unbuffered."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("LANGGRAPH_JSONL_STORE", None)
    for name in TTL_VARIABLES:  # a policy of the environment would change what sweep prints
        env.pop(name, None)
    env.update(TZ="UTC", PYTHONUNBUFFERED="1")
    return env


def make_store(folder: Path) -> Path:
    """Run the setup block and the tracer example in ``folder``; returns ``folder/demo``."""
    env = session_env()
    (folder / "examples").symlink_to(ROOT / "examples")
    run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", setup_script()], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the setup block of docs/cli.md failed:\n{run.stdout}\n{run.stderr}"
    demo = folder / "demo"
    (folder / "tracer.py").write_text(tracer_program())
    run = subprocess.run(["bash", "-e", "-c", tracer_step()], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the tracer example failed:\n{run.stdout}\n{run.stderr}"
    return demo


def run_block(block: ConsoleBlock, demo: Path, database: str) -> list[tuple[int, list[str]]]:
    """Run a block's commands in one bash in ``demo``: each one's exit status and output."""
    script = ["exec 2>&1"]
    for step in block.steps:
        script += [step.command.replace(SHOWN_DATABASE, database), f"printf '{_STATUS}%d\\n' $?"]
    run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=demo, env=session_env(),
                         capture_output=True, text=True, timeout=600)
    printed = run.stdout.replace(database, SHOWN_DATABASE)
    for path in {str(demo.resolve()), str(demo)}:
        printed = printed.replace(path, SHOWN_FOLDER)
    out: list[tuple[int, list[str]]] = []
    lines: list[str] = []
    for line in printed.splitlines():
        if line.startswith(_STATUS):
            out.append((int(line[len(_STATUS):]), lines))
            lines = []
        else:
            lines.append(line.rstrip())
    assert len(out) == len(block.steps), f"{block.name}: the session stopped early:\n{printed}"
    return out


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_HEX = re.compile(r"[0-9a-f]{8,}")


def normalise(lines: list[str]) -> list[str]:
    """Lines as compared: ids, hashes and numbers masked, spacing collapsed."""
    out = []
    for line in lines:
        line = _UUID.sub("<id>", line)
        line = _HEX.sub("<hex>", line)
        line = re.sub(r"\d+", "0", line)
        out.append(re.sub(r"\s+", " ", line).strip())
    while out and not out[-1]:
        out.pop()  # the blank line between two commands of a block
    return out


def differences(block: ConsoleBlock, ran: list[tuple[int, list[str]]]) -> list[str]:
    """What differs between the page and a run of its block (empty: they match)."""
    problems = []
    for step, (status, printed) in zip(block.steps, ran):
        if status != 0:
            problems.append(f"`{step.command}` exited {status}:\n" + "\n".join(printed))
        elif normalise(step.shown) != normalise(printed):
            diff = difflib.unified_diff(step.shown, printed, "the page", "this run", lineterm="")
            problems.append(f"`{step.command}` printed something else:\n" + "\n".join(diff))
    return problems


def rewrite_page(folder: Path, database: str) -> None:
    """Run the whole session and write what it printed into the page's console blocks."""
    demo = make_store(folder)
    text = PAGE.read_text()
    pieces, last = [], 0
    for block in console_blocks(text):
        ran = run_block(block, demo, database)
        body = []
        for step, (status, printed) in zip(block.steps, ran):
            assert status == 0, f"`{step.command}` exited {status}:\n" + "\n".join(printed)
            body += ([""] if body else []) + [f"$ {step.command}", *printed]
        pieces += [text[last:block.start], "\n".join(body) + "\n"]
        last = block.end
    PAGE.write_text("".join(pieces) + text[last:])


if __name__ == "__main__":
    import tempfile

    from tests.harness.postgres import create_database, drop_database

    name, url = create_database()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rewrite_page(Path(tmp), url)
    finally:
        drop_database(name)
    print(f"rewrote the console blocks of {PAGE.relative_to(ROOT)}")
