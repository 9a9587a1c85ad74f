"""``JsonlTracer``: an opt-in LangChain callback handler writing a debug trace per thread.

The trace is kept apart from the transcript: one JSON line per event in
``<store>/traces/<stem>.jsonl`` (the thread's file stem, as its log), never read by the
saver, recovery or replay, safe to delete at any time. Events: a graph run, each node,
each model call and each tool call starting, ending (with its duration in seconds and,
for a model, the token usage it reports) or failing (with the error). Each line is
written with one ``write`` to a file opened ``O_APPEND``, without ``fsync`` (debugging
data: a process killed mid-run leaves every line it wrote; a power loss may cut the
last one, which readers skip). Bounded: when a file would pass ``max_bytes`` it is
rotated (``.jsonl`` -> ``.1.jsonl`` -> ``.2.jsonl``, the oldest dropped); at most
:data:`MAX_OPEN_FILES` threads' files are kept open, the least recently written closed
first (its next line opens it again).

Use::

    tracer = JsonlTracer("./checkpoints")
    graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}, "callbacks": [tracer]})

A run without a ``thread_id`` is not traced.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import time
import weakref
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson
from langchain_core.callbacks import BaseCallbackHandler

from ..disk import files
from ..disk.forks import renew_in_child
from ..disk.paths import TRACES_DIR, LogPaths
from ..disk.store_dir import MARKER, store_near
from ..errors import ConfigError
from .timeline import trace_paths

_log = logging.getLogger(__name__)

#: Default size at which a thread's trace file is rotated.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
#: Trace files kept open at once, one per thread (the least recently written is closed).
MAX_OPEN_FILES = 128
#: Longest error text kept in an event.
ERROR_CHARS = 500


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _interrupt_text(error: BaseException) -> str | None:
    """What an ``interrupt()`` asked, if ``error`` is the pause it raises (``None``: a
    real error)."""
    from langgraph.errors import GraphInterrupt  # imported with the graph already running

    if not isinstance(error, GraphInterrupt):
        return None
    asked = error.args[0] if error.args else ()
    values = [getattr(i, "value", i) for i in (asked if isinstance(asked, (list, tuple)) else [asked])]
    text = "; ".join(orjson.dumps(v, default=str).decode() for v in values)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _tokens(response: Any) -> dict[str, int] | None:
    """Token usage a model reported: its message's ``usage_metadata``, or the
    provider's ``llm_output["token_usage"]``."""
    try:
        usage = response.generations[0][0].message.usage_metadata
    except (AttributeError, IndexError, TypeError):
        usage = None
    if usage:
        return {k: int(usage[k]) for k in ("input_tokens", "output_tokens", "total_tokens") if k in usage}
    raw = (getattr(response, "llm_output", None) or {}).get("token_usage") or {}
    if isinstance(raw, dict) and raw:
        names = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens",
                 "total_tokens": "total_tokens"}
        return {names[k]: int(v) for k, v in raw.items() if k in names and isinstance(v, int)}
    return None


