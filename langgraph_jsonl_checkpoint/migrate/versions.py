"""Channel versions made to compare right on the target (pure).

LangGraph tells which nodes to run by comparing channel versions as strings
(``version > seen``). Each saver makes its own: ``PostgresSaver``, ``SqliteSaver`` and
``InMemorySaver`` a 32-digit counter (``"000...0012.<random>"``), ``JsonlSaver`` a
12-digit one (it keeps the width of a longer version it is given). A thread copied
from a store to PostgreSQL with its 12-digit versions would go on there with 32-digit
ones, which sort *below* them as strings: the resumed graph would see no channel
updated and stop (found by the journal carry-over test). So versions are widened to
the target's width on the way (zeros added to the counter, the random part kept):
the order among them is unchanged, and the target's next versions sort after them.
Checkpoints added to a thread the target holds already take the width of its versions
there, narrowed if need be (only zeros are cut): a store's thread copied to SQLite and
back gets 12-digit versions again, which the values it holds are stored under.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def width_of(saver: Any) -> int:
    """The counter width of the versions ``saver`` makes (0: not a counter.random string)."""
    try:
        sample = saver.get_next_version(None, None)
    except Exception:  # a saver whose versions need a channel: leave versions alone
        return 0
    head = str(sample).split(".", 1)[0] if isinstance(sample, str) else ""
    return len(head) if head.isdigit() else 0


def widen(version: Any, width: int, *, narrow: bool = False) -> Any:
    """``version`` with its counter zero-padded to ``width`` digits (others unchanged);
    with ``narrow``, a wider one cut to ``width`` when only zeros are cut."""
    if not isinstance(version, str) or width <= 0:
        return version
    head, dot, tail = version.partition(".")
    if not head.isdigit() or len(head) == width:
        return version
    if len(head) > width:
        cut = len(head) - width
        return head[cut:] + dot + tail if narrow and not head[:cut].strip("0") else version
    return head.rjust(width, "0") + dot + tail


def widen_versions(versions: Mapping[str, Any], width: int, *, narrow: bool = False) -> dict[str, Any]:
    """Each version of a ``channel -> version`` map widened (or narrowed: :func:`widen`)."""
    return {ch: widen(v, width, narrow=narrow) for ch, v in versions.items()}


def widen_checkpoint(checkpoint: Mapping[str, Any], width: int, *, narrow: bool = False) -> dict[str, Any]:
    """A checkpoint (shallow copy) whose ``channel_versions`` and ``versions_seen`` are
    widened (or narrowed: :func:`widen`); the same checkpoint when there is nothing to do."""
    out = dict(checkpoint)
    if width <= 0:
        return out
    out["channel_versions"] = widen_versions(checkpoint.get("channel_versions") or {}, width, narrow=narrow)
    out["versions_seen"] = {node: widen_versions(seen, width, narrow=narrow)
                            for node, seen in (checkpoint.get("versions_seen") or {}).items()}
    return out


def widest(checkpoint: Mapping[str, Any]) -> int:
    """The widest counter among a checkpoint's ``channel_versions`` and ``versions_seen``
    (0: none is a counter.random string)."""
    maps = [checkpoint.get("channel_versions") or {}, *(checkpoint.get("versions_seen") or {}).values()]
    heads = [str(v).partition(".")[0] for m in maps for v in m.values() if isinstance(v, str)]
    return max((len(h) for h in heads if h.isdigit()), default=0)
