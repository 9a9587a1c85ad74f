"""Text in a terminal's columns: how many cells a string takes, cutting it to a width,
and tables that line up. Pure.

A terminal gives an East Asian wide or fullwidth character two cells and a combining
mark (or a zero-width format character, such as a joiner) none, so columns padded by
``len`` shift under a CJK thread id. The widths come from the standard library's
``unicodedata`` (the Unicode database of the running Python): the trade-off against
the ``wcwidth`` package is that emoji presentation sequences and ambiguous-width
characters are counted as one cell, which is what most terminals do for the latter and
what ids rarely hold of the former; no dependency is added for it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

#: Cells an id (a thread's, a tool call's) may take in a table: a UUID (36) fits whole,
#: a longer id is cut with an ellipsis (``--json`` keeps every id whole).
ID_WIDTH = 40
ELLIPSIS = "…"
#: Unicode categories that take no cell: nonspacing and enclosing marks, format characters.
_ZERO_WIDTH = frozenset({"Mn", "Me", "Cf"})


def char_width(ch: str) -> int:
    """Cells one character takes: 0, 1 or 2."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in _ZERO_WIDTH:
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Cells ``text`` takes in a terminal."""
    if text.isascii():
        return len(text)  # the common case, without a lookup per character
    return sum(char_width(ch) for ch in text)


def clip(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` cells, else as much of it as fits with ``…``
    after it (a letter is kept or cut with its combining marks).

    Args:
        text: What to show.
        width: The cells it may take (1 or more).
    """
    if display_width(text) <= width:
        return text
    room = width - display_width(ELLIPSIS)
    kept, used = [], 0
    for cluster in _clusters(text):
        w = display_width(cluster)
        if used + w > room:
            break
        kept.append(cluster)
        used += w
    return "".join(kept) + ELLIPSIS


def _clusters(text: str) -> list[str]:
    """``text`` as characters each followed by the zero-width ones after it."""
    out: list[str] = []
    for ch in text:
        if out and char_width(ch) == 0:
            out[-1] += ch
        else:
            out.append(ch)
    return out


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` cells."""
    return text + " " * max(0, width - display_width(text))


def as_printed(text: str, encoding: str) -> str:
    """``text`` as a stream of ``encoding`` with ``errors="backslashreplace"`` prints it
    (what a table must be measured on: ``\\u65e5`` takes six cells, not two)."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding Python does not know: the stream fails anyway
        pass
    return text


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows in columns aligned by cells under a header line (two spaces between
    columns; the last column is not padded, trailing spaces are dropped)."""
    widths = [max([display_width(h)] + [display_width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = []
    for row in [list(headers), *rows]:
        cells = [pad(c, w) for c, w in zip(row[:-1], widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return lines
