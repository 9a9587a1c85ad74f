"""``langgraph-jsonl`` commands for what a thread remembers and how its runs went: memory, trace.

Examples::

    langgraph-jsonl memory ./checkpoints t-1
    langgraph-jsonl memory ./checkpoints t-1 --json --budget 2000
    langgraph-jsonl trace ./checkpoints t-1
"""

from __future__ import annotations

import argparse
import sys

from ..inspection.conversation import terminal_safe
from ..inspection.times import shown_time
from ..memory.model import DEFAULT_BUDGET
from ..tracing.timeline import TimelineRow, read_events, timeline
from .common import (
    EXIT_OK,
    UsageError,
    add_operands,
    describe,
    known_thread,
    open_saver,
    print_json,
    print_table,
    served_status,
    shown,
    unreadable_status,
)


def define_memory(p: argparse.ArgumentParser) -> None:
    """``memory``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Print the session memory derived from a thread's log, as a model is given it "
        "after a resume: the current goal (the latest human request), open items (uncertain tool "
        "calls, interrupts waiting for an answer, tool calls without a result, steps not finished), "
        "failed attempts, decisions a person took, work completed, and counts. Rule-based and "
        "deterministic: the same log gives the same text. Reads the store without writing.",
        examples=["langgraph-jsonl memory ./checkpoints support-ticket-1042",
                  "langgraph-jsonl memory ./checkpoints t-1 --json --budget 2000"],
        json_shape="{thread_id, goal, completed, failed, decisions, open_items: [{text, seq, call_id, at}], "
        "turns, tool_calls, checkpoints, folded: {section: items left out}, covers: log seq, "
        "resumed, unreadable: values that could not be decoded, text}",
    )
    add_operands(p, ["thread"])
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help="most characters of the text; older items are folded into counts (the header, "
                   f"the goal's start and the counts are always kept) ({DEFAULT_BUDGET})")
    p.set_defaults(run=_memory)


def _memory(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise UsageError("--budget must be a number of characters, 1 or more")
    with open_saver(args) as saver:
        memory = saver.session_memory(known_thread(saver, args.thread), budget=args.budget)
        unreadable = unreadable_status(args.thread, memory.unreadable)
        exit_status = max(served_status(saver, args.thread), unreadable)
    text = memory.to_text()
    if args.json:
        print_json({**memory.to_json(), "text": text})
    else:
        print(terminal_safe(text))  # the memory quotes messages: their escapes are shown, not run
    if len(text) > args.budget:
        print(
            f"note: the memory is {len(text)} characters, over --budget {args.budget}: its "
            "header, the goal's first 40 characters and the counts of folded items are "
            "always kept, and nothing more could be folded.",
            file=sys.stderr,
        )
    return exit_status


def define_trace(p: argparse.ArgumentParser) -> None:
    """``trace``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Print the timeline a JsonlTracer wrote for a thread (the store's traces/ folder, "
        "kept apart from the log and never read by recovery): each graph run, node, model call and "
        "tool call indented under what ran it, when it started, how long it took, the tokens a "
        "model reported, and errors. A row without a duration never ended: its process died, or "
        "it is still running. Rotated files are read oldest first.",
        examples=["langgraph-jsonl trace ./checkpoints support-ticket-1042",
                  "langgraph-jsonl trace ./checkpoints t-1 --json"],
        json_shape="a list of {kind: graph|node|model|tool, name, depth, started_at, seconds, "
        "status: ok|error|interrupted|unfinished, tokens: {input_tokens, output_tokens, total_tokens} "
        "| null, error, step, interrupt}",
    )
    add_operands(p, ["thread"])
    p.set_defaults(run=_trace)


def _trace(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        rows = timeline(read_events(saver.store.path, args.thread))
        if not rows:
            if not saver.store.has_thread(args.thread):
                known_thread(saver, args.thread)  # says so, and how to list threads
            raise UsageError(
                f"thread {shown(args.thread)} has no trace in {saver.store.path}/traces: pass "
                "JsonlTracer(store) in the run's callbacks to record one."
            )
    if args.json:
        print_json([r.as_json() for r in rows])
        return EXIT_OK
    print_table(
        ["STARTED", "STEP", "WHAT", "SECONDS", "TOKENS", "STATUS"],
        [
            [shown_time(r.started_at), "-" if r.step is None else str(r.step),
             "  " * r.depth + f"{r.kind} {r.name}",
             "-" if r.seconds is None else f"{r.seconds:.3f}",
             _tokens(r.tokens),
             _status(r)]
            for r in rows
        ],
    )
    return EXIT_OK


def _status(row: TimelineRow) -> str:
    if row.error is not None:
        return f"error: {shown(row.error)[:80]}"
    if row.interrupt is not None:
        return f"interrupted: {shown(row.interrupt)[:80]}"
    return row.status


def _tokens(tokens: dict[str, int] | None) -> str:
    if not tokens:
        return "-"
    return f"{tokens.get('input_tokens', 0)}+{tokens.get('output_tokens', 0)}"
