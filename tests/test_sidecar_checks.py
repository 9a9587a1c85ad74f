"""Each check a sidecar block must pass before its columns are trusted, one at a time.

A block line carries a valid checksum even when its columns are inconsistent (written by
a bug, or by hand). ``decode_block`` must refuse it; the saver then scans the log. The
mutants of the checks (then in ``disk/sidecar.py``, now ``disk/sidecar_checks.py``) that
survived the suite (stress/mutation.py) loosened such checks (``or`` made ``and``),
which only a block breaking that one rule shows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing, sidecar, sidecar_checks
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles

Cols = dict[str, Any]


@pytest.fixture(scope="module")
def block(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cols, int, int]:
    """The columns of every record after the header of a log holding each kind of record
    (checkpoints with full and delta values, writes, a snapshot, tool events)."""
    store = tmp_path_factory.mktemp("sc") / "s"
    saver = JsonlSaver(store, snapshot_every=2, snapshot_ratio=0.0)
    parent = config("t")
    items: list[str] = []
    for i in range(1, 5):
        items = items + [f"item {i}"]
        versions = {"m": f"{i:032}.{0:016}", "k": f"{1:032}.{0:016}"}
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items, "k": "same"}, versions),
                           {"step": i}, versions)
        saver.put_writes(parent, [("m", f"w{i}"), ("__interrupt__", {"i": i})], f"task-{i}", f"~{i}")
    saver.record_tool_events("t", [{"ev": "requested", "ns": "", "cp": cp_id(1), "call": "c1",
                                    "at": "2026-01-01T00:00:00+00:00", "name": "f", "args": {"json": 1}}])
    saver.close()
    data = Path(ThreadFiles.of(store, "t").log).read_bytes()
    result = framing.scan(data)
    records = [(r.record, r.offset, r.length) for r in result.records if r.record["t"] != "header"]
    cols = sidecar.columns_of(records)
    assert cols is not None
    assert set(cols["t"]) == set(sidecar.RecordKind)  # every kind of record is there
    assert set(cols["vk"]) == {0, 1} and cols["wn"] and cols["key"]  # full values and deltas
    return cols, records[0][0]["seq"], records[0][1]


def _decode(cols: Cols, seq: int, offset: int) -> sidecar.Block | None:
    return sidecar_checks.decode_block(framing.frame(cols)[:-1], seq, offset)


def _first(kind: int) -> Callable[[Cols], int]:
    return lambda c: c["t"].index(kind)


def _set(name: str, value: Any, at: int | Callable[[Cols], int] = 0) -> Callable[[Cols], None]:
    def edit(c: Cols) -> None:
        i = at(c) if callable(at) else at
        c[name][i] = value
    return edit


def _swap_vr(c: Cols) -> None:
    c["vr"][0], c["vr"][-1] = c["vr"][-1], c["vr"][0]


def _snapshot_value(field: str, value: Any) -> Callable[[Cols], None]:
    def edit(c: Cols) -> None:
        snap_seq = c["s0"] + c["t"].index(sidecar.SNAPSHOT)
        c[field][c["vr"].index(snap_seq)] = value
    return edit


def _value_of_writes_record(c: Cols) -> None:
    c["vr"][-1] = c["s0"] + len(c["t"]) - 1 - c["t"][::-1].index(sidecar.WRITES)
    c["vr"].sort()


TAMPERS: dict[str, Callable[[Cols], None]] = {
    "length below 2": _set("n", 1),
    "length not an int": _set("n", "40"),
    "kind out of range": _set("t", 7),
    "negative kind": _set("t", -1),
    "known kind spelled out": _set("t", "checkpoint"),
    "namespace not a string": _set("ns", 3),
    "checkpoint namespace null": _set("ns", None, _first(sidecar.CHECKPOINT)),
    "writes namespace null": _set("ns", None, _first(sidecar.WRITES)),
    "checkpoint id not a string": _set("id", 5),
    "parent not a string": _set("p", 5),
    "metadata not an object": _set("md", "[1]"),
    "metadata spelled like null": _set("md", "nul"),
    "channel versions not an object": _set("cv", "[1, 2]"),
    "negative write count": _set("wn", -1),
    "write count off": _set("wn", 5),
    "write index not an int": _set("wi", "0"),
    "tool key of two parts": _set("key", ["", "x"]),
    "tool key not strings": _set("key", ["", "x", 3]),
    "values out of order": _swap_vr,
    "value before the block": _set("vr", 0),
    "value after the block": lambda c: c["vr"].__setitem__(-1, c["s0"] + len(c["t"])),
    "value held by a writes record": _value_of_writes_record,
    "value kind out of range": _set("vk", 3),
    "value kind not an int": _set("vk", "0"),
    "value version a list": _set("vv", [1]),
    "value channel not a string": _set("vc", 1),
    "snapshot holding a delta": _snapshot_value("vk", 1),
    "snapshot value with a base": _snapshot_value("vb", "0.1"),
}


def test_an_untouched_block_decodes(block: tuple[Cols, int, int]) -> None:
    cols, seq, offset = block
    decoded = _decode(copy.deepcopy(cols), seq, offset)
    assert decoded is not None and decoded.count == len(cols["n"])
    assert decoded.end == offset + sum(cols["n"])
    assert _decode(copy.deepcopy(cols), seq + 1, offset) is None
    assert _decode(copy.deepcopy(cols), seq, offset + 1) is None


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_block_breaking_one_rule_is_refused(block: tuple[Cols, int, int], tamper: str) -> None:
    cols, seq, offset = copy.deepcopy(block[0]), block[1], block[2]
    TAMPERS[tamper](cols)
    assert _decode(cols, seq, offset) is None
