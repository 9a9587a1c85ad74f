"""The ``langgraph-jsonl`` argument parser, built from the table in :mod:`.commands`.

The top-level ``--help`` lists the commands under their groups (see, maintain, move)
with their purpose, instead of argparse's flat ``{a,b,c}`` list. Each command's parser
is a :class:`CommandParser` that imports its module and defines its arguments the first
time it is used: ``langgraph-jsonl threads`` imports ``cli/threads.py`` and no other
command's module. The trade-off: a parser built lazily declares no arguments until it is
used; :func:`build_parser` defines them all unless asked not to (``main`` asks).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import shlex
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .._version import __version__
from .commands import COMMANDS, GROUPS, Command
from .common import EXIT_STATUS_HELP


class CommandParser(argparse.ArgumentParser):
    """One command's parser; its help and arguments come from its module's
    ``define_<name>`` when it first parses, or formats its help or usage."""

    def __init__(self, *args: Any, command: Command | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command = command
        self._defined = command is None

    def define(self) -> CommandParser:
        """Import the command's module and let it define the command (once); returns self."""
        if not self._defined and self.command is not None:
            self._defined = True
            module = importlib.import_module(f"{__package__}.{self.command.module}")
            getattr(module, self.command.define)(self)
        return self

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """argparse's, except that options may come between the operands (`history STORE
        --limit 2 t-1`; argparse gives up the operands left once an option follows the
        store): the words before ``--`` are parsed intermixed, and those after it fill
        the operands left, in order (``show STORE --internal -- -dash``)."""
        self.define()
        if getattr(self, "_intermixing", False):  # parse_known_intermixed_args's own passes
            return super().parse_known_args(args, namespace)
        self._given = list(args or ())
        operands = self._get_positional_actions()
        if not operands:
            return super().parse_known_args(args, namespace)
        given = self._given
        end = given.index("--") if "--" in given else len(given)
        head, tail = given[:end], given[end + 1:]
        self._intermixing = True
        try:
            parsed, extras = super().parse_known_intermixed_args(head, namespace)
        finally:
            self._intermixing = False
        for action in operands:
            if tail and getattr(parsed, action.dest, None) is None:
                setattr(parsed, action.dest, tail.pop(0))
        return parsed, [*extras, *tail]

    def error(self, message: str) -> NoReturn:
        """argparse's error, saying why operands are missing when ``--threads`` (which
        takes every word after it) came before them, and how to give a thread id that
        starts with a dash (argparse takes it for an option)."""
        swallowed = "--threads" in getattr(self, "_given", ())
        if message.startswith("the following arguments are required") and swallowed:
            missing = " ".join(message.split(": ", 1)[-1].split(", "))
            message += ("; --threads takes every word after it, so they went into it: put them before "
                        f"--threads ({self.prog} {missing} --threads 'user-*')")
        super().error(message + self._dashed_thread_hint())

    def refuse_extras(self, extras: Sequence[str]) -> NoReturn:
        """argparse's "unrecognized arguments" for words this command does not take,
        saying how to give the thread to a command that takes it only as ``--thread``
        (``verify STORE t-1``, as ``show STORE t-1`` is written)."""
        message = f"unrecognized arguments: {' '.join(extras)}"
        given = list(getattr(self, "_given", ()))
        operand = any(a.dest == "thread" and not a.option_strings for a in self._actions)
        named = any(w == "--thread" or w.startswith("--thread=") for w in given)
        word = next((w for w in extras if not w.startswith("-")), None)
        if word is not None and word in given and not operand and not named and (
            "--thread" in self._option_string_actions
        ):
            at = len(given) - 1 - given[::-1].index(word)
            given[at:at + 1] = ["--thread", word]
            message += (f"; {self.prog.split()[-1]} takes the thread as an option, "
                        f"--thread: {self.prog} {shlex.join(given)}")
        self.error(message)

    def _dashed_thread_hint(self) -> str:
        """The first word that looks like an option but is none of this command's (nor a
        typo of one): were it an id of this command's ``--threads`` list, how to give it;
        else the commands it is an option of, or, for a command that takes a thread, how
        to give it were it a thread id."""
        listed = self._dashed_threads_listed()
        if listed:
            forms = " ".join(f"--threads={shlex.quote(w)}" for w in listed)
            return (f"; if {listed[0]} is a thread id, give it as --threads=ID, with `=` and once for "
                    f"each id that starts with a dash ({forms}; `--threads -- ID` is refused too)")
        given = list(getattr(self, "_given", ()))
        given = given[:given.index("--")] if "--" in given else given
        word = next((w for w in given if self._not_an_option(w)), None)
        if word is None:
            return ""
        owners = _commands_taking(word.split("=", 1)[0])
        if owners:  # `show STORE t-1 --format md`: export's option, not a thread id
            named = ", ".join(owners[:4]) + (", ..." if len(owners) > 4 else "")
            return f"; {word.split('=', 1)[0]} is an option of {named}"
        operand = any(a.dest == "thread" and not a.option_strings for a in self._actions)
        option = "--thread" in self._option_string_actions
        if not (operand or option):
            return ""
        quoted = shlex.quote(word)
        ways = []
        if operand:
            ways.append(f"after `--`, which ends the options: {self.prog} [OPTIONS] [STORE] -- {quoted}")
        if option:
            ways.append(f"as --thread={quoted}")
        return f"; if {word} is a thread id, give it {', or '.join(ways)}"

    def _dashed_threads_listed(self) -> list[str]:
        """The words after this command's ``--threads`` (or an abbreviation of it) that look
        like options but are none: argparse ends the list at them, and ``--`` does not help."""
        given = list(getattr(self, "_given", ()))
        at = next((i for i, w in enumerate(given) if self._names_threads(w)), None)
        if at is None:
            return []
        return [w for w in given[at + 1:] if w != "--" and self._not_an_option(w)]

    def _names_threads(self, word: str) -> bool:
        """``word`` is this command's ``--threads`` option, whole or abbreviated."""
        if not word.startswith("--") or len(word) < 3 or "=" in word:
            return False
        action = self._option_string_actions.get(word)
        if action is None and self.allow_abbrev:
            matches = {a for o, a in self._option_string_actions.items() if o.startswith(word)}
            action = matches.pop() if len(matches) == 1 else None
        return action is not None and action.dest == "threads"

    def _not_an_option(self, word: str) -> bool:
        """``word`` looks like an option, yet is none of this command's (nor close to a long one)."""
        if not word.startswith("-") or word == "-" or self._negative_number_matcher.match(word):
            return False
        name = word.split("=", 1)[0] if word.startswith("--") else word
        short = self._option_string_actions.get(word[:2])
        if name in self._option_string_actions or (short is not None and short.nargs != 0):
            return False  # an option, or a short one with its value attached (-n5)
        long = [o for o in self._option_string_actions if o.startswith("--")]  # (short ones: all alike)
        return not (name.startswith("--") and difflib.get_close_matches(name, long, n=1, cutoff=0.8))

    def format_usage(self) -> str:
        self.define()
        return super().format_usage()

    def format_help(self) -> str:
        self.define()
        return super().format_help()


