"""``langgraph-jsonl export``: a transcript to read or share (Markdown, HTML, JSON Lines),
or, given a database URL instead of a thread, the store's threads copied into that
database (``PostgresSaver``; see :mod:`.migrate`).

Examples::

    langgraph-jsonl export ./checkpoints t-1 --format md
    langgraph-jsonl export ./checkpoints t-1 --format html -o t-1.html
    langgraph-jsonl export ./checkpoints --all ./transcripts --format html
    langgraph-jsonl export ./checkpoints postgresql://postgres@127.0.0.1:5432/app --setup
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shlex
import sys

from ..disk.paths import thread_slug
from ..inspection.conversation import terminal_safe
from ..inspection.export import FORMATS, ExportedFile, export_store, export_thread, write_export
from ..migrate.urls import is_database_url
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    UsageError,
    add_operands,
    damage_stated_per_thread,
    describe,
    known_thread,
    open_saver,
    print_json,
    served_status,
    shown,
    store_path,
)
from .migrate import COPY_JSON, ENDPOINTS_HELP, INTERRUPT_HELP, add_copy_options, run_copy
from .progress import progress

_COPY_FLAGS = ("threads", "dry_run", "setup", "no_verify", "no_journal")


#: The format an ``-o`` file's extension asks for when ``--format`` is not given.
_FORMAT_OF_EXTENSION = {".html": "html", ".htm": "html", ".jsonl": "jsonl", ".md": "md"}


def _export(args: argparse.Namespace) -> int:
    for name in ("output", "all"):  # `--output=~/t-1.md`: bash leaves a `~` after `=` alone
        path = getattr(args, name)
        if path and path != "-":
            setattr(args, name, os.path.expanduser(path))  # as the store's path is taken
    if args.format is None:  # `-o t-1.html`: HTML, not Markdown in a .html file
        extension = os.path.splitext(args.output or "")[1].lower()
        args.format = _FORMAT_OF_EXTENSION.get(extension, "md")
    database = _database_target(args)
    if database is not None:
        if args.all or args.output or args.checkpoint:
            raise UsageError("--all, -o and --checkpoint are for transcripts, not a database export")
        return run_copy(args, store_path(args), database)
    swallowed = [t for t in args.threads or () if "://" in t]
    if swallowed:
        raise UsageError(f"--threads took {swallowed[-1]}: it takes every word after it. Put STORE "
                         "DATABASE before --threads (langgraph-jsonl export ./checkpoints "
                         "postgresql://user@host:port/database --threads 'user-*')")
    if args.threads and len(args.threads) == 1 and not (args.thread or args.all) and not any(
        getattr(args, f) for f in _COPY_FLAGS if f != "threads"
    ):  # `export STORE --thread t-1`, as show takes it: export's --thread is --threads
        raise UsageError(_thread_as_operand(args, args.threads[0]))
    if any(getattr(args, f) for f in _COPY_FLAGS):
        raise UsageError("--threads, --dry-run, --setup, --no-verify and --no-journal are for an "
                         "export to a database (postgresql://...), not for transcripts")
    if args.all and args.thread:
        raise UsageError("give a THREAD or --all DIR, not both")
    if not args.all and not args.thread:
        raise UsageError("name the THREAD to export, or --all DIR for every thread")
    if args.all == "-":  # stdout elsewhere (-o -); many files cannot go there
        raise UsageError("--all - is not a directory: --all writes one file per thread and an "
                         "index page, so it takes a directory path (e.g. --all ./transcripts; "
                         "--all ./- for one named -); for one thread to stdout, give THREAD "
                         "with -o - (or no -o). Nothing was written.")
    if args.all and os.path.exists(args.all) and not os.path.isdir(args.all):
        raise UsageError(f"cannot export into {args.all}: it is not a directory. --all takes a "
                         "directory (created if missing) for one file per thread and an index page.")
    with open_saver(args) as saver:
        if args.all:
            total = len(saver.store.log_names())
            try:
                with damage_stated_per_thread():
                    files = export_store(saver, args.all, args.format,
                                         track=lambda s: progress(s, total=total, what="threads"))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            except OSError as exc:
                raise UsageError(
                    f"cannot export into {args.all} ({exc.strerror}: {exc.filename}): --all takes "
                    "a directory that exists or can be created, and can be written to."
                ) from None
            failed = [f for f in files if f.problem]
            removed = [f for f in files if f.removed]
            if args.json:
                print_json({"directory": args.all,
                            "files": [_file_json(f) for f in files if not f.removed],
                            "removed": [{"thread_id": f.thread_id, "path": f.path} for f in removed]})
            else:
                for f in failed:
                    who = shown(f.thread_id) if f.thread_id is not None else "(unreadable file)"
                    print(f"{who}: {'' if f.path else 'not exported: '}{f.problem}", file=sys.stderr)
                written = [f for f in files if f.path and not f.removed]
                print(f"wrote {len(written)} file(s) to {args.all} (index: {written[-1].path})")
                if removed:
                    pages = ", ".join(f"{shown(f.thread_id or '')} ({f.path})" for f in removed)
                    print(f"removed {len(removed)} page(s) of threads no longer in the store (deleted "
                          f"or archived): {pages}")
            return EXIT_PROBLEMS if failed else EXIT_OK
        if args.output and args.output != "-":
            _outside_the_store(args.output, saver.store.path, _example_output(args.thread, args.format))
        thread = known_thread(saver, args.thread)
        text = export_thread(saver, thread, args.format, checkpoint_id=args.checkpoint)
        exit_status = served_status(saver, thread)
    if args.output and args.output != "-":
        existed = os.path.lexists(args.output)
        try:
            write_export(args.output, text)
        except OSError as exc:
            example = _example_output(args.thread, args.format)
            raise UsageError(_cannot_write(args.output, exc, existed, example)) from None
        if args.json:
            print_json({"thread_id": args.thread, "format": args.format, "path": args.output})
    else:
        # On a terminal it is read, not kept: what messages say must not act on the screen.
        sys.stdout.write(terminal_safe(text) if sys.stdout.isatty() else text)
    return exit_status


def _outside_the_store(output: str, store: str, example: str) -> None:
    """Refuse ``-o output`` in the store (a thread's own log, through a link too), as
    ``--all DIR`` in it is refused."""
    root = os.path.realpath(store)
    if os.path.commonpath([os.path.realpath(output), root]) == root:
        raise UsageError(f"cannot write the transcript to {output}: it is inside the store {store}; "
                         f"nothing was written. -o takes a file outside the store, e.g. -o {example} "
                         "(-o - is stdout).")


#: A thread id that is a file name as it is (no hash needed in an example).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,59}")


def _example_output(thread: str, fmt: str) -> str:
    """``./<thread>.<fmt>``: the file a refusal of ``-o`` gives as its example, the thread's
    id made safe as a file name where it is not one (its page's name under ``--all``,
    without the hash)."""
    name = thread if _PLAIN_NAME.fullmatch(thread) else thread_slug(thread)
    return f"./{name}.{fmt}"


def _cannot_write(output: str, exc: OSError, existed: bool, example: str) -> str:
    """Why ``-o output`` was not written, that it is as it was, and what to do."""
    left = f"{output} is as it was" if existed else "nothing was written"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        todo = "Free space on its file system (or raise the size limit), or write it elsewhere"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        todo = ("-o writes a temp file beside it and renames it into place: give a file in a "
                "directory you can write to")
    else:
        todo = f"-o takes a file in a directory that exists, e.g. -o {example} (-o - is stdout)"
    return f"cannot write the transcript to {output} ({exc.strerror or exc}); {left}. {todo}."


def _file_json(f: ExportedFile) -> dict[str, str | None]:
    return {"thread_id": f.thread_id, "path": f.path, "problem": f.problem}


def _database_target(args: argparse.Namespace) -> str | None:
    """The database URL the command line gives instead of a thread (the store, if
    named, stays the source); ``None`` for a transcript export."""
    if args.thread is not None and is_database_url(args.thread):
        return str(args.thread)
    if args.thread is None and args.store is not None and is_database_url(args.store):
        target = str(args.store)
        args.store = None  # the store is $LANGGRAPH_JSONL_STORE
        return target
    return None


def _thread_as_operand(args: argparse.Namespace, thread: str) -> str:
    """What to say of ``--thread T`` given for a transcript: the command that exports T."""
    options = [*(["-o", args.output] if args.output else []), "--format", args.format]
    command = shlex.join(["langgraph-jsonl", "export", store_path(args), *options])
    operand = f"-- {shlex.quote(thread)}" if thread.startswith("-") else shlex.quote(thread)
    return ("--threads (which --thread abbreviates in export) names the threads of an export to a "
            f"database (postgresql://...); a transcript's thread is given as THREAD: `{command} {operand}`")


def define_export(p: argparse.ArgumentParser) -> None:
    """``export``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Write a thread's conversation at its latest checkpoint (or --checkpoint) "
        "as Markdown, one self-contained HTML page (no script, nothing fetched; tool calls "
        "fold open and closed; each checkpoint's id is an anchor, #cp-<id>), or JSON Lines "
        "(every field). --all DIR writes one file per thread and an index page, and removes "
        "the pages of that format it wrote there before for threads no longer in the store "
        "(deleted or archived; no other file). A damaged "
        "thread is exported up to the damage, with exit status 1. Writes nothing to the "
        "store.\n\nGiven a database URL instead of a THREAD, copies the store's "
        "threads (all, or --threads) into that database with the replay journal, as `copy` "
        "does, and verifies them: the way to PostgresSaver when one machine is not enough. "
        + INTERRUPT_HELP + ENDPOINTS_HELP,
        examples=["langgraph-jsonl export ./checkpoints t-1 --format md",
                  "langgraph-jsonl export ./checkpoints t-1 --format html -o t-1.html",
                  "langgraph-jsonl export ./checkpoints --all ./transcripts --format html",
                  "langgraph-jsonl export ./checkpoints postgresql://postgres@127.0.0.1:5432/app --setup"],
        json_shape="with --all: {directory, files: [{thread_id, path, problem: why not exported, "
        "or with a path why only in part (a damaged log) | null}], removed: [{thread_id, path}]: "
        "pages of threads no longer in the store}; with -o: "
        "{thread_id, format, path}; to a database: " + COPY_JSON + "; otherwise the transcript "
        "itself is the output (--format jsonl for JSON Lines)",
    )
    add_operands(p, ["thread"], optional=1, thread_option=False)
    next(a for a in p._actions if a.dest == "thread").help = (
        "the thread id (`langgraph-jsonl threads STORE` lists them), or a database URL to copy "
        "the store's threads into")
    p.add_argument("--format", choices=FORMATS,
                   help="md, html or jsonl (default: from -o's extension, .html or .jsonl; else md)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to this file instead of stdout (whole or not at all: "
                   "written beside it and renamed into place; - is stdout)")
    p.add_argument("--checkpoint", help="the checkpoint to export (default: the latest)")
    p.add_argument("--all", metavar="DIR", help="export every thread into DIR, with an index page")
    add_copy_options(p)
    p.set_defaults(run=_export)
