"""``--json`` output: one JSON document, or one value a line for a stream, as orjson
writes it, with every non-ASCII character escaped where stdout cannot take it (values
that are not JSON are shown as :func:`~..inspection.values.jsonable` makes them)."""

from __future__ import annotations

import codecs
import re
import sys
from typing import Any

import orjson

from ..inspection.values import jsonable

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _json_text(raw: bytes) -> str:
    """orjson's UTF-8 as text for stdout: as it is where stdout takes any character,
    else with every non-ASCII character as a JSON escape (still the same JSON)."""
    text = raw.decode()
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        utf = codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        utf = False
    if utf or text.isascii():
        return text
    return _NON_ASCII.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: a surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def print_json(data: Any, *, plain: bool = False) -> None:
    """Print one JSON document (``--json``); values that are not JSON are made so.

    Args:
        data: What to print.
        plain: ``data`` is JSON already (dicts with str keys, lists, str, 64-bit ints,
            finite floats, bools, ``None``), as ``threads`` rows are: printed without
            :func:`~..inspection.values.jsonable`'s walk (about a tenth of a second for
            10,000 rows), the same bytes.
    """
    out = data if plain else jsonable(data)
    sys.stdout.write(_json_text(orjson.dumps(out, option=orjson.OPT_INDENT_2)) + "\n")


def print_json_line(data: Any) -> None:
    """Print one JSON value on one line and flush (a stream: ``tail --json``)."""
    sys.stdout.write(_json_text(orjson.dumps(jsonable(data))) + "\n")
    sys.stdout.flush()
