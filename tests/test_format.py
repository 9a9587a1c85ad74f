"""The on-disk format: framing, checksums, batches, value cells, list deltas, snapshots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk.framing import check_line, frame, frame_batch, parse_line, scan
from langgraph_jsonl_checkpoint.values.cells import is_plain_json
from langgraph_jsonl_checkpoint.values.codec import ValueCodec
from langgraph_jsonl_checkpoint.values.fingerprint import ListFingerprint, state_hash

# -- framing -----------------------------------------------------------------


def test_frame_is_one_json_line_with_fixed_width_checksum() -> None:
    line = frame({"t": "x", "seq": 3, "v": "é"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj["t"] == "x" and obj["seq"] == 3 and obj["v"] == "é"
    assert len(obj["c"]) == 8
    assert parse_line(line[:-1]) == {"t": "x", "seq": 3, "v": "é"}


def test_checksum_detects_every_changed_byte() -> None:
    line = frame({"t": "checkpoint", "seq": 12, "values": {"a": [1, 2, 3]}})[:-1]
    assert check_line(line)
    for i in range(len(line)):
        for flip in (0x01, 0x20, 0x80):
            damaged = bytearray(line)
            damaged[i] ^= flip
            assert parse_line(bytes(damaged)) is None, (i, flip)


def _log(n: int, batch_every: int = 0) -> bytes:
    out = [frame({"t": "header", "seq": 0})]
    seq = 1
    while seq <= n:
        if batch_every and seq % batch_every == 0 and seq + 1 <= n:
            out.append(frame_batch([{"t": "a", "seq": seq}, {"t": "b", "seq": seq + 1}]))
            seq += 2
        else:
            out.append(frame({"t": "a", "seq": seq}))
            seq += 1
    return b"".join(out)


def test_scan_reads_every_committed_record() -> None:
    data = _log(20, batch_every=5)
    result = scan(data)
    assert [r.record["seq"] for r in result.records] == list(range(21))
    assert result.committed_end == len(data)
    assert result.tail_bytes == 0 and result.corrupt_offset is None


def test_scan_of_every_truncation_keeps_exactly_the_committed_prefix() -> None:
    data = _log(12, batch_every=3)
    full = scan(data).records
    ends = [r.offset + r.length for r in full]
    for cut in range(len(data) + 1):
        result = scan(data[:cut])
        assert result.corrupt_offset is None
        got = [r.record["seq"] for r in result.records]
        # committed = records wholly before the cut, minus a batch cut in its middle
        whole = [r for r, end in zip(full, ends) if end <= cut]
        while whole and "more" in _raw(data, whole[-1]):
            whole.pop()
        assert got == [r.record["seq"] for r in whole], cut
        assert result.committed_end + result.tail_bytes == cut


def _raw(data: bytes, rec) -> dict:
    return json.loads(data[rec.offset : rec.offset + rec.length])


def test_scan_treats_half_a_batch_as_uncommitted() -> None:
    head = frame({"t": "header", "seq": 0})
    batch = frame_batch([{"t": "checkpoint", "seq": 1}, {"t": "snapshot", "seq": 2}])
    first_line = batch[: batch.index(b"\n") + 1]
    result = scan(head + first_line)
    assert [r.record["seq"] for r in result.records] == [0]
    assert result.tail_bytes == len(first_line)


@pytest.mark.parametrize("junk", [b"\0" * 1, b"\0" * 4096, b"garbage\n", b'{"t":"a","se'])
def test_scan_treats_junk_at_the_end_as_a_torn_tail(junk: bytes) -> None:
    data = _log(5)
    result = scan(data + junk)
    assert len(result.records) == 6
    assert result.corrupt_offset is None
    assert result.tail_bytes == len(junk)


def test_scan_reports_damage_followed_by_valid_records() -> None:
    data = bytearray(_log(10))
    records = scan(bytes(data)).records
    victim = records[4]
    data[victim.offset + 5] ^= 0x01
    result = scan(bytes(data))
    assert result.corrupt_offset == victim.offset
    assert [r.record["seq"] for r in result.records] == [0, 1, 2, 3]


# -- value cells --------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_plain_json_round_trips_readably(value) -> None:
    codec = ValueCodec(JsonPlusSerializer())
    cell = codec.encode(value)
    assert "json" in cell
    back = codec.decode(orjson.loads(orjson.dumps(cell)))
    assert back == value and type(back) is type(value)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.text(max_size=4)), max_size=4)
    | st.sets(st.integers(-(2**63), 2**63 - 1), max_size=4)
)
def test_non_json_values_take_the_typed_path_and_round_trip(value) -> None:
    codec = ValueCodec(JsonPlusSerializer())
    cell = codec.encode(value)
    back = codec.decode(orjson.loads(orjson.dumps(cell)))
    assert back == JsonPlusSerializer().loads_typed(JsonPlusSerializer().dumps_typed(value))


def test_unencodable_value_raises_encode_error_naming_the_type() -> None:
    from langgraph_jsonl_checkpoint import EncodeError

    with pytest.raises(EncodeError, match="builtins.set"):
        ValueCodec(JsonPlusSerializer()).encode({2**70})


def _messages():
    return [
        HumanMessage("hello", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}],
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage("result", tool_call_id="c1", id="t1"),
        RemoveMessage(id="h1"),
    ]


def test_messages_are_stored_as_their_json_and_revive_equal() -> None:
    codec = ValueCodec(JsonPlusSerializer())
    msgs = _messages()
    cell = codec.encode(msgs)
    assert cell["msgs"][0]["content"] == "hello"
    back = codec.decode(orjson.loads(orjson.dumps(cell)))
    assert back == msgs
    assert [type(m) for m in back] == [type(m) for m in msgs]


def test_revived_messages_match_pydantic_in_every_detail() -> None:
    """The revival fills instances without model_construct: each must be what
    model_construct gives (field order, fields set, extras), and messages revived
    from one stored list share no mutable default."""
    codec = ValueCodec(JsonPlusSerializer())
    msgs = [*_messages(), AIMessage("with extra", id="x1", custom={"k": [1]}), HumanMessage("", id="e")]
    back = codec.decode(orjson.loads(orjson.dumps(codec.encode(msgs))))
    for original, revived in zip(msgs, back, strict=True):
        dump = {"type": original.type, **original.model_dump(exclude_defaults=True)}
        reference = type(original).model_construct(**dump)
        assert list(revived.__dict__) == list(reference.__dict__)
        assert revived.__dict__ == reference.__dict__
        assert revived.__pydantic_extra__ == reference.__pydantic_extra__
        assert revived.model_dump() == original.model_dump()
        assert revived.model_dump_json() == original.model_dump_json()
    twice = codec.decode(orjson.loads(orjson.dumps(codec.encode([HumanMessage("a"), HumanMessage("b")]))))
    twice[0].additional_kwargs["mutated"] = True
    twice[0].response_metadata["mutated"] = True
    assert twice[1].additional_kwargs == {} and twice[1].response_metadata == {}
    again = codec.decode(codec.encode([HumanMessage("c")]))
    assert again[0].additional_kwargs == {}


def test_non_json_message_fields_fall_back_to_typed() -> None:
    codec = ValueCodec(JsonPlusSerializer())
    msg = ToolMessage("r", tool_call_id="c", artifact={1, 2, 3})
    cell = codec.encode([msg])
    assert "typed" in cell
    assert codec.decode(cell) == [msg]


def test_delta_snapshot_wrapper_round_trips() -> None:
    codec = ValueCodec(JsonPlusSerializer())
    snap = _DeltaSnapshot(_messages())
    cell = codec.encode(snap)
    assert "dsnap" in cell
    back = codec.decode(cell)
    assert isinstance(back, _DeltaSnapshot) and back.value == snap.value


def test_is_plain_json_rejects_lookalikes() -> None:
    assert not is_plain_json((1, 2))
    assert not is_plain_json(float("nan"))
    assert not is_plain_json(2**64)
    assert not is_plain_json({1: "a"})
    assert is_plain_json({"a": [1, 2.5, None, True]})


# -- list fingerprints ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=6), st.lists(json_values, max_size=6))
def test_fingerprint_extends_exactly_when_list_is_a_prefix(old, extra) -> None:
    new = old + extra
    assert ListFingerprint.of(new).extends(ListFingerprint.of(old))
    if extra:
        assert not ListFingerprint.of(old).extends(ListFingerprint.of(new))


def test_fingerprint_sees_an_in_place_edit() -> None:
    msgs = _messages()
    before = ListFingerprint.of(msgs)
    msgs[0].content = "edited"
    assert not ListFingerprint.of(msgs + [HumanMessage("x")]).extends(before)


def test_fingerprint_handles_long_lists_headers() -> None:
    for n in (15, 16, 70000):
        old = list(range(n))
        assert ListFingerprint.of(old + [1]).extends(ListFingerprint.of(old))


def test_state_hash_depends_on_values_and_versions() -> None:
    a = state_hash({"m": ("1", [1, 2])})
    assert a == state_hash({"m": ("1", [1, 2])})
    assert a != state_hash({"m": ("2", [1, 2])})
    assert a != state_hash({"m": ("1", [1, 3])})


# -- deltas and snapshots in a real log ------------------------------------------


def _records(store: Path) -> list[dict]:
    (log,) = (store / "threads").glob("*.jsonl")
    return [json.loads(line) for line in log.read_bytes().splitlines()]


def _put_chain(saver: JsonlSaver, thread: str, values_per_step: list[list]) -> list[dict]:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    configs = []
    version = None
    for i, value in enumerate(values_per_step):
        version = saver.get_next_version(version, None)
        checkpoint = {
            "v": 4,
            "id": f"1ef00000-0000-6000-8000-{i:012d}",
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {"messages": value},
            "channel_versions": {"messages": version},
            "versions_seen": {},
            "updated_channels": ["messages"],
        }
        config = saver.put(config, checkpoint, {"step": i}, {"messages": version})
        configs.append(config)
    return configs


def test_growing_list_is_stored_as_deltas_and_rebuilds_exactly(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=4)
    steps = [[HumanMessage(f"m{j}", id=str(j)) for j in range(i + 1)] for i in range(10)]
    configs = _put_chain(saver, "t", steps)
    records = _records(tmp_path / "s")
    checkpoints = [r for r in records if r["t"] == "checkpoint"]
    snapshots = [r for r in records if r["t"] == "snapshot"]
    assert "val" in checkpoints[0]["values"]["messages"]
    deltas = [c["values"]["messages"] for c in checkpoints[1:]]
    assert all("tail" in d and len(d["tail"]["msgs"]) == 1 for d in deltas)
    assert len(snapshots) == 2  # after the 4th and 8th checkpoint records
    for snap in snapshots:
        assert snap["h"].startswith("sha256:")
    # every step rebuilds exactly, from a warm and from a cold saver
    for fresh in (saver, JsonlSaver(tmp_path / "s")):
        for config, expected in zip(configs, steps):
            got = fresh.get_tuple(config).checkpoint["channel_values"]["messages"]
            assert got == expected


def test_snapshot_hash_matches_the_state_rebuilt_from_deltas(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=3)
    steps = [list(range(i + 1)) for i in range(7)]
    configs = _put_chain(saver, "t", steps)
    snaps = [r for r in _records(tmp_path / "s") if r["t"] == "snapshot"]
    assert snaps
    by_id = {c["configurable"]["checkpoint_id"]: c for c in configs}
    for snap in snaps:
        tup = saver.get_tuple(by_id[snap["cp"]])
        version = tup.checkpoint["channel_versions"]["messages"]
        rebuilt = tup.checkpoint["channel_values"]["messages"]
        assert snap["h"] == state_hash({"messages": (version, rebuilt)})


def test_non_append_edit_writes_a_full_value(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=100)
    steps = [[1, 2, 3], [1, 2, 3, 4], [9, 2, 3, 4], [9, 2, 3, 4, 5], [5]]
    configs = _put_chain(saver, "t", steps)
    kinds = [
        "tail" if "tail" in c["values"]["messages"] else "val"
        for c in _records(tmp_path / "s")
        if c["t"] == "checkpoint"
    ]
    assert kinds == ["val", "tail", "val", "tail", "val"]
    for config, expected in zip(configs, steps):
        assert saver.get_tuple(config).checkpoint["channel_values"]["messages"] == expected


def test_reads_follow_a_bounded_number_of_records(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s", snapshot_every=5)
    _put_chain(saver, "t", [list(range(i + 1)) for i in range(60)])
    idx = saver.store.thread_log("t").refresh()
    depths = [b.depth for b in idx.blobs.values()]
    assert max(depths) <= 2 * 5


def test_log_is_readable_with_only_the_json_module(tmp_path: Path) -> None:
    """A `jq '.values.messages.tail.msgs[0].content'` done with the stdlib."""
    saver = JsonlSaver(tmp_path / "s")
    _put_chain(saver, "t", [[HumanMessage("first question", id="1")],
                            [HumanMessage("first question", id="1"), AIMessage("an answer", id="2")]])
    (log,) = (tmp_path / "s" / "threads").glob("*.jsonl")
    texts = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["t"] != "checkpoint":
                continue
            value = record["values"]["messages"]
            cell = value.get("tail") or value["val"]
            texts += [m["content"] for m in cell["msgs"]]
    assert texts == ["first question", "an answer"]


def test_files_have_private_permissions(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        saver = JsonlSaver(tmp_path / "s")
        _put_chain(saver, "t", [[1]])
        saver.close()
    finally:
        os.umask(old)
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "s" / "threads").stat().st_mode & 0o777 == 0o700
    for f in (tmp_path / "s" / "threads").iterdir():
        assert f.stat().st_mode & 0o777 == 0o600, f


def test_log_grows_linearly_with_a_growing_conversation(tmp_path: Path, monkeypatch) -> None:
    """Snapshots are paced by bytes as well as by count, so a conversation five times
    longer takes about five times the space (a count-only policy copies the whole state
    every few steps: quadratic)."""
    monkeypatch.setattr(os, "fdatasync", lambda fd: None)  # speed only; not under test
    sizes = {}
    for n in (100, 500):
        saver = JsonlSaver(tmp_path / f"s{n}", snapshot_every=8)
        _put_chain(saver, "t", [[HumanMessage("x" * 200, id=str(j)) for j in range(i + 1)] for i in range(n)])
        saver.close()
        sizes[n] = sum(p.stat().st_size for p in (tmp_path / f"s{n}" / "threads").glob("*.jsonl"))
        assert any(r["t"] == "snapshot" for r in _records(tmp_path / f"s{n}"))
    assert sizes[500] <= 6 * sizes[100], sizes
