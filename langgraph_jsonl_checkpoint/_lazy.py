"""Public names imported on first use (PEP 562), for a package's ``__init__``.

Importing the package, or one of its light parts, then imports no module that only a
lazily named object needs (LangGraph and LangChain take about a second to import, which
``langgraph-jsonl threads`` served from its cache does without). Used as::

    __getattr__, __dir__ = lazy_names(__name__, {"JsonlSaver": ".saver.jsonl_saver"})

with ``if TYPE_CHECKING:`` imports of the same names beside it, for type checkers and the
API reference. Imports nothing of the package: any layer may use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` for ``names``.

    Args:
        package: The package's ``__name__``.
        names: Each lazy public name, with the module defining it (relative to
            ``package``, e.g. ``".saver.jsonl_saver"``).

    Returns:
        ``__getattr__`` imports a name's module on its first use and keeps the value in
        the package (later uses do not call it); it raises ``AttributeError`` for any
        other name. ``__dir__`` lists the package's names and its ``__all__``.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        mod = sys.modules[package]
        return sorted({*vars(mod), *getattr(mod, "__all__", ())})

    return __getattr__, __dir__
