"""What every ``langgraph-jsonl`` command shares: opening a store, naming a thread,
printing ids and tables (JSON: :mod:`.json_output`), exit codes, the store argument.

The store is the positional ``STORE`` argument, or ``LANGGRAPH_JSONL_STORE`` when it is
left out. A path that is not a store is an error (a typo must not create one). Every
command prints for people by default and, with ``--json``, one documented JSON shape
for scripts (values that are not JSON are shown as :func:`~..inspection.values.jsonable`
makes them).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..disk import view
from ..disk.paths import thread_option as suggested_thread
from ..disk.store import MARKER, Store
from ..disk.store_dir import check_readable, lost_marker_advice, sqlite_file_advice, store_near
from ..errors import JsonlCheckpointError
from ..inspection.conversation import terminal_safe
from ..inspection.threads import live_run
from ..saver.config import SERDE_ENV, STORE_ENV, load_serde
from .columns import ID_WIDTH, as_printed, clip, table_lines
from .json_output import print_json as print_json
from .json_output import print_json_line as print_json_line

if TYPE_CHECKING:  # imported by open_saver: a command served without it imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2
#: The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a command it ended.
EXIT_INTERRUPTED = 130
EXIT_STATUS_HELP = (
    "exit status: 0 all is well; 1 problems found (a damaged thread, verify findings); "
    "2 bad usage or an error; 130 stopped by Ctrl-C"
)


class UsageError(Exception):
    """A command was given something it cannot work on (exit status 2)."""


class StoppedSaying(KeyboardInterrupt):
    """Ctrl-C that stopped a command which can say exactly what it left (nothing
    changed, say): ``main`` prints this line (``interrupted: ...``) instead of its
    general one, and exits 130 as for any Ctrl-C."""


def describe(
    parser: argparse.ArgumentParser,
    *,
    description: str,
    examples: Sequence[str],
    json_shape: str,
) -> None:
    """Give a command (its parser, named in :mod:`.commands`) its help: what it does,
    examples (each a whole command line), its ``--json`` shape and the exit status, and
    the ``--json`` option; tests check every command has them."""
    lines = "\n".join(f"  {e}" for e in examples)
    parser.description = f"{description}\n\nExample:\n{lines}"
    parser.epilog = f"--json: {json_shape}\n\n{EXIT_STATUS_HELP}"
    parser.formatter_class = _HelpFormatter
    parser.add_argument("--json", action="store_true", help="print JSON for scripts (shape below)")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help as written, with :func:`add_operands`' required operands shown without
    brackets (argparse marks every ``nargs="?"`` positional optional)."""

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if getattr(action, "required_operand", False):
            return str(action.metavar)
        return super()._format_args(action, default_metavar)


