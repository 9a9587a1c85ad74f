"""The session memory kept up to date one log record at a time (pure: records in, memory out).

:class:`MemoryBuilder` reads the records of a thread's log in order — checkpoint
records (the root graph's new messages and which steps are scheduled), writes records
(interrupts, resumes, errors, finished steps) and the replay adapter's tool records
(calls started, failed, decided by a person) — and keeps only what the memory needs:
a few counters, the last items of each section, and the calls and interrupts still
open; the state is plain JSON (:meth:`MemoryBuilder.state`), kept beside the log
(:mod:`.keeper`). Rebuilding is feeding every record to a fresh builder: the same
records give the same memory.

Only the root graph (namespace ``""``) is read for messages; subgraphs count as
checkpoints. Counts and goal are those of the head checkpoint's conversation as
``get_state`` serves it: a record extending the head's list costs work in proportion to
its tail; one that does not (a fork, an edit, a log compaction rewrote) is read whole,
once (``resolve``). Values the codec cannot read are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .answers import KEY_SEP, call_key, decisions, key_parts
from .messages import as_dict as _as_dict
from .messages import call_text as _call_text
from .messages import conversation
from .messages import interrupt_text as _interrupt_text
from .messages import text as _text
from .messages import tool_message as _tool_message
from .model import GOAL_CHARS, ITEM_CHARS, UNFINISHED_STEP, MemoryItem, SessionMemory, clip
from .sent import TASKS, SentTasks

#: Items kept per section in the builder's state (the budget trims the text further).
KEEP_ITEMS = 64
#: Open calls and interrupts remembered at most (the oldest are forgotten first).
KEEP_OPEN = 256
#: The messages channel read for the goal and tool results.
MESSAGES = "messages"

_SPECIAL = ("__interrupt__", "__resume__", "__error__", "__scheduled__")


def _newer(version: Any, seen: Any) -> bool:
    if seen is None:
        return True
    if isinstance(version, int) and isinstance(seen, int):
        return version > seen
    return str(version) > str(seen)


class MemoryBuilder:
    """Folds a thread's log records, in order, into its session memory.

    Args:
        thread_id: The thread.
        decode: Turns a value cell of the log into a value (the saver's codec);
            cells it cannot decode are skipped.
        state: A state from :meth:`state` to continue from (a fresh builder otherwise).
        resolve: The root graph's messages value of a channel version, read whole from
            the log (:func:`~.keeper.messages_resolver`); asked only when a record does
            not extend the head's list (a fork, an edit, a rewritten log). Without it
            such a record's tail is counted as new.
    """

    def __init__(
        self,
        thread_id: str,
        decode: Callable[[dict[str, Any]], Any],
        state: dict[str, Any] | None = None,
        *,
        resolve: Callable[[Any], Any] | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.decode = decode
        self.resolve = resolve
        s = state or {}
        self.seq: int = s.get("seq", 0)
        self.goal: str = s.get("goal", "")
        self.counts: dict[str, int] = dict(s.get("counts", {"turns": 0, "tool_calls": 0, "checkpoints": 0}))
        self.sections: dict[str, list[list[Any]]] = {
            k: [list(i) for i in s.get("sections", {}).get(k, [])]
            for k in ("completed", "failed", "decisions")
        }
        self.dropped: dict[str, int] = dict(s.get("dropped", {}))
        #: tool call id -> [name, args, seq]: asked for by the model, no ToolMessage yet
        self.requested: dict[str, list[Any]] = dict(s.get("requested", {}))
        #: call key (:func:`~.answers.call_key`) -> [name, args, state, at, seq]: journaled, not settled
        self.journal: dict[str, list[Any]] = dict(s.get("journal", {}))
        #: tool call id -> key of its newest journaled execution: the one a ToolMessage
        #: with that id answers (a lost run's execution never reaches the messages)
        self.latest: dict[str, str] = dict(s.get("latest", {}))
        #: keys of executions whose outcome is already told (decided, failed, or finished
        #: before their checkpoint): their ToolMessage, when it comes, is not told again
        self.told: list[str] = list(s.get("told", []))
        #: "<checkpoint>|<task>" -> [node, text, seq]
        self.interrupts: dict[str, list[Any]] = dict(s.get("interrupts", {}))
        self.head: str | None = s.get("head")
        #: nodes scheduled at the head checkpoint and not finished: node -> seq
        self.pending: dict[str, int] = dict(s.get("pending", {}))
        #: the names of the tasks ``Send`` queued (``create_agent``'s tool calls)
        self.sent = SentTasks(s.get("sent"))
        #: trigger channel -> [newest stored version, holds a value] (root graph)
        self.triggers: dict[str, list[Any]] = dict(s.get("triggers", {}))
        self.last_message: str | None = s.get("last_message")
        self.message_count: int = s.get("message_count", 0)
        #: the head's messages version (last_message, message_count: its last id, its length)
        self.msg_ver: Any = s.get("msg_ver")
        #: seq of the latest human message, and of the latest sign that its turn was
        #: disturbed (a question about uncertain calls, an answer, a call started again,
        #: an error that stopped the run)
        self.turn_seq: int = s.get("turn_seq", 0)
        self.disturbed_seq: int = s.get("disturbed_seq", -1)
        #: value cells ``decode`` could not decode (left out)
        self.unreadable: int = s.get("unreadable", 0)

    # -- state -----------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The builder's state as plain JSON (to continue from later)."""
        return {
            "seq": self.seq, "goal": self.goal, "counts": self.counts, "sections": self.sections,
            "dropped": self.dropped, "requested": self.requested, "journal": self.journal,
            "latest": self.latest, "told": self.told, "interrupts": self.interrupts, "head": self.head,
            "pending": self.pending, "sent": self.sent.state(), "triggers": self.triggers,
            "last_message": self.last_message, "message_count": self.message_count,
            "msg_ver": self.msg_ver, "turn_seq": self.turn_seq,
            "disturbed_seq": self.disturbed_seq, "unreadable": self.unreadable,
        }

    def memory(self) -> SessionMemory:
        """The memory as of the last record fed (not trimmed to a budget: see
        :func:`~.model.fit_budget`)."""

        def items(name: str) -> tuple[MemoryItem, ...]:
            return tuple(MemoryItem(text, seq, call, at) for text, seq, call, at in self.sections[name])

        return SessionMemory(
            thread_id=self.thread_id,
            goal=self.goal,
            completed=items("completed"),
            failed=items("failed"),
            decisions=items("decisions"),
            open_items=tuple(sorted(self._open_items(), key=lambda i: (i.seq, i.text))),
            turns=self.counts["turns"],
            tool_calls=self.counts["tool_calls"],
            checkpoints=self.counts["checkpoints"],
            folded={k: v for k, v in sorted(self.dropped.items()) if v},
            covers=self.seq,
            resumed=self.disturbed_seq > self.turn_seq,
            unreadable=self.unreadable,
        )

    def _open_items(self) -> Iterable[MemoryItem]:
        for key, (name, args, state, at, seq) in self.journal.items():
            if state == "started":
                call = key_parts(key)[2]
                yield MemoryItem(
                    f"uncertain: {_call_text(name, args)} started{f' at {at}' if at else ''} and has no "
                    "recorded result; it may or may not have taken effect",
                    seq, call, at,
                )
        for node, text, seq in self.interrupts.values():
            yield MemoryItem(clip(f"waiting for an answer (node {node}): {text}", ITEM_CHARS), seq)
        for call, (name, args, seq) in self.requested.items():
            entry = self.journal.get(self.latest.get(call, ""))
            if entry is None or entry[2] != "started":
                yield MemoryItem(f"no result yet: {_call_text(name, args)}", seq, call, None)
        waiting = {node for node, _, _ in self.interrupts.values()}
        for node, seq in self.pending.items():
            if node not in waiting:
                yield MemoryItem(
                    f"{UNFINISHED_STEP}{node} (scheduled at the latest checkpoint; the run stopped "
                    "or is still going)", seq, None, None,
                )

    # -- feeding ----------------------------------------------------------------

    def feed(self, record: dict[str, Any]) -> None:
        """Fold one log record (in log order) into the memory."""
        kind = record.get("t")
        if kind == "checkpoint":
            self._checkpoint(record)
        elif kind == "writes":
            self._writes(record)
        elif kind == "tool":
            self._tool(record)
        self.seq = record.get("seq", self.seq)

    def _add(self, section: str, text: str, seq: int, call: str | None = None, at: str | None = None) -> None:
        items = self.sections[section]
        items.append([clip(text, ITEM_CHARS), seq, call, at])
        if len(items) > KEEP_ITEMS:
            del items[0]
            self.dropped[section] = self.dropped.get(section, 0) + 1

    def _tell(self, key: str) -> None:
        self.told.append(key)
        if len(self.told) > KEEP_OPEN:
            del self.told[0]

    @staticmethod
    def _bound(mapping: dict[str, Any]) -> None:
        while len(mapping) > KEEP_OPEN:
            del mapping[next(iter(mapping))]

    def _decoded(self, cell: Any) -> Any:
        if not isinstance(cell, dict):
            return None
        if "json" in cell:
            return cell["json"]
        try:
            return self.decode(cell)
        except Exception:  # noqa: BLE001 - an unreadable value is left out of the memory
            self.unreadable += 1
            return None

    # -- checkpoint records -----------------------------------------------------------

    def _checkpoint(self, rec: dict[str, Any]) -> None:
        self.counts["checkpoints"] += 1
        if rec.get("ns", "") != "":
            return
        cid = rec.get("id")
        if self.head is not None and str(cid) < str(self.head):
            return  # an older checkpoint appended (a copy onto this thread): get_state serves the newest
        seq = rec.get("seq", self.seq)
        for key in [k for k in self.interrupts if k.split("|", 1)[0] < str(cid)]:
            # the graph moved on from the interrupted checkpoint, or left its branch (a
            # run from an earlier checkpoint): no question waits there any longer (one
            # logged before its own checkpoint, under durability "async", is newer)
            del self.interrupts[key]
        values = rec.get("values") or {}
        triggers = self.triggers
        for channel, entry in values.items():
            if channel.startswith("branch:to:"):
                # The newest stored version of each trigger, and whether it holds a value
                # (a consumed trigger is stored empty). A fork back to an older version
                # finds no entry: its steps are not reported as pending.
                triggers[channel] = [str(entry.get("ver")), "empty" not in entry]
        cv = rec.get("cv") or {}
        cp = self._decoded(rec.get("cp")) or {}
        seen = cp.get("versions_seen", {}) if isinstance(cp, dict) else {}
        self.head = rec.get("id")
        queued = values.get(TASKS)
        if isinstance(queued, dict) and "val" in queued:
            failed = self.sections["failed"]
            self.sent.queued(str(self.head), queued["val"], self.decode, self.interrupts, failed)
        self.pending = {}
        for channel, version in cv.items():
            held = triggers.get(channel)
            if held is None or not held[1] or held[0] != str(version):
                continue
            node = channel[len("branch:to:"):]
            if _newer(version, (seen.get(node) or {}).get(channel)):
                self.pending[node] = seq
        entry = values.get(MESSAGES)
        if isinstance(entry, dict):
            self._messages(entry, seq)
        for message, at_seq in self.sent.results(str(self.head)):  # written before it came
            self._result(str(self.head), message, at_seq)

    def _messages(self, entry: dict[str, Any], seq: int) -> None:
        """The head checkpoint's messages: what is new since the previous head is fed
        (tool calls asked and answered), and the counts and goal are those of this list,
        the conversation ``get_state`` serves, whatever the log's layout (a delta on
        another base after a fork or a rewrite, a value stored in full)."""
        version = entry.get("ver")
        if "val" in entry:
            whole: list[dict[str, Any]] | None = self._message_list(entry["val"])
        elif "tail" not in entry:
            return
        elif entry.get("base") == self.msg_ver and entry.get("keep") == self.message_count:
            whole = None  # the common case: the head's list extended (work as the tail)
        else:
            whole = self._resolved(version)  # None: it cannot be read whole
        if whole is None:
            return self._extend(entry, seq, version)
        new = self._new_messages(whole)
        # An edit may answer an open call before messages already seen (the replay
        # adapter answers a call left behind by new input in front of that input).
        fresh = {id(m) for m in new}
        for m in whole:
            if id(m) in fresh or m.get("type") != "tool":
                continue
            if str(m.get("tool_call_id")) in self.requested:
                self._message(m, seq)
        for m in new:
            self._message(m, seq)
        self._recount(whole)
        self.message_count = len(whole)
        self.last_message = whole[-1].get("id") if whole else None
        self.msg_ver = version

    def _extend(self, entry: dict[str, Any], seq: int, version: Any) -> None:
        """A delta's tail fed as the messages new to the head's list."""
        new = self._message_list(entry["tail"])
        for m in new:
            self._message(m, seq)
        self.message_count = int(entry.get("keep", self.message_count)) + len(new)
        if new:
            self.last_message = new[-1].get("id")
        self.msg_ver = version

    def _new_messages(self, whole: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages of ``whole`` the previous head's list did not hold: its tail if
        it extends that list, else (a fork, an edit) those whose ids that list lacks."""
        n, last = self.message_count, self.last_message
        if 0 < n <= len(whole) and last is not None and whole[n - 1].get("id") == last:
            return whole[n:]
        before = self._resolved(self.msg_ver) if self.msg_ver is not None else None
        if before is not None:
            known = {m.get("id") for m in before}
            return [m for m in whole if m.get("id") not in known]
        ids = [m.get("id") for m in whole]
        if self.last_message is not None and self.last_message in ids:
            return whole[ids.index(self.last_message) + 1:]
        return whole[n:]

    def _recount(self, whole: list[dict[str, Any]]) -> None:
        """Turns, tool calls and goal of the head's list; calls asked on another branch
        (abandoned by a fork) or edited away are no longer waiting for a result."""
        self.counts["turns"], self.counts["tool_calls"], self.goal, asked = conversation(whole)
        for call in [c for c in self.requested if c not in asked]:
            del self.requested[call]

    def _resolved(self, version: Any) -> list[dict[str, Any]] | None:
        """The root messages value of ``version``, read whole through ``resolve``."""
        if self.resolve is None:
            return None
        try:
            raw = self.resolve(version)
        except Exception:  # noqa: BLE001 - unreadable: the memory does without it
            return None
        if not isinstance(raw, list):
            return None
        return [d for d in (_as_dict(m) for m in raw) if d is not None]

    def _message_list(self, cell: Any) -> list[dict[str, Any]]:
        if isinstance(cell, dict) and "msgs" in cell:
            raw = cell["msgs"]
        else:
            raw = self._decoded(cell)
        if not isinstance(raw, list):
            return []
        return [d for d in (_as_dict(m) for m in raw) if d is not None]

    def _message(self, m: dict[str, Any], seq: int) -> None:
        kind = m.get("type")
        if kind == "human":
            self.turn_seq = seq
            self.counts["turns"] += 1
            self.goal = clip(_text(m.get("content", "")), GOAL_CHARS)
        elif kind == "ai":
            for call in m.get("tool_calls") or []:
                self.counts["tool_calls"] += 1
                if call.get("id"):
                    self.requested[call["id"]] = [call.get("name", ""), call.get("args"), seq]
            self._bound(self.requested)
        elif kind == "tool":
            call_id = str(m.get("tool_call_id"))
            name, args, _ = self.requested.pop(call_id, None) or [m.get("name", ""), None, seq]
            key = self.latest.get(call_id)
            if key is not None:
                # The thread's messages answer it: not open, whatever the journal lacks
                # (a person answered a held call with update_state(..., as_node="tools")).
                self.journal.pop(key, None)
            if key in self.told:
                self.told.remove(key)  # its outcome was told from the journal
                return
            outcome = clip(_text(m.get("content", "")), ITEM_CHARS)
            if m.get("status") == "error":
                self._add("failed", f"{_call_text(name, args)} failed: {outcome}", seq, call_id)
            else:
                self._add("completed", f"{_call_text(name, args)} -> {outcome}", seq, call_id)

    # -- writes records ----------------------------------------------------------------

    def _writes(self, rec: dict[str, Any]) -> None:
        if rec.get("ns", "") != "":
            return
        seq = rec.get("seq", self.seq)
        path = str(rec.get("path", ""))
        node = path.split(", ", 1)[1] if path.startswith("~__pregel_pull, ") else path
        key = f"{rec.get('cp')}|{rec.get('task')}"
        finished = False
        for _idx, channel, cell in rec.get("w", []):
            if channel == "__interrupt__":
                value = self._decoded(cell)
                texts = [_interrupt_text(i) for i in (value if isinstance(value, list) else [value])]
                self.interrupts[key] = [self.sent.name(node, str(rec.get("cp")), seq), "; ".join(texts), seq]
                self._bound(self.interrupts)
            elif channel == "__resume__":
                self.interrupts.pop(key, None)
            elif channel == "__error__":
                error = self._decoded(cell)
                text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
                name = self.sent.name(node, str(rec.get("cp")), seq)
                self._add("failed", f"step {name} stopped the run with an error: {text}", seq)
                self.disturbed_seq = seq
            elif channel not in _SPECIAL:
                finished = True
                if channel == MESSAGES:
                    self._wrote(str(rec.get("cp")), cell, seq)
        if finished and rec.get("cp") == self.head:
            self.pending.pop(node, None)

    def _wrote(self, cp: str, cell: Any, seq: int) -> None:
        """A task's write to the messages: each tool result in it finishes its call now
        (the write may be all there is of it: another call stopped the run), or when its
        checkpoint comes if it was logged first (async durability)."""
        raw = cell["msgs"] if isinstance(cell, dict) and "msgs" in cell else self._decoded(cell)
        for m in (_as_dict(x) for x in (raw if isinstance(raw, list) else [raw])):
            if m is not None and m.get("type") == "tool" and m.get("tool_call_id"):
                if cp == self.head:
                    self._result(cp, m, seq)
                else:
                    self.sent.wrote(cp, m, seq)

    def _result(self, cp: str, message: dict[str, Any], seq: int) -> None:
        """A call's result written by its task at ``cp``: told once, as the checkpoint's
        ToolMessage would tell it (which is then not told again), while the call waits
        and the journal did not tell its outcome (a person's decision)."""
        call = str(message["tool_call_id"])
        key = self.latest.get(call)  # the execution a ToolMessage with this id answers
        if call not in self.requested or key in self.told:
            return
        if key is None:  # not journaled: known by the checkpoint that asked for it
            key = self.latest[call] = KEY_SEP.join(("", cp, call))
            self._bound(self.latest)
        self._message(message, seq)
        self._tell(key)

    # -- tool records ------------------------------------------------------------------

    def _tool(self, rec: dict[str, Any]) -> None:
        ev = rec.get("ev")
        call = rec.get("call", "")
        seq = rec.get("seq", self.seq)
        at = rec.get("at")
        if ev == "answer":
            self._answer(rec, seq)
            self.disturbed_seq = seq
            return
        if call == "__asks__":
            if ev == "ask":
                self.disturbed_seq = seq
            return
        key = call_key(rec)
        entry = self.journal.get(key)
        if ev == "requested":
            args = self._decoded(rec.get("args"))
            if entry is None:
                self.journal[key] = [rec.get("name", ""), args, "requested", at, seq]
                self._bound(self.journal)
                self.latest.pop(call, None)  # kept in the order executions were seen
                self.latest[call] = key
                self._bound(self.latest)
        elif entry is None:
            return
        elif ev == "started":
            if entry[2] == "started":
                self.disturbed_seq = seq  # started again: the run before it died
            entry[2], entry[3], entry[4] = "started", at, seq
        elif ev == "released":
            entry[2] = "requested"
        elif ev == "finished":
            del self.journal[key]
            if rec.get("resolution"):
                self._tell(key)  # its ToolMessage says what the decision already told
            elif call in self.requested and self.latest.get(call) == key and key not in self.told:
                # Its result, before (a crash: maybe instead of) the checkpoint that holds
                # its ToolMessage; told once, so that message is not told again.
                message = _tool_message(self._decoded(rec.get("result")))
                if message is not None:
                    self._message({**message, "tool_call_id": call}, seq)
                    self._tell(key)
        elif ev == "failed":
            del self.journal[key]
            error = rec.get("error") or {}
            self._add("failed", f"{_call_text(entry[0], entry[1])} failed: {error.get('type', 'error')}: "
                                f"{error.get('message', '')}", seq, call, at)
            self._tell(key)
        elif ev == "superseded":
            del self.journal[key]

    def _answer(self, rec: dict[str, Any], seq: int) -> None:
        """A person's answer: its decisions (:func:`~.answers.decisions`)."""
        answer = self._decoded(rec.get("answer"))
        if isinstance(answer, dict):
            for text, call in decisions(rec, answer, self.journal):
                self._add("decisions", text, seq, call, rec.get("at"))
