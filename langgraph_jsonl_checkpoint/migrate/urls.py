"""Endpoints by URL: a store directory, ``sqlite:///path.db``, ``postgresql://...``.

Also any ``BaseCheckpointSaver`` object (a ``JsonlSaver`` is recognised as a store).
A URL of another kind, or a source that is not there, is a :class:`~..errors.MigrationError`
that says what is accepted.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..disk.store import MARKER
from ..errors import ConfigError, MigrationError, StoreError

if TYPE_CHECKING:  # imported where an endpoint is opened: `is_database_url` needs none of it
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.store.base import BaseStore

    from .endpoints import Endpoint, Place

#: URL schemes of database endpoints (what ``export`` takes as a database target).
DATABASE_SCHEMES = ("postgresql", "postgres", "sqlite")


def is_database_url(text: str) -> bool:
    """Whether ``text`` is a URL of a database endpoint (``postgresql://``, ``sqlite://``;
    also SQLAlchemy's ``sqlite+aiosqlite://``, which :func:`open_endpoint` refuses, saying
    the URL to give)."""
    return "://" in text and text.split("://", 1)[0].lower().split("+", 1)[0] in DATABASE_SCHEMES


def _refuse_driver(text: str, scheme: str) -> None:
    """Refuse SQLAlchemy's ``dialect+driver://`` (``sqlite+aiosqlite:///app.db``, what
    some AsyncSqliteSaver users write): the driver is none this uses (it reads the
    database with its own), so the URL is the plain one, said as such.

    Raises:
        MigrationError: ``scheme`` names a driver after a scheme this takes.
    """
    base = scheme.split("+", 1)[0]
    if "+" not in scheme or base not in DATABASE_SCHEMES:
        return
    from .db_errors import redacted

    meant = redacted(base + text[len(scheme):])  # a password as ***: the user puts theirs back
    raise MigrationError(
        f"{redacted(text)}: a URL here names no driver ({scheme}:// is SQLAlchemy's form; langgraph-jsonl "
        f"opens the database its own way): did you mean {meant}?"
    )


def sqlite_path(url: str) -> str:
    """The file of a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL (the
    SQLAlchemy convention: the path is what follows the third slash; ``~/`` is the home).

    The path is percent-decoded, as a file URL's is (RFC 3986) and as libpq decodes a
    ``postgresql://`` URL's database: ``my%20app.db`` is ``my app.db``, and a ``%`` in a
    file name is written ``%25``. A ``?`` starts a query, which this takes none of.

    Raises:
        MigrationError: No path after ``sqlite:///``, or a query.
    """
    rest = url.split("://", 1)[1]
    if not rest.startswith("/") or len(rest) < 2:
        meant = f" (did you mean sqlite:///{rest}?)" if rest and not rest.startswith("/") else ""
        raise MigrationError(f"{url}: an SQLite URL is sqlite:///relative.db or sqlite:////absolute/path.db"
                             + meant)
    if rest.endswith("/"):  # a file, not a folder: some checks would see one, some the other
        raise MigrationError(f"{url}: an SQLite URL names a file, with no / at its end (did you mean "
                             f"sqlite://{rest.rstrip('/') or '/'}?)")
    if "?" in rest:
        raise MigrationError(
            f"{url}: an SQLite URL here takes no query (?{rest.split('?', 1)[1]}); name the file alone. "
            "A ? in the file's name is written %3F (and a % as %25, a space as %20)."
        )
    return os.path.expanduser(unquote(rest[1:], errors="surrogateescape"))


def place_of(spec: str | BaseCheckpointSaver[Any] | Endpoint) -> Place | None:
    """Where a spec's data lives, found without opening it (a store directory or an
    SQLite file that exists, a checkpointer object); ``None`` for a database server,
    which only an open endpoint can tell (:meth:`Endpoint.place`)."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from ..saver.jsonl_saver import JsonlSaver
    from .endpoints import Endpoint, Place, place_of_path

    if isinstance(spec, Endpoint):
        return spec.place()
    if isinstance(spec, JsonlSaver):
        return place_of_path(str(spec.store.path))
    if isinstance(spec, BaseCheckpointSaver):
        return Place("checkpointer", ("object", id(spec)), type(spec).__name__)
    text = os.fspath(spec)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "sqlite":
        return place_of_path(sqlite_path(text))
    return None if scheme else place_of_path(os.path.expanduser(text))


def refuse_same_place(source: Place | None, target: Place | None, names: tuple[str, str]) -> None:
    """Refuse a copy whose source and target are one place, however spelled.

    Raises:
        MigrationError: They are.
    """
    if source is None or source != target:
        return
    raise MigrationError(
        f"{names[0]} and {names[1]} are the same {source.what} ({source.shown}): a copy onto "
        "itself would change nothing. Name another target."
    )


