"""What a put writes: a version named again, delta chains capped, snapshots of channels
the put did not write, errors naming the channel.

Written for mutants of ``values/records.py`` that survived the suite (stress/mutation.py).
``InMemorySaver`` is the oracle for what is read back.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import EncodeError, JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _v(n: int) -> str:
    return f"{n:032}.{0:016}"


def _records(store: Path, kind: str) -> list[dict]:
    with open(ThreadFiles.of(store, "t").log, "rb") as f:
        recs = [orjson.loads(line) for line in f]
    return [r for r in recs if r["t"] == kind]


def _put_both(savers: list[Any], parents: list[dict], i: int, values: dict, versions: dict) -> list[dict]:
    cp = make_checkpoint(cp_id(i), values, versions)
    return [s.put(p, cp, {}, versions) for s, p in zip(savers, parents)]


def _state(saver: Any, i: int) -> dict:
    return saver.get_tuple(config("t", checkpoint_id=cp_id(i))).checkpoint["channel_values"]


def test_a_version_named_again_is_stored_once_replaced_or_emptied_as_in_memory(tmp_path: Path) -> None:
    store = tmp_path / "s"
    ours, mem = JsonlSaver(store), InMemorySaver()
    savers = [ours, mem]
    parents = [config("t"), config("t")]
    steps = [
        ({"m": ["a"], "n": {"k": 1}}, {"m": _v(1), "n": _v(1)}),
        ({"m": ["a", "b"], "n": {"k": 1}}, {"m": _v(2), "n": _v(1)}),       # n named again, same value
        ({"m": ["a", "b"], "n": {"k": 1}}, {"m": _v(2), "n": _v(1)}),       # both named again, same
        ({"m": ["a", "b", "c"], "n": {"k": 2}}, {"m": _v(3), "n": _v(1)}),  # n: another value, old version
        ({"m": ["z"]}, {"m": _v(3), "n": _v(1)}),                          # both again: m replaced, n emptied
    ]
    for i, (values, versions) in enumerate(steps, start=1):
        parents = _put_both(savers, parents, i, values, versions)
        assert _state(ours, i) == _state(mem, i), i
    ours.close()
    fresh = JsonlSaver(store, read_only=True)
    for i in range(1, len(steps) + 1):
        assert _state(fresh, i) == _state(mem, i), i
    written = [r["values"] for r in _records(store, "checkpoint")]
    assert set(written[1]) == {"m"}              # n's same value is not stored twice
    assert written[2] == {}                      # nothing new at all
    assert written[3]["n"] == {"ver": _v(1), "val": {"json": {"k": 2}}}  # replaced in full, never a delta
    assert written[4]["n"] == {"ver": _v(1), "empty": 1}
    assert "base" not in written[4]["m"] and written[4]["m"]["ver"] == _v(3)


def test_a_version_named_again_after_a_restart_is_compared_with_the_stored_value(tmp_path: Path) -> None:
    store = tmp_path / "s"
    first = JsonlSaver(store)
    v1 = {"m": _v(1)}
    parent = first.put(config("t"), make_checkpoint(cp_id(1), {"m": ["a", "b"]}, v1), {}, v1)
    first.close()
    again = JsonlSaver(store)  # no cached proof: the stored value is read and compared
    parent = again.put(parent, make_checkpoint(cp_id(2), {"m": ["a", "b"]}, {"m": _v(1)}), {}, {"m": _v(1)})
    again.put(parent, make_checkpoint(cp_id(3), {"m": ["a", "c"]}, {"m": _v(1)}), {}, {"m": _v(1)})
    again.close()
    written = [r["values"] for r in _records(store, "checkpoint")]
    assert written[1] == {} and written[2]["m"]["ver"] == _v(1) and "val" in written[2]["m"]
    assert _state(JsonlSaver(store, read_only=True), 3)["m"] == ["a", "c"]


def test_delta_chains_stop_at_the_policys_depth(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=10_000)
    saver.snapshot_policy = dataclasses.replace(saver.snapshot_policy, max_depth=3)
    parent = config("t")
    items: list[str] = []
    for i in range(1, 12):
        items = items + [f"item {i}"]
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items}, {"m": _v(i)}), {}, {"m": _v(i)})
    saver.close()
    kinds = ["delta" if "base" in r["values"]["m"] else "full" for r in _records(store, "checkpoint")]
    assert kinds == ["full", "delta", "delta", "delta"] * 2 + ["full", "delta", "delta"], kinds
    fresh = JsonlSaver(store, read_only=True)
    assert _state(fresh, 11)["m"] == items


def test_a_snapshot_holds_the_delta_channels_the_put_did_not_write(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=3, snapshot_ratio=0.0)
    parent = config("t")
    # "a" is written in full by every put and listed first; "b" grows once, by a delta.
    steps = [({"a": {"i": 1}, "b": ["x"]}, {"a": _v(1), "b": _v(1)}, {"a": _v(1), "b": _v(1)}),
             ({"a": {"i": 2}, "b": ["x", "y"]}, {"a": _v(2), "b": _v(2)}, {"a": _v(2), "b": _v(2)}),
             ({"a": {"i": 3}, "b": ["x", "y"]}, {"a": _v(3), "b": _v(2)}, {"a": _v(3)})]
    for i, (values, versions, new) in enumerate(steps, start=1):
        parent = saver.put(parent, make_checkpoint(cp_id(i), values, versions), {}, new)
    saver.close()
    (snap,) = _records(store, "snapshot")
    assert snap["cp"] == cp_id(3) and snap["values"] == {"b": {"ver": _v(2), "val": {"json": ["x", "y"]}}}


class _Opaque:
    """Not JSON, not msgpack-able: the serializer refuses it."""

    __slots__ = ()


@pytest.mark.parametrize("how", ["delta", "named again"])
def test_an_unencodable_item_names_the_thread_and_channel(tmp_path: Path, how: str) -> None:
    saver = JsonlSaver(tmp_path / "s")
    parent = saver.put(config("t"), make_checkpoint(cp_id(1), {"m": ["a"]}, {"m": _v(1)}), {}, {"m": _v(1)})
    version = _v(2) if how == "delta" else _v(1)
    with pytest.raises(EncodeError, match=r"thread 't', channel 'm'"):
        cp = make_checkpoint(cp_id(2), {"m": ["a", _Opaque()]}, {"m": version})
        saver.put(parent, cp, {}, {"m": version})
    saver.close()
    assert os.path.exists(ThreadFiles.of(tmp_path / "s", "t").log)


def test_a_list_of_tuples_named_again_with_other_items_replaces_the_stored_value(tmp_path: Path) -> None:
    """Tuples are not plain data: the saver's proof of such a list is a fingerprint of its
    encoding, not a witness of its objects."""
    ours, mem = JsonlSaver(tmp_path / "s"), InMemorySaver()
    parents = [config("t"), config("t")]
    for i, value in enumerate([[(1, 2)], [(1, 2)], [(3, 4)]], start=1):
        parents = _put_both([ours, mem], parents, i, {"m": value}, {"m": _v(1)})
        assert _state(ours, i) == _state(mem, i), i
    assert _state(ours, 3)["m"] == [[3, 4]]  # msgpack gives tuples back as lists, as to InMemorySaver
    written = [r["values"] for r in _records(tmp_path / "s", "checkpoint")]
    assert written[1] == {} and "val" in written[2]["m"]