def tolerant_output() -> None:
    """Text the terminal cannot encode (a Latin-1 or ASCII locale, ``PYTHONIOENCODING``,
    a lone surrogate from a file name) is printed escaped (``\\u6771``), not ended by a
    ``UnicodeEncodeError`` traceback after the first rows."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Rows in columns aligned in display cells under a header line (the last column
    is not padded; see :mod:`.columns`), measured as printed (escaped, where the
    output's encoding cannot show a character: :func:`tolerant_output`)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    if not encoding.lower().replace("_", "-").startswith("utf-8"):  # UTF-8 shows every character
        headers, *rows = [[as_printed(c, encoding) for c in row] for row in [headers, *rows]]
    for line in table_lines(headers, rows):
        print(line)


def count_argument(text: str, *, least: int = 0) -> int:
    """A count option's value (``--limit``, ``-n``), as argparse's ``type``: a whole
    number, ``least`` or more (a negative limit would list nothing, as if nothing were
    there).

    Raises:
        argparse.ArgumentTypeError: It is not (a usage error, exit status 2).
    """
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if count < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more, not {text}")
    return count


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """The ``STORE`` positional, optional when ``LANGGRAPH_JSONL_STORE`` is set (and
    ``--serde``, see :func:`add_serde_option`)."""
    parser.add_argument(
        "store", nargs="?", default=None,
        help=f"the store directory (default: ${STORE_ENV})",
    )
    add_serde_option(parser)


def add_serde_option(parser: argparse.ArgumentParser) -> None:
    """``--serde MODULE:ATTR``: the serializer the store was written with."""
    parser.add_argument(
        "--serde", metavar="MODULE:ATTR",
        help="the serializer the store was written with, if not LangGraph's default: an "
        "object, class or factory, e.g. langgraph.checkpoint.serde.encrypted:EncryptedSerializer."
        f"from_pycryptodome_aes (key in $LANGGRAPH_AES_KEY) (default: ${SERDE_ENV})",
    )


def add_dry_run_accepted(parser: argparse.ArgumentParser, command: str) -> None:
    """``--dry-run`` accepted by a maintenance command that only reads (``verify``,
    ``archived``), as by those beside it that change a store; it changes nothing."""
    parser.add_argument("--dry-run", action="store_true",
                        help=f"accepted, and changes nothing: {command} never changes the store")


def serde_of(args: argparse.Namespace) -> Any:
    """The serializer ``--serde`` (or ``LANGGRAPH_JSONL_SERDE``) names; ``None``: the
    default. A module in the working directory can be named, as in a script run there.

    Raises:
        ConfigError: It cannot be loaded or is not a serializer.
    """
    spec = getattr(args, "serde", None) or os.environ.get(SERDE_ENV)
    if not spec:
        return None
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    return load_serde(spec)


def add_operands(
    parser: argparse.ArgumentParser, names: Sequence[str], *, optional: int = 0, thread_option: bool = True
) -> None:
    """``[STORE] NAME...``: the store (or ``$LANGGRAPH_JSONL_STORE``) then the command's
    operands, the last ``optional`` of which may be left out. argparse fills optional
    positionals left to right, so :func:`settle_operands` places them after parsing. A
    ``thread`` operand can be given as ``--thread`` too (unless ``thread_option`` is
    false: ``export``, whose ``--thread`` abbreviates its ``--threads``)."""
    parser.add_argument("store", nargs="?", metavar="STORE",
                        help=f"the store directory (default: ${STORE_ENV})")
    for i, name in enumerate(names):
        action = parser.add_argument(name, nargs="?", metavar=name.upper(), help=OPERAND_HELP.get(name))
        action.required_operand = i < len(names) - optional  # type: ignore[attr-defined]
    if thread_option and names and names[0] == "thread":  # as `repair` and its hints spell it
        parser.add_argument("--thread", dest="thread_option", metavar="THREAD",
                            help="the thread, given as an option instead of the THREAD operand")
    parser.set_defaults(operands=(tuple(names), optional))
    add_serde_option(parser)


#: What a person is asked to name for an operand of :func:`add_operands`, by its name
#: (others: the operand's own name).
OPERAND_WORDS = {
    "thread": "a thread", "checkpoint": "a checkpoint", "text": "the text to search for",
    "a": "the checkpoints to compare", "b": "the checkpoints to compare",
}


#: An operand's line in ``--help``.
OPERAND_HELP = {
    "thread": "the thread id (`langgraph-jsonl threads STORE` lists them)",
    "checkpoint": "a checkpoint id of the thread (default: the latest; `history` lists them)",
    "a": "the checkpoint to compare from (`history` lists them)",
    "b": "the checkpoint to compare to",
    "text": "the text to find (case-insensitive)",
}


def operands_usage(command: str, names: Sequence[str], optional: int) -> str:
    """``langgraph-jsonl COMMAND [STORE] THREAD [CHECKPOINT]``: the operands, the ones
    that may be left out in brackets."""
    required = len(names) - optional
    shown_names = [n.upper() if i < required else f"[{n.upper()}]" for i, n in enumerate(names)]
    return " ".join(["langgraph-jsonl", command, "[STORE]", *shown_names])


def settle_operands(args: argparse.Namespace) -> None:
    """Place the operands :func:`add_operands` declared: with one more than the
    command's operands the first is the store; with as many, the first is the store only
    if it is a store directory (else ``$LANGGRAPH_JSONL_STORE`` names the store); fewer
    than the required ones is a usage error.

    Raises:
        UsageError: Too few or too many operands.
    """
    names, optional = args.operands
    given = [v for v in [args.store, *(getattr(args, n) for n in names)] if v is not None]
    by_option = getattr(args, "thread_option", None)
    if by_option is not None:  # `--thread T`: the operands are the others
        args.thread = None
        names, optional = names[1:], min(optional, len(names) - 1)
    required = len(names) - optional
    if len(given) > len(names) or (len(given) == len(names) and len(names) > required):
        with_store = len(given) == len(names) + 1 or is_store(given[0]) or not os.environ.get(STORE_ENV)
    else:
        # Too few to tell by count: a store directory is the store (`show ./checkpoints`
        # lacks a thread, it does not name one).
        with_store = len(given) == len(names) + 1 or (bool(given) and is_store(given[0]))
    store, rest = (given[0], given[1:]) if with_store else (None, given)
    if len(rest) < required:
        raise UsageError(_missing_operands(args.command, names, optional, len(rest), store))
    if len(rest) > len(names):  # (only with --thread: argparse counts the rest)
        raise UsageError(f"{args.command}: the thread is given by --thread; too many operands: "
                         f"{' '.join(rest)}. usage: {operands_usage(args.command, names, optional)} "
                         "--thread THREAD")
    args.store = store
    for i, name in enumerate(names):
        setattr(args, name, rest[i] if i < len(rest) else None)
    if by_option is not None:
        args.thread = by_option


def _missing_operands(
    command: str, names: Sequence[str], optional: int, given: int, store: str | None
) -> str:
    """What a command lacks, with how to find it and its usage line."""
    missing = names[given:len(names) - optional]
    words = " and ".join(dict.fromkeys(OPERAND_WORDS.get(n, n.upper()) for n in missing))
    text = f"{command}: name {words} ({' '.join(n.upper() for n in missing)})"
    if store is None and not os.environ.get(STORE_ENV):
        text += f", and the store directory (STORE) or set {STORE_ENV}"
    elif "thread" in missing:
        text += f"; `langgraph-jsonl threads{' ' + shlex.quote(store) if store else ''}` lists the threads"
    return f"{text}. usage: {operands_usage(command, names, optional)}"


def thread_option(args: argparse.Namespace, lister: str, listed: str) -> str:
    """The thread ``--thread`` names; without it, a :class:`UsageError` saying how to name
    one and which command (``lister``) lists the ``listed`` candidates."""
    if args.thread:
        return str(args.thread)
    store = args.store or os.environ.get(STORE_ENV) or "STORE"
    raise UsageError(f"{args.command}: name the thread with --thread THREAD; "
                     f"`langgraph-jsonl {lister} {store}` lists the {listed}.")


def is_store(path: str) -> bool:
    """Whether ``path`` is a store directory (it holds the marker)."""
    return os.path.isfile(os.path.join(os.path.expanduser(path), MARKER))


def store_path(args: argparse.Namespace) -> str:
    """The store the command line names, or the environment's."""
    path = args.store or os.environ.get(STORE_ENV)
    if not path:
        raise UsageError(f"name the store directory, or set {STORE_ENV}{_store_here(args)}")
    return os.path.expanduser(str(path))  # `~/x` from the environment: as the shell has it


