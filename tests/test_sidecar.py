"""The sidecar index, format 2 (checksummed columnar blocks): what it stores agrees
with the log, and any sidecar — damaged, partial, stale, tampered, or of the old
one-summary-per-line format — serves exactly what a full scan of the log serves.

The fast scanner (``framing.iter_records``) is checked against ``framing.scan`` on
damaged logs here too: the rebuild path uses it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing, sidecar, sidecar_checks, view
from langgraph_jsonl_checkpoint.disk.index import ThreadIndex
from langgraph_jsonl_checkpoint.disk.summaries import LAST_LINE_RECORDS, last_bounds
from langgraph_jsonl_checkpoint.disk.summary import summarize
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import Mirror, config, cp_id, make_checkpoint
from tests.harness.raw_log import (
    ThreadFiles,
    copy_store,
    record_spans,
    sidecar_blocks,
    sidecar_summaries,
    write_in_place,
)
from tests.harness.reference_log import build_reference_log
from tests.harness.truncation import AFTER_CUT_ID


@pytest.fixture(autouse=True)
def long_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sidecar's entries are loaded only for a log longer than LOADED_RECORDS_BYTES (a
    shorter one is scanned, taking only the sidecar's durable watermark): the logs here
    are short, so every log counts as long, unless a test says otherwise."""
    monkeypatch.setattr(view, "LOADED_RECORDS_BYTES", 0)


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("sidecar")
    reflog = build_reference_log(base / "ref")
    scan_store = base / "scan"
    copy_store(base / "ref", scan_store, index=False)
    full_scan = answers(JsonlSaver(scan_store), reflog.thread_id)
    return base, reflog, full_scan


def _store_with_sidecar(base, name: str) -> str:
    store = str(base / name)
    shutil.rmtree(store, ignore_errors=True)
    copy_store(base / "ref", store, index=True)
    return store


def _scan(data: bytes, start: int = 0, expect: int | None = None):
    result = framing.ScanResult()
    found = list(framing.iter_records(data, start, expect_seq=expect, result=result))
    return [r for r, _, _ in found], [o for _, o, _ in found], [n for _, _, n in found], result


def _records(data: bytes) -> tuple[list[dict], list[int], list[int]]:
    recs, offs, lens, result = _scan(data)
    assert result.corrupt_offset is None
    return recs, offs, lens


def _tool_record(seq: int) -> dict:
    return {"t": "tool", "ns": "", "cp": "1ef-x", "call": f"call-{seq}", "state": "started", "seq": seq}


def test_blocks_hold_exactly_what_summarize_makes(ref) -> None:
    """Every record kind, both ways a block is built (from summaries on append, from
    records on a scan), round-tripped through the file form."""
    _, reflog, _ = ref
    data = reflog.data
    extra = framing.frame(_tool_record(len(record_spans(data)))) + framing.frame(
        {"t": "future-kind", "x": 1, "seq": len(record_spans(data)) + 1}
    )
    recs, offs, lens = _records(data + extra)
    recs, offs, lens = recs[1:], offs[1:], lens[1:]  # the header is never in a sidecar
    assert {r["t"] for r in recs} >= {"checkpoint", "writes", "snapshot", "tool", "future-kind"}
    want = [summarize(r, o, n) for r, o, n in zip(recs, offs, lens)]
    for cut in (1, 7, len(recs)):
        built = sidecar.encode(want[:cut]) + sidecar.encode(want[cut:])
        scanned = b"".join(b.framed() for b in sidecar.blocks_of(zip(recs, offs, lens)))
        for data_ in (built, scanned):
            got, seq, offset = [], 1, offs[0]
            for line in data_.split(b"\n")[:-1]:
                block = sidecar_checks.decode_block(line, seq, offset)
                assert block is not None
                got += [block.summary(s) for s in range(seq, seq + block.count)]
                seq, offset = seq + block.count, block.end
            assert got == want


