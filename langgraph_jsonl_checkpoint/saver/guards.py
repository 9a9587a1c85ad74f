"""Writes the saver refuses before they reach the log: a deleted thread brought back,
two runs advancing one thread at once.

Each check runs under the thread's writer lock, with the index current, and raises
before anything is written: the caller's step is not acknowledged and the thread is as
it was.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..disk.index import ThreadIndex
from ..disk.log import ThreadLog
from ..disk.paths import thread_option
from ..errors import ConcurrentRunError, ThreadDeletedError
from ..values.codec import ValueCodec
from .runs import NEW_THREAD


def refuse_deleted(
    log: ThreadLog, idx: ThreadIndex, ns: str, *, new: str | None = None, named: str | None = None,
    archived: Callable[[], str | None] = lambda: None,
) -> None:
    """A late write of a deleted thread must not bring it back: a checkpoint of it put
    again (``new``), writes for one of its checkpoints, or a checkpoint continuing one
    (``named``: the checkpoint a write names as there already, the parent of a put; the
    next save of a run still going when the thread was deleted carries the whole state,
    the deleted turns included). A checkpoint with no parent (a new run, or one put back
    from a backup) starts the thread again, whatever its id; an archived log restored
    has its checkpoints again. ``archived``
    gives the thread's newest archive file, if a sweep archived it: the error then says
    so, and how to bring it back.

    Raises:
        ThreadDeletedError: The write is for, or continues, a deleted checkpoint.
    """
    if log.exists() and (named is None or idx.entry(ns, named) is not None):
        return  # (the tombstone is read only when a write names what the log lacks)
    upto = log.deleted_up_to()
    if upto is None:
        return
    # A checkpoint with no parent is a thread started again, whatever its own id (a new
    # run's, or one put back from a backup or another thread): only what continues a
    # deleted checkpoint, or writes for one, is late.
    put_again = new if named is not None else None
    gone = [cp for cp in (put_again, named) if cp is not None and cp <= upto and idx.entry(ns, cp) is None]
    late = gone[0] if gone else None
    if late is not None:
        what = "a checkpoint continuing its checkpoint" if late == named and new is not None else (
            "a write for its checkpoint")
        archive = archived()
        if archive is not None:
            raise ThreadDeletedError(
                f"thread {log.thread_id!r} was archived by a retention sweep (into {archive}); "
                f"refusing {what} {late}, which is from before the archiving (a run the sweep did "
                "not wait for, its concurrent_runs being 'allow' or 'unchecked', or a config kept "
                "from before it, say from get_state_history, given to update_state or invoke). "
                f"{_bring_back(log.thread_id, archive)}, then run this again."
            )
        raise ThreadDeletedError(
            f"thread {log.thread_id!r} was deleted; refusing {what} {late}, which is from "
            "before delete_thread (a run still saving when the thread was deleted, or a config "
            "kept from before it, say from get_state_history, given to update_state or "
            "invoke). To use this thread id again, pass a config without a checkpoint_id "
            "(the thread's latest state, or a new run)."
        )


def _bring_back(thread_id: str, archive: str) -> str:
    """How to restore an archived thread (its archive file at ``archive``), as a clause."""
    store = os.path.dirname(os.path.dirname(archive))
    return (f"Bring it back with `langgraph-jsonl restore {shlex.quote(store)} "
            f"{thread_option(thread_id)}` (or saver.restore({thread_id!r}))")


#: The task id and channel of the answer ``Command(resume=...)`` writes before a run goes on.
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
RESUME = "__resume__"


def refuse_resume_of_deleted(
    log: ThreadLog, idx: ThreadIndex, ns: str, task_id: str, writes: Sequence[Sequence[Any]], *,
    archived: Callable[[], str | None] = lambda: None,
) -> None:
    """A ``Command(resume=...)`` for a thread deleted or archived while it waited at an
    interrupt: LangGraph finds no checkpoint, writes the answer for a checkpoint that
    was never saved and runs the graph from its start with no input (the answer is
    dropped; a node then fails on the state it expected, or runs on an empty one).
    Refused when the answer is written and the thread's log is gone, its tombstone left
    by ``delete_thread`` or a sweep; a thread never written, or written anew since, is
    not refused.

    ``writes`` are the call's encoded writes (``(idx, channel, ...)``); a write of another
    task returns at the first comparison, before they are looked at (``put_writes``'s hot path).

    Raises:
        ThreadDeletedError: The answer is for a deleted or archived thread; nothing was written.
    """
    if ns or task_id != NULL_TASK_ID or all(w[1] != RESUME for w in writes) or idx.latest_id(ns) is not None:
        return
    if log.exists() or log.deleted_up_to() is None:
        return
    answer = (f"thread {log.thread_id!r} has no checkpoint to resume, so the answer "
              "Command(resume=...) gives has nothing to answer")
    archive = archived()
    if archive is not None:
        raise ThreadDeletedError(
            f"{answer}: a retention sweep archived the thread (into {archive}) while it waited "
            f"at its interrupt. {_bring_back(log.thread_id, archive)}, then resume again; "
            "nothing was written."
        )
    raise ThreadDeletedError(
        f"{answer}: the thread was deleted (by delete_thread, or by a retention sweep with strategy "
        f"'delete'; its log was {log.path}) while it waited at its interrupt, and its checkpoints "
        "are gone. Nothing was written. To use this thread id again, start it anew with new input "
        "(graph.invoke({...}, config)); a thread kept past its TTL needs pinning or the strategy "
        "'archive'."
    )


#: How runs are kept from overlapping, said by every ``ConcurrentRunError`` (true whatever
#: the mode of the saver that raises it: the other writer is the one not held back).
OVERLAP_ADVICE = (
    "Runs never overlap when every saver that writes this store, in every process, is "
    "opened with concurrent_runs='refuse' (the default) or 'wait'; one opened with 'allow' "
    "or 'unchecked', or a script's own put, is not held back."
)


def refuse_other_run(
    codec: ValueCodec,
    log: ThreadLog,
    idx: ThreadIndex,
    ns: str,
    parent: str | None,
    metadata: Mapping[str, Any],
) -> None:
    """Refuse a put that would silently fork a thread another run (told by the
    ``run_id`` in metadata) is advancing.

    Works when runs carry a ``run_id`` in their metadata (LangGraph copies it from
    ``config["configurable"]["run_id"]`` or ``config["metadata"]["run_id"]``; LangGraph
    Platform sets it). A put is refused when its parent was written by the same run (so
    it is not the first step of a deliberate fork or time travel) and a newer checkpoint
    of another run has appeared since: the thread moved on underneath this run.

    Raises:
        ConcurrentRunError: That happened; nothing was written.
    """
    run_id = codec.peek(metadata).get("run_id")
    latest = idx.latest_id(ns)
    if run_id is None or parent is None or latest is None or latest <= parent:
        return
    by_id = idx.checkpoints.get(ns, {})
    if parent not in by_id:
        return
    mine = codec.peek(by_id[parent].metadata).get("run_id")
    other = codec.peek(by_id[latest].metadata).get("run_id")
    if mine == run_id and other is not None and other != run_id:
        raise ConcurrentRunError(
            f"thread {log.thread_id!r}: run {run_id} tried to continue from checkpoint "
            f"{parent}, but run {other} has written a newer checkpoint ({latest}) to "
            "the same thread meanwhile. Two runs must not advance one thread at once; "
            "nothing was written for this step. Retry once the other run is done "
            f"(graph.invoke(None, config) resumes from the latest checkpoint). {OVERLAP_ADVICE}"
        )


def refuse_moved_head(log: ThreadLog, idx: ThreadIndex, ns: str, parent: str | None, expected: Any) -> None:
    """Refuse a run's put when the head it continues from is no longer the head.

    Args:
        expected: What :class:`~.runs.RunTracker` knows of this run: the checkpoint it
            read as the latest or last wrote (or that it found the namespace empty);
            ``None`` when the run is not checked (time travel, no run identity, or
            ``concurrent_runs="unchecked"``).

    Raises:
        ConcurrentRunError: Another run wrote to the thread meanwhile; nothing was written.
    """
    if expected is None:
        return
    latest = idx.latest_id(ns)
    if expected is NEW_THREAD:
        moved = parent is None and latest is not None
    else:
        moved = parent == expected and latest is not None and latest != parent
    if moved:
        raise ConcurrentRunError(
            f"thread {log.thread_id!r} (file {log.path}): this run continues from "
            f"checkpoint {parent or '(none: a new thread)'}, but another run has written "
            f"checkpoint {latest} to the same thread meanwhile. Two runs must not advance "
            "one thread at once; nothing was written for this step. Retry once the "
            "other run is done (graph.invoke(None, config) resumes from the latest "
            f"checkpoint). {OVERLAP_ADVICE}"
        )
