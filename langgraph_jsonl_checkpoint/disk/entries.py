"""Index entries: where a checkpoint, a stored value or a pending write lies in the log.

Tens of thousands are built when a long thread's index is loaded, so they are
NamedTuples (a frozen dataclass costs several times more to construct) and are built
with the cyclic garbage collector paused (:func:`bulk_allocation`). Pure.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import orjson

from ..errors import CorruptLogError
from .summary import ValueKind


class RecordRef(NamedTuple):
    """Where a record lies in the log: byte offset, length and sequence number."""

    offset: int
    length: int
    seq: int


#: read_groups: records at most this far apart share one read, of at most _READ_SPAN.
_READ_GAP = 64 * 1024
_READ_SPAN = 4 * 1024 * 1024


def read_groups(refs: list[RecordRef]) -> Iterator[list[RecordRef]]:
    """``refs`` (duplicates dropped) sorted by offset, in groups that one read each
    serves: neighbours at most 64 KiB apart, at most 4 MiB a read."""
    ordered = sorted(set(refs))
    if not ordered:
        return
    group = [ordered[0]]
    for ref in ordered[1:]:
        start, end = group[0].offset, group[-1].offset + group[-1].length
        if ref.offset - end <= _READ_GAP and ref.offset + ref.length - start <= _READ_SPAN:
            group.append(ref)
        else:
            yield group
            group = [ref]
    yield group


class CheckpointEntry(NamedTuple):
    """A checkpoint's place in the log and the facts ``list`` needs without reading it.

    ``md`` and ``cv`` hold the metadata cell and the channel versions, or (for entries
    loaded from the sidecar) their JSON text, decoded by :attr:`metadata` and
    :attr:`versions` when asked for: most entries of a long thread never are.
    """

    ref: RecordRef
    parent: str | None
    md: Any
    cv: Any

    @property
    def metadata(self) -> Any:
        md = self.md
        return _decode(md, self, "metadata") if type(md) is str else md

    @property
    def versions(self) -> dict[str, Any]:
        cv = self.cv
        versions: dict[str, Any] = _decode(cv, self, "channel versions") if type(cv) is str else cv
        return versions


def _decode(text: str, entry: CheckpointEntry, what: str) -> Any:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if type(value) is not dict and not (value is None and text == "null" and what == "metadata"):
        raise CorruptLogError(
            f"the sidecar index holds damaged {what} for the checkpoint at byte offset "
            f"{entry.ref.offset} of the log (it was not written by this package). "
            "Delete the thread's .idx file; it is rebuilt from the log.",
            path="",
            offset=entry.ref.offset,
        )
    return value


class BlobEntry(NamedTuple):
    """Where the value of one channel version is stored.

    A delta's base is resolved when its record is indexed, in log order: ``prev`` is the
    entry its base version had *then*. A version written again later (a caller may
    pass any ``new_versions``) replaces the entry that lookups by version find, never
    the value of a delta built on it before; and since ``prev`` always lies earlier in
    the log, a chain of deltas can never loop.

    Attributes:
        ref: The record holding it (a checkpoint or snapshot record).
        kind: A :class:`~.summary.ValueKind`.
        base: For a delta, the version it extends.
        depth: Records to read to rebuild it (0 for a full value).
        prev: For a delta, the entry of its base when it was written (``None``: the
            base was not in the log, which this package never writes).
    """

    ref: RecordRef
    kind: ValueKind
    base: Any = None
    depth: int = 0
    prev: BlobEntry | None = None


class WriteEntry(NamedTuple):
    """One pending write: its record, position in that record, channel and task path."""

    ref: RecordRef
    position: int
    channel: str
    task_path: str


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic objects are built.

    Loading a sidecar allocates tens of thousands of small objects; the collector's
    passes over the growing heap took about 45% of the load time (and half of reading
    a long conversation's history). The collector is only resumed if it was running
    when the pause began; code inside must not run user callbacks.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
