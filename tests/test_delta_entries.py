"""The entry of a delta looked up in an index loaded from blocks (a sidecar, a head file,
a long scan): the same chain as one built record by record, without holding it.

An index keeps the entry of every version it was asked about for as long as its log is
open. A delta's entry used to be built with its whole chain of bases (two tuples per
delta); a log reopened by every turn of a server held the chain of its conversation,
which the cyclic collector walked on each pass until the log was let go.
"""

from __future__ import annotations

from pathlib import Path

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing, sidecar
from langgraph_jsonl_checkpoint.disk.entries import BlobEntry
from langgraph_jsonl_checkpoint.disk.index import ThreadIndex
from langgraph_jsonl_checkpoint.disk.summary import DELTA, summarize
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles

PUTS = 40


def _long_chain_log(store: Path) -> bytes:
    """A thread whose list ``m`` grows by one item a put: a chain of deltas, no snapshot;
    ``n`` is stored again under an old version every fifth put (a version stored twice)."""
    saver = JsonlSaver(store, snapshot_every=1000, snapshot_ratio=1000.0)
    parent = None
    items: list[str] = []
    for i in range(1, PUTS + 1):
        items = items + [f"item {i}"]
        versions = {"m": f"{i:032}.{1:016}", "n": f"{(i // 5) * 5 or 1:032}.{2:016}"}
        values = {"m": items, "n": {"i": i}}
        checkpoint = make_checkpoint(cp_id(i), values, versions)
        parent = saver.put(parent or config("t"), checkpoint, {"step": i}, versions)
    saver.close()
    with open(ThreadFiles.of(store, "t").log, "rb") as f:
        return f.read()


def _indexes(data: bytes) -> tuple[ThreadIndex, ThreadIndex]:
    result = framing.ScanResult()
    found = list(framing.iter_records(data, 0, result=result))
    assert result.corrupt_offset is None
    applied, loaded = ThreadIndex(), ThreadIndex()
    for rec, offset, length in found:
        applied.apply(summarize(rec, offset, length))
    loaded.apply(summarize(*found[0]))
    loaded.load_blocks(sidecar.blocks_of(found[1:]))
    return applied, loaded


def _chain(entry: BlobEntry | None) -> list[tuple]:
    out = []
    while entry is not None:
        out.append((entry.ref, entry.kind, entry.base, entry.depth))
        entry = entry.prev
    return out


def test_a_loaded_delta_has_the_chain_an_applied_one_has(tmp_path: Path) -> None:
    applied, loaded = _indexes(_long_chain_log(tmp_path / "s"))
    for i in (PUTS, PUTS // 2, 2, 1):
        for channel, serial in (("m", 1), ("n", 2)):
            version = f"{(i if channel == 'm' else (i // 5) * 5 or 1):032}.{serial:016}"
            want = _chain(applied.blob("", channel, version))
            assert want, (channel, version)
            assert _chain(loaded.blob("", channel, version)) == want, (channel, version)
    newest = loaded.blob("", "m", f"{PUTS:032}.{1:016}")
    assert newest is not None and newest.kind == DELTA and newest.depth == PUTS - 1


def test_a_loaded_index_holds_one_entry_for_a_delta_looked_up_not_its_chain(tmp_path: Path) -> None:
    loaded = _indexes(_long_chain_log(tmp_path / "s"))[1]
    newest = loaded.blob("", "m", f"{PUTS:032}.{1:016}")
    assert newest is not None and newest.depth == PUTS - 1
    # The index holds the newest delta's entry, not one entry per delta...
    assert _entries_held(loaded) <= 1
    # ...the chain is there when walked (and kept for the next walk)...
    assert len(_chain(newest)) == PUTS
    assert _entries_held(loaded) >= PUTS
    # ...until the index forgets its lookups (as its log goes idle); a version looked up
    # after the walk is not handed the walked chain's entry (which holds the rest of it).
    middle = loaded.blob("", "m", f"{PUTS // 2:032}.{1:016}")
    assert middle is not None and middle.depth == PUTS // 2 - 1
    loaded.forget_lookups()
    assert _entries_held(loaded) <= 2
    assert len(_chain(newest)) == PUTS


def _entries_held(root: object) -> int:
    """How many BlobEntry objects are reachable from ``root`` through the data it holds:
    containers and this package's objects, never classes, modules or functions (walking
    those would reach the whole process)."""
    seen, stack, count = set(), [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        count += isinstance(obj, BlobEntry)
        if isinstance(obj, (dict, list, tuple, set, frozenset)):
            stack.extend(obj.values() if isinstance(obj, dict) else obj)
            if isinstance(obj, dict):
                stack.extend(obj.keys())
        elif type(obj).__module__.startswith("langgraph_jsonl_checkpoint"):
            stack.extend(getattr(obj, "__dict__", {}).values())
            for name in getattr(type(obj), "__slots__", ()):
                if hasattr(obj, name):
                    stack.append(getattr(obj, name))
    return count
