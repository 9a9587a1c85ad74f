"""The store a person probably meant when the path they gave is not one: the store the
path is inside (its ``threads/``, a log file), the one the path holds one level down
(the project folder), or one beside it with a name like it (a typo)."""

from __future__ import annotations

import difflib
import os

from ..disk.store import MARKER

#: Entries of a folder looked at for a store (a huge folder is not read whole).
LOOKED_AT = 1000


def store_near(path: str) -> str | None:
    """The store near a mistaken ``path``, written as the path was (relative or not), or
    ``None`` when there is none."""
    full = os.path.abspath(path)
    found = next((up for up in (os.path.dirname(full), os.path.dirname(os.path.dirname(full)))
                  if _is_store(up)), None)
    if found is None:
        found = next((os.path.join(full, n) for n in _names(full) if _is_store(os.path.join(full, n))), None)
    if found is None and not os.path.exists(full):
        parent, name = os.path.split(full)
        stores = [n for n in _names(parent) if n != name and _is_store(os.path.join(parent, n))]
        close = difflib.get_close_matches(name, stores, n=1, cutoff=0.75)
        found = os.path.join(parent, close[0]) if close else None
    if found is None:
        return None
    return found if os.path.isabs(path) else os.path.relpath(found)


def _is_store(path: str) -> bool:
    return os.path.isfile(os.path.join(path, MARKER))


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))[:LOOKED_AT] if os.path.isdir(folder) else []
    except OSError:
        return []
