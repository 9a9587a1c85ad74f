"""Where a thread's files are: safe file names for any thread id, and each file's path.

A thread id never goes into a path raw. The file stem is a lower-cased slug of at most
40 safe characters followed by 32 hex digits of the SHA-256 of the id, so ``../x``,
``/abs``, NUL, a 10 KB id or ``Case`` vs ``case`` can neither escape the directory nor
collide (on case-insensitive file systems too). The real id is in the log's header.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field

from . import files

_SLUG_UNSAFE = re.compile(r"[^a-z0-9_-]+")
#: The store's folder of debug traces (``langgraph_jsonl_checkpoint.tracing``).
TRACES_DIR = "traces"
#: Rotated trace files kept per thread (``<stem>.1.jsonl`` is the newest of them).
TRACE_ROTATIONS = 2


def thread_file_stem(thread_id: str) -> str:
    """File stem for a thread id: ``<slug>-<sha256 prefix>``, safe for any id."""
    return f"{thread_slug(thread_id)}-{thread_digest(thread_id)}"


def thread_slug(thread_id: str) -> str:
    """The readable part of a thread's file stem: its id lower-cased, each run of other
    characters than ``a-z0-9_-`` made one ``_``, at most 40 characters."""
    return _SLUG_UNSAFE.sub("_", thread_id.lower())[:40].strip("_") or "thread"


def thread_option(thread_id: str, option: str = "--thread") -> str:
    """``--thread ID`` (or ``option ID``: ``--threads``) for a command a message suggests,
    shell-quoted (``--thread=-x`` for an id starting with a dash, which argparse would
    take for an option)."""
    if thread_id.startswith("-"):
        return shlex.quote(f"{option}={thread_id}")
    return f"{option} {shlex.quote(thread_id)}"


def thread_digest(thread_id: str) -> str:
    """The hash part of a thread's file stem: what names the thread's files uniquely.

    Raises:
        UnicodeEncodeError: The id holds a lone surrogate.
    """
    return hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class LogPaths:
    """The files of one thread (see ``docs/format.md``).

    Attributes:
        directory: The store's ``threads/`` folder.
        name: The thread's file stem.
        temp_dir: Folder for temp files of rewrites (same file system).
    """

    directory: str
    name: str
    temp_dir: str
    #: The path of every file without its extension (joined once: the paths are asked
    #: for on every append, and ``os.path.join`` was a measurable part of one).
    _stem: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stem", os.path.join(self.directory, self.name))

    def _file(self, ext: str) -> str:
        return self._stem + ext

    @property
    def log(self) -> str:
        """The append-only log."""
        return self._file(".jsonl")

    @property
    def index(self) -> str:
        """The sidecar index (derived data)."""
        return self._file(".idx")

    @property
    def lock(self) -> str:
        """The writer lock, never renamed."""
        return self._file(".lock")

    @property
    def quarantine(self) -> str:
        """Bytes cut from a torn tail."""
        return self._file(".quarantine")

    @property
    def run(self) -> str:
        """The live-run lock: held (``flock``) by the run working on the thread."""
        return self._file(".run")

    @property
    def waiters(self) -> str:
        """Runs waiting for the live-run lock hold it shared (``flock``)."""
        return self._file(".wait")

    @property
    def memory(self) -> str:
        """The session memory kept up to date with the log (derived data)."""
        return self._file(".mem")

    @property
    def head(self) -> str:
        """The latest checkpoint whole, beside a short log (derived data, :mod:`.head_file`)."""
        return self._file(".head")

    @property
    def trace_dir(self) -> str:
        """The store's ``traces/`` folder (debug traces, never read by recovery)."""
        return os.path.join(os.path.dirname(self.directory), TRACES_DIR)

    def trace_files(self) -> list[str]:
        """The thread's trace file and its rotated predecessors, newest first."""
        base = os.path.join(self.trace_dir, self.name)
        return [base + ".jsonl"] + [f"{base}.{n}.jsonl" for n in range(1, TRACE_ROTATIONS + 1)]

    def derived_files(self) -> list[str]:
        """Files derived from the log, rebuilt from it when missing: the sidecar, the
        session memory and the head file."""
        return [self.index, self.memory, self.head]

    def companion_files(self) -> list[str]:
        """Files kept beside the log that cannot be rebuilt from it: the quarantine file
        and the debug traces. Deleting the thread removes them; archiving carries them
        into the archive with the log (:mod:`.companions`)."""
        return [self.quarantine, *self.trace_files()]

    @property
    def tombstone(self) -> str:
        """Left by a deletion: the newest checkpoint id the deleted log held."""
        return self._file(".deleted")

    def temp(self, kind: str) -> str:
        """A temp file of this process and thread in the store's ``tmp/`` folder,
        ``<stem>.<kind>.<pid>-<thread>``."""
        return os.path.join(self.temp_dir, f"{self.name}.{kind}.{files.owner()}")


def repair_hint(store_dir: str, thread_id: str, paths: LogPaths) -> str:
    """The sentence naming the repair command for a thread (shell-quoted), and what to
    delete with a backup restored (the index and head files describe the lost file, and
    would refuse the backup as a cut copy of it)."""
    stem = os.path.join(paths.directory, paths.name)
    return (
        f"To keep every record that can still be read, run `langgraph-jsonl repair "
        f"{shlex.quote(store_dir)} {thread_option(thread_id)}` (it archives "
        f"the original first), or restore the file from a backup (then delete {stem}.idx "
        f"and {stem}.head, which describe the file as it was)."
    )
