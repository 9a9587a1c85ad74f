"""The listing cache (``LISTING.idx``): ``threads`` rows kept between listings, so a
listing reads only the logs that changed since the last one.

A row of ``langgraph-jsonl threads`` costs a log's index and two records; over 10,000
threads that is seconds, although most threads did not change since the last listing.
The cache keeps, per log file name, the row a summary gave and what proves the log is
the same: the log's inode, size, modification and change times (nanoseconds), and the
same of its sidecar index. A listing lists ``threads/`` once (``os.scandir``, one
``lstat`` per log, sidecar, quarantine and run-lock file), reuses every row whose proof
matches, summarises the other logs (the caller's ``summarise``, the uncached path),
drops the rows of logs that are gone, and writes the cache again if anything differed.

What is not in a row is computed again at every listing from the same directory
listing: the size on disk (the files' sizes), and whether a run holds the thread now
(``running``: the run-lock file's holder and whether that process is alive), which
does not show in the log; and the threads a run holds that have no log yet (a run
with ``durability="exit"`` stores its first checkpoint when it ends): the ``.run`` files
with a holder and no log beside them, read at each listing, never cached
(:func:`~.threads.logless_runs`).

Why the proof holds: a log only grows (an append changes its size), and a rewrite
(compact, prune, repair) installs another file (another inode; its times are copied
from the old log, its change time is not). The one case it cannot see is a log changed
and its size restored within one tick of the file system's clock; so a row whose log
or sidecar changed less than :data:`RACY_SECONDS` before the listing began is not kept
(read again next time), as git does with racily clean index entries. The proof is
taken before the log is read: a writer appending meanwhile makes the proof stale, never
the row.

The cache is derived data, like the catalog: a missing, damaged, foreign or older
cache is ignored and rebuilt; deleting it loses nothing. It is written (temp file in
``tmp/``, renamed in place, not fsynced) even by a reading command, which changes
nothing else; where it cannot be written (a read-only file system, another user's
store) the listing goes on without it. Trade-off: a few bytes per thread on disk
(about 300), for a listing that opens no unchanged log.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..disk import files, framing
from ..disk.paths import LogPaths, thread_file_stem
from ..disk.store import Store, ThreadFile
from ..errors import JsonlCheckpointError
from .status import DAMAGED, EMPTY, RUNNING, thread_status
from .threads import ThreadSummary, live_run, logless_runs

#: The cache file, in the store's directory (beside ``CATALOG.idx``).
LISTING = "LISTING.idx"
LISTING_VERSION = 1
#: A row whose log or sidecar changed this recently (before the listing began) is not
#: kept: within a clock tick of the file system a change could keep size and times.
RACY_SECONDS = 2.0
#: Rows larger than this (a long error message) are not kept: the cache stays small.
MAX_ROW_BYTES = 4096
#: A store with more logs than this is listed without the cache (bounds its size).
MAX_ROWS = 1_000_000

#: The files of a thread a listing looks at, by suffix.
_SUFFIXES = (".jsonl", ".idx", ".quarantine", ".run")

Proof = list[int]
"""What shows a log unchanged: inode, size, mtime and ctime (ns) of the log, then the
same of its sidecar index (zeros when it has none)."""


@dataclass(frozen=True)
class _Scan:
    """One listing of ``threads/``: per file name (``.jsonl``, ``.idx``, ``.quarantine``,
    ``.run``) its ``lstat``."""

    folder: str
    stats: dict[str, os.stat_result]
    began_ns: int

    def logs(self) -> list[str]:
        return sorted(n for n in self.stats if n.endswith(".jsonl"))

    def size(self, name: str) -> int:
        st = self.stats.get(name)
        return st.st_size if st is not None else 0

    def proof(self, log: str) -> Proof:
        stem = log[: -len(".jsonl")]
        out: Proof = []
        for st in (self.stats.get(log), self.stats.get(stem + ".idx")):
            out += [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns] if st is not None else [0, 0, 0, 0]
        return out

    def racy(self, proof: Proof) -> bool:
        """Whether a file of ``proof`` changed too recently to be trusted next time."""
        limit = self.began_ns - int(RACY_SECONDS * 1e9)
        return max(proof[2], proof[3], proof[6], proof[7]) >= limit


def scan(folder: str) -> _Scan:
    """``lstat`` of every file of ``folder`` a listing needs, from one ``os.scandir``
    (a file removed meanwhile is left out)."""
    began = time.time_ns()
    stats: dict[str, os.stat_result] = {}
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(_SUFFIXES):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat_module.S_ISREG(st.st_mode) or entry.name.endswith(".jsonl"):
                        stats[entry.name] = st
    except FileNotFoundError:
        pass
    return _Scan(folder, stats, began)


def load(path: str) -> dict[str, tuple[Proof, dict[str, Any]]]:
    """The cache at ``path``: per log file name, its proof and row; empty if the file is
    missing, damaged, or of another version or shape."""
    try:
        data = files.read_whole(path)
    except OSError:
        return {}
    rec = framing.parse_line(data[:-1]) if data.endswith(b"\n") else None
    if not rec or rec.get("t") != "listing" or rec.get("v") != LISTING_VERSION:
        return {}
    names, proofs, rows = rec.get("names"), rec.get("proofs"), rec.get("rows")
    if not (type(names) is list and type(proofs) is list and type(rows) is list
            and len(names) == len(proofs) == len(rows)):
        return {}
    out: dict[str, tuple[Proof, dict[str, Any]]] = {}
    for name, proof, row in zip(names, proofs, rows):
        if (type(name) is str and type(proof) is list and len(proof) == 8
                and all(type(x) is int for x in proof) and _valid_row(row)):
            out[name] = (proof, row)
    return out


def _valid_row(row: Any) -> bool:
    """Whether a cached row has the shape :func:`row_of` gives (a hand-edited or foreign
    cache must not make a listing fail)."""
    if type(row) is not dict:
        return False
    tid, status = row.get("thread_id"), row.get("status")
    return (
        (tid is None or type(tid) is str) and type(status) is str
        and type(row.get("checkpoints")) is int
        and all(row.get(k) is None or type(row.get(k)) is str
                for k in ("created_at", "updated_at", "latest", "problem"))
        and all(type(row.get(k)) is list and all(type(x) is str for x in row[k])
                for k in ("next", "waiting_for"))
    )


def row_of(summary: ThreadSummary) -> dict[str, Any]:
    """What the cache keeps of a summary: all but the path, the size and the run (those
    are read again at each listing), with the status it has when no run holds it."""
    status = summary.status
    if status == RUNNING:
        status = thread_status(summary.next, summary.waiting_for) if summary.latest is not None else EMPTY
    return {
        "thread_id": summary.thread_id, "status": status, "checkpoints": summary.checkpoints,
        "created_at": summary.created_at, "updated_at": summary.updated_at,
        "latest": summary.latest, "next": list(summary.next),
        "waiting_for": list(summary.waiting_for), "problem": summary.problem,
    }


def summary_from(row: Mapping[str, Any], store: Store, name: str, seen: _Scan) -> ThreadSummary:
    """A cached row as the summary the uncached path gives now: its size from the files'
    sizes, and who runs it if a live run holds the thread (``running``, unless damaged).
    As in :func:`~.threads.summarize_thread`, the run is looked up for a thread whose
    latest checkpoint was read (``latest`` is set) or that has none yet (``empty``), and
    only there."""
    folder = store.threads_path
    tid = row["thread_id"]
    stem = name[: -len(".jsonl")]
    if tid is None:  # a log whose header cannot be read: its own size only
        size = seen.size(name)
    else:
        size = seen.size(name) + seen.size(stem + ".idx") + seen.size(stem + ".quarantine")
    status, run = row["status"], None
    if ((row["latest"] is not None or status == EMPTY) and tid is not None
            and seen.size(stem + ".run") > 0):
        run = live_run(LogPaths(folder, stem, store.temp_path), tid)  # empty run file: no holder
        if run is not None and status != DAMAGED:
            status = RUNNING
    return ThreadSummary(
        thread_id=tid, path=os.path.join(folder, name), status=status, checkpoints=row["checkpoints"],
        created_at=row["created_at"], updated_at=row["updated_at"], size=size,
        latest=row["latest"], next=tuple(row["next"]), waiting_for=tuple(row["waiting_for"]),
        problem=row["problem"], run=run,
    )


def listed_summaries(
    store: Store,
    summarise: Callable[[list[ThreadFile]], Iterable[ThreadSummary]],
) -> list[ThreadSummary]:
    """Every thread's summary, in file name order, from the cache where a log did not
    change since the last listing and from ``summarise`` for the others; then the cache
    written again if it was out of date (never an error: see the module's docstring).

    Args:
        store: The store (opened read-only is enough).
        summarise: Given the logs to read, yields the summary of each, in order (the
            uncached path: :func:`~.threads.summary_of` each).
    """
    seen = scan(store.threads_path)
    names = seen.logs()
    cache_path = os.path.join(store.path, LISTING)
    cached = load(cache_path) if len(names) <= MAX_ROWS else {}
    proofs = {name: seen.proof(name) for name in names}
    rows: dict[str, ThreadSummary] = {}
    stale: list[ThreadFile] = []
    for name in names:
        hit = cached.get(name)
        if hit is not None and hit[0] == proofs[name]:
            rows[name] = summary_from(hit[1], store, name, seen)
        else:
            entry = _log_file(store, name, hit, proofs[name])
            if entry is not None:
                stale.append(entry)
    fresh: dict[str, dict[str, Any]] = {}
    for entry, summary in zip(stale, summarise(stale)):
        name = os.path.basename(entry.path)
        rows[name] = summary
        fresh[name] = row_of(summary)
    listed = [n for n in names if n in rows]
    if len(names) <= MAX_ROWS and (fresh or len(rows) - len(fresh) != len(cached)):
        _save(store, cache_path, listed, proofs, cached, fresh, seen)  # rows made, or rows gone
    holders = {n for n in seen.stats if not n.endswith(".run") or seen.size(n) > 0}  # empty: no holder
    return [rows[n] for n in listed] + logless_runs(store, holders)


def _log_file(
    store: Store, name: str, hit: tuple[Proof, dict[str, Any]] | None, proof: Proof
) -> ThreadFile | None:
    """A log to summarise, with its thread id: the cached row's while the file is the
    same (its inode: a header never changes in place) and the id is the one the name
    is made from, else read from its header; ``None`` if the log is gone."""
    path = os.path.join(store.threads_path, name)
    tid = hit[1]["thread_id"] if hit is not None else None
    if (hit is not None and tid is not None and hit[0][0] == proof[0]
            and thread_file_stem(tid) + ".jsonl" == name):
        return ThreadFile(path, tid, None)
    try:
        return ThreadFile(path, store.thread_id_at(path), None)
    except FileNotFoundError:
        return None
    except JsonlCheckpointError as exc:
        return ThreadFile(path, None, exc)


def _save(
    store: Store,
    path: str,
    names: list[str],
    proofs: Mapping[str, Proof],
    cached: Mapping[str, tuple[Proof, dict[str, Any]]],
    fresh: Mapping[str, dict[str, Any]],
    seen: _Scan,
) -> None:
    """Write the cache: the rows just made (unless racy or large) and the cached rows
    still valid."""
    keep_names: list[str] = []
    keep_proofs: list[Proof] = []
    keep_rows: list[dict[str, Any]] = []
    for name in names:
        proof = proofs[name]
        row = fresh.get(name)
        if row is None:
            row = cached[name][1]
        elif seen.racy(proof) or len(orjson.dumps(row)) > MAX_ROW_BYTES:
            continue
        keep_names.append(name)
        keep_proofs.append(proof)
        keep_rows.append(row)
    line = framing.frame({"t": "listing", "v": LISTING_VERSION, "names": keep_names,
                          "proofs": keep_proofs, "rows": keep_rows})
    temp = os.path.join(store.temp_path, f"{LISTING}.{files.owner()}")
    try:
        files.replace_derived(path, temp, line)
    except OSError:
        pass  # a read-only file system, another user's store: list without the cache