def _store_here(args: argparse.Namespace) -> str:
    """The command given the store the current folder holds or is inside, or nothing."""
    if (here := "checkpoints" if is_store("checkpoints") else store_near(".")) is None:
        return ""
    names = getattr(args, "operands", ((), 0))[0]
    given = [str(v) for n in names if (v := getattr(args, n, None)) is not None]
    if any(os.path.lexists(v) for v in given):  # a path given for the store (its log, say)
        return f"; there is one here: {here}"
    return f"; there is one here: `langgraph-jsonl {shlex.join([args.command, here, *given])}`"


def shown(text: str) -> str:
    """Text for one line of a terminal: as it is if printable, else a JSON literal, escaped."""
    if text and text.isprintable() and text.strip() == text:
        return text
    return terminal_safe(json.dumps(text, ensure_ascii=False))  # JSON leaves DEL, C1, bidi as they are


def shown_id(text: str) -> str:
    """An id for a table's cell: :func:`shown`, cut to :data:`~.columns.ID_WIDTH` cells
    with an ellipsis (one long id must not widen every row; ``--json`` keeps it whole)."""
    return clip(shown(text), ID_WIDTH)


def first_line(exc: BaseException) -> str:
    """An error's message, first line only (for a row of a listing)."""
    return str(exc).strip().split("\n", 1)[0]


