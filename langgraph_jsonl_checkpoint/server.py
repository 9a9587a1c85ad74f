"""The LangGraph server's checkpointer: one line in ``langgraph.json``::

    {
      "graphs": {"agent": "./agent.py:graph"},
      "checkpointer": {"path": "langgraph_jsonl_checkpoint.server.checkpointer"}
    }

The path is written with dots: the server (langgraph-api 0.16) loads an installed
module's attribute from ``module.attr``, and reads ``module:attr`` as a file path.

The server (``langgraph dev``, or a self-hosted deployment) enters :func:`checkpointer`
once per OS thread that needs a checkpointer, and calls only the async methods. What
the saver it gets is set up for:

- The store directory is ``$LANGGRAPH_JSONL_STORE`` (the variable ``langgraph-jsonl``
  reads), else ``./checkpoints`` in the server's working directory. Several savers on
  one store in one process see each other's writes at once: each read checks the log
  file, as a reader in another process would.
- ``concurrent_runs="hold"``: the server decides which runs may overlap on a thread
  (its multitask strategies: reject, enqueue, interrupt, rollback), so the saver never
  refuses one; each run still holds its thread's live-run lock, so a sweep never
  touches a thread a run is working on.
- Retention: this package's ``LANGGRAPH_JSONL_TTL`` (JSON like the server's ``ttl``
  block, or minutes), else the server's ``LANGGRAPH_THREAD_TTL``, else the ``ttl``
  block of ``langgraph.json``'s ``checkpointer`` (the server passes it as
  ``LANGGRAPH_CHECKPOINTER``): the server's own precedence, with ours first.
  The in-memory runtime of ``langgraph dev`` sweeps nothing itself, so the factory
  sweeps every ``sweep_interval_minutes`` (default 5), one sweeper per process
  (a worker forked from a process that sweeps starts its own).
- The serializer: ``$LANGGRAPH_JSONL_SERDE`` names one as ``module:attr`` (an object,
  class or factory; see :func:`~.saver.config.load_serde`), else LangGraph's default.
  ``langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes``
  encrypts every value with the key in ``LANGGRAPH_AES_KEY``; ``langgraph-jsonl`` reads
  the same variable, so the command reads what the server wrote.
- Nothing blocks the event loop: the saver is opened and closed in a worker thread
  (``langgraph dev`` raises on blocking calls in the loop).

The trade-off: the sweeper deletes or archives a thread's checkpoints, not the server's
own record of the thread (its metadata, its runs): an expired thread still appears in
``/threads/search``, with an empty state, until it is deleted through the API.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from .disk.forks import renew_module_in_child
from .errors import ConfigError, StoreError
from .maintenance.retention import DEFAULT_SWEEP_INTERVAL, RetentionPolicy, configured_ttl
from .saver.config import SERDE_ENV, STORE_ENV, load_serde
from .saver.jsonl_saver import JsonlSaver

DEFAULT_STORE = "checkpoints"
"""The store directory when ``LANGGRAPH_JSONL_STORE`` is not set (relative to the
server's working directory, the project's)."""
BUSY_TIMEOUT = 30.0
"""Seconds a run waits for a thread another run still holds before going ahead."""
SWEEP_STOP_TIMEOUT = 10.0
"""Seconds the factory's close waits for a sweep under way to stop (it stops after the
thread it is sweeping; then the saver is closed even if it has not)."""

logger = logging.getLogger(__name__)
_sweeper_lock = threading.Lock()
#: The one sweeper of this process (a token its factory holds), or ``None``.
_sweeper: object | None = None


def _renew() -> None:
    """In a forked child (``gunicorn --preload``, ``os.fork``): the parent's sweeper
    task and the thread that may hold the lock are not here; the child's first factory
    starts a sweeper of its own."""
    global _sweeper_lock, _sweeper
    _sweeper_lock = threading.Lock()
    _sweeper = None


renew_module_in_child(_renew)


@asynccontextmanager
async def checkpointer() -> AsyncIterator[JsonlSaver]:
    """The LangGraph server's checkpointer (see the module docstring).

    Yields:
        A :class:`~.saver.jsonl_saver.JsonlSaver` on ``$LANGGRAPH_JSONL_STORE`` (default
        ``./checkpoints``), ``concurrent_runs="hold"``, with the configured ``ttl``;
        closed when the server lets it go.

    Raises:
        ConfigError: A retention variable cannot be read, or ``LANGGRAPH_JSONL_SERDE``
            names no serializer.
        StoreError: The directory is not a store, or is unsafe.
    """
    global _sweeper
    path = os.environ.get(STORE_ENV) or DEFAULT_STORE
    found = configured_ttl(os.environ)
    policy, source = found if found is not None else (None, "")
    spec = os.environ.get(SERDE_ENV)
    serde = load_serde(spec) if spec else None
    try:
        saver = await asyncio.to_thread(
            JsonlSaver, path, concurrent_runs="hold", busy_timeout=BUSY_TIMEOUT, ttl=policy, serde=serde
        )
    except (ConfigError, StoreError) as exc:
        raise _for_the_server(exc, path) from exc
    logger.info("langgraph-jsonl-checkpoint: store %s, retention %s%s", saver.store.path, policy,
                f" (from {source})" if source else "")
    sweeper: asyncio.Task[None] | None = None
    stop, wake = threading.Event(), asyncio.Event()
    token = object()
    if policy is not None:
        with _sweeper_lock:
            if _sweeper is None:
                _sweeper = token
                sweeper = asyncio.create_task(_sweep_every(saver, policy, stop, wake))
    try:
        yield saver
    finally:
        cancelled: asyncio.CancelledError | None = None
        if sweeper is not None:
            # Cancelling the task would leave a sweep under way running in its worker
            # thread: tell the sweep to stop (after its thread) and wait for it, bounded.
            stop.set()
            wake.set()
            try:
                await asyncio.wait_for(sweeper, SWEEP_STOP_TIMEOUT)
            except TimeoutError:
                logger.warning("langgraph-jsonl-checkpoint: the sweep under way did not stop within "
                               "%g s; closing the saver anyway", SWEEP_STOP_TIMEOUT)
            except asyncio.CancelledError as exc:
                # The server cancelled its shutdown while it waited: the saver is still
                # closed, then the cancellation goes on to the server. (A sweeper task
                # cancelled by someone else ends here too, and is only over.)
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    cancelled = exc
            finally:
                with _sweeper_lock:
                    if _sweeper is token:  # not a child's own, after a fork in this block
                        _sweeper = None
        await asyncio.to_thread(saver.close)
        if cancelled is not None:
            raise cancelled


def journal_saver() -> JsonlSaver:
    """A saver on the store the factory opens, with its serializer: for the replay
    adapter's journal in a graph module, where the factory's own saver is out of reach::

        from langgraph_jsonl_checkpoint import ReplayAdapter
        from langgraph_jsonl_checkpoint.server import journal_saver

        adapter = ReplayAdapter(journal_saver(), idempotent=["lookup_order"])
        builder.add_node("tools", adapter.tool_node([lookup_order, send_email]))
        graph = builder.compile()  # the server gives it the factory's checkpointer

    Opening ``JsonlSaver`` on the store by hand would miss ``$LANGGRAPH_JSONL_SERDE``:
    tool arguments and results would be stored unencrypted beside encrypted checkpoints.

    Returns:
        A :class:`~.saver.jsonl_saver.JsonlSaver` on ``$LANGGRAPH_JSONL_STORE`` (default
        ``./checkpoints``), ``concurrent_runs="hold"``, no retention (the factory sweeps).

    Raises:
        ConfigError: ``LANGGRAPH_JSONL_SERDE`` names no serializer, or the store path is
            not a directory.
        StoreError: The directory is not a store, or is unsafe.
    """
    path = os.environ.get(STORE_ENV) or DEFAULT_STORE
    spec = os.environ.get(SERDE_ENV)
    serde = load_serde(spec) if spec else None
    try:
        return JsonlSaver(path, concurrent_runs="hold", busy_timeout=BUSY_TIMEOUT, serde=serde)
    except (ConfigError, StoreError) as exc:
        raise _for_the_server(exc, path) from exc


def _for_the_server(exc: ConfigError | StoreError, path: str) -> ConfigError | StoreError:
    """``exc`` (the store could not be opened) saying what a server user sets: the
    variable, not ``JsonlSaver``'s argument, which they never wrote."""
    named = (
        f"${STORE_ENV}={os.environ[STORE_ENV]!r}" if os.environ.get(STORE_ENV)
        else f"{STORE_ENV} is not set, so it is ./{DEFAULT_STORE} in the server's working directory "
        f"({os.path.abspath(path)})"
    )
    fix = (f"The LangGraph server's store: {named}. Set {STORE_ENV} (in the server's environment "
           "or the .env file langgraph.json names) to an empty or new directory, or to a store.")
    return (StoreError if isinstance(exc, StoreError) else ConfigError)(f"{exc} {fix}")


async def _sweep_every(
    saver: JsonlSaver, policy: RetentionPolicy, stop: threading.Event, wake: asyncio.Event
) -> None:
    """Sweep at once, then every ``sweep_interval_minutes``, until ``stop`` is set (which
    also stops a sweep under way, between two threads; ``wake`` ends the wait between
    sweeps); a failed sweep is logged and the next one runs on time."""
    interval = (policy.sweep_interval_minutes or DEFAULT_SWEEP_INTERVAL) * 60
    while not stop.is_set():
        try:
            report = await saver.asweep(policy, stop=stop)
            if report.swept or report.errors:
                logger.info(
                    "langgraph-jsonl-checkpoint sweep: %d %s, %d pinned, %d live, %d errors",
                    len(report.swept), policy.strategy, len(report.pinned), len(report.live),
                    len(report.errors),
                )
        except Exception:  # noqa: BLE001 - a server must outlive one bad sweep
            logger.exception("langgraph-jsonl-checkpoint: sweep failed")
        with suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), interval)
