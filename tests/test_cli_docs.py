"""Every ``langgraph-jsonl`` command is documented: ``--help`` with an example, its
``--json`` shape and the exit codes, and a section of its own on the CLI page (docs/cli.md); the
commands are the rows of the table in ``cli/commands.py`` (tests/test_cli_commands.py);
the progress bar shows only on a terminal and the CLI works without ``tqdm``."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import COMMANDS, build_parser, main, progress
from tests.harness.checkpoints import config, cp_id, make_checkpoint

CLI_PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def cli_headings() -> list[str]:
    """The CLI page's section headings (``### `threads```, ...)."""
    return re.findall(r"^### (.+)$", CLI_PAGE.read_text(), re.M)


def test_the_commands_are_the_rows_of_the_table() -> None:
    assert [c.name for c in COMMANDS] == list(commands())
    assert {"threads", "history", "show", "diff", "tools", "tail", "search", "export", "verify", "repair",
            "compact"} <= set(commands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_has_help_with_an_example_its_json_shape_and_exit_codes(name: str) -> None:
    text = commands()[name].format_help()
    examples = re.findall(r"^  (langgraph-jsonl .*)$", text.split("Example:", 1)[-1], re.M)
    assert "Example:" in text and examples, f"`{name} --help` has no example"
    assert all(e.startswith(f"langgraph-jsonl {name} ") for e in examples), examples
    assert "--json: " in text and "--json" in commands()[name].format_usage()
    assert "exit status: 0 all is well; 1 problems found" in text and "2 bad usage" in text


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_has_a_section_on_the_cli_page(name: str) -> None:
    assert any(h.startswith(f"`{name}`") for h in cli_headings()), (
        f"docs/cli.md has no section for `{name}` (a heading ### `{name}`; "
        "tests/test_cli_transcripts.py checks each section's transcript)"
    )
    assert f"langgraph-jsonl {name}" in CLI_PAGE.read_text()


@pytest.mark.parametrize("name", sorted(commands()))
def test_the_help_names_an_options_value_as_the_cli_page_does(name: str) -> None:
    """``export --help`` showed ``-o OUTPUT`` where docs/cli.md says ``-o FILE``: each
    option's value is named alike in the help and on the page (``-o FILE``, ``--all DIR``)."""
    page = CLI_PAGE.read_text()
    for action in commands()[name]._actions:
        if not action.option_strings or action.nargs == 0 or action.choices is not None:
            continue
        shown = action.metavar or action.dest.upper()
        for option in action.option_strings:
            on_page = set(re.findall(re.escape(option) + r"[ =]([A-Z][A-Z_]+)\b", page))
            assert on_page <= {shown}, f"`{name} --help` shows {option} {shown}, docs/cli.md {on_page}"


def test_export_help_says_o_takes_a_file_and_dash_is_stdout() -> None:
    text = " ".join(commands()["export"].format_help().split())
    # (Python 3.13's argparse shows "-o, --output FILE"; earlier ones "-o FILE, --output FILE")
    assert re.search(r"-o( FILE)?, --output FILE\b", text) and "OUTPUT" not in text, text
    assert "- is stdout" in text, text


# -- the progress bar ---------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _many_threads(path: Path, n: int = 30) -> None:
    with JsonlSaver(path) as saver:
        for i in range(n):
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config(f"t-{i:02d}"), make_checkpoint(cp_id(i), {"m": [i]}, v), {}, v)


def test_a_bar_only_on_a_terminal_and_none_without_tqdm(tmp_path: Path, monkeypatch, capsys) -> None:
    _many_threads(tmp_path / "s")
    assert main(["threads", str(tmp_path / "s")]) == 0  # captured: not a terminal
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.splitlines()) == 31
    out, err = Terminal(), Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["threads", str(tmp_path / "s")]) == 0
    assert re.search(r"\d+/30 \[.* threads/s\]", err.getvalue()), err.getvalue()  # tqdm's bar
    assert len(out.getvalue().splitlines()) == 31 and "/30" not in out.getvalue()
    monkeypatch.setattr(progress, "tqdm", None)  # the optional extra is not installed
    out, err = Terminal(), Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["threads", str(tmp_path / "s")]) == 0
    assert err.getvalue() == "" and len(out.getvalue().splitlines()) == 31
