"""``langgraph-jsonl`` commands for what a thread remembers and how its runs went: memory, trace.

Examples::

    langgraph-jsonl memory ./checkpoints t-1
    langgraph-jsonl memory ./checkpoints t-1 --json --budget 2000
"""

from __future__ import annotations

import argparse

from ..memory.model import DEFAULT_BUDGET
from .common import EXIT_OK, UsageError, add_command, add_operands, known_thread, open_saver, print_json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``memory`` (and ``trace``)."""
    p = add_command(
        sub, "memory",
        summary="the thread's session memory: goal, work done, failures, decisions, open items",
        description="Print the session memory derived from a thread's log, as a model is given it "
        "after a resume: the current goal (the latest human request), open items (uncertain tool "
        "calls, interrupts waiting for an answer, tool calls without a result, steps not finished), "
        "failed attempts, decisions a person took, work completed, and counts. Rule-based and "
        "deterministic: the same log gives the same text. Reads the store without writing.",
        examples=["langgraph-jsonl memory ./checkpoints support-ticket-1042",
                  "langgraph-jsonl memory ./checkpoints t-1 --json --budget 2000"],
        json_shape="{thread_id, goal, completed, failed, decisions, open_items: [{text, seq, call_id, at}], "
        "turns, tool_calls, checkpoints, folded: {section: items left out}, covers: log seq, text}",
    )
    add_operands(p, ["thread"])
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"most characters of the text; older items are folded into counts ({DEFAULT_BUDGET})")
    p.set_defaults(run=_memory)


def _memory(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise UsageError("--budget must be a number of characters, 1 or more")
    with open_saver(args) as saver:
        memory = saver.session_memory(known_thread(saver, args.thread), budget=args.budget)
    if args.json:
        print_json({**memory.to_json(), "text": memory.to_text()})
    else:
        print(memory.to_text())
    return EXIT_OK