class TraceFile:
    """One thread's trace file: append a line, rotate by size.

    Args:
        paths: The thread's files (``trace_files()``: current first, then rotated).
        max_bytes: Size past which the file is rotated before the next line.
    """

    def __init__(self, paths: LogPaths, max_bytes: int) -> None:
        self.names = paths.trace_files()
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._opened: tuple[int, int] | None = None  # (inode, device) of the open file
        self._retired = False

    def append(self, line: bytes) -> None:
        """Write one line (rotating first if it would pass ``max_bytes``); a retired file
        is closed again after the line."""
        with self.lock:
            if self._fd is not None and not self._still_named():
                self.close()  # deleted, archived, restored or rotated by another: follow the name
            if self._fd is None:
                self._open()
            try:
                if self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                assert self._fd is not None
                files.write_all(self._fd, line)
                self._size += len(line)
            finally:
                if self._retired:
                    self.close()

    def retire(self) -> None:
        """Close the file for good: the tracer let it go (a line still being written by
        another thread closes it again after itself)."""
        with self.lock:
            self._retired = True
            self.close()

    def _still_named(self) -> bool:
        """Whether the open file is still the one the trace's name leads to."""
        try:
            named = files.os.stat(self.names[0])
        except FileNotFoundError:
            return False
        return (named.st_ino, named.st_dev) == self._opened

    def _open(self) -> None:
        folder = os.path.dirname(self.names[0])
        if not os.path.isdir(folder):
            store = os.path.dirname(folder)
            if not os.path.exists(os.path.join(store, MARKER)):  # a mistyped path: make nothing
                why = f"no {MARKER} in it" if os.path.lexists(store) else "there is no directory " + store
                near = store_near(store)
                raise ConfigError(
                    f"JsonlTracer: {store} is not a store ({why}), so nothing is traced. "
                    "Pass the saver, JsonlTracer(saver), or the directory given to JsonlSaver."
                    + (f" It is next to one: did you mean {near}?" if near else "")
                )
            os.makedirs(folder, mode=0o700, exist_ok=True)
        self._fd = files.os.open(self.names[0], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        st = files.os.fstat(self._fd)
        self._size, self._opened = st.st_size, (st.st_ino, st.st_dev)

    def _rotate(self) -> None:
        self.close()
        try:
            # Another process may have rotated already: then this file is new and small.
            if files.os.stat(self.names[0]).st_size + 1 > self.max_bytes:
                for older, newer in zip(self.names[:0:-1], self.names[-2::-1], strict=True):
                    if os.path.exists(newer):
                        files.os.replace(newer, older)
        except FileNotFoundError:
            pass
        self._open()

    def close(self) -> None:
        """Close the file (the next append opens it again)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            files.os.close(fd)


class JsonlTracer(BaseCallbackHandler):
    """Writes graph, node, model and tool events of every traced run to a per-thread
    trace file in the store's ``traces/`` folder.

    Each event is one JSON line: a start, an end (with its duration and the token usage a
    model reported) or an error. Nothing in the saver, recovery or replay reads the
    trace; it is safe to delete, and ``langgraph-jsonl trace`` prints it as a timeline.

    With a graph::

        tracer = JsonlTracer(saver)  # or JsonlTracer("./checkpoints")
        config = {"configurable": {"thread_id": "t-1"}, "callbacks": [tracer]}
        graph.invoke(inputs, config)
        tracer.close()

    Args:
        store: The store directory (or a ``JsonlSaver``, whose store is used).
        max_bytes: Size at which a thread's trace file is rotated (two rotated files
            are kept, so a thread's trace takes at most about three times this); a whole
            number of bytes, at least 1024.

    Raises:
        ConfigError: ``store`` is neither a path nor a ``JsonlSaver``, or ``max_bytes``
            is not such a number.
    """

    #: Called in the run's own thread or event loop, so events keep their order; a line
    #: an event loop would write goes to the tracer's writer thread instead (a server's
    #: loop must not block on a file), and from then on every line does, in order.
    run_inline = True

    def __init__(self, store: Any, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        inner = getattr(store, "store", None)
        if inner is None and not isinstance(store, (str, os.PathLike)):
            raise ConfigError(f"JsonlTracer: {type(store).__name__} keeps no store directory to trace "
                              "into; pass the JsonlSaver the graph is compiled with, or its directory")
        self.store_path = os.path.abspath(inner.path if inner is not None else os.fspath(store))
        if type(max_bytes) is not int or max_bytes < 1024:
            raise ConfigError(
                f"JsonlTracer: max_bytes must be a whole number of bytes, 1024 or more, not {max_bytes!r} "
                f"(the default is {DEFAULT_MAX_BYTES}: 4 MiB)."
            )
        self.max_bytes = max_bytes
        self._files: OrderedDict[str, TraceFile] = OrderedDict()
        self._runs: dict[UUID, tuple[str, str, str, float, int]] = {}  # thread, kind, name, t0, depth
        self._lock = threading.Lock()
        self._warned = False
        #: Lines for the writer thread (started by the first line an event loop writes).
        self._queue: queue.SimpleQueue[tuple[str, bytes] | None] | None = None
        self._writer: threading.Thread | None = None
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the locks' holders (threads of the parent) are not here,
        nor is the writer thread."""
        self._lock = threading.Lock()
        self._queue = self._writer = None
        for f in self._files.values():
            f.lock = threading.Lock()

    @property
    def directory(self) -> str:
        """The store's trace folder."""
        return os.path.join(self.store_path, TRACES_DIR)

    def close(self) -> None:
        """Write what the writer thread still holds, then close every open trace file."""
        self._drained()
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()

    # -- events ------------------------------------------------------------------

    def _start(self, kind: str, name: str, run_id: UUID, parent_run_id: UUID | None,
               metadata: dict[str, Any] | None, **extra: Any) -> None:
        thread = (metadata or {}).get("thread_id")
        if thread is None:
            return
        thread = str(thread)
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        depth = parent[4] + 1 if parent else 0
        self._runs[run_id] = (thread, kind, name, time.monotonic(), depth)
        md = metadata or {}
        event = {"ev": "start", "kind": kind, "name": name, "run": str(run_id),
                 "parent": str(parent_run_id) if parent_run_id else None, "depth": depth,
                 "step": md.get("langgraph_step"), "ns": md.get("langgraph_checkpoint_ns"), **extra}
        self._write(thread, event)

    def _end(self, run_id: UUID, error: BaseException | None = None, **extra: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        thread, kind, name, t0, depth = run
        asked = _interrupt_text(error) if error is not None else None
        ev = "end" if error is None else "interrupt" if asked is not None else "error"
        event: dict[str, Any] = {"ev": ev, "kind": kind, "name": name, "run": str(run_id), "depth": depth,
                                 "seconds": round(time.monotonic() - t0, 6), **extra}
        if asked is not None:
            event["interrupt"] = asked
        elif error is not None:
            event["error"] = _error_text(error)
        self._write(thread, event)

    def _write(self, thread: str, event: dict[str, Any]) -> None:
        event["at"] = _now()
        line = orjson.dumps(event, default=str) + b"\n"
        if self._queue is None and not _in_event_loop():
            self._append(thread, line)
            return
        with self._lock:
            if self._queue is None:
                self._queue = queue.SimpleQueue()
                self._writer = threading.Thread(target=self._drain, args=(self._queue,),
                                                name="JsonlTracer writer", daemon=True)
                self._writer.start()
                atexit.register(_drain_at_exit, weakref.ref(self))
            self._queue.put((thread, line))  # under the lock: in the order the events came

    def _drain(self, lines: queue.SimpleQueue[tuple[str, bytes] | None]) -> None:
        """The writer thread: append each line handed to it, until told to stop."""
        while (item := lines.get()) is not None:
            self._append(*item)

    def _drained(self) -> None:
        """Stop the writer thread once it has written every line handed to it (bounded:
        a file system that hangs does not hang the caller past :data:`DRAIN_SECONDS`)."""
        with self._lock:
            lines, writer = self._queue, self._writer
            self._queue = self._writer = None
        if lines is not None and writer is not None:
            lines.put(None)
            writer.join(DRAIN_SECONDS)

    def _append(self, thread: str, line: bytes) -> None:
        retired: list[TraceFile] = []
        with self._lock:
            f = self._files.get(thread)
            if f is None:
                f = self._files[thread] = TraceFile(trace_paths(self.store_path, thread), self.max_bytes)
                while len(self._files) > MAX_OPEN_FILES:
                    retired.append(self._files.popitem(last=False)[1])
            else:
                self._files.move_to_end(thread)
        for old in retired:
            old.retire()
        try:
            f.append(line)
        except OSError:
            pass  # a trace never fails a run
        except ConfigError as exc:
            if not self._warned:  # once per tracer, not at every event
                self._warned = True
                _log.warning("%s", exc)

    # -- LangChain callbacks ---------------------------------------------------------------

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                       **kwargs: Any) -> None:
        """A graph run (no parent) or one of its nodes starts (other chains are skipped)."""
        name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
        md = metadata or {}
        if parent_run_id is None:
            self._start("graph", name, run_id, None, md)
        elif md.get("langgraph_node") == name and parent_run_id in self._runs:
            self._start("node", name, run_id, parent_run_id, md)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A graph run or node ends."""
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A graph run or node fails (an interrupt shows as ``GraphInterrupt``)."""
        self._end(run_id, error)

    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        """A chat model call starts."""
        name = kwargs.get("name") or (serialized or {}).get("name") or "model"
        count = len(messages[0]) if messages else 0
        self._start("model", name, run_id, parent_run_id, metadata, messages=count)

    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                     **kwargs: Any) -> None:
        """A (non-chat) LLM call starts."""
        name = kwargs.get("name") or (serialized or {}).get("name") or "llm"
        self._start("model", name, run_id, parent_run_id, metadata)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call ends (with the token usage it reported, if any)."""
        tokens = _tokens(response)
        if tokens:
            self._end(run_id, tokens=tokens)
        else:
            self._end(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call fails."""
        self._end(run_id, error)

    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                      **kwargs: Any) -> None:
        """A tool call starts."""
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        self._start("tool", name, run_id, parent_run_id, metadata)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool call ends."""
        self._end(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool call fails."""
        self._end(run_id, error)


#: The longest :meth:`JsonlTracer.close` waits for its writer thread's lines.
DRAIN_SECONDS = 10.0


def _in_event_loop() -> bool:
    """Whether the calling thread runs an asyncio event loop right now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _drain_at_exit(ref: weakref.ref[JsonlTracer]) -> None:
    """At interpreter exit: the lines a tracer never closed still holds are written."""
    tracer = ref()
    if tracer is not None:
        tracer._drained()
