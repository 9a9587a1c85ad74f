"""Whether a thread on the target is the thread on the source, decoded.

Compared per checkpoint (every namespace): parent link, the checkpoint as LangGraph
loads it (values, versions, versions seen, time), metadata, and pending writes in
order. Values are compared as Python objects (messages by their fields), not as
bytes: each saver encodes differently. A ``DeltaChannel``'s value is rebuilt from its
snapshots and the pending writes between them, both compared here, so equal tuples
rebuild equal values (a snapshot one saver hands out at later checkpoints of the same
version, and the other only where it was written, is not a difference). A difference
is one line naming the checkpoint and what differs; values are never printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from .endpoints import Endpoint, thread_tuples
from .versions import widen_checkpoint, width_of

#: Parts of a stored checkpoint compared (``pending_sends`` and others some savers add
#: or drop are not LangGraph's to load).
CHECKPOINT_KEYS = ("id", "ts", "channel_values", "channel_versions", "versions_seen")


def compare_threads(
    src: Endpoint, dst: Endpoint, thread_id: str, source_tuples: Sequence[CheckpointTuple] | None = None,
    *, width: int | None = None,
) -> list[str]:
    """Differences between a thread on ``src`` and on ``dst`` (none: equal).

    Args:
        src: The source.
        dst: The target.
        thread_id: The thread.
        source_tuples: The source's checkpoints, if already read (oldest first).
        width: The width the copy widened versions to (default: the target's own).
    """
    width = width_of(dst.saver) if width is None else width
    theirs = list(source_tuples) if source_tuples is not None else thread_tuples(src, thread_id)
    ours = {_where(t): t for t in thread_tuples(dst, thread_id)}
    found: list[str] = []
    for tup in theirs:
        ns, cid = _where(tup)
        copy = ours.pop((ns, cid), None)
        at = f"checkpoint {cid}" + (f" (namespace {ns})" if ns else "")
        if copy is None:
            found.append(f"{at}: missing on the target")
            continue
        found += [f"{at}: {d}" for d in compare_tuples(tup, copy, width=width)]
    for ns, cid in sorted(ours):
        found.append(f"checkpoint {cid}" + (f" (namespace {ns})" if ns else "") + ": on the target only")
    return found


def compare_tuples(a: CheckpointTuple, b: CheckpointTuple, *, width: int = 0) -> list[str]:
    """What differs between two tuples of one checkpoint (names of parts, no values);
    ``a``'s versions are widened to ``width`` first (see :mod:`.versions`)."""
    a = a._replace(checkpoint=widen_checkpoint(a.checkpoint, width))  # type: ignore[arg-type]
    out = []
    if _parent(a) != _parent(b):
        out.append(f"parent {_parent(b)} on the target, {_parent(a)} on the source")
    for key in CHECKPOINT_KEYS:
        va: Any = dict(a.checkpoint).get(key)
        vb: Any = dict(b.checkpoint).get(key)
        if key == "channel_values":
            versions = a.checkpoint.get("channel_versions") or {}
            if versions == b.checkpoint.get("channel_versions"):
                va, vb = _without_delta_asymmetry(va or {}, vb or {})
            out += [f"value of channel {ch!r} differs" for ch in _differing(va or {}, vb or {})]
        elif not _same(va, vb):
            out.append(f"{key} differs")
    if not _same(dict(a.metadata or {}), dict(b.metadata or {})):
        keys = _differing(dict(a.metadata or {}), dict(b.metadata or {}))
        out.append(f"metadata differs ({', '.join(map(str, keys))})")
    wa, wb = list(a.pending_writes or []), list(b.pending_writes or [])
    if len(wa) != len(wb):
        out.append(f"{len(wb)} pending write(s) on the target, {len(wa)} on the source")
    elif not all(x[0] == y[0] and x[1] == y[1] and _same(x[2], y[2]) for x, y in zip(wa, wb)):
        out.append("pending writes differ (task, channel, value or order)")
    return out


def _without_delta_asymmetry(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values, less a DeltaChannel's snapshot held on one side only.

    A saver that keeps values by checkpoint (``SqliteSaver``) holds a ``_DeltaSnapshot``
    only at the checkpoint that wrote it; one that keeps them by version (ours,
    ``PostgresSaver``, ``InMemorySaver``) hands it out at every later checkpoint with
    the same version. With equal versions the value LangGraph loads is the same either
    way (the other side rebuilds it from that snapshot and no writes in between).
    """
    a, b = dict(a), dict(b)
    for ch in set(a) ^ set(b):
        held = a.get(ch, b.get(ch))
        if isinstance(held, _DeltaSnapshot):
            a.pop(ch, None)
            b.pop(ch, None)
    return a, b


def _where(tup: CheckpointTuple) -> tuple[str, str]:
    c = tup.config["configurable"]
    return c.get("checkpoint_ns", ""), c["checkpoint_id"]


def _parent(tup: CheckpointTuple) -> str | None:
    return tup.parent_config["configurable"].get("checkpoint_id") if tup.parent_config else None


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if k not in a or k not in b or not _same(a[k], b[k]))


def _same(a: Any, b: Any) -> bool:
    """Equal as decoded values: tuples and lists alike (JSON has no tuple)."""
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # values whose == raises (arrays): compare their text
        return repr(a) == repr(b)
