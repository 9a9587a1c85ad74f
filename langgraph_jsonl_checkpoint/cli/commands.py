"""The table of ``langgraph-jsonl`` commands: each one's name, group, module and
one-line purpose, the only place a command is registered.

The parser is built from it (:mod:`.parser`): ``langgraph-jsonl --help`` lists the
commands by group with their purpose, read from here without importing any command's
module; a command's module is imported when that command runs (or its ``--help`` is
shown), and gives the command its description, examples and arguments in its function
``define_<name>(parser)``. Adding a command is one row here and that function there.
"""

from __future__ import annotations

from dataclasses import dataclass

SEE, MAINTAIN, MOVE = "see", "maintain", "move"

#: The groups, in the order ``--help`` lists them, each with what its commands do.
GROUPS = {
    SEE: "read a store: threads, conversations, runs, transcripts (nothing in it is changed)",
    MAINTAIN: "look after a store: check, repair, compact, expire, archive and restore threads",
    MOVE: "threads between checkpointers: stores, SQLite, PostgreSQL (`export` to a database URL too)",
}


@dataclass(frozen=True)
class Command:
    """One command of ``langgraph-jsonl``.

    Attributes:
        name: What is typed (``threads``).
        group: One of :data:`GROUPS`.
        module: The module of this package's ``cli`` that defines and runs it.
        summary: Its one-line purpose, as ``--help`` lists it.
    """

    name: str
    group: str
    module: str
    summary: str

    @property
    def changes_store(self) -> bool:
        """Whether it may change the store it is given (with ``--dry-run`` none does)."""
        return self.group != SEE and self.name not in ("verify", "archived")

    @property
    def define(self) -> str:
        """The function of :attr:`module` that gives the command its help and arguments."""
        return f"define_{self.name}"


#: Every command, in the order ``--help`` lists them within their groups.
COMMANDS = (
    Command("threads", SEE, "threads", "list threads: checkpoints, created, updated, size, status"),
    Command("history", SEE, "conversation",
            "a thread's checkpoints, newest first: step, source, writers, time, next"),
    Command("show", SEE, "conversation",
            "the state at a checkpoint: the conversation, other channels, waiting questions"),
    Command("diff", SEE, "conversation", "what changed between two checkpoints, per channel"),
    Command("tools", SEE, "conversation",
            "the tool-call lifecycle table from the replay journal (or the messages)"),
    Command("tail", SEE, "conversation",
            "the last messages and tool events; -f follows a run in another process"),
    Command("memory", SEE, "memory",
            "the thread's session memory: goal, work done, failures, decisions, open items"),
    Command("trace", SEE, "memory",
            "the debug trace's timeline: graph runs, nodes, model and tool calls, durations, tokens"),
    Command("search", SEE, "search", "find text in the messages of every thread"),
    Command("export", SEE, "export",
            "a transcript to read or share: Markdown, self-contained HTML, JSON Lines"),
    Command("verify", MAINTAIN, "maintenance",
            "check checksums, sequence numbers, deltas and snapshot hashes (read-only)"),
    Command("repair", MAINTAIN, "maintenance",
            "archive a damaged log, then keep every record that can still be read"),
    Command("compact", MAINTAIN, "maintenance", "rewrite logs without superseded records (same answers)"),
    Command("sweep", MAINTAIN, "retention", "delete, prune or archive threads idle longer than a TTL"),
    Command("archived", MAINTAIN, "retention", "list archived threads"),
    Command("restore", MAINTAIN, "retention", "bring an archived thread back"),
    Command("import", MOVE, "migrate", "bring threads into a store from SqliteSaver or PostgresSaver"),
    Command("copy", MOVE, "migrate",
            "copy threads between any two checkpointers (stores, SQLite, PostgreSQL)"),
)
