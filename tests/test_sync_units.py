"""Batch and sync-unit marks (``more``, ``b``) and how a scan judges damage by them.

Written for mutants of ``disk/framing.py`` that survived the suite (stress/mutation.py):
the marks were never checked field by field, and a damaged line followed by later lines
of its own sync unit (what a power cut leaves) was never told apart from mid-log damage.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_jsonl_checkpoint.disk.framing import (
    ScanResult,
    frame,
    frame_batch_lines,
    iter_records,
    parse_line,
    scan,
)


def _recs(*seqs: int) -> list[dict]:
    return [{"t": "x", "seq": s} for s in seqs]


def _fields(lines: list[bytes]) -> list[dict]:
    return [orjson.loads(line) for line in lines]


def _damage(line: bytes) -> bytes:
    """The line with one byte of its body changed (its checksum no longer matches)."""
    return line[:2] + (b"X" if line[2:3] != b"X" else b"Y") + line[3:]


def test_a_batch_marks_more_on_all_but_its_last_record_and_b_on_all_but_its_first() -> None:
    lines = frame_batch_lines(_recs(5, 6, 7))
    got = [{k: v for k, v in f.items() if k in ("more", "b")} for f in _fields(lines)]
    assert got == [{"more": 1}, {"more": 1, "b": 5}, {"b": 5}]
    assert [parse_line(line[:-1]) for line in lines] == [
        {"t": "x", "seq": 5, "more": 1},
        {"t": "x", "seq": 6, "more": 1, "b": 5},
        {"t": "x", "seq": 7, "b": 5},
    ]


def test_a_later_batch_of_a_unit_marks_every_record_with_the_units_first_seq() -> None:
    lines = frame_batch_lines(_recs(8, 9), unit=5)
    got = [{k: v for k, v in f.items() if k in ("more", "b")} for f in _fields(lines)]
    assert got == [{"more": 1, "b": 5}, {"b": 5}]


def test_a_single_record_batch_carries_no_marks() -> None:
    (line,) = frame_batch_lines(_recs(4))
    assert line == frame({"t": "x", "seq": 4})


def _unit_log() -> tuple[bytes, list[bytes]]:
    """Records 1 and 2 (one batch each, synced), then one sync unit of two batches:
    [3, 4] and [5], the second marked ``b``: 3."""
    lines = frame_batch_lines(_recs(1)) + frame_batch_lines(_recs(2))
    lines += frame_batch_lines(_recs(3, 4)) + frame_batch_lines(_recs(5), unit=3)
    return b"".join(lines), lines


def test_damage_followed_only_by_its_own_sync_unit_is_a_torn_tail() -> None:
    _, lines = _unit_log()
    # A power cut: the unit's first sector garbled, its later sectors written.
    data = b"".join(lines[:2] + [_damage(lines[2])] + lines[3:])
    result = scan(data)
    assert result.corrupt_offset is None
    assert [r.record["seq"] for r in result.records] == [1, 2]
    assert result.committed_end == len(lines[0]) + len(lines[1])
    assert result.tail_bytes == len(data) - result.committed_end


def test_damage_followed_by_a_later_unit_is_mid_log_corruption() -> None:
    _, lines = _unit_log()
    later = frame_batch_lines(_recs(6))  # its own unit: the damaged one was synced before it
    data = b"".join(lines[:2] + [_damage(lines[2])] + lines[3:] + later)
    result = scan(data)
    assert result.corrupt_offset == len(lines[0]) + len(lines[1])


def test_damage_in_a_later_batch_of_a_unit_followed_by_the_units_lines_is_a_tail() -> None:
    lines = frame_batch_lines(_recs(1)) + frame_batch_lines(_recs(2, 3))
    lines += frame_batch_lines(_recs(4, 5), unit=2)
    data = b"".join(lines[:3] + [_damage(lines[3])] + lines[4:])
    result = scan(data)
    assert result.corrupt_offset is None
    assert [r.record["seq"] for r in result.records] == [1, 2, 3]


def test_a_stale_copy_of_the_last_good_record_after_damage_is_a_tail() -> None:
    lines = frame_batch_lines(_recs(1)) + frame_batch_lines(_recs(2))
    # Damage where record 3 was, then an old block holding record 2 again.
    damaged = _damage(frame_batch_lines(_recs(3))[0])
    data = b"".join(lines + [damaged, lines[1]])
    result = scan(data)
    assert result.corrupt_offset is None
    assert [r.record["seq"] for r in result.records] == [1, 2]


def test_a_record_out_of_sequence_followed_by_a_newer_one_is_corruption() -> None:
    lines = frame_batch_lines(_recs(1)) + frame_batch_lines(_recs(2))
    data = b"".join(lines + frame_batch_lines(_recs(9)) + frame_batch_lines(_recs(10)))
    result = scan(data)
    assert result.corrupt_offset == len(lines[0]) + len(lines[1])


# -- iter_records: the fast loop must judge every log as scan does ---------------------

_SEGMENT = st.sampled_from(["batch1", "batch2", "batch3", "unit", "damage", "stale", "junk", "cut"])


def _build(plan: list[str]) -> bytes:
    out: list[bytes] = []
    seq = 1
    last: bytes | None = None
    for step in plan:
        if step.startswith("batch"):
            n = int(step[-1])
            lines = frame_batch_lines([{"t": "r", "seq": s, "v": "é" * s} for s in range(seq, seq + n)])
            seq += n
            out += lines
            last = lines[-1]
        elif step == "unit":
            first = seq
            out += frame_batch_lines(_recs(seq, seq + 1))
            out += frame_batch_lines(_recs(seq + 2), unit=first)
            seq += 3
        elif step == "damage":
            out.append(_damage(frame({"t": "r", "seq": seq})))
            seq += 1
        elif step == "stale" and last is not None:
            out.append(last)
        elif step == "junk":
            out.append(b"\x00\x00garbage\n")
        elif step == "cut":
            line = frame({"t": "r", "seq": seq})
            out.append(line[: len(line) // 2])
    return b"".join(out)


def _streamed(data: bytes, base: int, expect: int | None) -> tuple[list[tuple[dict, int, int]], ScanResult]:
    result = ScanResult()
    got = list(iter_records(data, base, expect_seq=expect, result=result))
    return got, result


@settings(max_examples=300, deadline=None)
@given(plan=st.lists(_SEGMENT, max_size=8), base=st.sampled_from([0, 17]),
       expect=st.sampled_from([None, 1, 2]))
def test_iter_records_yields_what_scan_finds(plan: list[str], base: int, expect: int | None) -> None:
    data = _build(plan)
    want = scan(data, base, expect_seq=expect)
    got, result = _streamed(data, base, expect)
    assert got == [(r.record, r.offset, r.length) for r in want.records]
    assert (result.committed_end, result.tail_bytes, result.corrupt_offset) == (
        want.committed_end, want.tail_bytes, want.corrupt_offset)
    assert result.records == []
    for rec, offset, length in got:
        line = data[offset - base : offset - base + length]
        assert line.endswith(b"\n") and parse_line(line[:-1]) is not None
        assert "more" not in rec and "b" not in rec and "c" not in rec


def test_iter_records_of_a_clean_log_reads_it_to_the_end() -> None:
    data = _build(["batch2", "unit", "batch1", "batch3"])
    got, result = _streamed(data, 100, 1)
    assert [r["seq"] for r, _, _ in got] == list(range(1, 10))
    assert result.committed_end == 100 + len(data) and result.tail_bytes == 0
    assert got[0][1] == 100 and sum(length for _, _, length in got) == len(data)


def test_scan_holds_the_first_record_to_the_expected_seq() -> None:
    data = b"".join(frame_batch_lines(_recs(1)) + frame_batch_lines(_recs(2)))
    assert [r.record["seq"] for r in scan(data, expect_seq=1).records] == [1, 2]
    wrong = scan(data, expect_seq=2)
    assert wrong.records == [] and wrong.committed_end == 0 and wrong.tail_bytes == len(data)
    # Followed by a newer record: not a tail but damage at the first line.
    assert scan(data, expect_seq=0).corrupt_offset == 0


def test_scanned_records_carry_no_batch_marks() -> None:
    data, _ = _unit_log()
    records = [r.record for r in scan(data).records]
    assert records == _recs(1, 2, 3, 4, 5)
