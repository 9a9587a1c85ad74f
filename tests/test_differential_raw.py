"""Differential tests: raw saver calls a user's script may make, some of which LangGraph
itself never sends (int channel versions, empty ``put_writes``, another thread's
checkpoint id, ``list(None)`` and ``list({})``, odd thread ids and namespaces, values
that are not JSON), on LangGraph's ``InMemorySaver`` and on ``JsonlSaver``, through the
sync and the async methods, and what a fresh process reads back from the store.

Results are compared with their Python types (a tuple that comes back a list, a set
that comes back a frozenset, fail). Orders LangGraph leaves open are compared as sets:
threads in a whole-store listing, and namespaces within one thread (``InMemorySaver``
groups them, SQL savers and this one interleave them newest first).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import pickle
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver

IDS = [f"1f000000-0000-6000-8000-{i:012d}" for i in range(12)]
WHEN = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
ODD_THREADS = ["a/b", "a_b", "..", "ü😀", " sp ", "x\ny", "a\\b", "CON", "nul\x00", "t" * 300]
VALUES: dict[str, Any] = {
    "dt": WHEN, "date": datetime.date(2024, 2, 3), "td": datetime.timedelta(seconds=3),
    "set": {1, 2}, "fs": frozenset({"a"}), "bytes": b"\x00\xff", "tup": (1, (2, "3")),
    "dec": decimal.Decimal("1.10"), "uuid": uuid.UUID(int=5), "inf": float("inf"),
    "none": None, "nested": {"k": [WHEN, {3}], 1: "int key"}, "big": "x" * 200_000,
}


def _cfg(thread: Any, ns: str = "", cid: str | None = None) -> dict:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        configurable["checkpoint_id"] = cid
    return {"configurable": configurable}


def _ckpt(cid: str, values: dict, versions: dict) -> dict:
    return {**empty_checkpoint(), "id": cid, "channel_values": values, "channel_versions": versions}


def _md(step: int, **extra: Any) -> dict:
    return {"source": "loop", "step": step, "parents": {}, **extra}


def _writes(s: Any) -> None:
    ints = {k: 1 for k in VALUES}
    s.put(_cfg("t1"), _ckpt(IDS[0], VALUES, ints), _md(-1, when=WHEN), ints)
    s.put(_cfg("t1", cid=IDS[0]), _ckpt(IDS[1], {"dt": WHEN}, {"dt": 2.5}), _md(0), {"dt": 2.5})
    s.put_writes(_cfg("t1", cid=IDS[1]), [], "empty")
    s.put_writes(_cfg("t1", cid=IDS[1]), [("a", WHEN), ("b", {1}), ("__error__", "boom")], "tk", "p")
    s.put_writes(_cfg("t1", cid=IDS[1]), [("__interrupt__", 1)], "tk", "p")
    s.put_writes(_cfg("t1", cid=IDS[1]), [("__interrupt__", 2)], "tk", "p")  # replaces
    s.put(_cfg("t1", "sub:x|leaf:y"), _ckpt(IDS[2], {"x": 1}, {"x": 1}), _md(0), {"x": 1})
    s.put(_cfg("t2"), _ckpt(IDS[3], {"x": 2}, {"x": 1}), _md(0, who="t2"), {"x": 1})
    for i, thread in enumerate(ODD_THREADS):
        s.put(_cfg(thread), _ckpt(IDS[4], {"x": thread}, {"x": 1}), _md(i), {"x": 1})


def _reads(s: Any) -> dict[str, Any]:
    def each_thread(x: Any) -> list:  # thread and namespace order is left open
        return sorted(x, key=lambda t: repr(sorted(t.config["configurable"].items())))

    def listed(config: Any, **kw: Any) -> list:
        return list(s.list(config, **kw))

    out: dict[str, Any] = {
        "latest": s.get_tuple(_cfg("t1")),
        "by_id": [s.get_tuple(_cfg("t1", cid=i)) for i in IDS[:3]],
        "other_threads_id": s.get_tuple(_cfg("t1", cid=IDS[3])),
        "sub": s.get_tuple(_cfg("t1", "sub:x|leaf:y")),
        "sub_id_without_ns": s.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_id": IDS[2]}}),
        "odd": [s.get_tuple(_cfg(t)) for t in ODD_THREADS],
        "missing": s.get_tuple(_cfg("nope")),
        "list_none": each_thread(listed(None)),
        "list_empty_config": each_thread(listed({})),
        "list_none_filter": each_thread(listed(None, filter={"step": 0})),
        "list_thread": each_thread(listed({"configurable": {"thread_id": "t1"}})),
        "list_root": listed(_cfg("t1")),
        "list_sub": listed(_cfg("t1", "sub:x|leaf:y")),
        "list_id": listed(_cfg("t1", cid=IDS[0])),
        "list_other_threads_id": listed(_cfg("t1", cid=IDS[3])),
        "list_before": listed(_cfg("t1"), before=_cfg("t1", cid=IDS[1])),
        "list_before_other_thread": listed(_cfg("t1"), before=_cfg("t2", cid=IDS[3])),
        "list_limits": [listed(_cfg("t1"), limit=n) for n in (0, 1, 5)],
        "list_filter": [
            listed(_cfg("t1"), filter=f)
            for f in ({"source": "loop"}, {"when": WHEN}, {"absent": None}, {})
        ],
    }
    return out


class _ViaAsync:
    """The sync names over a saver's async methods, on one event loop."""

    def __init__(self, saver: Any) -> None:
        self.saver, self.loop = saver, asyncio.new_event_loop()

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def get_tuple(self, config: dict) -> Any:
        return self._run(self.saver.aget_tuple(config))

    def list(self, config: Any, **kw: Any) -> list:
        async def collect() -> list:
            return [t async for t in self.saver.alist(config, **kw)]

        return self._run(collect())

    def put(self, *args: Any) -> Any:
        return self._run(self.saver.aput(*args))

    def put_writes(self, *args: Any) -> Any:
        return self._run(self.saver.aput_writes(*args))

    def close(self) -> None:
        self.loop.close()


