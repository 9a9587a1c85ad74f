"""The commands of ``langgraph-jsonl`` come from one table (``cli/commands.py``): the
parser has exactly its rows, ``--help`` lists each under its group (see, maintain, move)
with its one-line purpose, and a command's module is imported only when it runs."""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint.cli import COMMANDS, GROUPS, Command, build_parser
from langgraph_jsonl_checkpoint.cli.commands import MAINTAIN, MOVE, SEE
from langgraph_jsonl_checkpoint.cli.parser import CommandParser
from tests.harness.cli_store import BuiltStore

#: The command modules of cli/: every one of them is named by the table.
CLI = Path(__file__).resolve().parents[1] / "langgraph_jsonl_checkpoint" / "cli"
HELPERS = {"__init__", "commands", "parser", "common", "columns", "progress", "json_output", "stdout"}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def grouped_help(text: str) -> dict[str, dict[str, str]]:
    """``--help``'s command listing: per group heading, each command with its purpose
    (wrapped lines joined)."""
    groups: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    last = None
    for line in text.splitlines():
        heading = re.fullmatch(r"(\w[\w ]*):", line)
        if heading:
            current = groups.setdefault(heading.group(1), {}) if heading.group(1) in GROUPS else None
            last = None
            continue
        if current is None:
            continue
        row = re.fullmatch(r"  ([a-z]+) {2,}(\S.*)", line)
        if row:
            last = row.group(1)
            current[last] = row.group(2)
        elif last and re.fullmatch(r" {4,}\S.*", line):
            current[last] += " " + line.strip()
        elif not line.strip():
            last = None
    return groups


def test_the_parser_has_exactly_the_table_s_commands_in_its_order() -> None:
    assert [c.name for c in COMMANDS] == list(subcommands(build_parser()))
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)
    assert {c.group for c in COMMANDS} == set(GROUPS) == {SEE, MAINTAIN, MOVE}


def test_every_command_module_of_cli_is_in_the_table_and_defines_its_commands() -> None:
    modules = {p.stem for p in CLI.glob("*.py")} - HELPERS
    assert modules == {c.module for c in COMMANDS}, "a module of cli/ whose commands are not in the table"
    for c in COMMANDS:
        module = importlib.import_module(f"langgraph_jsonl_checkpoint.cli.{c.module}")
        assert callable(getattr(module, c.define, None)), f"{c.module}.py has no {c.define}(parser)"
        assert not hasattr(module, "register"), f"{c.module}.py registers commands outside the table"


def test_help_lists_every_command_under_its_group_with_its_purpose() -> None:
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "--help"],
                         capture_output=True, text=True, timeout=120, env={"COLUMNS": "100", "PATH": ""})
    assert run.returncode == 0, run.stderr
    listed = grouped_help(run.stdout)
    assert list(listed) == [SEE, MAINTAIN, MOVE], run.stdout
    for c in COMMANDS:
        assert listed[c.group].get(c.name) == c.summary, (c, run.stdout)
    assert sum(len(g) for g in listed.values()) == len(COMMANDS)
    assert "{threads," not in run.stdout  # not argparse's flat list
    assert run.stdout.startswith("usage: langgraph-jsonl [-h] [--version] COMMAND ...")


def test_the_help_check_can_fail() -> None:
    moved = [Command(c.name, MOVE if c.name == "threads" else c.group, c.module, c.summary) for c in COMMANDS]
    listed = grouped_help(build_parser(define=False, commands=moved).format_help())
    assert "threads" in listed[MOVE] and "threads" not in listed[SEE]


def test_a_row_with_an_unknown_group_is_refused() -> None:
    with pytest.raises(ValueError, match="group 'look' is not one of"):
        build_parser(commands=[Command("threads", "look", "threads", "list threads")])


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if c.group in (MAINTAIN, MOVE)])
def test_every_maintain_and_move_command_takes_dry_run(name: str) -> None:
    """A person who adds ``--dry-run`` to a command that looks after a store or moves
    threads must not meet argparse's bare "unrecognized arguments": ``verify`` and
    ``archived`` refused it (they change nothing anyway), ``restore`` had none."""
    parser = build_parser()
    command = subcommands(parser)[name]
    assert "--dry-run" in command._option_string_actions, f"`{name}` does not take --dry-run"
    help_text = " ".join(command.format_help().split())
    assert re.search(r"--dry-run\s+\S", help_text), help_text  # with words saying what it does


def test_a_command_s_arguments_are_defined_when_it_is_used() -> None:
    parser = build_parser(define=False)
    threads = subcommands(parser)["threads"]
    assert isinstance(threads, CommandParser)
    assert "--status" not in threads._option_string_actions
    args = parser.parse_args(["threads", "./s", "--status", "waiting"])
    assert args.status == ["waiting"] and args.run.__module__ == "langgraph_jsonl_checkpoint.cli.threads"
    assert "--status" in threads._option_string_actions
    assert "--keep-latest" in subcommands(build_parser(define=False))["compact"].format_help()


PROBE = """
import sys
from langgraph_jsonl_checkpoint.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
cli = "langgraph_jsonl_checkpoint.cli."
print(code, sorted(m.rsplit(".", 1)[-1] for m in sys.modules if m.startswith(cli)))
"""


@pytest.mark.parametrize("argv, imported", [
    (["--help"], set()),
    (["threads", "STORE"], {"threads"}),
    (["verify", "STORE"], {"maintenance"}),
])
def test_only_the_command_run_is_imported(argv: list[str], imported: set[str], cli_store: BuiltStore) -> None:
    argv = [str(cli_store.path) if a == "STORE" else a for a in argv]
    run = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    code, modules = run.stdout.strip().splitlines()[-1].split(" ", 1)
    assert code in {"0", "1"}, run.stdout
    assert set(eval(modules)) - HELPERS == imported, run.stdout


def test_every_argument_of_every_command_says_what_it_is() -> None:
    """`show --help` listed THREAD and CHECKPOINT with nothing beside them: every operand
    and option of every command now has a help text."""
    bare = [f"{name} {action.metavar or action.dest}"
            for name, command in subcommands(build_parser()).items()
            for action in command._actions if not action.help]
    assert bare == []
