"""The store's catalog of thread logs (``CATALOG.idx``): thread ids listed without
opening the logs, and never a wrong id whatever the catalog holds (missing, damaged,
stale, forged, another version, a writer killed while replacing it). The oracle is the
listing read from every log's header."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import catalog, framing
from langgraph_jsonl_checkpoint.disk.store import Store
from langgraph_jsonl_checkpoint.errors import ForeignFileError
from tests.harness.checkpoints import config, cp_id, make_checkpoint


def _put(saver: JsonlSaver, tid: str, i: int = 0) -> None:
    version = {"x": f"{i + 1:032d}"}
    saver.put(config(tid), make_checkpoint(cp_id(i), {"x": i}, version), {}, version)


def _header_ids(store: str) -> list[str]:
    """The oracle: every log's header, read directly."""
    threads = os.path.join(store, "threads")
    out = []
    for name in sorted(os.listdir(threads)):
        if name.endswith(".jsonl"):
            with open(os.path.join(threads, name), "rb") as f:
                out.append(framing.parse_line(f.readline()[:-1])["thread"])
    return out


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = str(tmp_path / "s")
    saver = JsonlSaver(path)
    for k in range(40):
        _put(saver, f"thread {k}")
    saver.close()
    return path


def _count_header_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = Store._read_thread_id

    def counting(self: Store, path: str, entry: str) -> str:
        reads.append(entry)
        return original(self, path, entry)

    monkeypatch.setattr(Store, "_read_thread_id", counting)
    return reads


def test_a_closed_store_lists_its_threads_without_opening_a_log(store: str, monkeypatch) -> None:
    assert os.path.exists(os.path.join(store, catalog.CATALOG))
    reads = _count_header_reads(monkeypatch)
    saver = JsonlSaver(store, read_only=True)
    listed = sorted(saver.store.thread_ids())
    assert listed == sorted(_header_ids(store)) == sorted(f"thread {k}" for k in range(40))
    assert reads == []
    # list(None) finds the same threads
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == set(_header_ids(store))


def test_a_stale_catalog_is_corrected_by_reading_the_changed_logs(store: str, monkeypatch) -> None:
    saver = JsonlSaver(store)
    saver.delete_thread("thread 3")
    _put(saver, "a new one")
    saver.compact("thread 5")  # a new generation: another inode
    # the catalog on disk still describes the store before these changes
    reads = _count_header_reads(monkeypatch)
    fresh = JsonlSaver(store, read_only=True)
    assert list(fresh.store.thread_ids()) == _header_ids(store)
    assert "thread 3" not in _header_ids(store) and "a new one" in _header_ids(store)
    assert sorted(reads) == sorted(  # only the new files' headers were read
        n for n in os.listdir(os.path.join(store, "threads"))
        if n.endswith(".jsonl") and (n.startswith("a_new_one") or n.startswith("thread_5"))
    )
    saver.close()  # a writable store brings it up to date
    reads.clear()
    assert list(JsonlSaver(store, read_only=True).store.thread_ids()) == _header_ids(store)
    assert reads == []


@pytest.mark.parametrize("damage", ["bitflip", "truncated", "old_version", "not_json", "empty", "swapped_ids",
                                    "forged_id"])