def existing_store(args: argparse.Namespace) -> str:
    """The command's store directory, which must be a store (a typo must not create one).

    Raises:
        UsageError: No store named, or the directory is not a store.
        StoreError: This user cannot read the store.
    """
    store = store_path(args)
    check_readable(store)
    if not os.path.isfile(os.path.join(store, MARKER)):
        lost = lost_marker_advice(store)
        if lost:
            raise UsageError(f"store {store} has no {MARKER} (deleted?), {lost}")
        near = store_near(store)
        source = f" (from ${STORE_ENV})" if not args.store else ""
        why = (f"no {MARKER} in it" if os.path.isdir(store) else
               (sqlite_file_advice(store) or "it is a file, not a directory")
               if os.path.lexists(store) else  # else: another folder's path?
               f"there is no directory {os.path.abspath(store)}" + ("" if os.path.isabs(store) else
               f"; a relative path is read from the current directory, {os.getcwd()}"))
        raise UsageError(
            f"{store}{source} is not a langgraph-jsonl-checkpoint store ({why}). "
            + (f"It is next to one: did you mean {near}?" if near else
               "Pass the directory given to JsonlSaver(...).")
        )
    return store


def open_store(args: argparse.Namespace) -> Store:
    """The command's existing store directory, opened read-only without a saver (the
    same checks as :func:`open_saver`: marker, format, permissions; no LangGraph import).

    Raises:
        UsageError: No store named, or the directory is not a store.
        StoreError: The store is unsafe or of an unknown format.
    """
    return Store(existing_store(args), read_only=True)


@contextmanager
def open_saver(args: argparse.Namespace, *, write: bool = False) -> Iterator[JsonlSaver]:
    """Open the command's existing store (read-only unless ``write``); closed when done."""
    from ..saver.jsonl_saver import JsonlSaver

    saver = JsonlSaver(existing_store(args), read_only=not write, serde=serde_of(args))
    try:
        yield saver
    finally:
        saver.close()


def served_status(saver: JsonlSaver, thread_id: str) -> int:
    """The exit status of a command that read one thread (call it before the saver is
    closed): 1 if its log is damaged, so that what the command printed is the readable
    part a read-only saver serves (after the saver's warning naming the log, where the
    damage is and the repair), else 0."""
    return EXIT_OK if saver.store.thread_log(thread_id).damaged_at is None else EXIT_PROBLEMS


def unreadable_status(thread_id: str, unreadable: int) -> int:
    """The exit status of a command that left out ``unreadable`` values of a thread it
    could not decode (1, after saying so on stderr; 0 if there were none)."""
    if not unreadable:
        return EXIT_OK
    print(
        f"thread {thread_id!r}: {unreadable} stored value(s) could not be decoded and were "
        "left out: the store was written through another serializer (an EncryptedSerializer "
        f"key). Name it with --serde module:attr or ${SERDE_ENV}.",
        file=sys.stderr,
    )
    return EXIT_PROBLEMS


