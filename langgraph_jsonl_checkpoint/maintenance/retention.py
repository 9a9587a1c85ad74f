"""Thread retention: threads idle longer than a TTL are deleted, pruned to their latest
checkpoint, or archived (:mod:`.restore` brings an archived thread back).

The policy speaks the LangGraph server's terms (its ``ttl`` block in ``langgraph.json``):
``default_ttl`` in minutes of inactivity, ``strategy`` ``"delete"`` | ``"keep_latest"``,
plus ``"archive"`` (the log moves into ``archive/``, compressed, with its debug trace
and quarantine file: :mod:`~..disk.archive`),
``sweep_interval_minutes`` and ``sweep_limit``.

A thread's last activity is its log file's modification time: every append and rewrite
sets it, and a sweep of 10,000 threads then costs one ``stat`` per thread (the headers
of expired threads only are read). The trade-off: a copy of a store that does not keep
times (``cp`` without ``-p``) makes every thread look fresh, and a thread only read is
idle. A thread is *pinned*, and never expires, while the metadata of its latest
checkpoint in the root namespace has ``"pinned": true`` (with the LangGraph server,
thread metadata is copied into every run's checkpoints; elsewhere, run the graph with
``config["metadata"]["pinned"] = True`` or ``update_state`` it in); a state edit whose
metadata does not say (the server's ``update_state``) leaves the pin as it was.

A sweep acts on a thread only while holding its live-run lock (taken without waiting,
recorded as :data:`~..disk.runlock.MAINTENANCE`) and its writer lock, and checks the
thread again under them: a thread with a live run is skipped, a run that starts
meanwhile waits for the sweep, and several processes sweeping at once each act on a
thread at most once between them. Every change is a crash-atomic step of the disk
layer (a new generation, a tombstone and unlink, a rename into the archive).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..disk.archive import ArchivedThread, ThreadArchive, require_zstandard
from ..disk.index import ThreadIndex
from ..disk.runlock import MAINTENANCE
from ..disk.store import Store
from ..errors import ConfigError, JsonlCheckpointError
from .access import StoreAccess
from .compaction import prune_locked, prune_would_change, read_whole

if TYPE_CHECKING:  # annotations only: `langgraph-jsonl` imports maintenance without LangGraph
    from ..values.codec import ValueCodec
    from ..values.records import SnapshotPolicy

#: What a sweep does with an expired thread.
STRATEGIES = ("delete", "keep_latest", "archive")
#: The metadata key that pins a thread.
PIN_KEY = "pinned"
#: The LangGraph server's default for ``sweep_limit``.
DEFAULT_SWEEP_LIMIT = 10_000
#: Minutes between sweeps when a server's ``ttl`` block does not say (the server's default).
DEFAULT_SWEEP_INTERVAL = 5.0
#: This package's retention variable (JSON like the server's ``ttl`` block, or minutes),
#: read by the server factory and ``langgraph-jsonl sweep``.
TTL_ENV = "LANGGRAPH_JSONL_TTL"
#: The variables a policy is read from, the first one set first (:func:`configured_ttl`):
#: this package's, the server's ``LANGGRAPH_THREAD_TTL``, then the ``ttl`` block of the
#: ``langgraph.json`` ``checkpointer`` the server passes as ``LANGGRAPH_CHECKPOINTER``.
TTL_VARIABLES = (TTL_ENV, "LANGGRAPH_THREAD_TTL", "LANGGRAPH_CHECKPOINTER")


@dataclass(frozen=True)
class RetentionPolicy:
    """When a thread expires and what a sweep does with it.

    Attributes:
        default_ttl: Minutes of inactivity after which a thread expires.
        strategy: ``"delete"``, ``"keep_latest"`` or ``"archive"``.
        sweep_interval_minutes: How often a server sweeps (``None``: only when asked).
        sweep_limit: At most this many threads changed per sweep.
    """

    default_ttl: float
    strategy: str = "delete"
    sweep_interval_minutes: float | None = None
    sweep_limit: int = DEFAULT_SWEEP_LIMIT

    def __post_init__(self) -> None:
        # A bool is an int to Python, not a number of minutes (nor of threads) to anyone.
        if not _is_number(self.default_ttl) or not self.default_ttl >= 0:
            raise ConfigError(
                f"ttl: default_ttl must be a number of minutes, 0 or more, not {self.default_ttl!r}"
            )
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGIES:
            raise ConfigError(
                f"ttl: strategy must be one of {', '.join(map(repr, STRATEGIES))}, not {self.strategy!r}"
            )
        interval = self.sweep_interval_minutes
        if interval is not None and (not _is_number(interval) or not interval > 0):
            raise ConfigError(
                f"ttl: sweep_interval_minutes must be a positive number of minutes, not {interval!r}"
            )
        limit = self.sweep_limit
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ConfigError(f"ttl: sweep_limit must be a positive whole number, not {limit!r}")
        if self.strategy == "archive":
            require_zstandard()

    @classmethod
    def of(cls, ttl: RetentionPolicy | Mapping[str, Any] | float | int) -> RetentionPolicy:
        """A policy from the server's ``ttl`` block (or a number of minutes: ``"delete"``,
        as the server reads ``LANGGRAPH_THREAD_TTL=60``).

        Raises:
            ConfigError: A key or value the policy does not know.
        """
        if isinstance(ttl, RetentionPolicy):
            return ttl
        if isinstance(ttl, int | float) and not isinstance(ttl, bool):
            return cls(default_ttl=ttl)
        if not isinstance(ttl, Mapping):
            raise ConfigError(f"ttl must be a mapping like the server's ttl block or minutes, not {ttl!r}")
        unknown = set(ttl) - {"default_ttl", "strategy", "sweep_interval_minutes", "sweep_limit"}
        if unknown:
            raise ConfigError(f"ttl: unknown keys {sorted(unknown)}")
        if ttl.get("default_ttl") is None:
            raise ConfigError("ttl: default_ttl (minutes of inactivity) is required")
        strategy, limit = ttl.get("strategy"), ttl.get("sweep_limit")  # absent or null: the default
        return cls(
            default_ttl=ttl["default_ttl"],
            strategy="delete" if strategy is None else strategy,
            sweep_interval_minutes=ttl.get("sweep_interval_minutes"),
            sweep_limit=DEFAULT_SWEEP_LIMIT if limit is None else limit,
        )

    def expired(self, last_activity: float, now: float) -> bool:
        """Whether a thread last active at ``last_activity`` (epoch seconds) is expired."""
        return now - last_activity >= self.default_ttl * 60


@dataclass
class SweepReport:
    """What a sweep did (or, dry, would do).

    Attributes:
        dry_run: Nothing was changed.
        swept: ``(thread_id, strategy)`` of each expired thread acted on.
        pinned: Expired threads kept because they are pinned.
        live: Expired threads skipped because a run is working on them.
        active: Threads not expired.
        unchanged: Expired threads a ``keep_latest`` sweep found pruned already.
        settled: Archive files a crash had left half moved, finished now.
        errors: ``(thread or file, message)`` of threads that could not be swept.
        limited: Expired threads not looked at once ``sweep_limit`` was reached (a
            pinned or live one among them is told only by a sweep that looks).
        stopped: The sweep was told to stop (``stop``) and did, between two threads;
            the threads after were not looked at (a next sweep does).
    """

    dry_run: bool
    swept: list[tuple[str, str]] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    active: int = 0
    unchanged: int = 0
    settled: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    limited: int = 0
    stopped: bool = False


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def ttl_from_environment(environ: Mapping[str, str]) -> RetentionPolicy | None:
    """The retention policy an environment configures, if any (:func:`configured_ttl`
    without the variable's name).

    Raises:
        ConfigError: A variable holds something that is not a ``ttl`` block.
    """
    found = configured_ttl(environ)
    return None if found is None else found[0]


def configured_ttl(environ: Mapping[str, str]) -> tuple[RetentionPolicy, str] | None:
    """The retention policy an environment configures, and the variable it came from:
    ``LANGGRAPH_JSONL_TTL``, else the server's ``LANGGRAPH_THREAD_TTL``, else the ``ttl``
    block of the server's ``LANGGRAPH_CHECKPOINTER`` (``langgraph.json``'s
    ``checkpointer``): the server's own precedence, with this package's variable first
    (it alone may say ``"archive"``, which the server's schema refuses). The server
    factory and ``langgraph-jsonl sweep`` both read it.

    Args:
        environ: The environment (``os.environ``).

    Returns:
        The policy, with ``sweep_interval_minutes`` set, and the variable's name;
        ``None`` when none is configured.

    Raises:
        ConfigError: A variable holds something that is not a ``ttl`` block.
    """
    raw: Any = None
    source = ""
    variable = next((name for name in TTL_VARIABLES if environ.get(name)), None)
    if variable == "LANGGRAPH_CHECKPOINTER":
        checkpointer = _parsed(environ[variable], variable)
        raw = checkpointer.get("ttl") if isinstance(checkpointer, dict) else None
        source = "langgraph.json checkpointer.ttl"
    elif variable is not None:
        raw, source = _parsed(environ[variable], variable), variable
    if raw is None or variable is None:
        return None
    if isinstance(raw, int | float):  # a bool too: refused as default_ttl, naming it
        raw = {"default_ttl": raw}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a ttl block like {{\"default_ttl\": 60}}, got {raw!r}")
    try:
        policy = RetentionPolicy.of(raw)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    if policy.sweep_interval_minutes is None:
        policy = RetentionPolicy(
            default_ttl=policy.default_ttl, strategy=policy.strategy,
            sweep_interval_minutes=DEFAULT_SWEEP_INTERVAL, sweep_limit=policy.sweep_limit,
        )
    return policy, variable


def _parsed(text: str, name: str) -> Any:
    text = text.strip()
    try:
        return float(text) if not text.startswith(("{", "[", '"')) else json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{name}={text!r} is neither minutes nor JSON: {exc}") from exc


def is_pinned(access: StoreAccess, idx: ThreadIndex) -> bool:
    """Whether the thread is pinned: the newest root checkpoint that says either way (its
    metadata has ``"pinned"``) says true. State edits (``source: "update"``) that do not
    say are passed over, back to the newest checkpoint a run wrote: the LangGraph
    server's ``update_state`` does not copy the thread's metadata into its checkpoint,
    and an edit must not unpin a thread its runs pinned."""
    checkpoints = idx.checkpoints.get("", {})
    for checkpoint_id in reversed(idx.ordered_ids.get("", [])):
        said = _pin_said(access, checkpoints[checkpoint_id].metadata)
        if said is not None:
            return said
    return False


def _pin_said(access: StoreAccess, cell: Any) -> bool | None:
    """What one checkpoint's metadata says of the pin: ``True``/``False``, or ``None``
    for a state edit that does not say (look further back)."""
    metadata = access.codec.peek(cell) if cell is not None else None
    metadata = metadata if isinstance(metadata, dict) else {}
    if PIN_KEY in metadata:
        return pin_value(metadata[PIN_KEY])
    return None if metadata.get("source") == "update" else False


#: Text that says "not pinned" (metadata from a form, an environment variable, a query).
_FALSE_TEXT = frozenset({"", "false", "0", "no", "off", "none", "null"})


def pin_value(value: Any) -> bool:
    """Whether a ``"pinned"`` metadata value pins: truthiness, except that text is read
    as a person wrote it (``"false"``, ``"no"``, ``"0"``: not pinned; other text pins)."""
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE_TEXT
    return bool(value)


def sweep(
    access: StoreAccess, policy: RetentionPolicy, *, now: float | None = None, dry_run: bool = False,
    stop: threading.Event | None = None,
) -> SweepReport:
    """Apply ``policy`` to every thread of the store.

    Args:
        access: The saver (store, codec, snapshot policy).
        policy: The policy.
        now: The time to judge by (epoch seconds; default: now).
        dry_run: Report what would be done and change nothing (no lock is taken: a
            thread whose run starts meanwhile may be listed as expired). It reads
            through a read-only store of the same directory, so nothing is written,
            not even a derived file (a sidecar index, the catalog).
        stop: Set it (from another thread: a server shutting down) to stop the sweep
            before its next thread; the report then says ``stopped``. A thread being
            swept is finished first (each is one crash-atomic step).

    Returns:
        The report. One thread that cannot be swept is reported and the others are.

    Raises:
        ConfigError: The store was opened read-only and this is not a dry run.
    """
    now = time.time() if now is None else now
    report = SweepReport(dry_run=dry_run)
    store = access.store
    if store.read_only and not dry_run:
        raise ConfigError(f"store {store.path} was opened read-only: a sweep that changes threads needs a "
                          "writable saver (or pass dry_run=True)")
    if dry_run and not store.read_only:
        # Look through a read-only twin: threads opened in the saver's own store would
        # have their sidecars (and the catalog) written when they are let go.
        with closing(Store(store.path, read_only=True)) as twin:
            return sweep(_Twin(twin, access), policy, now=now, dry_run=True, stop=stop)
    archive = ThreadArchive(store)
    if not dry_run:
        _settle_archive(access, archive, report)
    for path, last_activity in store.log_activity():
        if stop is not None and stop.is_set():
            report.stopped = True
            break
        if not policy.expired(last_activity, now):
            report.active += 1
            continue
        try:
            thread_id = store.thread_id_at(path)
        except FileNotFoundError:
            continue  # swept or deleted by another process meanwhile
        except (OSError, JsonlCheckpointError) as exc:
            report.errors.append((path, str(exc)))
            continue
        if len(report.swept) >= policy.sweep_limit:
            report.limited += 1
            continue
        try:
            if dry_run:
                _look(access, policy, thread_id, report)
            else:
                _sweep_one(access, policy, archive, thread_id, now, report)
        except (OSError, JsonlCheckpointError) as exc:
            report.errors.append((thread_id, str(exc)))
    return report


@dataclass(frozen=True)
class _Twin:
    """A saver's codec and snapshot policy on another :class:`Store` of its directory."""

    store: Store
    saver: StoreAccess

    @property
    def codec(self) -> ValueCodec:
        return self.saver.codec

    @property
    def snapshot_policy(self) -> SnapshotPolicy:
        return self.saver.snapshot_policy


def _look(access: StoreAccess, policy: RetentionPolicy, thread_id: str, report: SweepReport) -> None:
    """A dry run's judgement of one expired thread (nothing taken, nothing written), in
    :func:`_sweep_one`'s order."""
    if access.store.run_lock(thread_id).seems_held():
        report.live.append(thread_id)
        return
    idx = read_whole(access.store.thread_log(thread_id))
    if is_pinned(access, idx):
        report.pinned.append(thread_id)
    elif policy.strategy == "keep_latest" and not prune_would_change(access, idx):
        report.unchanged += 1
    else:
        report.swept.append((thread_id, policy.strategy))


def _sweep_one(
    access: StoreAccess, policy: RetentionPolicy, archive: ThreadArchive, thread_id: str,
    now: float, report: SweepReport,
) -> None:
    store = access.store
    run_lock = store.run_lock(thread_id)
    if not run_lock.try_acquire(MAINTENANCE):
        report.live.append(thread_id)
        return
    try:
        log = store.thread_log(thread_id)
        with log.writer() as idx:
            if not log.exists():
                return  # swept by another process meanwhile
            if not policy.expired(log.modified_at(), now):
                report.active += 1  # written to since it was listed
                return
            if is_pinned(access, idx):
                report.pinned.append(thread_id)
                return
            if policy.strategy == "keep_latest":
                if not prune_locked(access, log, idx):
                    report.unchanged += 1
                    return
            elif policy.strategy == "archive":
                archive.archive(log)
            else:
                log.remove()
        report.swept.append((thread_id, policy.strategy))
        if policy.strategy != "keep_latest":
            store.forget(thread_id)
    finally:
        run_lock.release()


def _settle_archive(access: StoreAccess, archive: ThreadArchive, report: SweepReport) -> None:
    """Finish archivings (and undo restores) that a crash cut short."""
    for moved in archive.unsettled():
        try:
            log = access.store.thread_log(archive.thread_of(moved))
            with log.locked():
                if archive.settle(log, moved):
                    report.settled.append(moved)
        except FileNotFoundError:
            continue  # settled by another process meanwhile
        except (OSError, JsonlCheckpointError) as exc:
            report.errors.append((moved, str(exc)))


def archived(access: StoreAccess, thread_id: str | None = None) -> list[ArchivedThread]:
    """Archived threads (of one thread, if given), oldest first."""
    return ThreadArchive(access.store).entries(thread_id)
