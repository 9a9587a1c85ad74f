"""Head files, kept and read: a short thread's latest checkpoint served without its log
being indexed (the file: :mod:`..disk.head_file`).

A process's first ``get_state`` of a thread used to scan its log, index it and rebuild
the latest values from their delta records. A :class:`HeadKeeper` on each log writes
the latest tuple of the root namespace whole, cells and all, as the log leaves the
store's open set or the store closes (never on the write path, never waiting for a
lock); :func:`head_tuple` serves it to a read that finds the log not indexed in this
process, after checking that the log's bytes are exactly those the head was made from.
Reads from a running graph (which remember what they read for the run's next put),
reads of a named checkpoint or another namespace, and any read of a log this process
has indexed take the usual path.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

import orjson
from langgraph.checkpoint.base import CheckpointTuple

from ..disk.files import unlink_quietly
from ..disk.head_file import HEAD_LOG_BYTES, head_names, index_disagrees, log_crc, read_head, write_head
from ..disk.log import ThreadLog
from ..disk.store import Store
from ..disk.summary import EMPTY
from ..disk.view import LogView
from ..values.cache import ValueCache
from ..values.cells import list_items
from ..values.codec import ValueCodec
from ..values.reader import ValueReader, decode_stored
from .tuples import checkpoint_tuple

logger = logging.getLogger(__name__)


def keep_heads(store: Store, codec: ValueCodec) -> None:
    """Attach a :class:`HeadKeeper` to every log ``store`` opens from now on (none if
    the store is read-only)."""
    if store.read_only:
        return

    def attach(log: ThreadLog) -> None:
        log.observers.append(HeadKeeper(codec))

    store.on_open.append(attach)


class HeadKeeper:
    """Writes a log's head file when the log is let go or closed (an append observer,
    see :class:`~..disk.log.AppendObserver`).

    Args:
        codec: The saver's value codec (a log's value cache, which may hold the newest
            lists in stored form, is read through it).
    """

    def __init__(self, codec: ValueCodec) -> None:
        self.codec = codec
        #: Records were appended through this log object: the head on disk is stale.
        self.stale = False

    def appended(self, log: ThreadLog) -> None:
        """Note that the head on disk is stale (it is written once, as the log is let go)."""
        self.stale = True

    def closing(self, log: ThreadLog) -> None:
        """Write the head file if the log is short, indexed and whole, and the head on
        disk names other bytes (never raises, never waits: a log in use right now keeps
        the head it has, which a reader finds stale)."""
        if not log.mutex.acquire(blocking=False):
            return
        try:
            self._write(log)
        except Exception:  # noqa: BLE001 - derived data: the next reader indexes the log
            logger.debug("head file of %r not written", log.thread_id, exc_info=True)
        finally:
            log.mutex.release()

    def _write(self, log: ThreadLog) -> None:
        if self.stale and log.exists() and log.index.committed_end > HEAD_LOG_BYTES:
            unlink_quietly(log.paths.head)  # outgrew the bound: its last head is stale for good
            self.stale = False
            return
        source = head_source(log)
        if source is None or (not self.stale and head_names(log.paths, log.thread_id, *source)):
            return  # no head for this log, or the one on disk is current (only read here)
        body = head_body(log, self.codec)
        if body is not None:
            index = log.sidecar.summaries.encode_from(0, log.index.facts()) or b""
            write_head(log.paths, log.thread_id, *source, body, index)
            log.head_index_crc = zlib.crc32(index)  # (made from this index: not checked again)
            self.stale = False


def head_source(log: LogView) -> tuple[int, str] | None:
    """The size and CRC-32 of the log bytes the index was built from, which a head file
    made now would name (call under ``log.mutex``); ``None`` if the log gets no head
    (not indexed, damaged, short of the records its sidecar says were durable, longer
    than :data:`~..disk.head_file.HEAD_LOG_BYTES`, no longer the file at its path, or no
    longer ending with the record the index holds last).

    A log short of its durable records is refused by every read that indexes it; a head
    of the bytes left would have the next process served an older checkpoint instead."""
    end = log.index.committed_end
    if not log.exists() or log.damaged_at is not None or end > HEAD_LOG_BYTES:
        return None
    if log.index.last_seq < log.sidecar.durable_seq:
        return None
    kept = log.indexed_crc() if isinstance(log, ThreadLog) else None
    if kept is not None:
        return kept  # (the log's bytes need not be read again)
    data = log.indexed_bytes()
    return (end, log_crc(data)) if data is not None else None


def head_body(log: LogView, codec: ValueCodec) -> dict[str, Any] | None:
    """What a head file holds besides the log's size and CRC (call under ``log.mutex``):
    the latest checkpoint of the root namespace as the index stands, in the cells a read
    of the log decodes (the checkpoint and metadata as the log stores them, each value
    whole: a list's delta chain joined in stored form, never decoded; pending writes as
    stored); ``None`` if the root namespace has no checkpoint."""
    idx = log.index
    checkpoint_id = idx.latest_id("")
    entry = idx.entry("", checkpoint_id) if checkpoint_id is not None else None
    if checkpoint_id is None or entry is None:
        return None
    reader = ValueReader(log, codec)
    reader.prefetch_checkpoint(idx, "", checkpoint_id, entry)
    rec = reader.record(entry.ref)
    values: dict[str, Any] = {}
    for channel, version in rec["cv"].items():
        blob = idx.blob("", channel, version)
        if blob is None or blob.kind == EMPTY:
            continue
        # As stored, never decoded and encoded again here: the serializer that reads
        # the head may not be the one at hand (with_allowlist's copies share the store).
        cell = reader.stored_cell(idx, "", channel, version)
        if cell is None:
            return None  # no value to rebuild: the read of the log says why
        values[channel] = cell
    return {
        "id": checkpoint_id,
        "parent": entry.parent,
        "cv": rec["cv"],
        "cp": rec["cp"],
        "md": rec["md"],
        "values": values,
        "writes": [
            [task, w.channel, reader.write_cell(w)] for task, _, w in idx.sorted_writes("", checkpoint_id)
        ],
    }


def seed_from_head(log: LogView, codec: ValueCodec) -> None:
    """A log just indexed from its head file: keep the head's lists in the log's value
    cache (stored form), so the read that follows rebuilds them without their delta
    chains (call under ``log.mutex``, right after the refresh)."""
    head, log.loaded_head = log.loaded_head, None
    if head is None or head["size"] != log.index.committed_end or not codec.readable:
        return  # none, or records were appended since
    cache = ValueCache.of(log)
    versions = head["cv"]
    for channel, cell in head["values"].items():
        found = list_items(cell)
        if found is not None and channel in versions:
            cache.keep("", channel, versions[channel], found[0], list(found[1]))


def head_file_problems(log: LogView, codec: ValueCodec) -> list[tuple[str, str]]:
    """``(path, problem)`` if the thread's head file would be used (it names the log's
    bytes) yet holds another tuple than the one rebuilt from the log; a missing, damaged
    or stale head is no problem (it is ignored). For ``verify``."""
    with log.mutex:
        log.refresh()
        head = read_head(log.paths, log.thread_id)
        if head is None:
            return []
        source = head_source(log)
        body = head_body(log, codec) if source == (head["size"], head["crc"]) else None
    if body is None:
        return [(log.paths.head, _DISAGREES.format("another checkpoint than the log does"))]
    fresh = orjson.loads(orjson.dumps(body))
    if not all(head.get(key) == value for key, value in fresh.items()):
        return [(log.paths.head, _DISAGREES.format("another checkpoint than the log does"))]
    if index_disagrees(log.paths, log.thread_id, log.scanned_records()):
        return [(log.paths.head, _DISAGREES.format("an index of other records than the log's"))]
    return []


_DISAGREES = ("the head file names the log's bytes but holds {}; delete it (derived data: "
              "the log is read instead)")


def head_tuple(log: LogView, codec: ValueCodec) -> CheckpointTuple | None:
    """The thread's latest checkpoint of the root namespace from its head file, if the
    file is current (see :func:`~..disk.head_file.read_head`); ``None`` to index the log
    instead. Every call decodes afresh: no two results share objects."""
    head = read_head(log.paths, log.thread_id)
    if head is None:
        return None
    decode = codec.decode
    try:
        values = {ch: decode_stored(codec, cell) for ch, cell in head["values"].items()}
        pending = [(task, ch, decode(cell)) for task, ch, cell in head["writes"]]
        return checkpoint_tuple(
            log.thread_id, "", head["id"], head["parent"], decode(head["cp"]), head["cv"], values,
            decode(head["md"]), pending,
        )
    except Exception:  # noqa: BLE001 - a head this release cannot read: index the log
        logger.debug("head file of %r not used", log.thread_id, exc_info=True)
        return None
