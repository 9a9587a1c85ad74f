"""What a call's config says (thread, namespace, checkpoint), the defaults, the versions.

Pure helpers shared by the saver's reads and writes.
"""

from __future__ import annotations

import importlib
import math
import os
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..disk.view import IndexRebuilt
from ..errors import ConfigError

if TYPE_CHECKING:  # annotations only: the CLI reads STORE_ENV without importing LangChain
    from langchain_core.runnables import RunnableConfig

#: The environment variable naming the store, read by ``langgraph-jsonl`` and by the
#: LangGraph server factory (``langgraph_jsonl_checkpoint.server``).
STORE_ENV = "LANGGRAPH_JSONL_STORE"
#: The environment variable naming the serializer (``module:attr``, see
#: :func:`load_serde`) that ``langgraph-jsonl`` and the server factory open a store with.
SERDE_ENV = "LANGGRAPH_JSONL_SERDE"
#: What :data:`SERDE_ENV` (or ``langgraph-jsonl --serde``) says for AES encryption, with
#: the key in ``LANGGRAPH_AES_KEY``.
AES_SERDE = "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes"
#: The path that makes a temporary store, as ``SqliteSaver``'s ``":memory:"`` database.
MEMORY = ":memory:"
#: Default minimum number of checkpoint records between snapshot records.
DEFAULT_SNAPSHOT_EVERY = 64
#: Default minimum delta bytes between snapshots, relative to the last snapshot's size.
DEFAULT_SNAPSHOT_RATIO = 2.0
#: What a run may get when another is working on its thread (see ``JsonlSaver``).
CONCURRENT_RUNS = ("refuse", "wait", "allow", "unchecked", "hold")
#: The modes that store every put as given (the caller coordinates runs).
UNCHECKED_PUTS = ("unchecked", "hold")
#: Longest wait of ``concurrent_runs="wait"`` for a busy thread, in seconds.
DEFAULT_BUSY_TIMEOUT = 60.0
#: Digits of the counter in a version made by :func:`next_version`.
VERSION_WIDTH = 12

T = TypeVar("T")

#: A URL (``postgresql://...``, ``sqlite:///...``): what a database saver takes, not a store.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|file:)")  # (file:x.db: an SQLite URI, as SqliteSaver takes)


def store_path(path: Any) -> str:
    """The directory a ``JsonlSaver`` path names (``str`` or path-like).

    Raises:
        ConfigError: It is not a path, is empty, or a database URL (a newcomer's ``SqliteSaver`` or
            ``PostgresSaver`` connection string).
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        unset = " (an environment variable that is not set?)" if path is None else ""
        raise ConfigError(
            f"JsonlSaver path is {path!r}{unset}, not a directory path. Pass the directory "
            "of the store as a str or path (it is created if missing), e.g. "
            "JsonlSaver('./checkpoints')."
        )
    text: str = os.fsdecode(os.fspath(path))
    if not text:
        raise ConfigError(
            "JsonlSaver path is empty. Pass the directory of the store (it is created if "
            "missing), e.g. JsonlSaver('./checkpoints')."
        )
    if _URL.match(text):
        raise ConfigError(
            f"JsonlSaver path {text!r} is a URL: JsonlSaver stores threads in a directory, "
            "not a database. Pass a directory, e.g. JsonlSaver('./checkpoints'). To bring "
            "threads in from SqliteSaver or PostgresSaver, use `langgraph-jsonl import`; to "
            "move them on to PostgreSQL, `langgraph-jsonl copy` (docs/from-sqlite.md, "
            "docs/postgres.md)."
        )
    return text


def whole_number(name: str, value: Any, least: int) -> int:
    """``value`` if it is an ``int`` of at least ``least``.

    Raises:
        ConfigError: It is not (a string, a float, ``True``, too small), naming ``name``.
    """
    if type(value) is not int or value < least:
        raise ConfigError(f"{name} must be a whole number, {least} or more, not {value!r}")
    return value


def amount(name: str, value: Any, least: float, unit: str = "") -> float:
    """``value`` if it is a real number (``int`` or ``float``, not NaN) of at least ``least``.

    Raises:
        ConfigError: It is not, naming ``name`` (and ``unit``: "of seconds").
    """
    if (
        type(value) not in (int, float) or math.isnan(value) or value < least
    ):
        what = f"a number{' ' + unit if unit else ''}"
        raise ConfigError(f"{name} must be {what}, {least:g} or more, not {value!r}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False``.

    Raises:
        ConfigError: It is anything else (``"false"`` from an environment variable is
            a non-empty string, which Python takes for true), naming ``name``.
    """
    if type(value) is not bool:
        raise ConfigError(f"{name} must be True or False, not {value!r}")
    return value