class CommandLineParser(argparse.ArgumentParser):
    """The top-level parser: its help lists the commands of ``commands`` by group."""

    def __init__(self, *args: Any, commands: Sequence[Command] = COMMANDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = tuple(commands)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> Any:
        """As argparse's, except that arguments the command does not take are reported
        with the command's usage line (argparse reports them from the top-level parser,
        whose usage says nothing of the command's options), and no arguments at all print
        the commands (argparse says only that a command is required)."""
        if not (sys.argv[1:] if args is None else list(args)):
            self.print_help(sys.stderr)
            self.exit(2, f"\n{self.prog}: error: name a COMMAND (listed above); "
                         f"`{self.prog} COMMAND --help` shows its options and examples\n")
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parsers().get(getattr(parsed, "command", None) or "")
            if isinstance(command, CommandParser):
                command.refuse_extras(extras)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _command_parsers(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        for group, about in GROUPS.items():
            formatter.start_section(group)
            formatter.add_text(about)
            formatter.add_arguments([
                argparse.Action(option_strings=[], dest=c.name, metavar=c.name, help=c.summary)
                for c in self.commands if c.group == group
            ])
            formatter.end_section()
        for action_group in self._action_groups:  # options (the commands' action is hidden)
            formatter.start_section(action_group.title)
            formatter.add_text(action_group.description)
            formatter.add_arguments(action_group._group_actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def _commands_taking(option: str) -> list[str]:
    """The commands that take ``option`` (every command defined: for an error only)."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [name for name, command in commands.choices.items() if option in command._option_string_actions]


def build_parser(*, define: bool = True, commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The argument parser: one subcommand per row of ``commands`` (the table of
    :mod:`.commands`), in its order; tests check each has help.

    Args:
        define: Define every command's arguments now (importing every command's module);
            ``False`` leaves each to be defined when it is used, as ``main`` does.
        commands: The table to build from.

    Raises:
        ValueError: A row names a group that is not one of the groups.
    """
    parser = CommandLineParser(
        prog="langgraph-jsonl",
        usage="%(prog)s [-h] [--version] COMMAND ...",
        description="Look inside a JsonlSaver store, and look after it.",
        epilog=EXIT_STATUS_HELP,
        commands=commands,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, prog=parser.prog,
                                help=argparse.SUPPRESS, parser_class=CommandParser)
    for row in commands:
        if row.group not in GROUPS:
            raise ValueError(f"command {row.name}: group {row.group!r} is not one of {list(GROUPS)}")
        command = sub.add_parser(row.name, help=row.summary, command=row)
        if define:
            command.define()
    return parser