def test_any_catalog_lists_what_the_headers_say(store: str, damage: str) -> None:
    path = os.path.join(store, catalog.CATALOG)
    data = Path(path).read_bytes()
    rec = framing.parse_line(data[:-1])
    if damage == "bitflip":
        b = bytearray(data)
        b[len(b) // 2] ^= 0x01
        data = bytes(b)
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "old_version":
        rec["v"] = 0
        data = framing.frame(rec)
    elif damage == "not_json":
        data = b"hello\n"
    elif damage == "empty":
        data = b""
    elif damage == "swapped_ids":  # well formed, checksummed, wrong: two ids swapped
        rec["ids"][0], rec["ids"][1] = rec["ids"][1], rec["ids"][0]
        data = framing.frame(rec)
    elif damage == "forged_id":  # an id that does not hash to its file's name
        rec["ids"][2] = "someone else"
        data = framing.frame(rec)
    Path(path).write_bytes(data)
    assert list(JsonlSaver(store, read_only=True).store.thread_ids()) == _header_ids(store)
    assert list(JsonlSaver(store).store.thread_ids()) == _header_ids(store)  # and rewrites it
    assert catalog.load(path)
    assert list(JsonlSaver(store, read_only=True).store.thread_ids()) == _header_ids(store)


def test_a_foreign_file_in_place_of_a_log_is_still_refused(store: str) -> None:
    threads = os.path.join(store, "threads")
    name = sorted(n for n in os.listdir(threads) if n.endswith(".jsonl"))[0]
    Path(threads, "foreign").write_bytes(b"not a log\n")
    os.replace(os.path.join(threads, "foreign"), os.path.join(threads, name))  # same name, another inode
    with pytest.raises(ForeignFileError):
        list(JsonlSaver(store, read_only=True).store.thread_ids())


@pytest.mark.parametrize("left", [0, 30], ids=["emptied", "cut inside its header"])
def test_a_log_cut_inside_its_header_is_listed_as_its_thread(tmp_path: Path, left: int) -> None:
    """A log emptied or cut inside its header line is its thread's, not a foreign file to
    move out (what the listing said): the thread is listed, and its reads refuse it
    naming repair when its index says records were durable, or read it as absent."""
    from langgraph_jsonl_checkpoint import CorruptLogError

    path = str(tmp_path / "s")
    saver = JsonlSaver(path)
    for tid in ("t-1", "t-2", "Upper Case"):
        _put(saver, tid)
    saver.close()
    for tid in ("t-1", "t-2", "Upper Case"):
        log = saver.store.log_paths(tid).log
        Path(log).write_bytes(Path(log).read_bytes()[:left])
    os.unlink(saver.store.log_paths("t-2").index)  # no index left to say records were durable
    for cached in ("CATALOG.idx", "LISTING.idx"):
        Path(path, cached).unlink(missing_ok=True)
    reader = JsonlSaver(path, read_only=True)
    entries = {e.thread_id: e.error for e in reader.store.catalog()}
    assert {"t-1", "t-2"} <= set(entries) and entries["t-1"] is None and entries["t-2"] is None
    # an id the file name cannot spell back: still a file to move out, as before
    assert [e for tid, e in entries.items() if tid is None and isinstance(e, ForeignFileError)]
    with pytest.raises(CorruptLogError, match="repair"):
        reader.get_tuple(config("t-1"))
    assert reader.get_tuple(config("t-2")) is None
    reader.close()


_WRITER = textwrap.dedent(
    """
    import sys
    from langgraph_jsonl_checkpoint import JsonlSaver
    from tests.test_catalog import _put
    i = int(sys.argv[2])
    while True:
        saver = JsonlSaver(sys.argv[1])
        for _ in range(5):
            _put(saver, f"killed {i}")
            i += 1
        saver.close()  # replaces the catalog
        print(i, flush=True)
    """
)


def test_kill_9_while_the_catalog_is_replaced(store: str) -> None:
    rng = random.Random(20261201)
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, store, str(rng.randrange(10**6))],
            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        if not ready:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            pytest.fail("the writer wrote nothing in 120 s")
        time.sleep(rng.uniform(0.0, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert list(JsonlSaver(store, read_only=True).store.thread_ids()) == _header_ids(store)
    assert list(JsonlSaver(store).store.thread_ids()) == _header_ids(store)


def test_listing_threads_leaves_nothing_for_the_collector_per_thread(store: str) -> None:
    """The listing is held in strings, integers and flat lists: a fresh process listing
    10,000 threads once paid a full collection of its imports' objects for 10,000 tuples
    (benchmarks/many_threads.py). Measured with the collector off, so only what the
    listing keeps counts."""
    import gc

    saver = JsonlSaver(store, read_only=True)
    list(saver.store.thread_ids())  # any first-use allocations (imports, caches)
    was = gc.isenabled()
    gc.disable()
    try:
        before = len(gc.get_objects())
        listing = saver.store._listed()
        kept = len(gc.get_objects()) - before
    finally:
        if was:
            gc.enable()
    assert len(listing.ids) == 40 and listing.ids == _header_ids(store)
    assert kept < 15, kept  # a few lists and the listing itself, not one object per thread
