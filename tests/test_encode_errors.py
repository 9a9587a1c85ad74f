"""What ``ValueCodec`` says when a value cannot be stored: which part of it, of which type,
for which thread and channel; and the cells it writes and reads for single messages.

Written for mutants of ``values/codec.py`` that survived the suite (stress/mutation.py):
the path to the unencodable part was checked for one shape of value only.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from pydantic import BaseModel, ConfigDict

from langgraph_jsonl_checkpoint import EncodeError
from langgraph_jsonl_checkpoint.values.codec import ValueCodec

LOCK = threading.Lock()
LOCK_TYPE = f"{type(LOCK).__module__}.{type(LOCK).__qualname__}"
WHAT = "thread 't', channel 'm'"


class Holder(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow")
    name: str = "h"
    inner: Any = None


@dataclasses.dataclass
class Box:
    label: str
    content: Any


def _nested(depth: int) -> list:
    value: list = [LOCK]
    for _ in range(depth - 1):
        value = [value]
    return value


CASES: dict[str, tuple[Any, str]] = {
    "dict in list in dict": ({"a": [1, {"cb": LOCK}]}, '["a"][1]["cb"]'),
    "non-string key": ({1: "fine", 2: LOCK}, "[2]"),
    "tuple": ((1, 2, LOCK), "[2]"),
    "set": ({"x", LOCK}, "{...}"),
    "pydantic field": (Holder(inner={"k": LOCK}), '.inner["k"]'),
    "pydantic extra field": (Holder(other=[LOCK]), ".other[0]"),
    "dataclass field": (Box("b", [0, LOCK]), ".content[1]"),
    "deep: the walk stops at 65 levels": (_nested(100), "[0]" * 65),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unencodable_part_is_named_by_its_path_and_type(case: str) -> None:
    value, path = CASES[case]
    with pytest.raises(EncodeError) as err:
        ValueCodec(JsonPlusSerializer()).encode(value, WHAT)
    msg = str(err.value)
    assert err.value.path == path
    assert msg.startswith(f"{WHAT}: cannot store a ")
    expected_type = LOCK_TYPE if case != "deep: the walk stops at 65 levels" else "builtins.list"
    assert f"cannot encode its part {path} (a {expected_type})" in msg, msg
    assert "Nothing was stored" in msg


def test_a_value_that_fails_only_as_a_whole_is_named_as_it() -> None:
    class Odd:
        pass

    with pytest.raises(EncodeError) as err:
        ValueCodec(JsonPlusSerializer()).encode(Odd(), WHAT)
    assert err.value.path == "" and "cannot encode it (" in str(err.value)


def test_a_long_serializer_message_is_cut_to_one_short_line() -> None:
    long_type = type("C" + "x" * 200, (), {})
    with pytest.raises(EncodeError) as err:
        ValueCodec(JsonPlusSerializer()).encode(long_type(), WHAT)
    msg = str(err.value)
    inside = msg[msg.index("(", msg.index("cannot encode it")) + 1 : msg.index("). Nothing was stored")]
    reason = inside.split(": ", 1)[1]
    assert len(reason) == 120 and reason.endswith("...") and "\n" not in reason, reason


def test_an_unencodable_delta_snapshot_names_the_channel() -> None:
    with pytest.raises(EncodeError, match=r"^thread 't', channel 'm': cannot store a builtins\.list"):
        ValueCodec(JsonPlusSerializer()).encode(_DeltaSnapshot([1, LOCK]), WHAT)


def test_a_single_message_is_stored_readably_and_revived_equal() -> None:
    codec = ValueCodec(JsonPlusSerializer())
    msg = AIMessage("hi", id="m1", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}])
    cell = codec.encode(msg)
    assert set(cell) == {"msg"}
    for fresh in (False, True):
        back = codec.decode(cell, fresh=fresh)
        assert back == msg and type(back) is AIMessage
    a, b = codec.decode(cell, fresh=True), codec.decode(cell, fresh=True)
    assert a.tool_calls[0]["args"] is not b.tool_calls[0]["args"]


def test_an_unknown_cell_is_refused_naming_its_keys() -> None:
    with pytest.raises(ValueError, match=r"unknown value cell with keys \['b', 'what'\]"):
        ValueCodec(JsonPlusSerializer()).decode({"what": 1, "b": 2})