def test_merged_blocks_frame_as_the_lines_they_came_from(ref) -> None:
    """A sidecar rewritten from loaded (merged) blocks is byte for byte the same."""
    _, reflog, _ = ref
    recs, offs, lens = _records(reflog.data)
    want = [summarize(r, o, n) for r, o, n in zip(recs[1:], offs[1:], lens[1:])]
    data = b"".join(sidecar.encode(want[a:b]) for a, b in ((0, 3), (3, 4), (4, 20), (20, len(want))))
    blocks, seq, offset = [], 1, offs[1]
    for line in data.split(b"\n")[:-1]:
        blocks.append(sidecar_checks.decode_block(line, seq, offset))
        seq, offset = seq + blocks[-1].count, blocks[-1].end
    merged = sidecar.merge(blocks)
    assert merged.framed() == data
    assert [merged.summary(s) for s in range(1, seq)] == want


def test_one_decoded_block_merged_in_place_is_what_merge_gives(ref) -> None:
    """``merge_owned`` (a head file's one index line, decoded) skips the copy, not the
    result: the same columns, offsets, lines and facts as :func:`sidecar.merge`."""
    _, reflog, _ = ref
    recs, offs, lens = _records(reflog.data)
    want = [summarize(r, o, n) for r, o, n in zip(recs[1:], offs[1:], lens[1:])]
    line = sidecar.encode(want).split(b"\n")[0]

    def decoded() -> sidecar.Block:
        block = sidecar_checks.decode_block(line, 1, offs[1])
        assert block is not None and block.count == len(want)
        return block

    copied, owned = sidecar.merge([decoded()]), sidecar.merge_owned([decoded()])
    assert owned.line is None and copied.line is None
    assert {k: list(v) if not isinstance(v, int) else v for k, v in owned.cols.items()} == {
        k: list(v) if not isinstance(v, int) else v for k, v in copied.cols.items()}
    assert {k: type(v) for k, v in owned.cols.items()} == {k: type(v) for k, v in copied.cols.items()}
    assert type(owned.offsets) is type(copied.offsets) and list(owned.offsets) == list(copied.offsets)
    assert (owned.bounds, owned.facts, owned.first, owned.count) == (
        copied.bounds, copied.facts, copied.first, copied.count)
    assert owned.framed() == copied.framed() == line + b"\n"
    assert [owned.summary(s) for s in range(1, len(want) + 1)] == want


def test_blocks_that_fit_one_line_frame_as_their_merge_does(ref) -> None:
    """``one_line`` (a short log's index written at let-go) joins the blocks' columns
    straight into the line: the same bytes as the merged block framed as one line, for
    blocks decoded from a file, owned (arrays) and packed (records folded as a run
    ended), with the index's facts and without."""
    _, reflog, _ = ref
    recs, offs, lens = _records(reflog.data)
    want = [summarize(r, o, n) for r, o, n in zip(recs[1:], offs[1:], lens[1:])]
    assert len(want) <= LAST_LINE_RECORDS
    cuts = (0, 5, 6, 30, len(want))
    lines = [sidecar.encode(want[a:b]).split(b"\n")[0] for a, b in zip(cuts, cuts[1:])]
    facts = {"plain": True, "heads": {"": want[-1].get("id", "x")}}

    def blocks(shape: str) -> list[sidecar.Block]:
        out, seq, offset = [], 1, offs[1]
        for line in lines:
            block = sidecar_checks.decode_block(line, seq, offset)
            assert block is not None
            if shape == "owned":
                block = sidecar.merge_owned([block])
            elif shape == "packed":
                block = sidecar.Block.packed(block.cols, list(block.offsets))
            out.append(block)
            seq, offset = seq + block.count, block.end
        return out

    for shape in ("decoded", "owned", "packed"):
        for with_facts in (facts, None):
            merged = sidecar.merge(blocks(shape))
            merged.bounds, merged.facts = [merged.count], with_facts
            assert sidecar.one_line(blocks(shape), with_facts) == merged.framed()
    line = sidecar.one_line(blocks("packed"), facts)
    block = sidecar_checks.decode_block(line[:-1], 1, offs[1])
    assert block is not None and block.facts == facts
    assert [block.summary(s) for s in range(1, len(want) + 1)] == want


