"""Every key of a ``ttl`` block is checked, type and range, with an error naming it: in
``JsonlSaver(ttl=...)``, ``sweep(ttl)`` and the environment forms the server factory and
``langgraph-jsonl sweep`` read (``LANGGRAPH_JSONL_TTL``, ``LANGGRAPH_THREAD_TTL``, the
``ttl`` block of ``LANGGRAPH_CHECKPOINTER``)."""

from __future__ import annotations

import json
import math

import pytest

from langgraph_jsonl_checkpoint import ConfigError, JsonlSaver
from langgraph_jsonl_checkpoint.maintenance.retention import RetentionPolicy, ttl_from_environment

BAD = [
    ({"default_ttl": True}, "default_ttl"),
    ({"default_ttl": False}, "default_ttl"),
    ({"default_ttl": "60"}, "default_ttl"),
    ({"default_ttl": math.nan}, "default_ttl"),
    ({"default_ttl": -1}, "default_ttl"),
    ({"default_ttl": 1, "sweep_limit": 0}, "sweep_limit"),
    ({"default_ttl": 1, "sweep_limit": -1}, "sweep_limit"),
    ({"default_ttl": 1, "sweep_limit": True}, "sweep_limit"),
    ({"default_ttl": 1, "sweep_limit": 2.5}, "sweep_limit"),
    ({"default_ttl": 1, "sweep_limit": "100"}, "sweep_limit"),
    ({"default_ttl": 1, "sweep_interval_minutes": 0}, "sweep_interval_minutes"),
    ({"default_ttl": 1, "sweep_interval_minutes": True}, "sweep_interval_minutes"),
    ({"default_ttl": 1, "sweep_interval_minutes": "5"}, "sweep_interval_minutes"),
    ({"default_ttl": 1, "sweep_interval_minutes": math.nan}, "sweep_interval_minutes"),
    ({"default_ttl": 1, "strategy": ""}, "strategy"),
    ({"default_ttl": 1, "strategy": 0}, "strategy"),
    ({"default_ttl": 1, "strategy": ["delete"]}, "strategy"),
]


@pytest.mark.parametrize(("block", "key"), BAD, ids=[repr(b) for b, _ in BAD])
def test_a_bad_value_is_a_config_error_naming_its_key(block: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"ttl: {key} must be"):
        RetentionPolicy.of(block)
    with pytest.raises(ConfigError, match=f"ttl: {key} must be"):
        JsonlSaver(":memory:", ttl=block)
    if all(isinstance(v, str | int | float) and not (isinstance(v, float) and math.isnan(v))
           for v in block.values()):  # what JSON can say
        for environ in ({"LANGGRAPH_JSONL_TTL": json.dumps(block)},
                        {"LANGGRAPH_CHECKPOINTER": json.dumps({"path": "x", "ttl": block})}):
            with pytest.raises(ConfigError, match=f"ttl: {key} must be"):
                ttl_from_environment(environ)


def test_a_bare_bool_is_not_minutes_in_any_form() -> None:
    with pytest.raises(ConfigError, match="ttl must be"):
        RetentionPolicy.of(True)
    with pytest.raises(ConfigError, match="default_ttl must be"):
        ttl_from_environment({"LANGGRAPH_CHECKPOINTER": json.dumps({"path": "x", "ttl": True})})
    with pytest.raises(ConfigError, match="LANGGRAPH_JSONL_TTL"):
        ttl_from_environment({"LANGGRAPH_JSONL_TTL": "true"})


def test_good_values_and_absent_keys_still_read() -> None:
    p = RetentionPolicy.of({"default_ttl": 0, "strategy": None, "sweep_interval_minutes": None,
                            "sweep_limit": None})
    assert (p.default_ttl, p.strategy, p.sweep_interval_minutes, p.sweep_limit) == (0, "delete", None, 10_000)
    p = RetentionPolicy.of({"default_ttl": 1.5, "sweep_interval_minutes": 0.5, "sweep_limit": 1})
    assert (p.default_ttl, p.sweep_interval_minutes, p.sweep_limit) == (1.5, 0.5, 1)
    got = ttl_from_environment({"LANGGRAPH_THREAD_TTL": "15"})
    assert got is not None and (got.default_ttl, got.sweep_interval_minutes) == (15, 5.0)
