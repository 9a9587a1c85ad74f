"""Times as people give them (``2h``, ``3d``, ``2026-11-30``) and as checkpoints store
them (ISO 8601 ``ts``). Pure.

A bare date or a time without a zone means the local time of the machine, as a
person typing it means; stored times always carry their zone (LangGraph writes UTC).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A point in time from ``30m``, ``2h``, ``7d``, ``1w`` (that long ago) or an ISO
    8601 date or date and time.

    Args:
        text: What the person wrote.
        now: The present (default: the clock), for relative times.

    Returns:
        An aware datetime.

    Raises:
        ValueError: ``text`` is neither (the message says what is accepted).
    """
    now = now or datetime.now(UTC)
    match = _RELATIVE.match(text)
    if match:
        return now - timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"cannot read {text!r} as a time: give a duration back from now (30m, 2h, 7d, 1w) "
            "or an ISO 8601 date or time (2026-11-30, 2026-11-30T14:00)"
        ) from None
    return when if when.tzinfo is not None else when.astimezone()


def parse_stored(ts: str | None) -> datetime | None:
    """A stored ``ts`` as an aware datetime (``None`` if missing or unreadable)."""
    if not ts:
        return None
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def at_or_after(ts: str | None, since: datetime | None) -> bool:
    """Whether a stored time is at or after ``since`` (always, without ``since``; never
    for a missing time when there is one)."""
    if since is None:
        return True
    when = parse_stored(ts)
    return when is not None and when >= since


def shown_time(ts: str | None) -> str:
    """A stored time for a table: UTC, to the second (``2026-11-30 10:14:07``)."""
    when = parse_stored(ts)
    if when is None:
        return "-"
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(start: str | None, end: str | None) -> float | None:
    """Seconds from one stored time to another (``None`` if either is missing)."""
    a, b = parse_stored(start), parse_stored(end)
    if a is None or b is None:
        return None
    return (b - a).total_seconds()