def _typed(x: Any) -> Any:
    """``x`` as plain data that keeps every type (``ts`` dropped: it is the wall clock)."""
    if isinstance(x, CheckpointTuple):
        return _typed({**x._asdict(), "checkpoint": {k: v for k, v in x.checkpoint.items() if k != "ts"}})
    if isinstance(x, dict):
        return {repr(k): _typed(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_typed(v) for v in x])
    if isinstance(x, (set, frozenset)):
        return (type(x).__name__, sorted(repr(v) for v in x))
    if dataclasses.is_dataclass(x):
        return (type(x).__name__, _typed(dataclasses.asdict(x)))
    return (type(x).__name__, repr(x))


def _reference() -> dict:
    ref = InMemorySaver()
    _writes(ref)
    return _typed(_reads(ref))


def _assert_same(expected: dict, got: dict, what: str) -> None:
    for key in expected:
        assert got[key] == expected[key], f"{what}: {key} differs from InMemorySaver"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_raw_calls_match_in_memory_saver(tmp_path: Path, mode: str) -> None:
    expected = _reference()
    saver = JsonlSaver(tmp_path / "s")
    api = saver if mode == "sync" else _ViaAsync(saver)
    try:
        _writes(api)
        _assert_same(expected, _typed(_reads(api)), f"{mode} saver")
    finally:
        if isinstance(api, _ViaAsync):
            api.close()
        saver.close()
    # a fresh process reading the same store
    code = textwrap.dedent(f"""
        import pickle, sys
        from langgraph_jsonl_checkpoint import JsonlSaver
        from tests.test_differential_raw import _reads, _typed
        with JsonlSaver({str(tmp_path / "s")!r}, read_only=True) as saver:
            sys.stdout.buffer.write(pickle.dumps(_typed(_reads(saver))))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    _assert_same(expected, pickle.loads(done.stdout), "fresh process")
