"""The state at a checkpoint as a person reads it: its conversation, each message with
the checkpoint it first appeared in and that checkpoint's time, the other channels, and
the questions waiting for an answer.

The state itself comes from the saver's public ``get_tuple`` (exactly what LangGraph
reads). When each message arrived comes from the checkpoints before it, walking
parent links back to the first: a checkpoint record stores a conversation that grew as
its new tail, so the messages a checkpoint added are read from its own record without
rebuilding any earlier conversation (one record per checkpoint, the ``history`` cost);
a value stored in full or through the serializer's bytes is decoded instead.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..disk.paths import thread_option
from ..disk.summary import EMPTY
from ..errors import NotFoundError
from ..values.cells import list_items
from .checkpoints import CheckpointFacts, Question, ThreadFacts, reading
from .conversation import Utterance, message_channels, utterance
from .diff import ChannelDiff, diff_states
from .history import namespaces, require_namespace
from .status import PAST, thread_status
from .threads import live_run

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from langchain_core.runnables import RunnableConfig

    from ..saver.jsonl_saver import JsonlSaver

#: LangGraph's bookkeeping channels, hidden unless asked for.
INTERNAL_PREFIXES = ("branch:", "join:", "__")


@dataclass(frozen=True)
class TranscriptEntry:
    """One message of a conversation.

    Attributes:
        message: The message itself.
        utterance: It, for reading.
        checkpoint_id: The first checkpoint whose state holds it (``None`` if unknown).
        at: That checkpoint's time (ISO 8601).
    """

    message: Any
    utterance: Utterance
    checkpoint_id: str | None
    at: str | None


@dataclass(frozen=True)
class Transcript:
    """A thread's state at one checkpoint, for reading.

    Attributes:
        thread_id: The thread.
        ns: The namespace.
        checkpoint_id: The checkpoint.
        facts: What the checkpoint says (time, step, next, waiting questions, errors).
        channel: The channel holding the conversation (``messages`` first), if any.
        entries: Its messages, oldest first.
        values: Every channel's value at the checkpoint.
        status: The thread's status (done, running, interrupted, waiting) when the
            checkpoint is its namespace's latest; ``past`` for an earlier one (its
            ``next`` and questions are what it had then).
        latest_id: The namespace's latest checkpoint id.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    facts: CheckpointFacts
    channel: str | None
    entries: tuple[TranscriptEntry, ...]
    values: dict[str, Any]
    status: str
    latest_id: str | None = None

    @property
    def is_latest(self) -> bool:
        """Whether this is the namespace's latest checkpoint (else a past one)."""
        return self.status != PAST

    @property
    def waiting(self) -> tuple[Question, ...]:
        """The questions waiting for an answer (of a past checkpoint: those it had
        then, answered or left behind since)."""
        return self.facts.waiting

    def other_channels(self, *, internal: bool = False) -> dict[str, Any]:
        """Channel values beside the conversation; LangGraph's bookkeeping channels
        (``branch:to:*``, ``join:*``, ``__*``) only with ``internal``."""
        return {
            ch: v for ch, v in sorted(self.values.items())
            if ch != self.channel and (internal or not ch.startswith(INTERNAL_PREFIXES))
        }


