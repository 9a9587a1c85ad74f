"""Differential tests: a strict msgpack serde with an allowlist, and encrypted serdes (a toy
cipher, and AES when pycryptodome is installed), state values that are not JSON, very
large states, odd thread ids.

Each test runs a graph and a scenario with LangGraph's ``InMemorySaver`` and with the
saver under test, and compares everything they serve (the driver is
``tests/harness/differential.py``).
"""

from __future__ import annotations

import datetime

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from tests.harness.differential import DURABILITIES, MODES, Outcome, differential
from tests.harness.differential_ops import GetState, History, Invoke, UpdateState
from tests.harness.feature_graphs import DC, Model, build_values_graph
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.state_graphs import Note, Point, build_typed_graph, human
from tests.test_differential_flow import agent_scenario

# ---------------------------------------------------------------------------
# 11. strict msgpack serde with allowlist, and encrypted serde
# ---------------------------------------------------------------------------


def typed_scenario(cfg):
    yield Invoke({"messages": [human("one", "th1")]}, cfg)
    yield Invoke({"messages": [human("two", "th2")]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


def _assert_typed_values(out: Outcome) -> None:
    for dump in (out.ref_dump, out.test_dump, out.reload_dump):
        values = dump["t1"]["state"].values
        assert isinstance(values["note"], Note), type(values["note"])
        assert all(isinstance(p, Point) for p in values["points"]), values["points"]


@MODES
def test_strict_msgpack_allowlist(jsonl_saver_factory, tmp_path, mode, monkeypatch):
    import langgraph._internal._serde as lg_serde

    # LANGGRAPH_STRICT_MSGPACK is read at import time; flip the module flag so
    # compile() derives an allowlist from the state schema and calls
    # checkpointer.with_allowlist(...)
    monkeypatch.setattr(lg_serde, "STRICT_MSGPACK_ENABLED", True)
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    out = differential(
        build_typed_graph, typed_scenario, jsonl_saver_factory, tmp_path, mode=mode,
        saver_kwargs={"serde": strict}, ref_kwargs={"serde": strict},
    )
    for g in (out.ref_graph, out.test_graph):
        assert g._serde_allowlist, "compile() should have built an allowlist"
        assert g.checkpointer.serde is not strict  # with_allowlist produced a clone
    _assert_typed_values(out)


class _XorCipher:
    """Toy cipher: exercises the EncryptedSerializer code path without pycryptodome."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


@MODES
def test_encrypted_serde_toy_cipher(jsonl_saver_factory, tmp_path, mode):
    serde = EncryptedSerializer(_XorCipher(), JsonPlusSerializer())
    out = differential(
        build_typed_graph, typed_scenario, jsonl_saver_factory, tmp_path, mode=mode,
        saver_kwargs={"serde": serde}, ref_kwargs={"serde": serde},
    )
    _assert_typed_values(out)


def test_encrypted_serde_aes(jsonl_saver_factory, tmp_path):
    pytest.importorskip(
        "Crypto.Cipher.AES",
        reason="pycryptodome is not installed; EncryptedSerializer.from_pycryptodome_aes unavailable",
    )
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0" * 16)
    differential(
        build_agent_graph, agent_scenario, jsonl_saver_factory, tmp_path,
        saver_kwargs={"serde": serde}, ref_kwargs={"serde": serde}, thread_ids=("t1", "t2"),
    )


# ---------------------------------------------------------------------------
# state values that are not JSON, very large states, odd thread ids
# ---------------------------------------------------------------------------


def values_scenario(cfg):
    yield Invoke({"log": ["v"]}, cfg)
    yield GetState(cfg)
    yield UpdateState(cfg, {"val": {"when": datetime.datetime(2020, 1, 1), "s": {4}, "b": b"\x01"}})
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_values_that_are_not_json(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_values_graph, values_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    first = out.reload_dump["t1"]["namespaces"][""]["history"][1].values["val"]
    assert isinstance(first["dc"], DC) and isinstance(first["model"], Model)
    assert isinstance(first["fs"], frozenset) and isinstance(first["set"], set)


@MODES
def test_very_large_state(jsonl_saver_factory, tmp_path, mode):
    differential(
        lambda: build_values_graph(big=5_000_000), values_scenario, jsonl_saver_factory,
        tmp_path, mode=mode,
    )


@pytest.mark.parametrize(
    "thread_id",
    ["a/b", "..", "ü😀", " sp ", "x\ny", "a\\b", "CON", "t" * 300, "%2F", ".hidden", "*?<>|:"],
)
def test_odd_thread_ids(jsonl_saver_factory, tmp_path, thread_id):
    differential(
        build_values_graph, values_scenario, jsonl_saver_factory, tmp_path, thread_ids=(thread_id,)
    )
