"""What a session memory holds, how it is bounded, and how a model is told it (pure).

A :class:`SessionMemory` is the short account of a thread a model needs after a resume:
the current goal, work completed, failed attempts, decisions a person took, open items
and counts. It is derived from the thread's log by rules (:mod:`.builder`), never by a
model call, so the same log always gives the same memory. It is bounded by a character
budget: :func:`fit_budget` keeps the newest items of each section and folds the older
ones into counts, so a 1,000-turn thread costs the model no more than a 10-turn one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

#: Default character budget of the text a model is given.
DEFAULT_BUDGET = 4000
#: Longest goal text kept (characters); longer requests are cut with an ellipsis.
GOAL_CHARS = 500
#: Longest text of one item (characters).
ITEM_CHARS = 240
#: How an open item about a step scheduled and not finished begins (the node follows).
UNFINISHED_STEP = "step not finished: "


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


@dataclass(frozen=True)
class MemoryItem:
    """One line of a section: what happened, and where it is in the log.

    Attributes:
        text: The line (tool, key arguments, outcome), at most :data:`ITEM_CHARS`.
        seq: The log record it comes from (its ``seq``): items of a section are in log order.
        call_id: The tool call it is about, if any.
        at: When it happened (ISO 8601), when the log says.
    """

    text: str
    seq: int
    call_id: str | None = None
    at: str | None = None


@dataclass(frozen=True)
class SessionMemory:
    """A thread's bounded session memory.

    Attributes:
        thread_id: The thread.
        goal: The latest human request ("" before the first one).
        completed: Finished tool calls, oldest first (tool, key arguments, outcome).
        failed: Failed tool calls and runs stopped by an error, with the error.
        decisions: Answers a person gave to uncertain tool calls (what, when).
        open_items: What is still waiting: uncertain calls, interrupts waiting for an
            answer, tool calls without a result, steps scheduled but not finished.
        turns: Human messages seen.
        tool_calls: Tool calls the model asked for.
        checkpoints: Checkpoints in the log.
        folded: Per section, how many older items the budget left out.
        covers: The log ``seq`` this memory was built up to.
        unreadable: Values of the log the serializer could not decode (another one
            wrote them: an ``EncryptedSerializer`` key), which the memory leaves out.
        resumed: The current turn (since the latest human message) was disturbed and
            resumed: a person was asked about uncertain tool calls or answered, a tool
            call started again after its run died, or an error stopped the run. What
            :mod:`.inject` injects the memory on by default.
    """

    thread_id: str
    goal: str = ""
    completed: tuple[MemoryItem, ...] = ()
    failed: tuple[MemoryItem, ...] = ()
    decisions: tuple[MemoryItem, ...] = ()
    open_items: tuple[MemoryItem, ...] = ()
    turns: int = 0
    tool_calls: int = 0
    checkpoints: int = 0
    folded: dict[str, int] = field(default_factory=dict)
    covers: int = 0
    resumed: bool = False
    unreadable: int = 0

    @property
    def is_empty(self) -> bool:
        """Whether there is nothing to tell (no goal, no item)."""
        return not (self.goal or self.completed or self.failed or self.decisions or self.open_items)

    def without_step(self, node: str) -> SessionMemory:
        """The memory without the open item saying ``node``'s step is not finished: told
        to the model that node is calling, it is the model's own turn, not work left."""
        own = f"{UNFINISHED_STEP}{node} ("
        kept = tuple(i for i in self.open_items if i.call_id is not None or not i.text.startswith(own))
        return self if len(kept) == len(self.open_items) else replace(self, open_items=kept)

    def to_json(self) -> dict[str, Any]:
        """The memory as JSON-able data (what ``langgraph-jsonl memory --json`` prints)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionMemory:
        """The memory from :meth:`to_json`'s output."""
        def items(name: str) -> tuple[MemoryItem, ...]:
            return tuple(MemoryItem(**item) for item in data.get(name, ()))

        return cls(
            thread_id=data["thread_id"], goal=data.get("goal", ""), completed=items("completed"),
            failed=items("failed"), decisions=items("decisions"), open_items=items("open_items"),
            turns=data.get("turns", 0), tool_calls=data.get("tool_calls", 0),
            checkpoints=data.get("checkpoints", 0), folded=dict(data.get("folded", {})),
            covers=data.get("covers", 0), resumed=data.get("resumed", False),
            unreadable=data.get("unreadable", 0),
        )

    def to_text(self) -> str:
        """The memory as the text a model is given (see :func:`render`)."""
        return render(self)

    def to_system_message(self, summariser: Summariser | None = None) -> Any:
        """A LangChain ``SystemMessage`` holding the memory, to place after the system
        prompt and before the history (see :mod:`.inject`).

        Args:
            summariser: Makes the text from the memory instead of :func:`render` (an
                LLM call, say); the default is rule-based and deterministic.
        """
        from langchain_core.messages import SystemMessage

        text = (summariser or render)(self)
        return SystemMessage(content=text, id=f"session-memory-{self.covers}", name="session_memory")


