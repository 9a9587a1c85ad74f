"""A progress bar for commands that visit many threads, from ``tqdm`` when it is
installed (``pip install 'langgraph-jsonl-checkpoint[cli]'``) and the command runs on
a terminal.

The bar goes to stderr and only when both stdout and stderr are terminals: output
piped to a file or a program, or a log of stderr, never holds bar lines. Without
``tqdm`` the commands work the same, without a bar (it is an optional extra so the
package's runtime dependencies stay langgraph, langchain-core and orjson).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

# Any to mypy whether or not it is installed (pyproject.toml's [tool.mypy] overrides).
try:
    from tqdm import tqdm
except ImportError:  # the optional ``cli`` extra is not installed: no bar
    tqdm = None

T = TypeVar("T")
#: Fewer items than this get no bar (it would only flicker).
MIN_ITEMS = 20


def on_terminal() -> bool:
    """Whether stdout and stderr are both terminals."""
    return _isatty(sys.stdout) and _isatty(sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress(items: Iterable[T], *, total: int | None, what: str) -> Iterator[T]:
    """``items``, with a bar on stderr while they are consumed (see the module docstring).

    Args:
        items: What the command works through.
        total: How many there are, if known.
        what: The unit, for the bar (``"threads"``).
    """
    if tqdm is None or not on_terminal() or (total is not None and total < MIN_ITEMS):
        yield from items
        return
    bar = tqdm(items, total=total, unit=" " + what, leave=False, file=sys.stderr, dynamic_ncols=True)
    try:
        yield from bar
    finally:
        bar.close()
