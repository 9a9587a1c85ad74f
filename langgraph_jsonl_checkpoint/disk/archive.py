"""Archived threads: logs a retention sweep moved out of ``threads/``, compressed, and
brought back by a restore, with their companion files.

Files in ``<store>/archive/`` (``stamp``: when it was archived, UTC)::

    <stem>.<stamp>.jsonl.swept      a log just moved here, as it was (one rename away)
    <stem>.<stamp>.jsonl.zst        the same bytes, compressed: the settled form
    <stem>.<stamp>.companions.zst   its debug trace and quarantine file (:mod:`.companions`)
    <stem>.<stamp>.jsonl            a copy ``repair`` made before changing a log (not ours)

The trade-off: a thread is moved, never copied, so at every instant it is whole in
exactly one place (``threads/`` or ``archive/``), at the price of a second step for
compression. Archiving is: write the companions file (temp file, fsync, rename; a thread
with neither a trace nor a quarantine file has none), tombstone, ``rename`` the log to
``.swept`` (the one step that moves the thread), remove the companion files from their
places, compress the log to a temp file, fsync, ``rename`` it to ``.zst``, unlink the
``.swept``. A restore runs it backwards: decompress to ``.swept``, unlink the ``.zst``,
write the companion files back into their places, ``rename`` the ``.swept`` into
``threads/`` (the one step that brings it back), unlink the companions file. Both hold
the thread's writer lock. A crash leaves the log in ``threads/`` with its companion
files in place, or a ``.swept`` and/or a ``.zst`` of the same bytes in ``archive/`` with
the companions file beside them (copies of the companion files may be in place too);
:meth:`ThreadArchive.settle` (run by the next sweep or restore, under the same lock)
keeps the ``.zst`` and drops the other, or compresses a lone ``.swept``, removes the
copies of a thread that has no log, and removes a companions file whose log is not in
the archive (its files are in place). Temp files live in ``tmp/`` and are swept like a
rewrite's. An archive of a release before companions files (the log alone) restores
the log alone.

The codec is Zstandard (the ``zstandard`` package, an optional extra ``archive``; why
and its figures: ``docs/design.md``): its frames carry the content size and a checksum,
so a damaged archive is refused instead of restored short.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import ConfigError, CorruptLogError, ForeignFileError, RestoreError
from . import archive_damage, companions, files, framing
from .files import fsync_dir
from .log import ThreadLog
from .paths import LogPaths, thread_file_stem
from .store import ARCHIVE_DIR, Store

try:  # optional: only archiving and restoring need it (Any to mypy: pyproject.toml)
    import zstandard
except ImportError:  # pragma: no cover - exercised only without the extra
    zstandard = None

#: A log moved into the archive, not yet compressed.
MOVED = ".jsonl.swept"
#: A log compressed in the archive.
COMPRESSED = ".jsonl.zst"
#: The companion files (debug trace, quarantine file) of an archived log, compressed.
COMPANIONS = ".companions.zst"
#: Zstandard level: logs are archived once and read rarely; 10 costs about as much CPU
#: as gzip -6 and is 8% smaller than the default 3 on agent logs.
LEVEL = 10
_STAMP = "%Y%m%dT%H%M%S%fZ"
_HEADER_BYTES = 64 * 1024


def require_zstandard() -> None:
    """Raise a clear error if the codec is missing.

    Raises:
        ConfigError: ``zstandard`` is not installed.
    """
    if zstandard is None:
        raise ConfigError(
            "archiving threads needs the zstandard package: "
            "pip install 'langgraph-jsonl-checkpoint[archive]'"
        )


@dataclass(frozen=True)
class ArchivedThread:
    """One archived log.

    Attributes:
        thread_id: The thread it holds (from its header; of an archive damaged there,
            from its file name: :mod:`.archive_damage`).
        path: The file (``.jsonl.zst``, or ``.jsonl.swept`` until settled).
        archived_at: When it was archived (from its name).
        size: Bytes on disk: the archived log and its companions file (if any).
    """

    thread_id: str
    path: str
    archived_at: datetime
    size: int


class ThreadArchive:
    """The store's archive of swept threads.

    Args:
        store: The store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.folder = os.path.join(store.path, ARCHIVE_DIR)

    # -- archiving ---------------------------------------------------------------

    def archive(self, log: ThreadLog) -> str:
        """Move a thread's log into the archive and compress it, its companion files
        (debug trace, quarantine file) with it. Call under the log's
        :meth:`~.log.ThreadLog.writer`, with the log present.

        Returns:
            The compressed file's path.
        """
        require_zstandard()
        self._ensure_folder()
        stamp = datetime.now(UTC).strftime(_STAMP)
        base = os.path.join(self.folder, f"{log.name}.{stamp}")
        own = _present(log.paths)
        if own:  # written whole before the log moves: the move stays the one step
            packed = companions.pack(log.thread_id, {_name(log.paths, p): d for p, d in own.items()})
            self._write_durably(log.paths.temp("companions"), base + COMPANIONS, _compressed(packed))
        log.move_out(base + MOVED)
        _drop_copies(own)
        return self._compress(base + MOVED, log)

    def _compress(self, moved: str, log: ThreadLog) -> str:
        data = files.read_whole(moved)
        final = moved[: -len(MOVED)] + COMPRESSED
        self._write_durably(log.paths.temp("zst"), final, _compressed(data))
        files.os.unlink(moved)
        fsync_dir(self.folder)
        return final

    def _write_durably(self, tmp: str, final: str, data: bytes) -> None:
        fd = files.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            files.write_all(fd, data)
            files.os.fsync(fd)
        finally:
            files.os.close(fd)
        files.os.rename(tmp, final)
        fsync_dir(os.path.dirname(final))

    # -- restoring ---------------------------------------------------------------

    def restore(self, log: ThreadLog, entry: ArchivedThread) -> None:
        """Bring an archived log back as the thread's log, and its companion files into
        their places. Call under the log's :meth:`~.log.ThreadLog.locked`, with no log
        in ``threads/``.

        Raises:
            CorruptLogError: The archive is damaged (its checksum fails); it is kept.
            RestoreError: A file of the thread is where a companion file would go back
                (written after the thread was archived); nothing was changed.
        """
        own = self.returning(log.paths, entry)
        moved = entry.path
        if moved.endswith(COMPRESSED):
            require_zstandard()
            data = self.read(entry)
            moved = entry.path[: -len(COMPRESSED)] + MOVED
            self._write_durably(log.paths.temp("swept"), moved, data)
            files.os.unlink(entry.path)
            fsync_dir(self.folder)
        for path, data in own.items():
            _ensure_directory(os.path.dirname(path))
            self._write_durably(log.paths.temp("companion"), path, data)
        files.os.rename(moved, log.path)  # the one step that brings the thread back
        fsync_dir(log.paths.directory)
        fsync_dir(self.folder)
        if own:
            files.os.unlink(moved[: -len(MOVED)] + COMPANIONS)
            fsync_dir(self.folder)

    def returning(
        self, paths: LogPaths, entry: ArchivedThread, *, removed_first: frozenset[str] = frozenset()
    ) -> dict[str, bytes]:
        """The companion files a restore of ``entry`` writes back, by path, with their
        bytes: what :meth:`restore` checks before it changes anything (a dry run too).

        Args:
            paths: The thread's file paths.
            entry: The archive to restore.
            removed_first: Files a :meth:`settle` run first would remove (not in the way).

        Raises:
            RestoreError: A file of the thread is where one would go back (written after
                the thread was archived).
            CorruptLogError: The companions file is damaged or not the thread's.
        """
        own = self._held(paths, _companions_of(entry.path), entry.thread_id)
        in_the_way = [p for p in own if os.path.lexists(p) and p not in removed_first]
        if in_the_way:
            raise RestoreError(
                f"thread {entry.thread_id!r}: {', '.join(in_the_way)} would be replaced by the "
                f"file archived with it in {entry.path} (a run on this thread id wrote it "
                "after the thread was archived): move or delete them, then restore."
            )
        return own

    def read(self, entry: ArchivedThread) -> bytes:
        """The archived log's bytes, as they were in ``threads/``.

        Raises:
            CorruptLogError: The compressed file is damaged.
        """
        raw = files.read_whole(entry.path)
        if not entry.path.endswith(COMPRESSED):
            return raw
        require_zstandard()
        try:
            data: bytes = zstandard.ZstdDecompressor().decompress(raw)
            return data
        except zstandard.ZstdError as exc:  # said in the words `archived` lists it with
            said = archive_damage.damage(entry.path) or str(exc)
            raise archive_damage.damaged(entry.thread_id, entry.path, said) from exc

    def companions(self, entry: ArchivedThread) -> dict[str, bytes]:
        """The companion files archived with a log, by path relative to the store (empty
        if it had none, or was archived before companion files were kept).

        Raises:
            CorruptLogError: The companions file is damaged or not the thread's.
        """
        path = _companions_of(entry.path)
        paths = self.store.log_paths(entry.thread_id)
        return {_name(paths, p): data for p, data in self._held(paths, path, entry.thread_id).items()}

    def _held(self, paths: LogPaths, path: str, thread_id: str | None = None) -> dict[str, bytes]:
        """The files a companions file of ``thread_id`` (which its error names) holds, by
        the path each goes back to ({} if there is no such file).

        Raises:
            CorruptLogError: The file is damaged, names another thread, or names a file
                that is not one of the thread's companion files.
        """
        try:
            raw = files.read_whole(path)
        except FileNotFoundError:
            return {}
        require_zstandard()
        places = {_name(paths, p): p for p in paths.companion_files()}
        try:
            thread_id, held = companions.unpack(zstandard.ZstdDecompressor().decompress(raw))
            if thread_file_stem(thread_id) != paths.name:
                raise ValueError(f"it holds the files of thread {thread_id!r}")
            foreign = sorted(set(held) - set(places))
            if foreign:
                raise ValueError(f"{foreign[0]!r} is not a companion file of the thread")
        except (zstandard.ZstdError, ValueError) as exc:
            raise archive_damage.companions_damaged(thread_id, path, str(exc)) from exc
        return {places[name]: content for name, content in held.items()}

    # -- what the archive holds ----------------------------------------------------

    def entries(
        self, thread_id: str | None = None, *, unnamed: list[CorruptLogError] | None = None
    ) -> list[ArchivedThread]:
        """Archived logs (of one thread, if given), oldest first; a ``.swept`` and a
        ``.zst`` of one archiving are listed once (the ``.zst``).

        Raises:
            ForeignFileError: An archive file is not a log of this store.
            CorruptLogError: An archive file is damaged and its thread cannot be told
                (not ``thread_id``, and it has no tombstone; with ``unnamed``, put there
                instead: a listing goes on past it); one whose thread can be is listed
                (:meth:`read` refuses it).
        """
        if not os.path.isdir(self.folder):
            return []
        names = sorted(files.os.listdir(self.folder))
        stem = thread_file_stem(thread_id) + "." if thread_id is not None else ""
        out = []
        for name in names:
            if not name.startswith(stem):
                continue
            if name.endswith(MOVED) and name[: -len(MOVED)] + COMPRESSED in names:
                continue  # the compressed copy is complete; settle() drops this one
            if not name.endswith((MOVED, COMPRESSED)):
                continue
            try:
                out.append(self._entry(os.path.join(self.folder, name), thread_id))
            except CorruptLogError as exc:  # damaged, and whose it is cannot be told
                if unnamed is None:
                    raise
                unnamed.append(exc)
        out.sort(key=lambda e: e.archived_at)
        return [e for e in out if thread_id is None or e.thread_id == thread_id]

    def unsettled(self) -> list[str]:
        """What a crash left half done (each to :meth:`settle` under its thread's lock):
        ``.swept`` files, and companions files with no log of their archiving here."""
        if not os.path.isdir(self.folder):
            return []
        names = sorted(files.os.listdir(self.folder))
        present = set(names)
        out = []
        for n in names:
            if n.endswith(COMPANIONS):
                base = n[: -len(COMPANIONS)]
                if base + MOVED in present or base + COMPRESSED in present:
                    continue
            elif not n.endswith(MOVED):
                continue
            out.append(os.path.join(self.folder, n))
        return out

    def settle(self, log: ThreadLog, path: str) -> bool:
        """Finish an archiving (or undo a restore) a crash cut short. Call under the
        log's :meth:`~.log.ThreadLog.locked`.

        For a ``.swept`` file: if the thread has no log, remove the copies of its
        companion files left in their places (the companions file holds them), then keep
        the ``.zst``, compressing the ``.swept`` first if there is none. For a
        companions file whose log is not in the archive (the move never happened, or the
        restore did): remove it, its files being in place.

        Returns:
            Whether anything was left to do (another process may have settled it).
        """
        if not os.path.exists(path):
            return False  # settled by another process meanwhile
        if path.endswith(COMPANIONS):
            base = path[: -len(COMPANIONS)]
            if os.path.exists(base + MOVED) or os.path.exists(base + COMPRESSED):
                return False  # its log is archived: it belongs with it
            files.os.unlink(path)
            fsync_dir(self.folder)
            return True
        base = path[: -len(MOVED)]
        if not os.path.lexists(log.paths.log):  # a thread started anew owns what is in place
            try:
                _drop_copies(self._held(log.paths, base + COMPANIONS))
            except CorruptLogError:
                pass  # kept in place; a restore reports the damaged file
        if os.path.exists(base + COMPRESSED):
            files.os.unlink(path)  # the same bytes, compressed and fsynced before
            fsync_dir(self.folder)
        else:
            require_zstandard()
            self._compress(path, log)
        return True

    def settling_removes(self, paths: LogPaths) -> frozenset[str]:
        """The thread's companion files that :meth:`settle`, run on the thread's
        unsettled files, would remove as copies (what a dry run assumes gone)."""
        if os.path.lexists(paths.log):
            return frozenset()
        out: set[str] = set()
        for moved in self.unsettled():
            if not (moved.endswith(MOVED) and os.path.basename(moved).startswith(paths.name + ".")):
                continue
            try:
                held = self._held(paths, moved[: -len(MOVED)] + COMPANIONS)
            except CorruptLogError:
                continue  # settle keeps them in place too
            out.update(p for p, data in held.items() if _holds(p, data))
        return frozenset(out)

    def thread_of(self, path: str) -> str:
        """The thread id in an archived log's header (or a companions file's).

        Raises:
            ForeignFileError: The file is not an archived log of this store.
        """
        if path.endswith(COMPANIONS):
            thread_id = companions.thread_in(self._head(path))
            name = os.path.basename(path)
            if thread_id is None or not name.startswith(thread_file_stem(thread_id) + "."):
                raise ForeignFileError(
                    f"{path} is not a companions file of this store (its name or header does "
                    "not match). Move it out of the archive folder."
                )
            return thread_id
        return self._entry(path).thread_id

    def _entry(self, path: str, asked: str | None = None) -> ArchivedThread:
        name = os.path.basename(path)
        body = name[: -len(COMPRESSED)] if name.endswith(COMPRESSED) else name[: -len(MOVED)]
        stem = body.rpartition(".")[0]
        head = self._head(path)
        nl = head.find(b"\n")
        header = framing.parse_line(head[:nl]) if nl > 0 else None
        archived_at = archived_when(path)
        thread_id = header.get("thread") if header and header.get("t") == "header" else None
        if not isinstance(thread_id, str) or thread_file_stem(thread_id) != stem or archived_at is None:
            said = archive_damage.damage(path) if path.endswith(COMPRESSED) else None
            if said is None or archived_at is None:
                raise ForeignFileError(
                    f"{path} is not an archived thread log of this store (its name or header "
                    "does not match). Move it out of the archive folder."
                )
            thread_id = archive_damage.thread_named(self.store, stem, asked)
            if thread_id is None:
                raise archive_damage.damaged(None, path, said)
        size = files.os.stat(path).st_size
        try:
            size += files.os.stat(_companions_of(path)).st_size
        except FileNotFoundError:
            pass  # archived by a release that kept the log only, or its thread had none
        return ArchivedThread(thread_id, path, archived_at, size)

    def _head(self, path: str) -> bytes:
        if not path.endswith((COMPRESSED, COMPANIONS)):
            fd = files.open_file(path, os.O_RDONLY)
            try:
                return files.os.pread(fd, _HEADER_BYTES, 0)
            finally:
                files.os.close(fd)
        require_zstandard()
        with open(path, "rb") as fh:
            try:
                head: bytes = zstandard.ZstdDecompressor().stream_reader(fh).read(_HEADER_BYTES)
                return head
            except zstandard.ZstdError:
                return b""

    def _ensure_folder(self) -> None:
        if not os.path.isdir(self.folder):
            files.os.makedirs(self.folder, mode=0o700, exist_ok=True)
            fsync_dir(self.store.path)