def serializer(value: Any) -> Any:
    """``value`` if it is ``None`` or a serializer object: ``dumps_typed`` and
    ``loads_typed`` (or LangGraph's older ``dumps`` and ``loads``, which it wraps).

    Raises:
        ConfigError: It is not (a name, a class): it would fail only in the first run.
    """
    if value is None or _is_serializer(value) or (
        not isinstance(value, type) and all(callable(getattr(value, n, None)) for n in ("dumps", "loads"))
    ):
        return value
    raise ConfigError(
        f"serde must be a serializer object (with dumps_typed and loads_typed), not {value!r}: "
        "for example serde=EncryptedSerializer.from_pycryptodome_aes(), not the class or a name"
    )


def load_serde(spec: str) -> Any:
    """The serializer ``spec`` names, ``package.module:attr`` (the attribute may be
    dotted): an object with ``dumps_typed`` and ``loads_typed``, or a class or factory
    taking no argument, which is called (:data:`AES_SERDE` reads its key from
    ``LANGGRAPH_AES_KEY``).

    Raises:
        ConfigError: ``spec`` cannot be imported, does not name a serializer, or its
            factory failed.
    """
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"serializer {spec!r}: name it as module:attr, e.g. {AES_SERDE}")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"serializer {spec!r} cannot be loaded ({type(exc).__name__}: {exc}); name an "
            "importable module and an attribute of it"
        ) from exc
    if not _is_serializer(obj) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise ConfigError(
                f"serializer {spec!r}: calling {attr}() failed ({type(exc).__name__}: {exc}); name "
                "a serializer object, or a class or factory that makes one with no argument"
            ) from exc
    if not _is_serializer(obj):
        raise ConfigError(
            f"serializer {spec!r} is a {type(obj).__name__}, not a serializer: name an object "
            "with dumps_typed and loads_typed, or a class or factory taking no argument"
        )
    return obj


def _is_serializer(obj: Any) -> bool:
    return not isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in ("dumps_typed", "loads_typed")
    )


def thread_id_of(config: RunnableConfig | None, what: str) -> str:
    """The config's ``thread_id`` as a str.

    Raises:
        ConfigError: There is none (``what`` names the call, for the message).
    """
    configurable = (config or {}).get("configurable") or {}
    tid = configurable.get("thread_id")
    if tid is None or tid == "":
        given = " (the one given is empty: '')" if tid == "" else ""
        raise ConfigError(
            f"{what} needs a thread_id{given}: pass config={{'configurable': {{'thread_id': "
            "'...'}} to invoke/stream/get_state. Each thread_id is one conversation "
            "stored in its own log."
        )
    return str(tid)


def config_of(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config naming one checkpoint."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def healing(operation: Callable[[], T]) -> T:
    """Run a read or an append; if it found the sidecar index wrong (and rebuilt it from
    the log), run it once more."""
    try:
        return operation()
    except IndexRebuilt:
        return operation()


def next_version(current: str | int | None) -> str:
    """The channel version after ``current``: ``"<counter>.<random hex>"``.

    The counter is zero-padded to :data:`VERSION_WIDTH` digits, or to the width of
    ``current`` when that is a longer string (versions from other savers, 32 digits
    wide, keep sorting correctly); an int is taken as the counter. The random part keeps
    forks of one thread apart. Versions appear in every checkpoint record several times,
    so they are kept short: LangGraph's bundled savers use 49 characters, these 25.
    """
    if current is None:
        counter, width = 0, VERSION_WIDTH
    elif isinstance(current, int):
        counter, width = current, VERSION_WIDTH
    else:
        head = str(current).split(".")[0]
        counter, width = int(head), max(len(head), VERSION_WIDTH)
    return f"{counter + 1:0{width}}.{random.getrandbits(48):012x}"