def read_transcript(
    saver: JsonlSaver, thread_id: str, checkpoint_id: str | None = None, *, ns: str = ""
) -> Transcript:
    """The state of a thread at a checkpoint (default: its latest), for reading.

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        thread_id: The thread.
        checkpoint_id: The checkpoint (default: the latest of ``ns``).
        ns: The namespace.

    Raises:
        NotFoundError: The thread has no such checkpoint (or none at all).
        CorruptLogError: The log cannot be read.
    """
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    if checkpoint_id is not None:
        config["configurable"]["checkpoint_id"] = checkpoint_id
    tup = saver.get_tuple(config)
    if tup is None:
        _refuse_lost_to_damage(saver, thread_id, checkpoint_id, ns)
        require_namespace(saver, thread_id, ns)  # a namespace it does not have: say which it has
        if (checkpoint_id is None and not ns and saver.store.has_thread(thread_id)
                and not namespaces(saver, thread_id)):
            raise NotFoundError(
                f"thread {thread_id!r} has no checkpoint yet: no state of it is stored (a run "
                "with durability='exit' stores its checkpoints when it ends); `langgraph-jsonl "
                "tools` lists the tool calls its replay journal holds, if any."
            )
        if checkpoint_id is not None:
            raise _no_checkpoint(saver, thread_id, checkpoint_id, ns)
        where = f" in namespace {ns!r}" if ns else ""
        raise NotFoundError(
            f"thread {thread_id!r} has no checkpoint{where}; `{_history_command(saver, thread_id, ns)}` "
            "lists its checkpoints."
        )
    cid = tup.checkpoint["id"]
    values = dict(tup.checkpoint["channel_values"])
    channels = message_channels(values)
    channel = channels[0] if channels else None

    def work(facts: ThreadFacts) -> tuple[CheckpointFacts, dict[str, tuple[str, str | None]], str | None]:
        here = facts.facts(ns, cid)
        latest = facts.index.latest_id(ns)
        return here, first_seen(facts, ns, cid, channel) if channel else {}, latest

    facts, seen, latest = reading(saver, thread_id, work)
    log = saver.store.thread_log(thread_id)
    # A checkpoint written after get_tuple's read is newer still: this one is past then.
    past = latest is not None and latest != cid
    live = not past and live_run(log.paths, thread_id) is not None
    entries = []
    for message in values.get(channel, []) if channel else []:
        at = seen.get(getattr(message, "id", None) or "")
        first_at: str | None = at[0] if at else None
        when = at[1] if at else None
        entries.append(TranscriptEntry(message, utterance(message), first_at, when))
    return Transcript(
        thread_id=thread_id, ns=ns, checkpoint_id=cid, facts=facts, channel=channel,
        entries=tuple(entries), values=values,
        status=PAST if past else thread_status(facts.next, facts.waiting, live=live),
        latest_id=latest,
    )


def first_seen(
    facts: ThreadFacts, ns: str, checkpoint_id: str, channel: str
) -> dict[str, tuple[str, str | None]]:
    """For each message id in ``channel`` along the parent chain ending at a checkpoint:
    the first checkpoint holding it and that checkpoint's time.

    Args:
        facts: The thread's facts (under its lock).
        ns: The namespace.
        checkpoint_id: The last checkpoint of the chain.
        channel: The conversation's channel.
    """
    chain: list[str] = []
    by_id = facts.index.checkpoints.get(ns, {})
    current: str | None = checkpoint_id
    while current is not None and current in by_id and len(chain) <= len(by_id):
        chain.append(current)
        current = by_id[current].parent
    chain.reverse()
    out: dict[str, tuple[str, str | None]] = {}
    previous = None
    for cid in chain:
        entry = by_id[cid]
        version = entry.versions.get(channel)
        if version is None or version == previous:
            continue
        previous = version
        ids = _added_ids(facts, ns, cid, channel, version)
        fresh = [i for i in ids if i and i not in out]
        if fresh:
            at = facts.facts(ns, cid).created_at
            for message_id in fresh:
                out[message_id] = (cid, at)
    return out


def _added_ids(facts: ThreadFacts, ns: str, cid: str, channel: str, version: Any) -> list[str]:
    """Ids of the messages a checkpoint's record stored for ``channel`` (its new tail,
    or its full value); the whole value's ids when the record does not hold it."""
    reader = facts.reader
    rec = reader.record(facts.index.checkpoints[ns][cid].ref)
    stored = rec.get("values", {}).get(channel)
    if isinstance(stored, Mapping) and stored.get("ver") == version and ("tail" in stored or "val" in stored):
        cell = stored.get("tail", stored.get("val"))
        items = list_items(cell) if isinstance(cell, Mapping) else None
        if items is not None:
            return [m["id"] for m in items[1] if isinstance(m, dict) and isinstance(m.get("id"), str)]
        decoded = reader.decode(cell)
    else:
        blob = facts.index.blob(ns, channel, version)
        if blob is None or blob.kind == EMPTY:
            return []
        decoded = reader.value(facts.index, ns, channel, version)
    if not isinstance(decoded, list):
        return []
    return [i for i in (getattr(m, "id", None) for m in decoded) if isinstance(i, str)]