#: Makes the text of a memory (the default is :func:`render`).
Summariser = Callable[[SessionMemory], str]

_SECTIONS = (
    ("open_items", "Open items (resolve these first)"),
    ("failed", "Failed attempts (do not repeat blindly)"),
    ("decisions", "Decisions taken"),
    ("completed", "Work completed (do not redo)"),
)

_SHORT = {"open_items": "open items", "failed": "failed attempts", "decisions": "decisions",
          "completed": "completed calls"}


def render(memory: SessionMemory) -> str:
    """The rule-based text of a memory: a heading, the goal, each non-empty section
    (open items first), and the counts."""
    lines = ["Session memory (derived from this thread's log; the history follows)."]
    if memory.goal:
        lines.append(f"Current goal: {memory.goal}")
    left_out = []
    for name, title in _SECTIONS:
        items: tuple[MemoryItem, ...] = getattr(memory, name)
        more = memory.folded.get(name, 0)
        if not items:
            if more:
                left_out.append(f"{more} {_SHORT[name]}")
            continue
        lines.append(f"{title}:")
        if more:
            lines.append(f"- ({more} earlier not shown)")
        lines += [f"- {item.text}" for item in items]
    if left_out:
        lines.append(f"Not shown for space: {', '.join(left_out)}.")
    lines.append(
        f"Counts: turns {memory.turns}, tool calls {memory.tool_calls}, checkpoints {memory.checkpoints}."
    )
    return "\n".join(lines)


def fit_budget(memory: SessionMemory, budget: int = DEFAULT_BUDGET) -> SessionMemory:
    """The memory with its rendered text within ``budget`` characters.

    Older items go first, section by section in this order: work completed, decisions,
    failed attempts, open items (what is still waiting is the last thing dropped); each
    item dropped is counted in ``folded``. If the goal is still over budget it is cut
    (to 40 characters at the least: a budget below about 200 characters cannot hold).
    Deterministic: the same memory and budget give the same result.
    """
    if len(render(memory)) <= budget:
        return memory
    sections = {name: list(getattr(memory, name)) for name, _ in _SECTIONS}
    folded = dict(memory.folded)
    for name in ("completed", "decisions", "failed", "open_items"):
        items = sections[name]
        while items:
            # Cheap upper bound first: drop as many as the excess surely needs.
            trial = _with_sections(memory, sections, folded)
            excess = len(render(trial)) - budget
            if excess <= 0:
                return trial
            drop = 1
            width = 0
            for item in items:
                width += len(item.text) + 3
                if width >= excess:
                    break
                drop += 1
            drop = min(drop, len(items))
            del items[:drop]
            folded[name] = folded.get(name, 0) + drop
    trial = _with_sections(memory, sections, folded)
    excess = len(render(trial)) - budget
    if excess > 0 and trial.goal:
        trial = replace(trial, goal=clip(trial.goal, max(40, len(trial.goal) - excess)))
    return trial


def _with_sections(
    memory: SessionMemory, sections: dict[str, list[MemoryItem]], folded: dict[str, int]
) -> SessionMemory:
    return replace(
        memory, folded=dict(folded), completed=tuple(sections["completed"]), failed=tuple(sections["failed"]),
        decisions=tuple(sections["decisions"]), open_items=tuple(sections["open_items"]),
    )
