"""Crash battery 2: dirty tails.

After power loss the end of a log can hold NUL bytes, junk, half a line followed by
NULs, a batch whose commit record never arrived, or stale lines from blocks the file
system reused. Appended after the last committed batch, none of it may change what is
served; the next append must cut it, keeping the removed bytes in the quarantine file.

Each case runs against a fresh saver (with and without the sidecar index on disk) and
against a saver that had the clean log open before the tail appeared.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles, copy_store, read_quarantine, record_spans
from tests.harness.reference_log import ReferenceLog, build_reference_log
from tests.harness.truncation import AFTER_CUT_ID


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReferenceLog, Path]:
    store = tmp_path_factory.mktemp("ref") / "store"
    return build_reference_log(store, puts=10), store


def _next_record_lines(ref: ReferenceLog) -> tuple[bytes, bytes]:
    """Two lines a writer would append next: a checkpoint marked ``more`` and a snapshot."""
    last_seq = record_spans(ref.data)[-1][2]["seq"]
    head = framing.frame({"t": "checkpoint", "ns": "", "id": cp_id(500), "parent": None, "cv": {},
                          "md": {"json": {}}, "cp": {"json": {"v": 4}}, "values": {},
                          "seq": last_seq + 1, "more": 1})
    tail = framing.frame({"t": "snapshot", "ns": "", "cp": cp_id(500), "values": {}, "h": "x",
                          "seq": last_seq + 2})
    return head, tail


def _tail(kind: str, ref: ReferenceLog) -> bytes:
    rng = random.Random(kind)
    head, last = _next_record_lines(ref)
    if kind.startswith("nul-"):
        return b"\0" * int(kind[4:])
    if kind == "junk-lines":
        return b"".join(bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 200))) + b"\n"
                        for _ in range(30))
    if kind.startswith("junk-"):
        n = int(kind[5:])
        return bytes(rng.randrange(256) for _ in range(n))
    if kind == "json-bad-crc":
        return b'{"t":"checkpoint","ns":"","id":"x","seq":999,"c":"00000000"}\n'
    if kind == "half-line+nuls":
        return head[: len(head) // 2] + b"\0" * 4096
    if kind == "uncommitted-batch+nuls":
        return head + b"\0" * 3000
    if kind == "torn-batch":
        return head + last[: len(last) // 2]
    if kind == "whole-line-no-newline":
        return head + last[:-1]
    if kind == "stale-lines+nuls":
        # blocks reused from an earlier file: old, checksum-valid lines of this very log
        spans = record_spans(ref.data)
        (o1, n1, _), (o2, n2, _) = spans[3], spans[4]
        return ref.data[o1 : o1 + n1] + ref.data[o2 : o2 + n2] + b"\0" * 512
    raise AssertionError(kind)


NUL_SIZES = [1, 2, 7, 100, 511, 512, 4095, 4096, 4097, 8191, 8192] + sorted(
    random.Random(2).sample(range(1, 8193), 5)
)
KINDS = (
    [f"nul-{n}" for n in NUL_SIZES]
    + [f"junk-{n}" for n in (1, 13, 600, 4096, 8192)]
    + ["junk-lines", "json-bad-crc", "half-line+nuls", "uncommitted-batch+nuls", "torn-batch",
       "whole-line-no-newline", "stale-lines+nuls"]
)


@pytest.mark.parametrize("mode", ["fresh-no-index", "fresh-with-index", "live-saver"])
@pytest.mark.parametrize("kind", KINDS)
def test_dirty_tail_is_ignored_then_cut_into_quarantine(
    ref: tuple[ReferenceLog, Path], tmp_path: Path, kind: str, mode: str
) -> None:
    reflog, src = ref
    store = tmp_path / "store"
    copy_store(src, store, index=mode != "fresh-no-index")
    files = ThreadFiles.of(store, reflog.thread_id)
    want = reflog.acked[-1][1]
    live = JsonlSaver(store) if mode == "live-saver" else None
    if live is not None:
        assert answers(live, reflog.thread_id) == want
    tail = _tail(kind, reflog)
    with open(files.log, "ab") as f:
        f.write(tail)
    saver = live or JsonlSaver(store)

    got = answers(saver, reflog.thread_id)
    assert not diff_answers(got, want), diff_answers(got, want)
    with open(files.log, "rb") as f:
        assert f.read() == reflog.data + tail, "a read changed the log"

    latest = want["latest"][""]
    versions = dict(latest.checkpoint["channel_versions"])
    values = {**latest.checkpoint["channel_values"], "m": latest.checkpoint["channel_values"]["m"] + ["next"]}
    nv = {"m": saver.get_next_version(versions["m"], None)}
    saver.put(config(reflog.thread_id, "", latest.checkpoint["id"]),
              make_checkpoint(AFTER_CUT_ID, values, {**versions, **nv}), {}, nv)

    entries = read_quarantine(files.quarantine)
    assert [(e[0]["offset"], e[1]) for e in entries] == [(len(reflog.data), tail)]
    with open(files.log, "rb") as f:
        now = f.read()
    assert now.startswith(reflog.data)
    scanned = framing.scan(now)
    assert scanned.tail_bytes == 0 and scanned.corrupt_offset is None

    again = answers(JsonlSaver(store), reflog.thread_id)
    new = again["list"].pop(("", AFTER_CUT_ID))
    assert new.checkpoint["channel_values"] == values
    assert again["list"] == want["list"]