def checkpoint_values(
    saver: JsonlSaver, thread_id: str, checkpoint_id: str, *, ns: str = ""
) -> dict[str, Any]:
    """Every channel's value at a checkpoint (what LangGraph would load).

    Raises:
        NotFoundError: The thread has no such checkpoint.
    """
    config: RunnableConfig = {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }
    tup = saver.get_tuple(config)
    if tup is None:
        require_namespace(saver, thread_id, ns)
        raise _no_checkpoint(saver, thread_id, checkpoint_id, ns)
    return dict(tup.checkpoint["channel_values"])


class LostToDamage(NotFoundError):
    """The checkpoint asked for is not in the part of a damaged log that can be read
    (the command line's exit status for it is 1, a damaged thread, not 2)."""

    exit_status = 1


def _refuse_lost_to_damage(saver: JsonlSaver, thread_id: str, checkpoint_id: str | None, ns: str) -> None:
    """A checkpoint missing from a damaged log's readable part may be past the damage:
    say so, not that the thread never stored it."""
    log = saver.store.thread_log(thread_id)
    if log.damaged_at is None:
        return
    which = f"checkpoint {checkpoint_id}" if checkpoint_id is not None else "checkpoint"
    where = f" in namespace {ns!r}" if ns else ""
    raise LostToDamage(
        f"thread {thread_id!r} has no {which}{where} before the damage at byte offset "
        f"{log.damaged_at} of its log {log.path}: what came after it cannot be read. "
        f"{log.repair_hint()}"
    )


def _no_checkpoint(saver: JsonlSaver, thread_id: str, checkpoint_id: str, ns: str) -> NotFoundError:
    """The error for a checkpoint a namespace of the thread lacks: the namespace that
    holds it, if another does (a subgraph's id, as ``search`` shows them)."""
    def holding(facts: ThreadFacts) -> list[str]:
        return sorted(n for n in facts.index.namespaces() if facts.has(n, checkpoint_id))

    where = f" in namespace {ns!r}" if ns else ""
    found = [n for n in reading(saver, thread_id, holding) if n != ns]
    if found:
        flag = f"--ns {found[0]}" if found[0] else "no --ns (the root graph)"
        return NotFoundError(
            f"thread {thread_id!r} has no checkpoint {checkpoint_id}{where}: checkpoint {checkpoint_id} "
            f"is in namespace {found[0]!r}; give {flag}."
        )
    return NotFoundError(
        f"thread {thread_id!r} has no checkpoint {checkpoint_id}{where}; "
        f"`{_history_command(saver, thread_id, ns)}` lists its checkpoints."
    )


def _history_command(saver: JsonlSaver, thread_id: str, ns: str) -> str:
    """The ``langgraph-jsonl history`` command that lists a thread's checkpoints (in
    ``ns``), runnable as given: the store and the thread shell-quoted, a namespace that
    starts with a dash given with ``=``."""
    namespace = f" {shlex.quote(f'--ns={ns}')}" if ns else ""
    return f"langgraph-jsonl history {shlex.quote(saver.store.path)} {thread_option(thread_id)}{namespace}"


def diff_checkpoints(
    saver: JsonlSaver, thread_id: str, older: str, newer: str, *, ns: str = ""
) -> list[ChannelDiff]:
    """What changed from one checkpoint's state to another's, per channel
    (:func:`~.diff.diff_states`).

    Raises:
        NotFoundError: The thread lacks one of them.
    """
    return diff_states(
        checkpoint_values(saver, thread_id, older, ns=ns), checkpoint_values(saver, thread_id, newer, ns=ns)
    )
