"""The session memory kept beside a thread's log: caught up after each append, on disk
as derived data (``<stem>.mem``).

A :class:`MemoryKeeper` hangs on a :class:`~..disk.log.ThreadLog` as an append observer.
After every durable append it feeds the records it has not seen to its
:class:`~.builder.MemoryBuilder`: work in proportion to what was appended. When they
continue exactly where it stopped, it takes them as the writer hands them (each framed
line parsed, not read back nor checksummed again; a snapshot record, which it does not
need, not even parsed); otherwise (another process appended, a rebuild) it reads them
from the log (snapshots checked but not parsed). Every :data:`SAVE_EVERY` records, and when the store
closes or drops the log from its open set (so that its next open continues from the
file instead of reading the whole log again: many threads taking turns), it writes its
state to ``<stem>.mem`` (over the file before, in place, no fsync: like
the sidecar index it is derived data, safe to delete; one read half written or torn by
a crash fails its checksum and is rebuilt). The file names the log generation it
was built from (generation, inode, header checksum, as the sidecar does) and the byte
offset and ``seq`` it covers; a fresh process trusts it only if all of them still match
the log (the record at that offset must carry the next ``seq``) and reads the log from
there. A missing, damaged or stale file (a rewrite: compaction, prune, repair; a thread
deleted and created again) is rebuilt from the whole log, never an error.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

import orjson

from ..disk import files, framing
from ..disk.log import ThreadLog, Written
from ..disk.view import LogView
from ..values.codec import ValueCodec
from ..values.reader import ValueReader
from .builder import MESSAGES, MemoryBuilder
from .model import SessionMemory

logger = logging.getLogger(__name__)

#: Write the memory file after this many records past what it covers (a fresh process
#: reads at most this many records more than the file holds, besides those of its close).
SAVE_EVERY = 256
#: Longest log rebuilt from its start right after an append (under the writer lock);
#: a longer one is rebuilt by the next read instead.
REBUILD_ON_APPEND = 1024 * 1024
#: Version of the ``.mem`` file's content (another version is rebuilt, never an error).
#: 2: calls answered by an edit before the messages seen, and calls finished in the
#: journal before their checkpoint, are no longer open (a version 1 file may list them).
#: 3: journaled calls kept by execution (namespace, checkpoint, call id), not by call id
#: alone, and decisions taken from what a question was about (a version 2 state is keyed
#: otherwise, and its decisions may name calls nobody was asked about).
#: 4: the goal is the latest human message as the thread now holds it (a version 3 file
#: may keep a question since edited or removed).
#: 5: turns, tool calls and goal are those of the head checkpoint's messages (a fork's
#: abandoned branch, and a delta a rewrite based elsewhere, no longer add to them); the
#: head's messages version is kept (``msg_ver``).
#: 6: a task a ``Send`` queued (``create_agent``'s tool calls) is named by its node and
#: calls, not by its queue place (``sent``; a version 5 file may tell the task path).
#: 7: a call whose result its task wrote is finished, though no checkpoint holds that
#: result yet (another call of the turn stopped the run); ``sent.written``.
FILE_VERSION = 7


def messages_resolver(log: LogView, codec: ValueCodec) -> Callable[[Any], Any]:
    """The root graph's messages value of a version, read whole from ``log`` (for
    :class:`~.builder.MemoryBuilder`'s ``resolve``; the log's value cache is left as
    the writer keeps it)."""

    def resolve(version: Any) -> Any:
        return ValueReader(log, codec, kept=False).value(log.index, "", MESSAGES, version)

    return resolve


class MemoryKeeper:
    """One thread's session memory, kept up to date with its log.

    Args:
        log: The thread's log.
        decode: Turns a value cell into a value (the saver's codec).
        persist: Write the ``.mem`` file (off for read-only stores).
        codec: The saver's codec, to read a messages value whole when a record does not
            extend the head's (a fork, an edit, a rewritten log).
    """

    def __init__(
        self,
        log: LogView,
        decode: Callable[[dict[str, Any]], Any],
        *,
        persist: bool = True,
        codec: ValueCodec | None = None,
    ) -> None:
        # Held weakly: the log holds its keeper (an observer), and a cycle between them
        # would leave every log the store lets go to the cyclic collector (with its
        # index: tens of objects per thread, over and over in a store of many threads).
        self._log = weakref.ref(log)
        self.decode = decode
        self.persist = persist
        self.codec = codec
        self.lock = threading.RLock()
        self.builder: MemoryBuilder | None = None
        self.identity: tuple[Any, ...] | None = None
        self.end = 0  # byte offset just past the last record fed
        self.saved_seq = -1  # the seq the file on disk covers
        self.loaded = False  # the file was tried
        #: The thread's memory was asked for (before the thread had a log, maybe): from
        #: then on every append is followed.
        self.wanted = False

    @property
    def log(self) -> LogView:
        """The observed log (alive while it is observed: it holds this keeper)."""
        log = self._log()
        if log is None:  # pragma: no cover - only the log reaches its keeper
            raise RuntimeError("the session memory's thread log was let go")
        return log

    @staticmethod
    def attach(log: ThreadLog, codec: ValueCodec) -> MemoryKeeper:
        """The keeper observing ``log`` (made and attached on first use)."""
        for observer in log.observers:
            if isinstance(observer, MemoryKeeper):
                return observer
        keeper = MemoryKeeper(log, codec.decode, persist=not log.read_only, codec=codec)
        log.observers.append(keeper)
        return keeper

    # -- observer --------------------------------------------------------------------

    def appended(self, log: ThreadLog) -> None:
        """Catch up with the records just appended (never raises: the append is
        acknowledged whatever happens here; the next read rebuilds). A rebuild of a log
        past :data:`REBUILD_ON_APPEND` bytes (no usable ``.mem``: a log written before
        this release, or just compacted) is left to the next read, outside the writer
        lock. Nothing at all until the thread's memory was first asked for in this
        process (a builder exists): most threads are never asked, and the appends of a
        server's many threads should not pay for it; the first ask catches up from the
        ``.mem`` file, or the log."""
        if self.builder is None and not self.wanted:
            return
        try:
            self.catch_up(rebuild_limit=REBUILD_ON_APPEND, handed=log.just_appended)
        except Exception:  # noqa: BLE001 - derived data: dropped, rebuilt on next read
            logger.debug("session memory of %r dropped", log.thread_id, exc_info=True)
            self.builder = None

    def closing(self, log: ThreadLog) -> None:
        """Write the memory file if it lags (never raises)."""
        try:
            with self.lock:
                if self.builder is not None and self.builder.seq != self.saved_seq:
                    self._save()
        except OSError:
            pass

    # -- reading ---------------------------------------------------------------------

    def memory(self) -> SessionMemory:
        """The memory as of the log's last committed record (refreshes the log)."""
        with self.log.mutex:
            self.log.refresh()
            builder = self.catch_up()
            assert builder is not None
            return builder.memory()

    def catch_up(
        self, *, rebuild_limit: int | None = None, handed: Written | None = None
    ) -> MemoryBuilder | None:
        """Feed the records past what the builder covers (rebuild when it cannot
        continue: another generation, a log cut back, a file that does not match).

        Args:
            rebuild_limit: Do not rebuild a log longer than this many bytes (return
                ``None`` and leave it to a later call without a limit).
            handed: The records just appended, ``(record, offset, line)`` in file order
                (see :class:`~..disk.log.AppendObserver`): fed from their lines if they
                are exactly what the builder misses, else read from the log.
        """
        with self.lock, self.log.mutex:
            ident = self.log.identity()
            identity = (ident.gen, ident.ino, ident.header_crc)
            end = self.log.index.committed_end if self.log.exists() else 0
            if not self.loaded:
                self.loaded = True
                self._load(identity, end)
            continues = self.builder is not None and identity == self.identity and self.end <= end
            if continues and self.end < end:
                continues = self._feed_handed(handed, end) or self._feed_from(self.end)
            if not continues:
                if rebuild_limit is not None and end > rebuild_limit:
                    self.builder = None
                    return None
                self._reset(identity)
                self._feed_from(0)
            builder = self.builder
            assert builder is not None
            if self.persist and builder.seq - max(self.saved_seq, 0) >= SAVE_EVERY:
                try:
                    self._save()
                except OSError:
                    pass  # only derived data
            return builder

    def _resolver(self) -> Callable[[Any], Any] | None:
        """The builder's ``resolve``, holding the log weakly (as this keeper does: the log
        holds the keeper, which holds the builder)."""
        codec, held = self.codec, self._log
        if codec is None:
            return None

        def resolve(version: Any) -> Any:
            log = held()
            return None if log is None else messages_resolver(log, codec)(version)

        return resolve

    def _reset(self, identity: tuple[Any, ...]) -> None:
        self.builder = MemoryBuilder(self.log.thread_id, self.decode, resolve=self._resolver())
        self.identity = identity
        self.end = 0
        self.saved_seq = -1

    def _feed_handed(self, handed: Written | None, end: int) -> bool:
        """Feed the records just appended if they run from where the builder stopped to
        ``end``; ``False`` (nothing fed) otherwise. The builder gets what a scan of the
        log would give: each line parsed (fresh objects, never the writer's, which may
        hold the caller's; tuples as lists), a snapshot as ``{"t", "seq"}``."""
        builder = self.builder
        assert builder is not None
        if (
            not handed
            or handed[0][1] != self.end
            or handed[-1][1] + len(handed[-1][2]) != end
            or handed[0][0].get("seq") != builder.seq + 1
        ):
            return False
        for record, offset, line in handed:
            if record.get("t") == "snapshot":  # the builder reads none (see _feed_from)
                builder.feed({"t": "snapshot", "seq": record["seq"]})
            else:
                parsed = orjson.loads(line)  # durable, written by this process: no checksum
                parsed.pop("c", None)
                builder.feed(parsed)
            self.end = offset + len(line)
        return True

    def _feed_from(self, offset: int) -> bool:
        """Feed the records from ``offset``; ``False`` (nothing fed) if the log there
        is not where the builder stopped."""
        builder = self.builder
        assert builder is not None
        scan = self.log.records_from(offset, skip=("snapshot",))  # the builder reads none
        first = scan.records[0].record.get("seq") if scan.records else None
        if offset and (scan.corrupt_offset is not None or first != builder.seq + 1):
            return False
        for found in scan.records:
            builder.feed(found.record)
            self.end = found.offset + found.length
        return True

    # -- the file ------------------------------------------------------------------------

    def _load(self, identity: tuple[Any, ...], end: int) -> None:
        path = self.log.paths.memory
        try:
            line = files.read_whole(path).rstrip(b"\n")
        except OSError:
            return
        rec = framing.parse_line(line)
        if (
            not rec
            or rec.get("t") != "memory"
            or rec.get("v") != FILE_VERSION
            or tuple(rec.get("log", ())) != identity
            or not isinstance(rec.get("end"), int)
            or rec["end"] > end
        ):
            return  # stale or damaged: rebuilt from the log
        try:
            builder = MemoryBuilder(self.log.thread_id, self.decode, rec["state"], resolve=self._resolver())
        except (KeyError, TypeError, ValueError, AttributeError):
            return
        self.builder, self.identity, self.end = builder, identity, rec["end"]
        self.saved_seq = builder.seq

    def _save(self) -> None:
        builder = self.builder
        if builder is None or not self.persist or self.identity is None or not self.log.exists():
            return
        record = {"t": "memory", "seq": 0, "v": FILE_VERSION, "log": list(self.identity), "end": self.end,
                  "state": builder.state()}
        data = framing.frame(orjson.loads(orjson.dumps(record, default=str)))
        paths = self.log.paths
        files.overwrite_derived(paths.memory, paths.temp("mem"), data)
        self.saved_seq = builder.seq


def memory_file_problems(log: LogView, codec: ValueCodec) -> list[tuple[str, str]]:
    """``(path, problem)`` if the thread's ``.mem`` file would be trusted (it names this
    log generation and a record boundary) yet disagrees with the memory rebuilt from the
    log up to the offset it covers; a missing, damaged or stale file is no problem (it
    is rebuilt). For ``verify``.
    """
    with log.mutex:
        log.refresh()
        if not log.exists():
            return []
        keeper = MemoryKeeper(log, codec.decode, persist=False, codec=codec)
        ident = log.identity()
        identity = (ident.gen, ident.ino, ident.header_crc)
        keeper._load(identity, log.index.committed_end)
        if keeper.builder is None:
            return []
        scan = log.records_from(0, skip=("snapshot",))
        ends = {r.offset + r.length: r.record.get("seq") for r in scan.records}
        if ends.get(keeper.end) != keeper.builder.seq:
            return []  # not at a record boundary with that seq: a reader rebuilds it
        fresh = MemoryBuilder(log.thread_id, codec.decode, resolve=messages_resolver(log, codec))
        for found in scan.records:
            if found.offset >= keeper.end:
                break
            fresh.feed(found.record)
    if fresh.memory() != keeper.builder.memory():
        return [(log.paths.memory, "the session memory file disagrees with the log it names; delete it "
                                   "(derived data: it is rebuilt from the log)")]
    return []

