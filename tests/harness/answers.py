"""What a saver serves, as comparable data, and ``InMemorySaver`` models of the calls it lacks.

- ``answers``: everything a saver serves for a thread (``list`` over every namespace,
  and the latest checkpoint of each), so the answers of two savers compare with ``==``;
  ``diff_answers`` says briefly how two differ; ``normalize`` turns one checkpoint
  tuple into plain data.
- ``mem_copy_thread``, ``mem_prune_keep_latest``, ``mem_delete_for_runs``: ``copy_thread``,
  ``prune`` (keep latest) and ``delete_for_runs`` done on an ``InMemorySaver`` (it has
  none of them) the way ``JsonlSaver`` does them.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from tests.harness.checkpoints import all_namespaces, config

# ---------------------------------------------------------------------------
# comparable answers
# ---------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if hasattr(value, "model_dump"):
        return (type(value).__name__, _plain(value.model_dump()))
    return value


def normalize(tup: CheckpointTuple | None) -> Any:
    """A checkpoint tuple as plain data, for ``==`` between savers."""
    if tup is None:
        return None
    return {
        "config": _plain(tup.config),
        "checkpoint": _plain(dict(tup.checkpoint)),
        "metadata": _plain(dict(tup.metadata)),
        "parent_config": _plain(tup.parent_config),
        "pending_writes": [_plain(tuple(w)) for w in tup.pending_writes or []],
    }


def answers(saver: Any, thread_id: str) -> dict:
    """Everything a saver serves for a thread: ``list`` (every namespace) keyed by
    (namespace, checkpoint id), plus the latest checkpoint of each namespace.

    Tuples are kept as they come (``CheckpointTuple`` compares with ``==``; messages
    compare by value), so answers of two savers compare directly.
    """
    listed = {}
    for t in saver.list(all_namespaces(thread_id)):
        key = (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
        if key in listed:
            raise AssertionError(f"list() returned {key} twice")
        listed[key] = t
    latest = {ns: saver.get_tuple(config(thread_id, ns)) for ns in sorted({k[0] for k in listed})}
    return {"list": listed, "latest": latest}


def diff_answers(got: dict, want: dict) -> str:
    """A short description of how two ``answers`` differ ('' if equal)."""
    if got == want:
        return ""
    g, w = set(got["list"]), set(want["list"])
    parts = []
    if g - w:
        parts.append(f"served but not acknowledged: {sorted(g - w)}")
    if w - g:
        parts.append(f"acknowledged but not served: {sorted(w - g)}")
    for key in sorted(g & w):
        if got["list"][key] != want["list"][key]:
            parts.append(
                f"{key} differs:\n  got  {normalize(got['list'][key])}\n  want {normalize(want['list'][key])}"
            )
            break
    if got["latest"] != want["latest"]:
        parts.append("latest differs")
    return "; ".join(parts) or "differs"


# ---------------------------------------------------------------------------
# InMemorySaver model of copy_thread / prune / delete_for_runs (InMemorySaver has none)
# ---------------------------------------------------------------------------


def mem_copy_thread(mem: InMemorySaver, source: str, target: str) -> None:
    """Copy every checkpoint, write and blob of ``source`` to ``target``."""
    for ns, by_id in list(mem.storage.get(source, {}).items()):
        for cid, saved in by_id.items():
            mem.storage[target][ns][cid] = saved
    for (tid, ns, cid), slots in list(mem.writes.items()):
        if tid == source:
            mem.writes[(target, ns, cid)] = dict(slots)
    for (tid, ns, ch, ver), blob in list(mem.blobs.items()):
        if tid == source:
            mem.blobs[(target, ns, ch, ver)] = blob


def mem_prune_keep_latest(mem: InMemorySaver, thread_id: str) -> None:
    """Keep the latest checkpoint per namespace and its writes; drop everything else."""
    keep = set()
    for ns, by_id in mem.storage.get(thread_id, {}).items():
        if by_id:
            latest = max(by_id)
            keep.add((ns, latest))
            mem.storage[thread_id][ns] = {latest: by_id[latest]}
    for key in list(mem.writes):
        if key[0] == thread_id and (key[1], key[2]) not in keep:
            del mem.writes[key]


def mem_delete_for_runs(mem: InMemorySaver, runs: set[str]) -> None:
    """``delete_for_runs`` on an ``InMemorySaver`` (it has none), as ``JsonlSaver`` does
    it: the runs' checkpoints go, with their writes; a thread that lost a checkpoint is
    rewritten, which also drops orphan writes; a thread left without checkpoints is
    deleted."""
    for thread in list(mem.storage):
        removed = False
        for by_id in mem.storage[thread].values():
            for cid, (_, md, _) in list(by_id.items()):
                if mem.serde.loads_typed(md).get("run_id") in runs:
                    del by_id[cid]
                    removed = True
        if not removed:
            continue
        keep = {(ns, cid) for ns, by_id in mem.storage[thread].items() for cid in by_id}
        for key in list(mem.writes):
            if key[0] == thread and (key[1], key[2]) not in keep:
                del mem.writes[key]
        if not keep:
            mem.delete_thread(thread)
