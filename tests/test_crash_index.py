"""Crash battery 8 (index faults), beyond tests/test_saver.py's six fixed cases.

The sidecar index is derived data: whatever is in it, a saver must answer exactly as a
saver that scanned the log (the same store with the ``.idx`` deleted). Many random
faults: summaries pointing past EOF or into the middle of a record, shifted so that the
summaries stay contiguous (the saver checks contiguity and the last record only),
wrong lengths and sequence numbers, lines dropped, duplicated, or cut off.

Each damaged summary is re-encoded into blocks with valid checksums: these are faults a checksum
does not catch (a stale or buggy sidecar), not bit rot.
"""

from __future__ import annotations

import os
import random
import shutil

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import (
    ThreadFiles,
    copy_store,
    record_spans,
    sidecar_blocks,
    sidecar_summaries,
    write_in_place,
)
from tests.harness.reference_log import build_reference_log
from tests.harness.scratch import fast_dir
from tests.harness.truncation import AFTER_CUT_ID

TRIALS = 30  # per strategy
STRATEGIES = ["past_eof", "mid_record", "shift_contiguous", "last_shift_contiguous", "length", "seq",
              "truncate", "drop_line", "dup_line", "swap_lines"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("idx")
    reflog = build_reference_log(base / "ref")
    scratch = fast_dir(base)
    store = os.path.join(scratch, "store")
    copy_store(base / "ref", store, index=True)
    files = ThreadFiles.of(store, reflog.thread_id)
    with open(files.idx, "rb") as f:
        sidecar = f.read()
    scan_store = os.path.join(scratch, "scan")
    copy_store(base / "ref", scan_store, index=False)
    full_scan = answers(JsonlSaver(scan_store), reflog.thread_id)
    assert not diff_answers(full_scan, reflog.acked[-1][1])
    yield reflog, store, files, sidecar, full_scan
    shutil.rmtree(scratch, ignore_errors=True)


def _summaries(sidecar: bytes) -> tuple[bytes, list[dict]]:
    return sidecar_summaries(sidecar)


def _damage(strategy: str, sidecar: bytes, size: int, starts: set[int], rng: random.Random) -> bytes:
    """The sidecar with one fault. A block stores the offset and seq of its first record
    only, so a summary with a wrong offset or seq is made to start a block; a block
    boundary is also put at a random place (as an appending writer leaves them)."""
    head, sums = _summaries(sidecar)
    n = len(sums)
    k = rng.randrange(n)
    cuts = [k, rng.randrange(n)]
    if strategy == "past_eof":
        sums[k]["o"] = size + rng.randint(0, 10_000)
    elif strategy == "mid_record":
        sums[k]["o"] = rng.choice([o for o in range(1, size) if o not in starts])
    elif strategy in ("shift_contiguous", "last_shift_contiguous"):
        k = n - 1 if strategy == "last_shift_contiguous" else rng.randrange(1, n - 1)
        prev, cur = sums[k - 1], sums[k]
        d = rng.choice([x for x in range(-prev["n"] + 1, cur["n"]) if x])
        prev["n"] += d
        cur["o"] += d
        cur["n"] -= d
        cuts.append(k)
    elif strategy == "length":
        sums[k]["n"] = rng.choice([x for x in range(2, 2000) if x != sums[k]["n"]])
    elif strategy == "seq":
        sums[k]["seq"] += rng.choice([-2, -1, 1, 2, 50])
    elif strategy == "truncate":
        return sidecar[: rng.randrange(len(sidecar))]
    elif strategy == "drop_line":
        del sums[k]
    elif strategy == "dup_line":
        sums.insert(k, dict(sums[k]))
    elif strategy == "swap_lines":
        j = rng.randrange(n)
        sums[k], sums[j] = sums[j], sums[k]
        cuts.append(j)
    return sidecar_blocks(head, sums, cuts=tuple(cuts))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_random_index_faults_answer_like_a_full_scan(setup, strategy: str) -> None:
    reflog, store, files, sidecar, full_scan = setup
    starts = {o for o, _, _ in record_spans(reflog.data)}
    rng = random.Random(f"20261130-{strategy}")
    problems = []
    for trial in range(TRIALS):
        bad = _damage(strategy, sidecar, len(reflog.data), starts, rng)
        with open(files.idx, "wb") as f:
            f.write(bad)
        try:
            got = answers(JsonlSaver(store), reflog.thread_id)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"trial {trial} ({strategy}): {type(exc).__name__}: {exc}")
            continue
        d = diff_answers(got, full_scan)
        if d:
            problems.append(f"trial {trial} ({strategy}): {d}")
        if trial % 6 == 0:
            # a writer on top of the faulty sidecar, then a cold reopen
            saver = JsonlSaver(store)
            latest = full_scan["latest"][""]
            nv = {"m": saver.get_next_version(latest.checkpoint["channel_versions"]["m"], None)}
            values = {
                **latest.checkpoint["channel_values"],
                "m": latest.checkpoint["channel_values"]["m"] + [trial],
            }
            try:
                saver.put(
                    config(reflog.thread_id, "", latest.checkpoint["id"]),
                    make_checkpoint(
                        AFTER_CUT_ID, values, {**latest.checkpoint["channel_versions"], **nv}
                    ),
                    {},
                    nv,
                )
                again = answers(JsonlSaver(store), reflog.thread_id)
                new = again["list"].pop(("", AFTER_CUT_ID))
                if new.checkpoint["channel_values"] != values or again["list"] != full_scan["list"]:
                    problems.append(f"trial {trial} ({strategy}): wrong answers after a put")
            except Exception as exc:  # noqa: BLE001
                problems.append(f"trial {trial} ({strategy}): put/reopen: {type(exc).__name__}: {exc}")
            write_in_place(files.log, reflog.data)
    assert not problems, f"{len(problems)} of {TRIALS} trials wrong:\n" + "\n".join(problems[:12])


@pytest.mark.parametrize("field", ["p", "md", "cv", "vals", "id", "w", "task"])
def test_tampered_summary_contents_answer_like_a_full_scan(setup, field: str) -> None:
    """A summary in the middle altered (checksum recomputed; offsets, lengths and
    sequence numbers left intact, so contiguity and the last-record check pass)."""
    reflog, store, files, sidecar, full_scan = setup
    head, sums = _summaries(sidecar)
    kind = "writes" if field in ("w", "task") else "checkpoint"
    k = [i for i, s in enumerate(sums) if s["t"] == kind][3]
    s = sums[k]
    if field == "p":
        s["parent"] = cp_id(777)
    elif field == "md":
        s["md"] = {"json": {"step": 12345, "forged": True}}
    elif field == "cv":
        s["cv"] = {ch: "0" * 32 + ".forged" for ch in s["cv"]}
    elif field == "vals":
        s["values"] = {ch: {"ver": v["ver"]} for ch, v in s["values"].items()}  # claim full values
        s["values"]["ghost"] = {"ver": "1"}
    elif field == "id":
        s["id"] = cp_id(778)
    elif field == "w":
        s["w"] = [[0, "forged-channel"]] + s["w"]
    elif field == "task":
        s["task"] = "forged-task"
    with open(files.idx, "wb") as f:
        f.write(sidecar_blocks(head, sums))
    # every entry is checked against its record on first use: a forged one is found,
    # the index rebuilt from the log, and the answers are the log's (nothing raised)
    got = answers(JsonlSaver(store), reflog.thread_id)
    d = diff_answers(got, full_scan)
    assert not d, f"a tampered sidecar ({field}) changed the answers: {d}"
