"""The transcripts of docs/cli.md are a real session, and still are: every command of the
CLI has one, each parses, and a new run of the whole session prints what the page shows
(digits, ids and column widths aside; ``tests/harness/cli_transcripts.py``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint.cli import build_parser
from tests.harness.cli_transcripts import (
    SHOWN_DATABASE,
    console_blocks,
    differences,
    make_store,
    normalise,
    run_block,
    tracer_step,
)
from tests.test_cli_docs import commands


def _cli_argv(command: str) -> list[str] | None:
    """A ``$ langgraph-jsonl ...`` line as its arguments (``None`` for other commands)."""
    words = shlex.split(command.split(" || ", 1)[0].split(" | ", 1)[0])
    return words[1:] if words and words[0] == "langgraph-jsonl" else None


def test_every_command_has_a_transcript_and_each_parses() -> None:
    shown = set()
    for block in console_blocks():
        for step in block.steps:
            argv = _cli_argv(step.command)
            if argv is None:
                continue
            try:
                build_parser().parse_args(argv)
            except SystemExit as exc:
                raise AssertionError(f"{block.name}: `{step.command}` does not parse") from exc
            shown.add(argv[0])
    assert set(commands()) <= shown, f"docs/cli.md has no transcript of {sorted(set(commands()) - shown)}"


def test_the_page_says_how_to_run_the_tracer_example_the_session_needs() -> None:
    """Thread weather-1 of the transcripts comes from the tracer example: the page gives the
    command, and the session runs that command (``make_store``)."""
    assert "tracer.py" in tracer_step()


def test_the_comparison_masks_what_changes_from_run_to_run_and_nothing_else() -> None:
    a = ["weather-36f393fc  done  5  2026-12-03 10:30:33  9.4 KiB", "1f1ef03e-2eee-6900-8005-4a0b62571256  5"]
    b = ["weather-a49c9c87      done  5  2027-01-13 09:05:01  19.1 KiB",
         "1f1ef052-a1d6-6dae-8005-3cb028082c5b  5", ""]
    assert normalise(a) == normalise(b)
    assert normalise(["status: done"]) != normalise(["status: interrupted"])
    assert normalise(["2 message(s)"]) != normalise(["2 message(s)", "3 message(s)"])


@pytest.mark.slow
def test_a_new_run_of_the_session_prints_what_the_page_shows(tmp_path: Path, pg_url: str) -> None:
    demo = make_store(tmp_path)
    problems = []
    for block in console_blocks():
        for problem in differences(block, run_block(block, demo, pg_url)):
            problems.append(f"{block.name}: {problem}")
    assert not problems, (
        "docs/cli.md's transcripts no longer match a run of the session; if the change is "
        "meant, run `python -m tests.harness.cli_transcripts` and review the diff:\n\n"
        + "\n\n".join(problems)
    )
    assert SHOWN_DATABASE not in pg_url
