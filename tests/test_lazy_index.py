"""Lazy loading of the sidecar index (format 3): a fresh process's first ``get_tuple``
decodes the sidecar's last block(s) only, and whatever the sidecar holds (older blocks
damaged, cut, re-encoded without the facts, of the previous format; a log that is not
plain), every answer is the one a full scan of the log gives, the first ``get_tuple``
included. The oracle is the same store with its ``.idx`` deleted, and InMemorySaver fed
the same calls.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing, sidecar
from langgraph_jsonl_checkpoint.disk.columns import BulkRecords
from tests.harness.answers import answers, diff_answers, normalize
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles, copy_store, record_spans, sidecar_in_use, sidecar_summaries

THREAD = "lazy-thread"
CHECKPOINTS = 1400  # with one writes record each: three blocks of 1024 records


def _fill(saver: JsonlSaver, memory: InMemorySaver, n: int, start: int = 0, *, ns: str = "") -> None:
    """``n`` checkpoints, a message list growing by one item (deltas, snapshots), one
    pending write each; the same calls on ``memory``."""
    latest = saver.get_tuple(config(THREAD, ns))
    versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
    values = dict(latest.checkpoint["channel_values"]) if latest else {"m": [], "step": -1}
    parent = latest.checkpoint["id"] if latest else None
    for i in range(start, start + n):
        values = {"m": values["m"] + [f"message {i} " + "x" * 40], "step": i}
        new = {ch: saver.get_next_version(versions.get(ch), None) for ch in ("m", "step")}
        versions.update(new)
        cid = cp_id(i)
        cp = make_checkpoint(cid, values, versions)
        md = {"source": "loop", "step": i}
        for s in (saver, memory):
            out = s.put(config(THREAD, ns, parent), cp, md, new)
            s.put_writes(out, [("m", [f"pending {i}"])], f"task-{i}")
        parent = cid


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("lazy")
    store = base / "store"
    saver, memory = JsonlSaver(str(store)), InMemorySaver()
    _fill(saver, memory, CHECKPOINTS)
    saver.close()
    scan = base / "scan"
    copy_store(store, scan, index=False)
    full_scan = answers(JsonlSaver(str(scan)), THREAD)
    assert not diff_answers(full_scan, answers(memory, THREAD))
    idx = Path(ThreadFiles.of(str(store), THREAD).idx).read_bytes()
    return base, full_scan, idx


def _fresh(base: Path, name: str, fault: Callable[[list[bytes]], bytes] | None = None) -> str:
    """A copy of the built store with its own sidecar (a sidecar names its log's inode),
    made by ``fault`` from the copy's sidecar lines if given."""
    store = base / name
    shutil.rmtree(store, ignore_errors=True)
    copy_store(base / "store", store, index=True)
    if fault is not None:
        idx = Path(ThreadFiles.of(str(store), THREAD).idx)
        idx.write_bytes(fault(idx.read_bytes().split(b"\n")[:-1]))
    return str(store)


def _check(store: str, full_scan: dict) -> JsonlSaver:
    """First get_tuple, then one of the oldest checkpoints (its block decoded on
    demand, before anything decodes them all), then everything: the answers of a full
    scan."""
    saver = JsonlSaver(store)
    first = saver.get_tuple(config(THREAD))
    assert normalize(first) == normalize(full_scan["latest"][""])
    old = saver.get_tuple(config(THREAD, "", cp_id(3)))
    assert normalize(old) == normalize(full_scan["list"][("", cp_id(3))])
    assert not diff_answers(answers(saver, THREAD), full_scan)
    return saver


def test_the_saver_writes_facts_and_a_fresh_get_tuple_decodes_one_block(built) -> None:
    base, full_scan, idx = built
    lines = idx.split(b"\n")[:-1]
    assert len(lines) >= 3  # header + several blocks
    head = framing.parse_line(lines[0])
    assert head["v"] == sidecar.SIDECAR_VERSION == 3
    last = framing.parse_line(lines[-1])
    assert last["f"] == {"plain": True, "heads": {"": cp_id(CHECKPOINTS - 1)}}
    saver = JsonlSaver(_fresh(base, "fresh"))
    log = saver.store.thread_log(THREAD)
    first = saver.get_tuple(config(THREAD))
    assert normalize(first) == normalize(full_scan["latest"][""])
    assert log.index.lazy and log.sidecar.trusted
    # an older checkpoint's tuple decodes older blocks as needed
    old = saver.get_tuple(config(THREAD, "", cp_id(3)))
    assert normalize(old) == normalize(full_scan["list"][("", cp_id(3))])
    # a listing decodes everything, and answers as a full scan
    assert not diff_answers(answers(saver, THREAD), full_scan)
    assert not log.index.lazy


def test_a_lazily_loaded_index_takes_appends(built) -> None:
    base, full_scan, idx = built
    store = _fresh(base, "append")
    saver, memory = JsonlSaver(store), InMemorySaver()
    # the same history in memory, then more on both
    for t in reversed(list(JsonlSaver(_fresh(base, "append-src")).list(config(THREAD)))):
        out = memory.put(t.parent_config or config(THREAD), t.checkpoint, t.metadata,
                         t.checkpoint["channel_versions"])
        memory.put_writes(out, [(c, v) for _, c, v in t.pending_writes], t.pending_writes[0][0])
    assert saver.get_tuple(config(THREAD)) is not None  # lazily loaded
    _fill(saver, memory, 30, start=CHECKPOINTS)
    saver.close()
    assert not diff_answers(answers(JsonlSaver(store), THREAD), answers(memory, THREAD))


@pytest.mark.parametrize("fault", ["bitflip_older", "cut_older", "swap_older", "no_facts", "torn_append",
                                   "old_format", "foreign_facts", "drop_oldest"])
def test_any_sidecar_answers_like_a_full_scan_from_the_first_get_tuple(built, fault: str) -> None:
    base, full_scan, _ = built
    rng = random.Random(f"lazy-{fault}")

    def damage(lines: list[bytes]) -> bytes:
        assert len(lines) >= 4
        if fault == "bitflip_older":
            k = rng.randrange(1, len(lines) - 1)
            b = bytearray(lines[k])
            b[rng.randrange(60, len(b) - 20)] ^= 0x04
            lines[k] = bytes(b)
        elif fault == "cut_older":
            k = rng.randrange(1, len(lines) - 1)
            lines[k] = lines[k][: len(lines[k]) // 2]
        elif fault == "swap_older":
            lines[1], lines[2] = lines[2], lines[1]
        elif fault == "no_facts":
            cols = framing.parse_line(lines[-1])
            del cols["f"]
            lines[-1] = framing.frame(cols)[:-1]
        elif fault == "old_format":
            head = framing.parse_line(lines[0])
            head["v"] = 2
            lines[0] = framing.frame(head)[:-1]
        elif fault == "drop_oldest":
            # The oldest block line gone: the others still chain (each ends where the next
            # starts), but the first no longer starts right after the log's header.
            del lines[1]
        elif fault == "foreign_facts":
            # facts naming a checkpoint that is not the newest: checked against the blocks
            cols = framing.parse_line(lines[-1])
            cols["f"]["heads"][""] = cp_id(5)
            lines[-1] = framing.frame(cols)[:-1]
        data = b"\n".join(lines) + b"\n"
        if fault == "torn_append":
            data += lines[-1][: len(lines[-1]) // 3]  # a block line cut by a crash
        return data

    _check(_fresh(base, f"fault-{fault}", damage), full_scan)


@pytest.mark.parametrize("field", ["gen", "ino", "log"])
def test_a_sidecar_naming_another_log_is_not_used_even_lazily(built, field: str) -> None:
    """A sidecar's header names the generation, inode and header checksum of the log it
    indexes; one naming another log (a stale sidecar of a deleted or replaced log, a
    copied file) is never loaded, lazily or whole: the index comes from the log, and a
    writable saver replaces the file with one naming this log."""
    base, full_scan, _ = built

    def other_log(lines: list[bytes]) -> bytes:
        head = framing.parse_line(lines[0])
        head[field] = head[field] + 1 if field != "log" else "0" * len(head[field])
        lines[0] = framing.frame(head)[:-1]
        return b"\n".join(lines) + b"\n"

    store = _fresh(base, f"other-{field}", other_log)
    saver = JsonlSaver(store)
    log = saver.store.thread_log(THREAD)
    assert normalize(saver.get_tuple(config(THREAD))) == normalize(full_scan["latest"][""])
    assert not log.index.lazy and not log.sidecar.trusted
    assert not diff_answers(answers(saver, THREAD), full_scan)
    saver.close()
    assert sidecar_in_use(store, THREAD)
    head = framing.parse_line(Path(ThreadFiles.of(store, THREAD).idx).read_bytes().split(b"\n")[0])
    assert head["gen"] == log.gen and head["log"] == log.identity().header_crc


def test_a_log_that_is_not_plain_is_loaded_whole(tmp_path: Path) -> None:
    """A version stored twice (a caller passing an old version again): the facts say
    so, the sidecar is loaded eagerly, and answers match InMemorySaver's."""
    store = str(tmp_path / "s")
    saver, memory = JsonlSaver(store), InMemorySaver()
    _fill(saver, memory, 600)
    latest = saver.get_tuple(config(THREAD))
    versions = latest.checkpoint["channel_versions"]
    values = {"m": ["replaced"], "step": 600}
    cp = make_checkpoint(cp_id(600), values, versions)  # the same versions, other values
    for s in (saver, memory):
        s.put(config(THREAD, "", latest.checkpoint["id"]), cp, {"step": 600}, dict(versions))
    _fill(saver, memory, 600, start=601)
    saver.close()
    last = framing.parse_line(Path(ThreadFiles.of(store, THREAD).idx).read_bytes().split(b"\n")[-2])
    assert last["f"]["plain"] is False
    # the same judgement from the records' columns (a log indexed by a scan)
    data = Path(ThreadFiles.of(store, THREAD).log).read_bytes()
    spans = record_spans(data)
    recs = [(framing.parse_line(data[o : o + n - 1]), o, n) for o, n, _ in spans[1:]]
    assert BulkRecords(sidecar.blocks_of(recs)).plain() is False
    assert BulkRecords(sidecar.blocks_of(recs[:1200])).plain() is True  # before the rewrite
    fresh = JsonlSaver(store)
    assert normalize(fresh.get_tuple(config(THREAD))) == normalize(memory.get_tuple(config(THREAD)))
    assert not fresh.store.thread_log(THREAD).index.lazy
    assert not diff_answers(answers(fresh, THREAD), answers(memory, THREAD))


_WRITER = textwrap.dedent(
    """
    import sys
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph_jsonl_checkpoint import JsonlSaver
    from tests.test_lazy_index import _fill
    saver = JsonlSaver(sys.argv[1])
    i = int(sys.argv[2])
    while True:
        _fill(saver, InMemorySaver(), 300, start=i)
        saver.store.thread_log("lazy-thread").write_sidecar()
        i += 300
        print(i, flush=True)
    """
)


def test_kill_9_while_the_sidecar_is_written_then_a_fresh_reader(built, tmp_path: Path) -> None:
    """A writer killed at random moments (appending records and sidecar blocks): a
    fresh reader's first get_tuple and its listing agree with a full scan of the log."""
    base, _, _ = built
    rng = random.Random(20261201)
    store = _fresh(base, "kill")
    start = CHECKPOINTS
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, store, str(start)],
            stdout=subprocess.PIPE, cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert proc.stdout is not None
        # one round written (the sidecar was appended to); bounded: never hangs
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        if not ready:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            pytest.fail("the writer wrote nothing in 120 s")
        proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        scan = str(tmp_path / "scan")
        shutil.rmtree(scan, ignore_errors=True)
        copy_store(store, scan, index=False)
        want = answers(JsonlSaver(scan), THREAD)
        got_first = JsonlSaver(store).get_tuple(config(THREAD))
        assert normalize(got_first) == normalize(want["latest"][""])
        assert not diff_answers(answers(JsonlSaver(store), THREAD), want)
        start = int(want["latest"][""].checkpoint["channel_values"]["step"]) + 1


def test_sidecar_summaries_harness_reads_format_3(built) -> None:
    _, _, idx = built
    _, sums = sidecar_summaries(idx)
    assert len(sums) == 2 * CHECKPOINTS + sum(1 for s in sums if s["t"] == "snapshot")
