"""Following a thread as it is written: each new message and tool-call event, in log
order, as another process appends them.

A follower polls the log through the same read-only view every reader uses: it never
takes the writer lock (a writer in another process is never slowed or blocked), and
it only ever sees committed batches. Each round reads the records appended since the
last (new checkpoints, tool events); a checkpoint's new messages come from its own
record (the tail it stored). The trade-off of polling (every ``poll`` seconds, 0.25 by
default) over ``inotify``: it works on every file system, network ones included, and
costs one ``stat`` per round while nothing changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..replay.lifecycle import ANSWER, ASK, ASKS_CALL_ID, FAILED, FINISHED, REQUESTED
from ..values.cells import list_items
from .checkpoints import ThreadFacts, reading
from .conversation import Utterance, utterance
from .values import is_message

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver

MESSAGE, TOOL = "message", "tool"


@dataclass(frozen=True)
class ToolEvent:
    """One journaled tool-call event.

    Attributes:
        event: ``requested``, ``started``, ``finished``, ``failed``, ``released``,
            ``ask`` (the adapter asked a person about uncertain calls) or ``answer``.
        call_id: The call (for ``ask``/``answer``: the calls asked or answered about,
            comma-separated).
        name: The tool, once known.
        detail: The error of a failed call, a person's answer, the calls asked about.
    """

    event: str
    call_id: str
    name: str
    detail: str = ""


@dataclass(frozen=True)
class FollowEvent:
    """A message or tool event, as it was appended.

    Attributes:
        kind: ``message`` or ``tool``.
        seq: The record's sequence number in the log.
        checkpoint_id: The checkpoint (a message's, or the one a tool node ran from).
        at: When (a checkpoint's time, or the tool event's).
        message: The message, for ``message`` events.
        utterance: It, for reading.
        tool: The tool event, for ``tool`` events.
    """

    kind: str
    seq: int
    checkpoint_id: str | None
    at: str | None
    message: Any = None
    utterance: Utterance | None = None
    tool: ToolEvent | None = None


class ThreadFollower:
    """Reads what was appended to a thread since the last call of :meth:`read_new`.

    Args:
        saver: A saver on the store (``read_only=True``: nothing is written).
        thread_id: The thread.
        ns: The namespace whose checkpoints carry the messages (``""``: the root graph).
    """

    def __init__(self, saver: JsonlSaver, thread_id: str, *, ns: str = "") -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.ns = ns
        self._seen_checkpoints: set[str] = set()
        self._seen_messages: set[str] = set()
        self._tool_seq = 0
        self._names: dict[tuple[str, str, str], str] = {}
        self._generation: Any = None
        #: Stored messages the saver's serializer could not decode (left out).
        self.unreadable = 0

    def read_new(self) -> list[FollowEvent]:
        """The events appended since the last call (all of them on the first), in log
        order."""
        return reading(self.saver, self.thread_id, self._read)

    def _read(self, facts: ThreadFacts) -> list[FollowEvent]:
        if facts.log.generation_token() != self._generation:
            # A rewrite (compact, repair) renumbers records: judge tool events afresh,
            # never print a message or checkpoint twice.
            self._generation = facts.log.generation_token()
            self._tool_seq = 0
        events = self._new_messages(facts) + self._new_tool_events(facts)
        events.sort(key=lambda e: e.seq)
        return events

    def _new_messages(self, facts: ThreadFacts) -> list[FollowEvent]:
        by_id = facts.index.checkpoints.get(self.ns, {})
        fresh = sorted((e.ref.seq, cid) for cid, e in by_id.items() if cid not in self._seen_checkpoints)
        out: list[FollowEvent] = []
        for seq, cid in fresh:
            self._seen_checkpoints.add(cid)
            rec = facts.reader.record(by_id[cid].ref)
            at = None
            for message in self._stored_messages(facts, rec):
                mid = getattr(message, "id", None)
                if mid is not None and mid in self._seen_messages:
                    continue
                if mid is not None:
                    self._seen_messages.add(mid)
                at = at or facts.facts(self.ns, cid).created_at
                out.append(FollowEvent(MESSAGE, seq, cid, at, message, utterance(message)))
        return out

    def _stored_messages(self, facts: ThreadFacts, rec: Mapping[str, Any]) -> list[Any]:
        """The messages a checkpoint record stored: the tail a conversation grew by, or
        a conversation stored in full."""
        out: list[Any] = []
        for stored in (rec.get("values") or {}).values():
            cell = stored.get("tail", stored.get("val")) if isinstance(stored, Mapping) else None
            if not isinstance(cell, Mapping):
                continue
            items = list_items(cell)
            if items is not None and items[0] != "msgs":
                continue  # a list of plain JSON: not a conversation
            try:
                value = facts.reader.decode(cell)
            except ValueError:
                self.unreadable += 1  # (a DecodeError: written through another serializer)
                continue
            if isinstance(value, list) and all(is_message(m) for m in value):
                out.extend(value)
        return out

    def _new_tool_events(self, facts: ThreadFacts) -> list[FollowEvent]:
        refs = sorted(
            (r for rs in facts.index.tool_events.values() for r in rs if r.seq > self._tool_seq),
            key=lambda r: r.seq,
        )
        out = []
        for ref in refs:
            rec = facts.reader.record(ref)
            self._tool_seq = max(self._tool_seq, ref.seq)
            event = self._tool_event(facts, rec)
            if event is not None:
                out.append(FollowEvent(TOOL, ref.seq, rec.get("cp"), rec.get("at"), tool=event))
        return out

    def _tool_event(self, facts: ThreadFacts, rec: Mapping[str, Any]) -> ToolEvent | None:
        ev, call = str(rec.get("ev")), str(rec.get("call"))
        key = (str(rec.get("ns")), str(rec.get("cp")), call)
        if ev == REQUESTED and isinstance(rec.get("name"), str):
            self._names[key] = rec["name"]
        if call == ASKS_CALL_ID:
            value = facts.reader.decode(rec["question"] if ev == ASK else rec["answer"])
            if ev == ASK and isinstance(value, Mapping):
                calls = [c for c in value.get("calls", []) if isinstance(c, Mapping)]
                ids = ", ".join(str(c.get("id")) for c in calls)
                names = ", ".join(f"{c.get('name')} [{c.get('id')}]" for c in calls)
                return ToolEvent(ASK, ids, "", f"asked a person about uncertain call(s): {names}")
            if ev == ANSWER and isinstance(value, Mapping):
                # The calls the question was about: the answer may name others (with
                # create_agent every task's answer holds the whole mapping).
                about = [str(entry[0]) for entry in rec.get("about") or []] or [str(k) for k in value]
                given = ", ".join(
                    f"{k}={'result' if isinstance(value.get(k), Mapping) else value.get(k)}" for k in about
                )
                return ToolEvent(ANSWER, ", ".join(about), "", f"a person answered: {given}")
            return None
        name = self._names.get(key, "")
        detail = ""
        if ev == FAILED and isinstance(rec.get("error"), Mapping):
            detail = f"{rec['error'].get('type', 'Error')}: {rec['error'].get('message', '')}"
        elif ev == FINISHED and rec.get("resolution"):
            detail = f"settled by a person: {rec['resolution']}"
        return ToolEvent(ev, call, name, detail)


def follow(
    saver: JsonlSaver,
    thread_id: str,
    *,
    ns: str = "",
    poll: float = 0.25,
    stop: Callable[[], bool] | None = None,
) -> Iterator[FollowEvent]:
    """Every message and tool event of a thread, then each new one as it is appended,
    until ``stop()`` says so (checked every ``poll`` seconds; never, by default: a
    person ends it with Ctrl-C).

    Args:
        saver: A saver on the store (``read_only=True``: nothing is written, no lock taken).
        thread_id: The thread.
        ns: The namespace whose checkpoints carry the messages.
        poll: Seconds between looks at the log.
        stop: Ends the stream when it returns true.
    """
    follower = ThreadFollower(saver, thread_id, ns=ns)
    while True:
        yield from follower.read_new()
        if stop is not None and stop():
            return
        time.sleep(poll)
