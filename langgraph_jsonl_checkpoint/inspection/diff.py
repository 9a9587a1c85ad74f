"""What changed between two states, channel by channel. Pure.

A conversation is compared by message id (added, removed, edited: same id, other
content), the way LangGraph's ``add_messages`` treats it; any other value as JSON
(:func:`~.values.jsonable`), key by key and item by item, each change with its path
(``["todo"][2]["done"]``). The trade-off: lists that are not conversations are compared
by position, so an item inserted at the front shows as every later item changed (as a
line diff would show it); messages never are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .conversation import Utterance, is_message_list, utterance
from .values import jsonable

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class ValueChange:
    """One change inside a channel's value.

    Attributes:
        kind: ``added``, ``removed`` or ``changed``.
        path: Where, from the channel's value (``""``: the value itself).
        old: The value before (JSON form; ``None`` when added).
        new: The value after (JSON form; ``None`` when removed).
    """

    kind: str
    path: str
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class MessageChange:
    """One message added, removed or edited.

    Attributes:
        kind: ``added``, ``removed`` or ``changed`` (same id, other content).
        message_id: Its id.
        old: It before, for reading (``None`` when added).
        new: It after (``None`` when removed).
    """

    kind: str
    message_id: str | None
    old: Utterance | None = None
    new: Utterance | None = None


@dataclass(frozen=True)
class ChannelDiff:
    """What changed in one channel.

    Attributes:
        channel: The channel.
        kind: ``added`` / ``removed`` (the channel has no value on one side) or ``changed``.
        messages: For a conversation, the messages added, removed or edited.
        changes: For any other value, the changes inside it.
    """

    channel: str
    kind: str
    messages: tuple[MessageChange, ...] = field(default=())
    changes: tuple[ValueChange, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data (an item of ``diff --json``'s ``channels``)."""
        return {
            "channel": self.channel,
            "kind": self.kind,
            "messages": [
                {"kind": m.kind, "id": m.message_id,
                 "old": m.old.as_json() if m.old else None, "new": m.new.as_json() if m.new else None}
                for m in self.messages
            ],
            "changes": [{"kind": c.kind, "path": c.path, "old": c.old, "new": c.new} for c in self.changes],
        }


def diff_states(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ChannelDiff]:
    """The channels whose values differ between two states, by channel name.

    Args:
        old: Channel values of the earlier state.
        new: Channel values of the later state.
    """
    out: list[ChannelDiff] = []
    for channel in sorted(set(old) | set(new)):
        a, b = old.get(channel, _MISSING), new.get(channel, _MISSING)
        kind = ADDED if a is _MISSING else REMOVED if b is _MISSING else CHANGED
        if is_message_list(a) or is_message_list(b):
            messages = diff_messages(a if isinstance(a, list) else [], b if isinstance(b, list) else [])
            if messages or kind != CHANGED:
                out.append(ChannelDiff(channel, kind, messages=tuple(messages)))
            continue
        ja = None if a is _MISSING else jsonable(a)
        jb = None if b is _MISSING else jsonable(b)
        if kind == CHANGED and _same(ja, jb):
            continue
        changes = diff_json(ja, jb) if kind == CHANGED else [ValueChange(kind, "", ja, jb)]
        out.append(ChannelDiff(channel, kind, changes=tuple(changes)))
    return out


def diff_messages(old: list[Any], new: list[Any]) -> list[MessageChange]:
    """Messages added, removed and edited (by id; messages without one by position),
    in the order of the later conversation, removals last."""
    def keyed(messages: list[Any]) -> dict[str, Any]:
        return {(getattr(m, "id", None) or f"#{i}"): m for i, m in enumerate(messages)}

    before, after = keyed(old), keyed(new)
    out: list[MessageChange] = []
    for key, message in after.items():
        if key not in before:
            out.append(MessageChange(ADDED, getattr(message, "id", None), None, utterance(message)))
        elif not _same(jsonable(before[key]), jsonable(message)):
            out.append(MessageChange(CHANGED, getattr(message, "id", None),
                                     utterance(before[key]), utterance(message)))
    for key, message in before.items():
        if key not in after:
            out.append(MessageChange(REMOVED, getattr(message, "id", None), utterance(message), None))
    return out


def diff_json(old: Any, new: Any, path: str = "") -> list[ValueChange]:
    """Changes between two JSON values: dicts key by key, lists item by item, anything
    else replaced whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[ValueChange] = []
        for key in list(old) + [k for k in new if k not in old]:
            where = f"{path}[{orjson.dumps(key).decode()}]"
            if key not in new:
                out.append(ValueChange(REMOVED, where, old[key], None))
            elif key not in old:
                out.append(ValueChange(ADDED, where, None, new[key]))
            else:
                out.extend(diff_json(old[key], new[key], where))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(max(len(old), len(new))):
            where = f"{path}[{i}]"
            if i >= len(new):
                out.append(ValueChange(REMOVED, where, old[i], None))
            elif i >= len(old):
                out.append(ValueChange(ADDED, where, None, new[i]))
            else:
                out.extend(diff_json(old[i], new[i], where))
        return out
    return [] if _same(old, new) else [ValueChange(CHANGED, path, old, new)]


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (``1`` and ``1.0`` differ, as they would in a log)."""
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)


_MISSING = object()