def archived_when(path: str) -> datetime | None:
    """When an archive file was archived, from its name (``None``: not an archive's name)."""
    name = os.path.basename(path)
    body = name[: -len(COMPRESSED)] if name.endswith(COMPRESSED) else name[: -len(MOVED)]
    try:
        return datetime.strptime(body.rpartition(".")[2], _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None


def _companions_of(archived: str) -> str:
    """The companions file beside an archived log (``.zst`` or ``.swept``)."""
    suffix = COMPRESSED if archived.endswith(COMPRESSED) else MOVED
    return archived[: -len(suffix)] + COMPANIONS


def _name(paths: LogPaths, path: str) -> str:
    """A thread's file as a companions file names it: its path relative to the store."""
    return os.path.relpath(path, os.path.dirname(paths.directory))


def _present(paths: LogPaths) -> dict[str, bytes]:
    """The thread's companion files that exist, with their bytes."""
    own = {}
    for path in paths.companion_files():
        try:
            own[path] = files.read_whole(path)
        except FileNotFoundError:
            continue
    return own


def _holds(path: str, data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data``."""
    try:
        return files.read_whole(path) == data
    except OSError:
        return False


def _drop_copies(own: dict[str, bytes]) -> None:
    """Remove the files of ``own`` that still hold exactly its bytes (the companions
    file holds them), durably. One that changed meanwhile (a run traced on this
    thread id) is left in place."""
    folders = set()
    for path, data in own.items():
        try:
            if files.read_whole(path) != data:
                continue
            files.os.unlink(path)
        except OSError:
            continue  # gone already, or a link planted in its place: not ours to remove
        folders.add(os.path.dirname(path))
    for folder in sorted(folders):
        fsync_dir(folder)


def _ensure_directory(path: str) -> None:
    """Create a store folder (``traces/``) that is missing, durably."""
    if not os.path.isdir(path):
        files.os.makedirs(path, mode=0o700, exist_ok=True)
        fsync_dir(os.path.dirname(path))


def _compressed(data: bytes) -> bytes:
    packed: bytes = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compress(data)
    return packed


