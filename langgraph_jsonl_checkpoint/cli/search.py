"""``langgraph-jsonl search``: find a text in the messages of every thread.

Examples::

    langgraph-jsonl search ./checkpoints "refund"
    langgraph-jsonl search ./checkpoints "ada@example.com" --role ai --since 7d
"""

from __future__ import annotations

import argparse
import shlex
import sys
from itertools import islice

from ..disk.paths import thread_option
from ..errors import JsonlCheckpointError
from ..inspection.conversation import terminal_safe
from ..inspection.search import search_messages
from ..inspection.times import shown_time
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    UsageError,
    add_operands,
    count_argument,
    damage_stated_per_thread,
    describe,
    known_thread,
    open_saver,
    print_json,
    print_table,
    shown_id,
)
from .progress import on_terminal, progress
from .threads import since_argument

BOLD, PLAIN = "\033[1m", "\033[0m"


def _search(args: argparse.Namespace) -> int:
    since = since_argument(args.since)
    with open_saver(args) as saver, damage_stated_per_thread():
        threads = [known_thread(saver, t) for t in args.thread] if args.thread else None
        total = len(threads) if threads is not None else len(saver.store.log_names())
        skipped: list[str] = []
        partial: list[str] = []
        try:
            found = search_messages(
                saver, args.text, thread_ids=threads, role=args.role, since=since,
                track=lambda ids: progress(ids, total=total, what="threads"), skipped=skipped,
                partial=partial,
            )
            hits = list(islice(found, args.limit))  # no search past the last one wanted
        except JsonlCheckpointError:
            raise  # (a DecodeError is a ValueError too: not a usage error)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    store = shlex.quote(saver.store.path)  # the commands suggested run as pasted
    if skipped:
        print(f"{len(skipped)} thread(s) not searched: their log, or a value in it, cannot be read "
              f"({_named(skipped)}; `langgraph-jsonl threads {store}` says why)", file=sys.stderr)
    if partial:
        thread = thread_option(partial[0]) if len(partial) == 1 else "--thread THREAD"
        print(f"{len(partial)} thread(s) searched only in part: their log is damaged, and only its "
              f"readable part was searched ({_named(partial)}; `langgraph-jsonl verify {store}` says "
              f"where, `langgraph-jsonl repair {store} {thread}` keeps what can be read)",
              file=sys.stderr)
    if args.json:
        print_json([h.as_json() for h in hits])
    elif args.limit == 0:  # nothing asked for, nothing searched: not "no message matches"
        print("--limit 0 lists no message")
    elif not hits:  # a sentence, not a header over nothing (as `threads` and `archived` do)
        given = [f"--{name} {value}" for name, value in (("role", args.role), ("since", args.since)) if value]
        filters = f" ({', '.join(given)})" if given else ""
        print(f"no message matches {args.text!r}{filters} in {total} thread(s)")
    else:
        bold = on_terminal()
        # A subgraph's state holds messages of its parent's too: a hit per graph, told apart
        # by the namespace, shown when any hit is in a subgraph.
        subgraphs = any(h.ns for h in hits)
        print_table(
            ["THREAD", *(["NS"] if subgraphs else []), "CHECKPOINT", "TIME", "ROLE", "MATCH"],
            [
                [shown_id(h.thread_id), *([shown_id(h.ns) if h.ns else "-"] if subgraphs else []),
                 h.checkpoint_id, shown_time(h.at), terminal_safe(h.utterance.role),
                 f"{terminal_safe(h.before)}{BOLD}{terminal_safe(h.match)}{PLAIN}{terminal_safe(h.after)}"
                 if bold else terminal_safe(h.snippet)]
                for h in hits
            ],
        )
        print(f"{len(hits)} message(s)", file=sys.stderr)
    return EXIT_PROBLEMS if skipped or partial else EXIT_OK


def _named(threads: list[str]) -> str:
    """The first three threads of a list, for one line of stderr."""
    return f"{', '.join(map(shown_id, threads[:3]))}{', ...' if len(threads) > 3 else ''}"


def define_search(p: argparse.ArgumentParser) -> None:
    """``search``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Search message contents (each text, each tool call's name and arguments) "
        "across all threads, or those given with --thread; case-insensitive. Each message is "
        "listed once per graph whose state holds it (a subgraph's state and its parent's can "
        "hold the same message: NS, shown when a hit is in a subgraph, tells them apart), with "
        "its thread, the checkpoint that stored it, its time, its role and "
        "the words around the match. A thread whose log (or a value in it) cannot be read is "
        "skipped and named on stderr, with exit status 1 (`langgraph-jsonl threads` says why); "
        "a damaged log is searched up to the damage and named on stderr too, with exit status 1.",
        examples=['langgraph-jsonl search ./checkpoints "refund"',
                  'langgraph-jsonl search ./checkpoints "ada@example.com" --role ai --since 7d'],
        json_shape="a list of {thread_id, ns, checkpoint_id, at, role, message_id, snippet, match}",
    )
    add_operands(p, ["text"])
    p.add_argument("--thread", action="append", help="only this thread (repeat for several)")
    p.add_argument("--role", help="only messages of this role: human (user), ai (assistant), tool, system "
                   "(developer), function, chat")
    p.add_argument("--since", help="only messages of checkpoints since then: 30m, 2h, 7d, or a date/time")
    p.add_argument("--limit", type=count_argument, help="stop after this many messages")
    p.set_defaults(run=_search)
