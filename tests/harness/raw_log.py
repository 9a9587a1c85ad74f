"""The raw files of a store, read and damaged behind the saver's back.

- ``ThreadFiles``: the paths of a thread's log, sidecar index, lock and quarantine file;
- ``committed_batches``, ``record_spans``, ``checkpoint_record_counts``: the committed
  batches and records of a log, with their byte offsets;
- ``read_quarantine``: the entries of a quarantine file;
- ``copy_store`` (with fresh sidecars or none), ``sidecar_in_use``, ``sidecar_summaries``
  and ``sidecar_blocks`` (a sidecar decoded, and re-encoded in other blocks);
- ``write_in_place`` (new content, same inode, as damage on disk would leave it) and
  ``stray_temp_files``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.disk.store import THREADS_DIR, thread_file_stem


@dataclass
class ThreadFiles:
    log: str
    idx: str
    lock: str
    quarantine: str
    directory: str

    @classmethod
    def of(cls, store: str | os.PathLike, thread_id: str) -> ThreadFiles:
        d = os.path.join(os.fspath(store), THREADS_DIR)
        stem = os.path.join(d, thread_file_stem(thread_id))
        return cls(stem + ".jsonl", stem + ".idx", stem + ".lock", stem + ".quarantine", d)

    @property
    def head(self) -> str:
        """The thread's head file (langgraph_jsonl_checkpoint/disk/head_file.py)."""
        return self.log[: -len(".jsonl")] + ".head"

    def left_on_disk(self) -> set[str]:
        """The suffixes of this thread's files that exist (``.jsonl``, ``.deleted``, ...)."""
        stem = os.path.basename(self.log)[: -len(".jsonl")]
        return {
            name[len(stem):] for name in os.listdir(self.directory)
            if name.startswith(stem + ".") and name[len(stem) + 1:].isalpha()
        }


#: What a deleted thread may leave on disk: its tombstone (so a late write cannot revive
#: it) and lock files (removing one another process may hold would let two holders be).
AFTER_DELETE = frozenset({".deleted", ".lock", ".run", ".wait"})


@dataclass
class Batch:
    start: int
    end: int
    records: list[framing.ScannedRecord] = field(default_factory=list)


def committed_batches(data: bytes) -> list[Batch]:
    """The committed batches of a log's bytes, header first, with their byte spans."""
    result = framing.scan(data, 0)
    assert result.corrupt_offset is None and result.tail_bytes == 0, "reference log is not clean"
    batches: list[Batch] = []
    current = Batch(0, 0)
    for r in result.records:
        if not current.records:
            current.start = r.offset
        current.records.append(r)
        current.end = r.offset + r.length
        # scan() drops "more" from committed records; re-read the raw line to find ends
        if b'"more":1' not in data[r.offset : r.offset + r.length]:
            batches.append(current)
            current = Batch(0, 0)
    assert not current.records
    return batches


def record_spans(data: bytes) -> list[tuple[int, int, dict]]:
    """(offset, length, record) of every committed record."""
    return [(r.offset, r.length, r.record) for r in framing.scan(data, 0).records]


def read_quarantine(path: str) -> list[tuple[dict, bytes]]:
    """Entries of a quarantine file: (note record, the bytes cut).

    An entry shorter than its note says (a short write) is returned as far as it goes;
    anything unparsable after that is returned as one entry with an empty note.
    """
    out: list[tuple[dict, bytes]] = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        note = framing.parse_line(data[pos:nl]) if nl >= 0 else None
        if note is None or note.get("t") != "quarantine":
            out.append(({}, data[pos:]))
            break
        start = nl + 1
        n = note["bytes"]
        out.append((note, data[start : start + n]))
        pos = start + n + 1
    return out


def checkpoint_record_counts(log_path: str) -> dict[tuple[str, str], int]:
    """How many committed checkpoint records each (ns, id) has in a raw log."""
    with open(log_path, "rb") as f:
        data = f.read()
    counts: dict[tuple[str, str], int] = {}
    for r in framing.scan(data, 0).records:
        if r.record.get("t") == "checkpoint":
            key = (r.record["ns"], r.record["id"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def copy_store(src: str | os.PathLike, dst: str | os.PathLike, *, index: bool) -> None:
    """Copy a store. A sidecar names its log's inode, so a copied one would be ignored:
    with ``index`` the copy gets fresh sidecars for its own logs (checked to be in use),
    without it the copy has none."""
    shutil.copytree(src, dst)
    threads = os.path.join(os.fspath(dst), THREADS_DIR)
    for name in os.listdir(threads):
        if name.endswith(".idx"):
            os.unlink(os.path.join(threads, name))
    if not index:
        return
    saver = JsonlSaver(dst)
    tids = list(saver.store.thread_ids())
    for tid in tids:
        saver.store.thread_log(tid).refresh()
    saver.close()
    for tid in tids:
        assert sidecar_in_use(dst, tid), f"the copy's sidecar for {tid!r} is not used"


def sidecar_in_use(store: str | os.PathLike, thread_id: str) -> bool:
    """Whether a fresh saver loads the thread's sidecar (its header matches the log)."""
    files = ThreadFiles.of(store, thread_id)
    try:
        with open(files.idx, "rb") as f:
            head = framing.parse_line(f.readline().rstrip(b"\n"))
    except FileNotFoundError:
        return False
    return bool(head) and head.get("ino") == os.stat(files.log).st_ino


def sidecar_summaries(data: bytes) -> tuple[bytes, list[dict]]:
    """A sidecar's header line and the per-record summaries its blocks hold."""
    from langgraph_jsonl_checkpoint.disk import sidecar_checks

    lines = data.split(b"\n")
    assert lines[-1] == b""
    out: list[dict] = []
    seq, offset = 1, None
    for line in lines[1:-1]:
        cols = framing.parse_line(line)
        assert cols is not None
        block = sidecar_checks.decode_block(line, seq, offset if offset is not None else cols["o0"])
        assert block is not None
        out += [block.summary(s) for s in range(block.first, block.first + block.count)]
        seq, offset = seq + block.count, block.end
    return lines[0] + b"\n", out


def sidecar_blocks(head: bytes, summaries: list[dict], cuts: tuple[int, ...] = ()) -> bytes:
    """A sidecar of these summaries, a new block starting at each index in ``cuts``
    (a block stores only its first record's offset and seq)."""
    from langgraph_jsonl_checkpoint.disk import sidecar

    bounds = sorted({0, *(c for c in cuts if 0 < c < len(summaries)), len(summaries)})
    return head + b"".join(sidecar.encode(summaries[a:b]) for a, b in zip(bounds, bounds[1:]))


def write_in_place(path: str, data: bytes) -> None:
    """Replace a file's content keeping its inode (as damage on disk would)."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate(len(data))


def stray_temp_files(store: str | os.PathLike) -> list[str]:
    """Temp files left in the store: anything in its tmp/ folder, or named *.tmp*."""
    out = []
    temp_dir = os.path.join(os.fspath(store), "tmp")
    for root, _, files in os.walk(store):
        out += [os.path.join(root, f) for f in files if ".tmp" in f or root == temp_dir]
    return out