def open_endpoint(
    spec: str | BaseCheckpointSaver[Any] | Endpoint, *, role: str, workers: int = 1, dry_run: bool = False,
    store: BaseStore | None = None, serde: SerializerProtocol | None = None,
) -> Endpoint:
    """An endpoint for a URL or an object.

    Args:
        spec: A store directory (a target directory that does not exist is created),
            ``sqlite:///relative.db`` / ``sqlite:////absolute.db`` or a path to an
            SQLite file, ``postgresql://user@host:port/db``, or a checkpointer object.
        role: ``"source"`` or ``"target"`` (a source must exist; a store directory as
            source is opened read-only, dry run or not: nothing of it is written, and a
            log's torn tail is read up to its last committed record).
        workers: How many threads will use it at once (PostgreSQL: the pool's size).
        dry_run: A target is only read: a store or SQLite file is opened read-only, and
            one that is not there yet is not made (a :class:`~.endpoints.NewTarget`
            stands in for it).
        store: The ``BaseStore`` holding this end's replay journal (what its
            ``ReplayAdapter(store=...)`` reads), instead of the one the endpoint has:
            a store's logs, the ``PostgresStore``/``SqliteStore`` of a URL's database,
            none for another checkpointer object.
        serde: The serializer of a saver opened from a path or URL (a checkpointer
            object keeps its own); LangGraph's default when ``None``.

    Raises:
        MigrationError: A URL of an unknown kind, a source that is not there, a
            database that cannot be reached, a ``store`` given with an :class:`Endpoint`.
    """
    end = _open(spec, role=role, workers=workers, dry_run=dry_run, serde=serde)
    if store is not None:
        from .endpoints import Endpoint
        from .journal import StoreJournalEnd

        if isinstance(spec, Endpoint):
            raise MigrationError(
                f"{spec.name}: a journal store goes with a checkpointer or a URL; an Endpoint "
                "brings its own (its journal attribute)"
            )
        end.journal = StoreJournalEnd(store, setup=getattr(store, "setup", None))
    return end


def _open(
    spec: str | BaseCheckpointSaver[Any] | Endpoint, *, role: str, workers: int, dry_run: bool,
    serde: SerializerProtocol | None,
) -> Endpoint:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.memory import InMemorySaver

    from ..saver.jsonl_saver import JsonlSaver
    from . import databases
    from .endpoints import Endpoint, JsonlEndpoint, MemoryEndpoint, NewTarget, cannot_create

    if isinstance(spec, Endpoint):
        return spec
    if isinstance(spec, JsonlSaver):
        return JsonlEndpoint(spec, str(spec.store.path), owned=False)
    if isinstance(spec, InMemorySaver):
        return MemoryEndpoint(spec, type(spec).__name__)
    if isinstance(spec, BaseCheckpointSaver):
        return Endpoint(spec, type(spec).__name__)
    text = os.fspath(spec)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if not scheme:
        text = os.path.expanduser(text)  # a store or SQLite path: `~` as the shell has it
    dry = dry_run and role == "target"
    _refuse_driver(text, scheme)
    if scheme in ("postgresql", "postgres"):
        return databases.open_postgres(text, role=role, workers=workers, serde=serde)
    if scheme == "sqlite":
        return databases.open_sqlite(sqlite_path(text), text, role=role, dry_run=dry, serde=serde)
    if scheme:
        raise MigrationError(
            f"{text}: unknown kind of {role} URL ({scheme}://). Give a store directory, "
            "sqlite:///path.db or postgresql://user@host:port/database."
        )
    if os.path.isfile(text) and databases.is_sqlite_file(text):
        return databases.open_sqlite(text, text, role=role, dry_run=dry, serde=serde)
    if os.path.isdir(text) and os.path.isfile(os.path.join(text, MARKER)):
        # A source is only read: it may be a backup, or a store an app is writing now.
        # Read-only, nothing cuts its torn tails or writes its sidecars, catalog or locks.
        saver = JsonlSaver(text, serde=serde, read_only=dry or role == "source")
        return JsonlEndpoint(saver, text, owned=True)
    if role == "source":
        what = "a file that is not an SQLite database" if os.path.exists(text) else "nothing there"
        raise MigrationError(
            f"{text}: not a source to copy from ({what}). Give a langgraph-jsonl store "
            "directory, sqlite:///path.db or postgresql://user@host:port/database."
        )
    if os.path.exists(text) and not (os.path.isdir(text) and not os.listdir(text)):
        raise MigrationError(
            f"{text}: exists and is not a langgraph-jsonl store; give a new or empty "
            "directory, sqlite:///path.db or postgresql://... as the target."
        )
    again = "Name a new or empty directory where one can be made."
    creates = [f"a new store in {text}"]
    if not os.path.exists(text):
        why = cannot_create(text, parents=True)
        if why is not None:
            raise MigrationError(f"{text}: cannot create a store there: {why}. {again}")
    if dry:
        return NewTarget(text, "jsonl", journal=True, creates=creates)
    try:
        saver = JsonlSaver(text, serde=serde)
    except OSError as exc:  # what no cheap check tells (a file system that takes no new directory)
        raise MigrationError(f"{text}: cannot create a store there: {exc.strerror or exc}. {again}") from None
    except (ConfigError, StoreError) as exc:  # the store's own words: what was refused, what to do
        said = str(exc).removeprefix(f"JsonlSaver path {text} cannot be created: ")  # not said twice
        raise MigrationError(f"{text}: cannot create a store there: {said}") from None
    return JsonlEndpoint(saver, text, owned=True, creates=creates)