def test_an_index_loaded_from_blocks_answers_like_one_applied_record_by_record(ref) -> None:
    _, reflog, _ = ref
    recs, offs, lens = _records(reflog.data)
    applied, loaded = ThreadIndex(), ThreadIndex()
    for r, o, n in zip(recs, offs, lens):
        applied.apply(summarize(r, o, n))
    loaded.apply(summarize(recs[0], offs[0], lens[0]))
    loaded.load_blocks(sidecar.blocks_of(zip(recs[1:], offs[1:], lens[1:])))
    def plain(idx: ThreadIndex) -> dict:
        return {ns: {cid: (e.ref, e.parent, e.metadata, e.versions) for cid, e in by_id.items()}
                for ns, by_id in idx.checkpoints.items()}

    assert plain(loaded) == plain(applied)
    for name in ("ordered_ids", "tool_events", "last_seq", "committed_end", "since_snapshot", "plain"):
        assert getattr(loaded, name) == getattr(applied, name), name
    assert loaded.writes == applied.writes
    assert {k: (b.ref, b.kind, b.base) for k, b in loaded.blobs.items()} == {
        k: (b.ref, b.kind, b.base) for k, b in applied.blobs.items()
    }


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def test_the_fast_scan_judges_damage_like_scan(ref) -> None:
    _, reflog, _ = ref
    data = reflog.data
    rng = random.Random(20261130)
    cases = [data, data[:-1], data[: len(data) // 2]]
    cases += [_flip_bytes(data, rng) for _ in range(150)]
    cases += [data[: rng.randrange(len(data))] for _ in range(50)]
    for case in cases:
        for start, expect in ((0, None), (reflog.header_end, 1)):
            want = framing.scan(case[start:], start, expect_seq=expect)
            recs, offs, lens, got = _scan(case[start:], start, expect)
            assert (got.committed_end, got.tail_bytes, got.corrupt_offset) == (
                want.committed_end, want.tail_bytes, want.corrupt_offset)
            assert recs == [r.record for r in want.records]
            assert offs == [r.offset for r in want.records]
            assert lens == [r.length for r in want.records]


def _old_format(store: str, thread_id: str) -> bytes:
    """The sidecar as releases before format 2 wrote it (one summary per line)."""
    files = ThreadFiles.of(store, thread_id)
    head = framing.parse_line(Path(files.idx).read_bytes().split(b"\n")[0])
    head.pop("v")
    recs, offs, lens = _records(Path(files.log).read_bytes())
    return framing.frame(head) + b"".join(
        framing.frame(summarize(r, o, n)) for r, o, n in zip(recs[1:], offs[1:], lens[1:])
    )


def _loaded(store: str, thread_id: str) -> tuple[JsonlSaver, bool]:
    saver = JsonlSaver(store)
    log = saver.store.thread_log(thread_id)
    log.refresh()
    # (A short log's index may come from its head file instead: not the sidecar's.)
    return saver, log.sidecar.trusted and not log.sidecar.whole_log_checked


def test_an_old_format_sidecar_is_ignored_and_rewritten(ref) -> None:
    base, reflog, full_scan = ref
    store = _store_with_sidecar(base, "old")
    files = ThreadFiles.of(store, reflog.thread_id)
    old = _old_format(store, reflog.thread_id)
    with open(files.idx, "wb") as f:
        f.write(old)
    saver, from_sidecar = _loaded(store, reflog.thread_id)
    assert not from_sidecar
    assert not diff_answers(answers(saver, reflog.thread_id), full_scan)
    saver.close()  # rewrites the sidecar in the current format
    head = framing.parse_line(Path(files.idx).read_bytes().split(b"\n")[0])
    assert head["v"] == sidecar.SIDECAR_VERSION
    saver, from_sidecar = _loaded(store, reflog.thread_id)
    assert from_sidecar
    assert not diff_answers(answers(saver, reflog.thread_id), full_scan)


def _damaged(strategy: str, idx: bytes, rng: random.Random) -> bytes:
    head, sums = sidecar_summaries(idx)
    cuts = sorted(rng.sample(range(1, len(sums)), 3))
    blocks = sidecar_blocks(head, sums, cuts=tuple(cuts))
    lines = blocks.split(b"\n")[:-1]
    k = rng.randrange(1, len(lines))
    if strategy == "bitflip":
        lines[k] = _flip_bytes(lines[k], rng)
    elif strategy == "partial":
        return b"\n".join(lines[:k]) + b"\n" + lines[k][: rng.randrange(len(lines[k]))]
    elif strategy == "stale":
        return b"\n".join(lines[:k]) + b"\n"
    else:  # "tampered": well framed, checksum valid, contents not what the log holds.
        # Every entry the index serves is checked against its record when that is first
        # read. Not caught (as with format 1): a summary that makes a record serve
        # nothing, e.g. a writes record moved to another namespace or emptied, a value
        # claimed empty, or a stored value moved to another record.
        cols = json.loads(lines[k])
        cols.pop("c")
        n = len(cols["n"])
        field = rng.choice(["vr", "vk", "vb", "md", "cv", "n", "t", "w", "wn", "ns", "id", "s0", "o0"])
        if field == "vr" and cols["vr"]:  # out of order or range
            cols["vr"][rng.randrange(len(cols["vr"]))] = rng.choice([cols["s0"] - 1, cols["s0"] + n, -5])
        elif field == "vk" and cols["vk"]:  # (claiming "empty" would be an omission)
            cols["vk"][rng.randrange(len(cols["vk"]))] = rng.choice([0, 1, 7, "x"])
        elif field == "vb" and cols["vb"]:
            cols["vb"][rng.randrange(len(cols["vb"]))] = rng.choice(["0" * 12 + ".forged", None, [1]])
        elif field in ("md", "cv") and cols[field]:
            cols[field][rng.randrange(len(cols[field]))] = rng.choice(["{", '{"json":{"step":-1}}', "[]"])
        elif field == "n":
            cols["n"][rng.randrange(n)] += rng.choice([-1, 1])
        elif field == "t":
            cols["t"][rng.randrange(n)] = rng.choice([0, 1, 2, 3, "writes", None, 9])
        elif field == "w" and cols["wi"]:
            i = rng.randrange(len(cols["wi"]))
            column, value = rng.choice([("wi", 0), ("wi", -9), ("wi", "x"), ("wc", "forged"), ("wc", 1)])
            cols[column][i] = value
        elif field == "wn" and cols["wn"]:
            cols["wn"][rng.randrange(len(cols["wn"]))] += rng.choice([-1, 1])
        elif field == "ns":
            cols["ns"][rng.randrange(n)] = rng.choice([None, 3])
        elif field == "id" and cols["id"]:
            cols["id"][rng.randrange(len(cols["id"]))] = cp_id(999)
        else:
            cols[field if field in ("s0", "o0") else "s0"] += 1
        lines[k] = framing.frame(cols)[:-1]
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("length", ["long", "short"])
@pytest.mark.parametrize("strategy", ["bitflip", "partial", "stale", "tampered"])
def test_damaged_sidecars_answer_like_a_full_scan(
    ref, strategy: str, length: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long: the sidecar's entries are loaded. Short: the log is scanned and only the
    sidecar's durable watermark is taken, which damage must not raise above the log."""
    if length == "short":
        monkeypatch.setattr(view, "LOADED_RECORDS_BYTES", 1 << 40)
    base, reflog, full_scan = ref
    store = _store_with_sidecar(base, f"damage-{strategy}-{length}")
    files = ThreadFiles.of(store, reflog.thread_id)
    good = Path(files.idx).read_bytes()
    rng = random.Random(f"sidecar-{strategy}")
    used = 0
    for trial in range(40):
        with open(files.idx, "wb") as f:
            f.write(_damaged(strategy, good, rng))
        saver, from_sidecar = _loaded(store, reflog.thread_id)
        used += from_sidecar
        assert not diff_answers(answers(saver, reflog.thread_id), full_scan), (strategy, trial)
        if trial % 8 == 0:  # a writer on top of it, then a cold reopen
            latest = full_scan["latest"][""]
            nv = {"m": saver.get_next_version(latest.checkpoint["channel_versions"]["m"], None)}
            values = {
                **latest.checkpoint["channel_values"],
                "m": latest.checkpoint["channel_values"]["m"] + [trial],
            }
            saver.put(
                config(reflog.thread_id, "", latest.checkpoint["id"]),
                make_checkpoint(AFTER_CUT_ID, values, {**latest.checkpoint["channel_versions"], **nv}),
                {},
                nv,
            )
            saver.close()
            again = answers(JsonlSaver(store), reflog.thread_id)
            new = again["list"].pop(("", AFTER_CUT_ID))
            assert new.checkpoint["channel_values"] == values and again["list"] == full_scan["list"]
            write_in_place(files.log, reflog.data)
    if strategy in ("partial", "stale") and length == "long":
        assert used, "a valid prefix of blocks was never used"
    if length == "short":
        assert not used


def test_a_sidecar_written_by_appends_is_used_and_equals_a_rewrite(tmp_path) -> None:
    """Blocks appended as the log grows (a writer's path) load like one rewritten whole."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    mirror = Mirror(saver)
    for i in range(1100):  # past INDEX_REWRITE_RECORDS several times: appended blocks
        mirror.put("t", cp_id(i), {"m": [i], "k": i % 3})
    files = ThreadFiles.of(store, "t")
    lines = Path(files.idx).read_bytes().split(b"\n")[:-1]
    assert len(lines) > 3  # one line per append (before close compacts them)
    fresh, from_sidecar = _loaded(str(store), "t")
    assert from_sidecar
    want = answers(mirror.memory, "t")
    assert not diff_answers(answers(fresh, "t"), want)
    saver.close()
    fresh, from_sidecar = _loaded(str(store), "t")
    assert from_sidecar
    assert not diff_answers(answers(fresh, "t"), want)
    os.unlink(files.idx)
    rebuilt = JsonlSaver(store)
    assert not diff_answers(answers(rebuilt, "t"), want)
    rebuilt.close()  # rewrites the sidecar whole from the rebuilt (merged) columns
    lines = Path(files.idx).read_bytes().split(b"\n")[:-1]
    records = len(record_spans(Path(files.log).read_bytes())) - 1
    assert records > sidecar.BLOCK_RECORDS // 2
    assert len(lines) == 1 + -(-records // sidecar.BLOCK_RECORDS)
    fresh, from_sidecar = _loaded(str(store), "t")
    assert from_sidecar
    assert not diff_answers(answers(fresh, "t"), want)


def test_close_rewrites_a_sidecar_of_many_short_blocks_in_long_ones(tmp_path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    mirror = Mirror(saver)
    for i in range(2600):  # a block appended every 256 records: ten short lines
        mirror.put("t", cp_id(i), {"m": [i]})
    saver.close()
    files = ThreadFiles.of(store, "t")
    records = len(record_spans(Path(files.log).read_bytes())) - 1
    lines = Path(files.idx).read_bytes().split(b"\n")[:-1]
    # Lines of BLOCK_RECORDS, but a short last one: a fresh reader decodes that first.
    counts = [len(framing.parse_line(line)["n"]) for line in lines[1:]]
    assert counts == last_bounds(records)
    assert counts[0] == sidecar.BLOCK_RECORDS and counts[-1] == LAST_LINE_RECORDS
    fresh, from_sidecar = _loaded(str(store), "t")
    assert from_sidecar
    assert not diff_answers(answers(fresh, "t"), answers(mirror.memory, "t"))
