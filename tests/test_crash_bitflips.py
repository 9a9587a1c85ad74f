"""Crash battery 3: single-bit flips in the header, the first record, a middle record and
the last record of a log.

Whatever a read returns must be data of untouched records: every read either raises
one of ``DAMAGE_REFUSED`` (each named with why it is right) or returns exactly what an
``InMemorySaver`` returned at some
acknowledged state *before* the altered record's batch (or, for a tuple the altered
record plays no part in, at the end). A flip followed by valid records is mid-log
damage and must raise ``CorruptLogError`` naming the file and the record's offset; a
flip in the header must raise (serving an empty thread would silently lose it all).

RELIABILITY.md also asks that a flip *below the index's durable watermark* raise every
time, even in the last record, where a damaged line otherwise looks like a torn tail.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import CorruptLogError, ForeignFileError, FormatVersionError, JsonlSaver
from tests.harness.answers import answers, normalize
from tests.harness.checkpoints import all_namespaces, config, make_checkpoint
from tests.harness.raw_log import (
    ThreadFiles,
    committed_batches,
    copy_store,
    record_spans,
    sidecar_in_use,
    write_in_place,
)
from tests.harness.reference_log import ReferenceLog, build_reference_log
from tests.harness.scratch import fast_dir
from tests.harness.truncation import AFTER_CUT_ID

#: What a read of a damaged log may raise, and why each is right:
#: CorruptLogError - a record before the end fails its checksum (the damage, named);
#: ForeignFileError - a flip in the header makes it no longer this package's header
#: for this thread; FormatVersionError - a flip in the header's format number makes it
#: a format this version does not know. Anything else (a KeyError, a decode error of a
#: value, a JsonlCheckpointError of another kind) means the damage got past the checks.
DAMAGE_REFUSED = (CorruptLogError, ForeignFileError, FormatVersionError)


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReferenceLog, Path]:
    store = tmp_path_factory.mktemp("ref") / "store"
    return build_reference_log(store), store


def _target(reflog: ReferenceLog, which: str) -> tuple[int, int, int]:
    """(record offset, record length, start of its batch) of the record to damage."""
    spans = record_spans(reflog.data)
    i = {"header": 0, "first": 1, "middle": len(spans) // 2, "last": len(spans) - 1}[which]
    off, n, _ = spans[i]
    batch = next(b for b in committed_batches(reflog.data) if b.start <= off < b.end)
    return off, n, batch.start


def _flips(offset: int, length: int, rng: random.Random, count: int) -> list[tuple[int, int]]:
    """(byte, bit) positions: random ones, every bit of the newline and of the checksum."""
    out = {(offset + length - 1, b) for b in range(8)}  # the newline
    out |= {(offset + length - 3 - rng.randrange(8), rng.randrange(8)) for _ in range(8)}  # CRC digits
    out |= {(offset + rng.randrange(length), rng.randrange(8)) for _ in range(count)}
    return sorted(out)


def _allowed_states(reflog: ReferenceLog, batch_start: int) -> list[dict]:
    empty = {"list": {}, "latest": {}}
    return [empty] + [ans for size, ans in reflog.acked if size <= batch_start]


def _check_reads(saver: JsonlSaver, reflog: ReferenceLog, allowed: list[dict]) -> list[str]:
    """Every read raises one of :data:`DAMAGE_REFUSED` or returns untouched, acknowledged data.

    A read that does not need the damaged record may serve the latest data (through the
    sidecar index nothing else is read), so the full state is allowed per tuple too.
    """
    full = reflog.acked[-1][1]
    problems = []
    tid = reflog.thread_id
    try:
        listed = {
            (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]): t
            for t in saver.list(all_namespaces(tid))
        }
        # The checkpoints listed are those of an acknowledged state (no silent gaps) ...
        if not any(set(listed) == set(st["list"]) for st in allowed + [full]):
            problems.append(f"list() served a set of checkpoints never acknowledged: {sorted(listed)}")
        # ... and each is exactly as acknowledged, before the damage or at the end.
        for key, got in listed.items():
            if not any(got == st["list"].get(key) for st in allowed + [full]):
                problems.append(f"list() returned {key} with data never acknowledged: {normalize(got)}")
    except DAMAGE_REFUSED:
        pass
    except Exception as exc:  # noqa: BLE001
        problems.append(f"list() raised {type(exc).__name__}: {exc}")
    for (ns, cid), want_full in full["list"].items():
        try:
            got = saver.get_tuple(config(tid, ns, cid))
        except DAMAGE_REFUSED:
            continue
        except Exception as exc:  # noqa: BLE001
            problems.append(f"get_tuple({cid}) raised {type(exc).__name__}: {exc}")
            continue
        ok = [st["list"].get((ns, cid)) for st in allowed] + [want_full]
        if got is not None and not any(got == tup for tup in ok):
            problems.append(f"get_tuple({cid}) returned data never acknowledged: {normalize(got)}")
    return problems


@pytest.mark.parametrize("index", ["no-index", "with-index"])
@pytest.mark.parametrize("which", ["header", "first", "middle", "last"])
def test_bit_flip_is_never_served(
    ref: tuple[ReferenceLog, Path], tmp_path: Path, which: str, index: str
) -> None:
    reflog, src = ref
    offset, length, batch_start = _target(reflog, which)
    rng = random.Random(f"{which}-{index}")
    scratch = fast_dir(tmp_path)
    store = os.path.join(scratch, "store")
    copy_store(src, store, index=True)
    files = ThreadFiles.of(store, reflog.thread_id)
    with open(files.idx, "rb") as f:
        sidecar = f.read()
    allowed = _allowed_states(reflog, batch_start)
    problems: list[str] = []
    try:
        for byte, bit in _flips(offset, length, rng, 120):
            damaged = bytearray(reflog.data)
            damaged[byte] ^= 1 << bit
            write_in_place(files.log, bytes(damaged))
            if index == "no-index":
                if os.path.exists(files.idx):
                    os.unlink(files.idx)
            else:
                with open(files.idx, "wb") as f:
                    f.write(sidecar)
                assert sidecar_in_use(store, reflog.thread_id)
            where = f"flip of bit {bit} at byte {byte} ({which} record at {offset})"
            problems += [f"{where}: {p}" for p in _check_reads(JsonlSaver(store), reflog, allowed)]
            if which == "header":
                try:
                    JsonlSaver(store).get_tuple(config(reflog.thread_id))
                    problems.append(f"{where}: a damaged header was not refused")
                except DAMAGE_REFUSED:
                    pass
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{where}: a damaged header raised {type(exc).__name__}: {exc}")
            if which in ("first", "middle") and index == "no-index":
                try:
                    JsonlSaver(store).get_tuple(config(reflog.thread_id))
                    problems.append(f"{where}: mid-log damage was not reported")
                except CorruptLogError as exc:
                    if exc.offset != offset or exc.path != files.log:
                        problems.append(f"{where}: CorruptLogError names {exc.path}@{exc.offset}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:15])


def test_flip_in_the_last_record_below_the_durable_watermark_raises(
    ref: tuple[ReferenceLog, Path], tmp_path: Path
) -> None:
    """The sidecar (written after the records it covers were fsynced) says the last record
    was durable, so a damaged last record is media corruption, not a torn write: it must
    raise every time rather than be served as a shorter log and cut on the next append."""
    reflog, src = ref
    offset, length, _ = _target(reflog, "last")
    store = tmp_path / "store"
    copy_store(src, store, index=True)
    files = ThreadFiles.of(store, reflog.thread_id)
    damaged = bytearray(reflog.data)
    damaged[offset + length // 2] ^= 0x04
    write_in_place(files.log, bytes(damaged))
    assert sidecar_in_use(store, reflog.thread_id)
    with pytest.raises(CorruptLogError) as info:
        answers(JsonlSaver(store), reflog.thread_id)
    assert info.value.offset == offset
    with pytest.raises(CorruptLogError):
        saver = JsonlSaver(store)
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config(reflog.thread_id), make_checkpoint(AFTER_CUT_ID, {"m": [1]}, v), {}, v)
    with open(files.log, "rb") as f:
        assert f.read() == bytes(damaged), "the damaged, acknowledged record was cut"
