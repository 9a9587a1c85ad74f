"""Full-text search over the messages of every thread (or some): which thread, which
checkpoint, who said it, and the words around the match.

A message is stored once, in the record of the checkpoint that added it: a
conversation that grew is stored as its new tail (the pending writes of a step that
never finished, after a crash or at an interrupt, are searched too). So a search reads each
log once, front to back, and never rebuilds a conversation; a message edited later is
found in the record that stored its new text. Before anything is parsed, the log's
bytes are searched for the text as JSON would store it (lower-cased when the text is
ASCII): a thread that cannot hold a match costs one read and one ``bytes.find``, and
only lines that can are parsed (checksum checked) and looked at. Logs holding values
in the serializer's bytes (an ``EncryptedSerializer``, types JSON cannot hold) are
decoded line by line instead. Matching is case-insensitive, within one field of a
message: its text (each text block of a list of blocks), a tool call's name, or a tool
call's arguments as compact JSON (``{"to":"ada@example.com"}``). Each field is stored
as a JSON string, or (arguments) as the same JSON, so the text is in the raw bytes
either JSON-escaped or as it is: the byte filter never drops a match.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from ..disk import framing
from ..errors import DecodeError, JsonlCheckpointError
from .conversation import Utterance, compact_json, role_of, utterance
from .times import at_or_after
from .values import is_message

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver

#: Characters of context on each side of a match in a snippet.
CONTEXT = 40


@dataclass(frozen=True)
class SearchHit:
    """A message that holds the text searched for.

    Attributes:
        thread_id: The thread.
        ns: The namespace of the checkpoint.
        checkpoint_id: The checkpoint whose record stored the message (for a pending
            write, the checkpoint it was written on).
        at: That checkpoint's time (ISO 8601).
        utterance: The message, for reading.
        before: Text before the match, in the snippet.
        match: The matching text, as the message has it.
        after: Text after the match.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    at: str | None
    utterance: Utterance
    before: str
    match: str
    after: str

    @property
    def snippet(self) -> str:
        """The words around the match, on one line."""
        return f"{self.before}{self.match}{self.after}"

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data (an item of ``search --json``)."""
        return {
            "thread_id": self.thread_id, "ns": self.ns, "checkpoint_id": self.checkpoint_id, "at": self.at,
            "role": self.utterance.role, "message_id": self.utterance.message_id, "snippet": self.snippet,
            "match": self.match,
        }


class ThreadSearch:
    """One search text, applied to threads one at a time.

    Args:
        saver: A saver on the store (``read_only=True``: nothing is written).
        text: What to look for (case-insensitive).
        role: Only messages of this role (``human``/``user``, ``ai``/``assistant``,
            ``tool``, ``system``/``developer``, ``function``, ``chat``; another is a
            ``ValueError``).
        since: Only messages of checkpoints made at or after this time.

    Raises:
        ValueError: ``text`` is empty, or ``role`` is not a role.
    """

    def __init__(
        self, saver: JsonlSaver, text: str, *, role: str | None = None, since: datetime | None = None
    ) -> None:
        if not text:
            raise ValueError("search for some text: an empty text would match every message")
        self.saver = saver
        self.text = text
        self.folded = text.lower()
        self.role = role_of(role) if role else None
        self.since = since
        # As the text is stored inside a JSON string (quotes, backslashes, control
        # characters escaped; other characters as they are). bytes.lower() folds ASCII
        # only, so the byte filter is exact for an ASCII text and skipped otherwise.
        self._needles = (orjson.dumps(self.folded)[1:-1], self.folded.encode()) if text.isascii() else None

    def hits(self, thread_id: str) -> list[SearchHit]:
        """The messages of one thread that match, in log order, each once.

        Raises:
            CorruptLogError: The log cannot be read.
            DecodeError: A value that may hold messages cannot be decoded by the saver's
                serializer (another one wrote it).
        """
        log = self.saver.store.thread_log(thread_id)
        try:
            return self._hits(log)
        except DecodeError as exc:
            raise DecodeError.in_log(thread_id, log.path, exc) from exc

    def _hits(self, log: Any) -> list[SearchHit]:
        with log.mutex:
            idx = log.refresh()
            data = log.committed_bytes()
        if not data:
            return []
        encoded = b'"typed"' in data
        folded_data = data.lower() if self._needles is not None else None
        if folded_data is not None and not encoded and not self._may_hold(folded_data, 0, len(data)):
            return []
        out: list[SearchHit] = []
        self._parent_set: set[tuple[str, str]] | None = None
        seen: set[tuple[str, str]] = set()
        times: dict[tuple[str, str], str | None] = {}
        start = data.index(b"\n") + 1  # after the header
        while start < len(data):
            end = data.index(b"\n", start)
            may_match = encoded or folded_data is None or self._may_hold(folded_data, start, end)
            if may_match:
                rec = framing.parse_line(data[start:end])
                if rec is not None:
                    self._record_hits(log, idx, rec, seen, times, out)
            start = end + 1
        return out

    @staticmethod
    def _parents(idx: Any) -> set[tuple[str, str]]:
        """``(namespace, id)`` of the checkpoints that have a child."""
        return {(ns, e.parent) for ns, by_id in idx.checkpoints.items() for e in by_id.values() if e.parent}

    def _may_hold(self, folded: bytes, start: int, end: int) -> bool:
        """Whether lower-cased log bytes may hold the text (escaped, or as it is)."""
        assert self._needles is not None
        return any(folded.find(n, start, end) >= 0 for n in self._needles)

    def _record_hits(
        self, log: Any, idx: Any, rec: Mapping[str, Any], seen: set[Any], times: dict[Any, Any],
        out: list[SearchHit],
    ) -> None:
        kind = rec.get("t")
        if kind == "checkpoint":
            ns, cid = rec.get("ns", ""), rec.get("id")
            times[(ns, cid)] = self._cp_time(rec.get("cp"))
            values = rec.get("values") or {}
            cells = [e.get("tail", e.get("val")) for e in values.values() if isinstance(e, Mapping)]
        elif kind == "writes":
            ns, cid = rec.get("ns", ""), rec.get("cp")
            if self._parent_set is None:
                self._parent_set = self._parents(idx)
            if (ns, cid) in self._parent_set:
                return  # the step finished: its writes are in the next checkpoint's state
            cells = [w[2] for w in rec.get("w") or () if isinstance(w, list) and len(w) == 3]
        else:
            return  # snapshots repeat stored values; tool events are not messages
        if not isinstance(cid, str):
            return
        for cell in cells:
            for message in self._messages(cell):
                u = utterance(message)
                key = (ns, u.message_id or f"{cid}#{len(seen)}")
                if key in seen or (self.role and u.role != self.role):
                    continue
                found = self._find(message, u)
                if found is None:
                    continue
                text, at = found
                seen.add(key)
                when = self._time(log, idx, ns, cid, times)
                if not at_or_after(when, self.since):
                    continue
                out.append(_hit(log.thread_id, ns, cid, when, u, text, at, len(self.text)))

    def _find(self, message: Any, u: Utterance) -> tuple[str, int] | None:
        """The field of a message holding the text, and where (see the module docstring)."""
        content: Any
        if is_message(message):
            content = message.content
        else:
            content = message.get("content") if isinstance(message, Mapping) else None
        fields: list[Any] = []
        if isinstance(content, str):
            fields.append(content)
        elif isinstance(content, list):
            for block in content:
                fields.append(block.get("text") if isinstance(block, Mapping) else block)
        for call in u.tool_calls:
            fields += [call.name, compact_json(call.args)]
        for text in fields:
            if isinstance(text, str):
                at = text.lower().find(self.folded)
                if at >= 0:
                    return text, at
        return None

    def _messages(self, cell: Any) -> list[Any]:
        """The messages in a stored cell (as stored dumps, or decoded when the
        serializer's bytes hold them)."""
        if not isinstance(cell, Mapping):
            return []
        if "msgs" in cell and isinstance(cell["msgs"], list):
            return cell["msgs"]
        if "msg" in cell:
            return [cell["msg"]]
        if "dsnap" in cell:
            return self._messages(cell["dsnap"])
        if "typed" in cell:
            value = self.saver.codec.decode(cell)  # DecodeError: another serializer wrote it
            if is_message(value):
                return [value]
            if isinstance(value, list):
                return [m for m in value if is_message(m)]
        return []

    def _time(self, log: Any, idx: Any, ns: str, cid: str, times: dict[Any, Any]) -> str | None:
        """A checkpoint's time: from its record, read when a pending write matched first."""
        if (ns, cid) not in times:
            entry = idx.checkpoints.get(ns, {}).get(cid)
            when = None
            if entry is not None:
                try:
                    when = self._cp_time(log.read_record(entry.ref)["cp"])
                except JsonlCheckpointError:
                    when = None
            times[(ns, cid)] = when
        when_seen: str | None = times[(ns, cid)]
        return when_seen

    def _cp_time(self, cell: Any) -> str | None:
        """The ``ts`` in a checkpoint record's ``cp`` cell."""
        try:
            cp = self.saver.codec.peek(cell) if isinstance(cell, Mapping) else None
        except Exception:  # the serializer's own errors vary: the time is then unknown
            return None
        ts = cp.get("ts") if isinstance(cp, Mapping) else None
        return ts if isinstance(ts, str) else None


def search_messages(
    saver: JsonlSaver,
    text: str,
    *,
    thread_ids: Sequence[str] | None = None,
    role: str | None = None,
    since: datetime | None = None,
    track: Callable[[list[str]], Iterable[str]] | None = None,
    skipped: list[str] | None = None,
    partial: list[str] | None = None,
) -> Iterator[SearchHit]:
    """Messages holding ``text`` (case-insensitive), thread by thread in file order,
    each message once, in log order within a thread (see the module docstring).

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        text: What to look for.
        thread_ids: Only these threads (default: every thread whose log can be read).
        role: Only messages of this role.
        since: Only messages of checkpoints made at or after this time.
        track: Given the threads to search, yields them as they are searched (a
            progress bar wraps them so).
        skipped: If given, the id of each thread found by listing the store that was
            skipped because its log, or a value in it, cannot be read is appended (the
            file name of a file in the store whose header cannot be read).
        partial: If given, the id of each thread searched only in part is appended: its
            log is damaged, and only the records before the damage (what a read-only
            saver serves) were searched.

    Raises:
        ValueError: ``text`` is empty, or ``role`` is not a role.
        CorruptLogError: A log asked for by ``thread_ids`` cannot be read (a thread
            found by listing the store is skipped instead).
        DecodeError: The same for a value of such a log (another serializer wrote it).
    """
    search = ThreadSearch(saver, text, role=role, since=since)  # raises now, not at the first hit
    return _hits(search, thread_ids, track, skipped, partial)


def _hits(
    search: ThreadSearch,
    thread_ids: Sequence[str] | None,
    track: Callable[[list[str]], Iterable[str]] | None,
    skipped: list[str] | None,
    partial: list[str] | None,
) -> Iterator[SearchHit]:
    """:func:`search_messages`' hits, thread by thread."""
    saver = search.saver
    listed = thread_ids is None
    ids = list(thread_ids) if thread_ids is not None else []
    for entry in saver.store.catalog() if listed else ():
        if entry.thread_id is not None:
            ids.append(entry.thread_id)
        elif skipped is not None:  # its header cannot be read: named by its file, as `threads` names it
            skipped.append(os.path.basename(entry.path))
    for tid in track(ids) if track is not None else ids:
        try:
            found = search.hits(tid)
        except JsonlCheckpointError:
            if not listed:
                raise
            if skipped is not None:
                skipped.append(tid)
            continue  # `threads` reports why the log cannot be read; a search goes on
        if partial is not None and saver.store.thread_log(tid).damaged_at is not None:
            partial.append(tid)
        yield from found


def _hit(thread_id: str, ns: str, cid: str, when: str | None, u: Utterance, text: str, at: int,
         size: int) -> SearchHit:
    start, end = max(0, at - CONTEXT), min(len(text), at + size + CONTEXT)
    before = ("…" if start else "") + text[start:at]
    after = text[at + size:end] + ("…" if end < len(text) else "")
    flat = str.maketrans({"\n": " ", "\r": " ", "\t": " "})
    return SearchHit(thread_id, ns, cid, when, u, before.translate(flat), text[at:at + size].translate(flat),
                     after.translate(flat))