def known_thread(saver: JsonlSaver, thread_id: str) -> str:
    """``thread_id``, if the store has it.

    Raises:
        UsageError: It does not (nothing is created for it); if it was archived, the
            error says when and how to restore it.
    """
    if not saver.store.has_thread(thread_id):
        archived = archived_note(saver, thread_id)
        if archived:
            raise UsageError(archived)
        run = live_run(saver.store.log_paths(thread_id), thread_id)
        if run is not None:  # (a run with durability="exit" stores nothing until it ends)
            raise UsageError(
                f"store {saver.store.path} has nothing of thread {shown(thread_id)} yet: a run of "
                f"process {run.get('pid')} on {run.get('host')} has been working on it since "
                f"{run.get('since')} and has stored no checkpoint so far (with durability='exit' a "
                "run stores its checkpoints when it ends). Look again once that run has ended."
            )
        path_like = os.sep in thread_id or thread_id.startswith(".")
        misread = (
            f" ({shown(thread_id)} was read as the thread, the store being ${STORE_ENV}'s: there is "
            f"no store directory {shown(thread_id)})"
            if path_like and os.environ.get(STORE_ENV) and not os.path.isdir(thread_id) else ""
        )
        ids = [f.thread_id for f in islice(saver.store.catalog(), 100_000) if f.thread_id is not None]
        close = difflib.get_close_matches(thread_id, ids, n=1)
        raise UsageError(
            f"store {saver.store.path} has no thread {shown(thread_id)}{misread}"
            + (f": did you mean {shown(close[0])}?" if close else "")
            + f"; `langgraph-jsonl threads {shlex.quote(saver.store.path)}` lists its threads."
        )
    return thread_id


def archived_note(saver: JsonlSaver, thread_id: str, then: str = "then run this again") -> str | None:
    """What to tell of a thread that has no log because a sweep archived it: when, and
    the command that brings it back (``then``: what follows); ``None`` if it has no archive."""
    try:
        entries = saver.archived(thread_id)
    except JsonlCheckpointError:  # an archive that cannot be read (or no zstandard): not known
        return None
    if not entries:
        return None
    newest = entries[-1]
    command = f"langgraph-jsonl restore {shlex.quote(saver.store.path)} {suggested_thread(thread_id)}"
    return (
        f"thread {shown(thread_id)} is archived (since "
        f"{newest.archived_at.strftime('%Y-%m-%d %H:%M:%S')} UTC, in {newest.path}): it has no log "
        f"in {saver.store.path} to read. Bring it back with `{command}`, {then}."
    )


def _not_serving_damaged(record: logging.LogRecord) -> bool:
    return record.msg is not view.SERVING_DAMAGED


@contextmanager
def damage_stated_per_thread() -> Iterator[None]:
    """For a command over many threads that states each damaged one in its own output
    (``threads``, ``search``, ``export --all``): the saver's warning, which would say
    it a second time in other words, is held back meanwhile."""
    logger = logging.getLogger(view.__name__)
    logger.addFilter(_not_serving_damaged)
    try:
        yield
    finally:
        logger.removeFilter(_not_serving_damaged)


def work_done() -> None:
    """A command's work is done (changes made, answer gathered): Ctrl-C is ignored from
    now on (on the main thread), so the command prints its summary and exits with its own
    status, not 130. Called before the summary (within :func:`ctrl_c_stops` too, whose
    handler it replaces) and by :func:`main` as a command returns."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def ctrl_c_stops(stop: threading.Event, *, again: str) -> Iterator[None]:
    """While a command works thread by thread (a copy, a sweep), the first Ctrl-C sets
    ``stop`` (the work stops at its next step, then the command says how far it got)
    instead of raising ``KeyboardInterrupt`` wherever the main thread is: in a
    destructor Python would print it as a traceback and go on. A second Ctrl-C ends the
    process at once with ``again`` and exit status 130: safe, as after a kill (each
    thread's change is durable or not there; the command run again continues)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            os.write(2, f"{again} (stopped at once)\n".encode())
            os._exit(EXIT_INTERRUPTED)
        stop.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:  # not once the work is done
            signal.signal(signal.SIGINT, previous)
