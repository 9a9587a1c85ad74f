"""Differential tests: the saver under test vs. ``InMemorySaver``.

Every test runs the *same* graph + the *same* scenario twice: once with
LangGraph's reference ``InMemorySaver`` and once with the saver under test
(``JsonlSaver`` by default), then a third time it re-opens the saver's
directory with a *fresh* instance (cold cache) and dumps the thread(s) again.

What is compared (after normalisation, see ``Normaliser``):

* a transcript of every scenario operation's result (invoke / stream output,
  ``get_state`` snapshots, ``update_state`` return configs, histories with
  ``limit`` / ``before`` / ``filter``);
* a dump of every thread: for every checkpoint namespace, the tuples returned
  by ``saver.list()`` (checkpoint incl. ``channel_values``, versions and
  ``versions_seen``; metadata; parent config; pending writes in order), the
  latest ``get_tuple``, ``get_state_history`` for that namespace, and for
  DeltaChannel graphs the value ``get_delta_channel_history`` rebuilds to at
  every checkpoint; plus ``get_state(config, subgraphs=True)``.

Checkpoint ids are replaced by their position (``<t1/ns0/ckpt3>`` = 4th
oldest checkpoint of the thread's first namespace); other uuids / 32-hex
hashes (task ids, generated message ids, interrupt ids, ids inside
``checkpoint_ns``) by tokens in order of first appearance; channel versions
by their integer counter; ``ts`` / ``created_at`` / ``run_id`` are dropped.
Any remaining difference fails with the first differing path and a unified
diff of the enclosing snapshot / tuple / transcript entry.

Known LangGraph-side nondeterminism the harness neutralises (all reproduced
with InMemorySaver vs SqliteSaver, independent of the saver under test):

* "updates" stream chunks of parallel tasks arrive in completion order ->
  sorted within each superstep (``_canonical_stream``);
* under ``durability="async"`` a NamedBarrierValue's live ``seen`` set is
  serialised in the background while the loop mutates it -> its raw value is
  masked and graphs under test use plain fan-in edges there;
* ToolNode's ToolMessages have ``id=None`` and ``add_messages`` assigns ids
  in place, racing the background ``put_writes`` -> tools return messages
  with explicit ids (see ``tests/harness/flow_graphs.py``);
* raw DeltaChannel ``channel_values`` / seeds depend on the storage model ->
  compared through rebuilt values (``_replayed``, ``_storage_masks``).

Switch the saver under test with ``DIFF_SAVER=sqlite`` (``SqliteSaver`` with
a thin async adapter) to validate the harness itself; known, legitimate
SqliteSaver differences are marked ``SQLITE_DIFFERS`` (strict xfail there).
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import enum
import os
import pprint
import re
import sqlite3
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.named_barrier_value import (
    NamedBarrierValue,
    NamedBarrierValueAfterFinish,
)
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END
from langgraph.pregel._checkpoint import _replay
from langgraph.types import Command, Interrupt, PregelTask, Send, StateSnapshot
from pydantic import BaseModel

from tests.harness.flow_graphs import (
    build_agent_graph,
    build_fanout_graph,
    build_flaky_graph,
    build_nested_subgraph_graph,
    build_parallel_interrupt_graph,
    build_review_graph,
)
from tests.harness.state_graphs import (
    Note,
    Point,
    build_counter_graph,
    build_delta_graph,
    build_long_chat_graph,
    build_mutating_graph,
    build_typed_graph,
    human,
)

# ---------------------------------------------------------------------------
# saver under test
# ---------------------------------------------------------------------------

SAVER_UNDER_TEST = os.environ.get("DIFF_SAVER", "jsonl")


class _SqliteWithAsync:
    """Harness-validation stand-in: SqliteSaver + async methods run inline."""

    def __new__(cls, path: str, serde: Any = None, **_ignored: Any):
        from langgraph.checkpoint.sqlite import SqliteSaver

        class SqliteSaverAsync(SqliteSaver):
            async def aget_tuple(self, config):
                return self.get_tuple(config)

            async def alist(self, config, *, filter=None, before=None, limit=None):
                for t in self.list(config, filter=filter, before=before, limit=limit):
                    yield t

            async def aput(self, config, checkpoint, metadata, new_versions):
                return self.put(config, checkpoint, metadata, new_versions)

            async def aput_writes(self, config, writes, task_id, task_path=""):
                return self.put_writes(config, writes, task_id, task_path)

            async def aget_delta_channel_history(self, *, config, channels):
                return self.get_delta_channel_history(config=config, channels=channels)

            def close(self) -> None:
                self.conn.close()

        conn = sqlite3.connect(str(Path(path) / "cp.sqlite"), check_same_thread=False)
        return SqliteSaverAsync(conn, serde=serde)


@pytest.fixture
def jsonl_saver_factory() -> Callable[..., Any]:
    """``factory(path, **kw) -> saver``; the single switch for the saver under test."""
    if SAVER_UNDER_TEST == "sqlite":
        return lambda path, **kw: _SqliteWithAsync(path, **kw)
    from langgraph_jsonl_checkpoint import JsonlSaver

    return lambda path, **kw: JsonlSaver(path, **kw)


# ---------------------------------------------------------------------------
# scenario operations (one scenario definition drives sync and async runs)
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Invoke:
    input: Any
    config: dict
    kwargs: dict = dataclasses.field(default_factory=dict)
    expect_error: bool = False


@dataclasses.dataclass
class Stream:
    input: Any
    config: dict
    kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class UpdateState:
    config: dict
    values: Any
    as_node: str | None = None


@dataclasses.dataclass
class GetState:
    config: dict
    subgraphs: bool = False


@dataclasses.dataclass
class History:
    config: dict
    filter: dict | None = None
    before: dict | None = None
    limit: int | None = None


Scenario = Callable[[dict], Generator[Any, Any, None]]


def _exec_sync(graph, op, durability):
    if isinstance(op, Invoke):
        try:
            return graph.invoke(
                op.input, op.config, **{"durability": durability, **op.kwargs}
            )
        except Exception as e:
            if op.expect_error:
                return ("raised", type(e).__name__, str(e))
            raise
    if isinstance(op, Stream):
        kw = {"durability": durability, "stream_mode": ["updates", "values"]}
        return _canonical_stream(graph.stream(op.input, op.config, **{**kw, **op.kwargs}))
    if isinstance(op, UpdateState):
        return graph.update_state(op.config, op.values, as_node=op.as_node)
    if isinstance(op, GetState):
        return graph.get_state(op.config, subgraphs=op.subgraphs)
    if isinstance(op, History):
        return list(
            graph.get_state_history(
                op.config, filter=op.filter, before=op.before, limit=op.limit
            )
        )
    raise TypeError(op)


async def _exec_async(graph, op, durability):
    if isinstance(op, Invoke):
        try:
            return await graph.ainvoke(
                op.input, op.config, **{"durability": durability, **op.kwargs}
            )
        except Exception as e:
            if op.expect_error:
                return ("raised", type(e).__name__, str(e))
            raise
    if isinstance(op, Stream):
        kw = {"durability": durability, "stream_mode": ["updates", "values"]}
        return _canonical_stream(
            [c async for c in graph.astream(op.input, op.config, **{**kw, **op.kwargs})]
        )
    if isinstance(op, UpdateState):
        return await graph.aupdate_state(op.config, op.values, as_node=op.as_node)
    if isinstance(op, GetState):
        return await graph.aget_state(op.config, subgraphs=op.subgraphs)
    if isinstance(op, History):
        return [
            s
            async for s in graph.aget_state_history(
                op.config, filter=op.filter, before=op.before, limit=op.limit
            )
        ]
    raise TypeError(op)


def _canonical_stream(chunks: Iterable[Any]) -> list:
    """Sort the non-"values" chunks between two "values" chunks.

    Parallel tasks of one superstep emit their "updates" in completion order,
    which is a race; the "values" chunk closing each superstep is ordered.
    """
    out: list = []
    segment: list = []

    def key(c: Any) -> str:
        return _HEX32_RE.sub("*", _UUID_RE.sub("*", repr(c)))

    for c in chunks:
        if isinstance(c, tuple) and len(c) in (2, 3) and c[-2] == "values":
            out.extend(sorted(segment, key=key))
            segment = []
            out.append(c)
        else:
            segment.append(c)
    out.extend(sorted(segment, key=key))
    return out


def _run_scenario_sync(graph, scenario: Scenario, cfg, durability) -> list:
    transcript = []
    gen = scenario(cfg)
    result = None
    while True:
        try:
            op = gen.send(result)
        except StopIteration:
            return transcript
        result = _exec_sync(graph, op, durability)
        transcript.append((type(op).__name__, result))


async def _run_scenario_async(graph, scenario: Scenario, cfg, durability) -> list:
    transcript = []
    gen = scenario(cfg)
    result = None
    while True:
        try:
            op = gen.send(result)
        except StopIteration:
            return transcript
        result = await _exec_async(graph, op, durability)
        transcript.append((type(op).__name__, result))


# ---------------------------------------------------------------------------
# dumping a thread
# ---------------------------------------------------------------------------


def _group_by_ns(tuples: Iterable[CheckpointTuple]) -> dict[str, list[CheckpointTuple]]:
    by_ns: dict[str, list[CheckpointTuple]] = {}
    for t in tuples:
        by_ns.setdefault(t.config["configurable"].get("checkpoint_ns", ""), []).append(t)
    # deterministic namespace order: by creation (oldest checkpoint id) - ids
    # are uuid6, i.e. time ordered within one run
    return dict(
        sorted(
            by_ns.items(),
            key=lambda kv: (
                kv[0] != "",
                min(t.config["configurable"]["checkpoint_id"] for t in kv[1]),
            ),
        )
    )


def _ns_cfg(thread_id: str, ns: str) -> dict:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}


def _replayed(graph, histories) -> dict:
    """Value each delta channel rebuilds to from ``get_delta_channel_history``.

    The raw ``seed``/``writes`` legitimately depend on the storage model:
    InMemorySaver stores blobs per (channel, version), so every checkpoint
    that shares the version of a ``_DeltaSnapshot`` blob "sees" that blob as
    its seed, while savers that store each checkpoint's own
    ``channel_values`` (SqliteSaver) only have it at the checkpoint that
    wrote it and return a longer write list instead.  What must agree is
    the value the channel is rebuilt to.
    """
    out = {}
    for ch, hist in histories.items():
        rebuilt = _replay(graph.channels[ch], hist)
        out[ch] = rebuilt.get() if rebuilt.is_available() else "<empty>"
    return out


def _dump_sync(graph, thread_ids, delta_channels) -> dict:
    saver = graph.checkpointer
    out = {}
    for tid in thread_ids:
        tuples = list(saver.list({"configurable": {"thread_id": tid}}))
        namespaces = {}
        for ns, tups in _group_by_ns(tuples).items():
            entry: dict[str, Any] = {
                "list": tups,
                "latest_tuple": saver.get_tuple(_ns_cfg(tid, ns)),
                "history": list(graph.get_state_history(_ns_cfg(tid, ns))),
            }
            if delta_channels and ns == "":
                entry["delta_history"] = [
                    _replayed(
                        graph,
                        saver.get_delta_channel_history(
                            config=t.config, channels=list(delta_channels)
                        ),
                    )
                    for t in tups
                ]
            namespaces[ns] = entry
        out[tid] = {
            "namespaces": namespaces,
            "state": graph.get_state({"configurable": {"thread_id": tid}}, subgraphs=True),
        }
    return out


async def _dump_async(graph, thread_ids, delta_channels) -> dict:
    saver = graph.checkpointer
    out = {}
    for tid in thread_ids:
        tuples = [t async for t in saver.alist({"configurable": {"thread_id": tid}})]
        namespaces = {}
        for ns, tups in _group_by_ns(tuples).items():
            entry: dict[str, Any] = {
                "list": tups,
                "latest_tuple": await saver.aget_tuple(_ns_cfg(tid, ns)),
                "history": [s async for s in graph.aget_state_history(_ns_cfg(tid, ns))],
            }
            if delta_channels and ns == "":
                entry["delta_history"] = [
                    _replayed(
                        graph,
                        await saver.aget_delta_channel_history(
                            config=t.config, channels=list(delta_channels)
                        ),
                    )
                    for t in tups
                ]
            namespaces[ns] = entry
        out[tid] = {
            "namespaces": namespaces,
            "state": await graph.aget_state(
                {"configurable": {"thread_id": tid}}, subgraphs=True
            ),
        }
    return out


# ---------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------

_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX32_RE = re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-zA-Z])")
_VERSION_RE = re.compile(r"^(\d+)(?:\.|$)")
_DROP_META = {"run_id"}


def _norm_version(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and (m := _VERSION_RE.match(v)):
        return int(m.group(1))
    return v


class Normaliser:
    """Turns run-specific values into stable, comparable plain data."""

    def __init__(self, *, drop_values: Iterable[str] = (), mask_values: Iterable[str] = ()) -> None:
        self.ids: dict[str, str] = {}
        self.drop_values = set(drop_values)
        self.mask_values = set(mask_values)

    def seed(self, raw: str, label: str) -> None:
        self.ids.setdefault(raw, label)

    def seed_dump(self, dump: dict) -> None:
        for _ti, (tid, tdump) in enumerate(dump.items()):
            for nsi, tups in enumerate(e["list"] for e in tdump["namespaces"].values()):
                for pos, t in enumerate(reversed(tups)):
                    self.seed(
                        t.config["configurable"]["checkpoint_id"],
                        f"<{tid}/ns{nsi}/ckpt{pos}>",
                    )

    def _token(self, m: re.Match) -> str:
        raw = m.group(0)
        if raw not in self.ids:
            self.ids[raw] = f"<id{len(self.ids)}>"
        return self.ids[raw]

    def s(self, text: str) -> str:
        if len(text) < 32:  # too short to hold a uuid or a 32-hex hash
            return text
        return _HEX32_RE.sub(self._token, _UUID_RE.sub(self._token, text))

    def checkpoint(self, cp: dict) -> dict:
        out = {}
        for k, v in cp.items():
            if k == "ts":
                continue
            if k == "channel_versions":
                out[k] = {self.s(c): _norm_version(x) for c, x in v.items()}
            elif k == "versions_seen":
                out[k] = {
                    self.s(n): {self.s(c): _norm_version(x) for c, x in seen.items()}
                    for n, seen in v.items()
                }
            elif k == "channel_values":
                out[k] = {
                    self.s(c): "<masked>" if c in self.mask_values else self(x)
                    for c, x in v.items()
                    if c not in self.drop_values
                }
            else:
                out[k] = self(v)
        return out

    def metadata(self, md: Any) -> Any:
        if not isinstance(md, dict):
            return self(md)
        return {self.s(k): self(v) for k, v in md.items() if k not in _DROP_META}

    def __call__(self, obj: Any) -> Any:  # noqa: C901 - a type switch
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, str):
            return self.s(obj)
        if isinstance(obj, bytes):
            return ("<bytes>", obj)
        if isinstance(obj, enum.Enum):
            return (type(obj).__name__, self(obj.value))
        if isinstance(obj, StateSnapshot):
            return {
                "__type__": "StateSnapshot",
                "values": self(obj.values),
                "next": self(obj.next),
                "config": self(obj.config),
                "metadata": self.metadata(obj.metadata),
                "parent_config": self(obj.parent_config),
                "tasks": self(obj.tasks),
                "interrupts": self(obj.interrupts),
                # created_at dropped: timestamps differ between runs
            }
        if isinstance(obj, CheckpointTuple):
            return {
                "__type__": "CheckpointTuple",
                "config": self(obj.config),
                "checkpoint": self.checkpoint(obj.checkpoint),
                "metadata": self.metadata(obj.metadata),
                "parent_config": self(obj.parent_config),
                "pending_writes": self(obj.pending_writes),
            }
        if isinstance(obj, PregelTask):
            return {"__type__": "PregelTask", **{f: self(getattr(obj, f)) for f in obj._fields}}
        if isinstance(obj, Interrupt):
            return {
                "__type__": "Interrupt",
                "value": self(obj.value),
                "id": self(obj.id),
                "response_schema": self(getattr(obj, "response_schema", None)),
            }
        if isinstance(obj, Send):
            return {"__type__": "Send", "node": obj.node, "arg": self(obj.arg)}
        if isinstance(obj, BaseException):
            return {"__exc__": type(obj).__name__, "args": self(obj.args)}
        if isinstance(obj, type):
            return f"<class {obj.__module__}.{obj.__qualname__}>"
        if isinstance(obj, BaseModel):
            return {
                "__type__": type(obj).__qualname__,
                **{k: self(v) for k, v in vars(obj).items()},
            }
        if dataclasses.is_dataclass(obj):
            return {
                "__type__": type(obj).__qualname__,
                **{f.name: self(getattr(obj, f.name)) for f in dataclasses.fields(obj)},
            }
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return {
                "__type__": type(obj).__qualname__,
                **{f: self(getattr(obj, f)) for f in obj._fields},
            }
        if isinstance(obj, dict):
            return {self(k): self(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self(x) for x in obj]
        if isinstance(obj, tuple):
            return tuple(self(x) for x in obj)
        if isinstance(obj, (set, frozenset)):
            return {"__set__": sorted(repr(self(x)) for x in obj)}
        if hasattr(obj, "__dict__"):
            return {"__type__": type(obj).__qualname__, **self(vars(obj))}
        slots = getattr(type(obj), "__slots__", None)
        if slots:
            return {
                "__type__": type(obj).__qualname__,
                **{k: self(getattr(obj, k, None)) for k in slots},
            }
        return ("<repr>", self.s(repr(obj)))


def normalise(dump: dict, transcript: list | None = None, **masks: Any) -> dict:
    n = Normaliser(**masks)
    n.seed_dump(dump)
    out: dict[str, Any] = {}
    out["dump"] = {
        tid: {
            "namespaces": [
                {
                    "ns": n(ns),
                    "list": n(e["list"]),
                    "latest_tuple": n(e["latest_tuple"]),
                    "history": n(e["history"]),
                    **({"delta_history": n(e["delta_history"])} if "delta_history" in e else {}),
                }
                for ns, e in d["namespaces"].items()
            ],
            "state": n(d["state"]),
        }
        for tid, d in dump.items()
    }
    if transcript is not None:
        out["transcript"] = [(name, n(res)) for name, res in transcript]
    return out


# ---------------------------------------------------------------------------
# comparison with readable failures
# ---------------------------------------------------------------------------


def _first_diff(a: Any, b: Any, path: tuple = ()) -> tuple | None:
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return (*path, k)
            if (p := _first_diff(a[k], b[k], (*path, k))) is not None:
                return p
        return None
    if isinstance(a, (list, tuple)):
        for i, (x, y) in enumerate(zip(a, b)):
            if (p := _first_diff(x, y, (*path, i))) is not None:
                return p
        if len(a) != len(b):
            return (*path, f"len {len(a)} != {len(b)}")
        return None
    return None if a == b else path


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return "<missing>"
    return obj


def assert_same(expected: Any, actual: Any, what: str) -> None:
    if expected == actual:
        return
    path = _first_diff(expected, actual) or ()
    # show the enclosing record (a snapshot / tuple / transcript entry)
    ctx = path
    for i in range(len(path), -1, -1):
        node = _get(expected, path[:i])
        if isinstance(node, dict) and node.get("__type__") in (
            "StateSnapshot",
            "CheckpointTuple",
        ):
            ctx = path[:i]
            break
        if i == 2 and path and path[0] == "transcript":
            ctx = path[:2]
            break
    else:
        ctx = path[: max(len(path) - 1, 0)]
    e_txt = pprint.pformat(_get(expected, ctx), width=100, sort_dicts=True)
    a_txt = pprint.pformat(_get(actual, ctx), width=100, sort_dicts=True)
    diff = list(
        difflib.unified_diff(
            e_txt.splitlines(), a_txt.splitlines(), "InMemorySaver", "saver under test", lineterm="", n=4
        )
    )
    if len(diff) > 150:
        diff = diff[:150] + [f"... ({len(diff) - 150} more diff lines)"]
    pytest.fail(
        f"{what}: first difference at {'/'.join(map(str, path))}\n"
        f"  expected: {pprint.pformat(_get(expected, path))[:600]}\n"
        f"  actual:   {pprint.pformat(_get(actual, path))[:600]}\n"
        f"record {'/'.join(map(str, ctx))}:\n" + "\n".join(diff),
        pytrace=False,
    )


# ---------------------------------------------------------------------------
# the differential driver
# ---------------------------------------------------------------------------


def _close(saver: Any) -> None:
    close = getattr(saver, "close", None)
    if callable(close):
        close()


@dataclasses.dataclass
class Outcome:
    ref_transcript: list
    ref_dump: dict
    test_transcript: list
    test_dump: dict
    reload_dump: dict
    ref_graph: Any = None
    test_graph: Any = None


def _run_all_sync(build, scenario, factory, path, *, durability, saver_kwargs, ref_kwargs,
                  compile_kwargs, thread_ids, delta_channels) -> Outcome:
    cfg = {"configurable": {"thread_id": thread_ids[0]}}
    ref_g = build().compile(checkpointer=InMemorySaver(**ref_kwargs), **compile_kwargs)
    ref_t = _run_scenario_sync(ref_g, scenario, cfg, durability)
    ref_d = _dump_sync(ref_g, thread_ids, delta_channels)

    saver = factory(path, **saver_kwargs)
    try:
        test_g = build().compile(checkpointer=saver, **compile_kwargs)
        test_t = _run_scenario_sync(test_g, scenario, cfg, durability)
        test_d = _dump_sync(test_g, thread_ids, delta_channels)
    finally:
        _close(saver)

    saver2 = factory(path, **saver_kwargs)  # cold cache, same directory
    try:
        g2 = build().compile(checkpointer=saver2, **compile_kwargs)
        reload_d = _dump_sync(g2, thread_ids, delta_channels)
    finally:
        _close(saver2)
    return Outcome(ref_t, ref_d, test_t, test_d, reload_d, ref_g, test_g)


async def _run_all_async(build, scenario, factory, path, *, durability, saver_kwargs, ref_kwargs,
                         compile_kwargs, thread_ids, delta_channels) -> Outcome:
    cfg = {"configurable": {"thread_id": thread_ids[0]}}
    ref_g = build().compile(checkpointer=InMemorySaver(**ref_kwargs), **compile_kwargs)
    ref_t = await _run_scenario_async(ref_g, scenario, cfg, durability)
    ref_d = await _dump_async(ref_g, thread_ids, delta_channels)

    saver = factory(path, **saver_kwargs)
    try:
        test_g = build().compile(checkpointer=saver, **compile_kwargs)
        test_t = await _run_scenario_async(test_g, scenario, cfg, durability)
        test_d = await _dump_async(test_g, thread_ids, delta_channels)
    finally:
        _close(saver)

    saver2 = factory(path, **saver_kwargs)
    try:
        g2 = build().compile(checkpointer=saver2, **compile_kwargs)
        reload_d = await _dump_async(g2, thread_ids, delta_channels)
    finally:
        _close(saver2)
    return Outcome(ref_t, ref_d, test_t, test_d, reload_d, ref_g, test_g)


def differential(
    build: Callable[[], Any],
    scenario: Scenario,
    factory: Callable[..., Any],
    tmp_path: Path,
    *,
    mode: str = "sync",
    durability: str = "sync",
    saver_kwargs: dict | None = None,
    ref_kwargs: dict | None = None,
    compile_kwargs: dict | None = None,
    thread_ids: tuple[str, ...] = ("t1",),
    delta_channels: tuple[str, ...] = (),
) -> Outcome:
    """Run ``scenario`` on InMemorySaver and on the saver under test; compare."""
    path = tmp_path / "store"
    path.mkdir()
    kw = dict(
        durability=durability,
        saver_kwargs=saver_kwargs or {},
        ref_kwargs=ref_kwargs or {},
        compile_kwargs=compile_kwargs or {},
        thread_ids=thread_ids,
        delta_channels=delta_channels,
    )
    if mode == "sync":
        out = _run_all_sync(build, scenario, factory, str(path), **kw)
    else:
        holder: list[Outcome] = []

        async def main() -> None:
            # don't make the big Outcome the task's result: on Python 3.11
            # asyncio.run() formats repr(main task) (result included) while
            # restoring the SIGINT handler, which takes seconds here
            holder.append(await _run_all_async(build, scenario, factory, str(path), **kw))

        asyncio.run(main())
        out = holder[0]

    assert any(p.is_file() for p in path.rglob("*")), "the saver wrote nothing to its directory"
    masks = _storage_masks(out.ref_graph, durability)
    expected = normalise(out.ref_dump, out.ref_transcript, **masks)
    assert_same(expected, normalise(out.test_dump, out.test_transcript, **masks), "live run")
    # the dump is normalised before the transcript, so its tokens don't depend on it
    assert_same(
        {"dump": expected["dump"]},
        normalise(out.reload_dump, **masks),
        "fresh saver on same directory",
    )
    return out


def _storage_masks(graph, durability: str) -> dict:
    """Raw ``checkpoint["channel_values"]`` entries that may differ legitimately.

    * DeltaChannel entries: whether a checkpoint that did not write a
      ``_DeltaSnapshot`` shows one depends on the storage model (see
      ``_replayed``); their values are compared through the snapshots'
      ``values`` and the rebuilt delta histories instead -> dropped.
    * NamedBarrierValue sets under ``durability="async"``: the checkpoint is
      serialised in the background while the loop keeps mutating the live
      ``seen`` set (LangGraph race, reproducible with InMemorySaver vs
      SqliteSaver) -> value masked, presence still compared.
    """
    channels = graph.channels
    drop = {k for k, c in channels.items() if isinstance(c, DeltaChannel)}
    mask = set()
    if durability == "async":
        mask = {
            k
            for k, c in channels.items()
            if isinstance(c, (NamedBarrierValue, NamedBarrierValueAfterFinish))
        }
    return {"drop_values": drop, "mask_values": mask}


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


def SQLITE_DIFFERS(reason: str):
    """Known, legitimate SqliteSaver-vs-InMemorySaver differences (harness validation only)."""
    return pytest.mark.xfail(SAVER_UNDER_TEST == "sqlite", reason=reason, strict=True)
DURABILITIES = pytest.mark.parametrize("durability", ["sync", "async", "exit"])


def cfg_of(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


# ---------------------------------------------------------------------------
# self-test of the harness: it must notice differences
# ---------------------------------------------------------------------------


def test_normaliser_detects_differences():
    a = normalise({"t": {"namespaces": {}, "state": {"x": [1, (2,)]}}})
    b = normalise({"t": {"namespaces": {}, "state": {"x": [1, [2]]}}})
    with pytest.raises(pytest.fail.Exception, match="first difference"):
        assert_same(a, b, "tuple vs list")
    n1, n2 = Normaliser(), Normaliser()
    ids = ["1ef4f797-8335-6428-8001-8a1503f9b875", "1ef4f797-8335-6428-8001-8a1503f9b876"]
    assert n1(f"x:{ids[0]}|{ids[1]}") == n2(f"x:{ids[1]}|{ids[0]}")
    assert n1(ids[1]) != n1(ids[0])
    assert _norm_version("00000000000000000000000000000007.0.18437") == 7
    assert _norm_version(7) == 7


# ---------------------------------------------------------------------------
# 1. tool-calling agent (+ a second interleaved thread)
# ---------------------------------------------------------------------------


def agent_scenario(cfg):
    other = cfg_of("t2")
    yield Invoke({"messages": [human("add 2 3", "h1")]}, cfg)
    yield GetState(cfg)
    yield Invoke({"messages": [human("mul 3 4", "o1")]}, other)
    yield Stream({"messages": [human("both 4 5", "h2")]}, cfg)
    yield Invoke({"messages": [human("hello there", "h3")]}, cfg)
    yield Invoke({"messages": [human("hi", "o2")]}, other)
    yield Invoke({"messages": [human("mul 6 7", "h4")]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_agent(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_agent_graph, agent_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, thread_ids=("t1", "t2"),
        saver_kwargs={"snapshot_every": 3},
    )
    final = out.test_dump["t1"]["state"].values["messages"]
    assert [m.content for m in final][-1] == "result: multiply=42"


# ---------------------------------------------------------------------------
# 2. interrupt() + Command(resume=...)
# ---------------------------------------------------------------------------


def review_scenario(cfg):
    yield Invoke({"topic": "cats"}, cfg)
    yield GetState(cfg)
    yield Invoke(Command(resume="make it longer"), cfg)
    yield GetState(cfg)
    yield Invoke(Command(resume="yes"), cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_interrupt_resume(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_review_graph, review_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 2},
    )
    interrupted = out.test_transcript[1][1]
    assert interrupted.next == ("review",)
    assert interrupted.tasks[0].interrupts[0].value["question"] == "approve?"
    assert out.test_dump["t1"]["state"].values["draft"] == "DRAFT V1 ABOUT CATS"


def parallel_interrupt_scenario(cfg):
    yield Invoke({"answers": []}, cfg)
    state = yield GetState(cfg)
    answers = {"name?": "Ann", "age?": "42"}
    resume = {
        i.id: answers.get(i.value, "red") if isinstance(i.value, str) else "red"
        for i in state.interrupts
    }
    yield Invoke(Command(resume=resume), cfg)
    state = yield GetState(cfg)
    yield Invoke(Command(resume={i.id: answers[i.value] for i in state.interrupts}), cfg)
    yield GetState(cfg)
    yield History(cfg)


@SQLITE_DIFFERS(
    "SqliteSaver.put_writes uses INSERT OR IGNORE for a batch mixing special and "
    "regular channels, so the second __resume__ write of a task is dropped; "
    "InMemorySaver always overwrites special (negative idx) writes"
)
@MODES
def test_parallel_and_repeated_interrupts(jsonl_saver_factory, tmp_path, mode):
    out = differential(
        build_parallel_interrupt_graph, parallel_interrupt_scenario,
        jsonl_saver_factory, tmp_path, mode=mode,
    )
    assert out.test_dump["t1"]["state"].values["summary"] == "age=42;color=red;name=Ann"


# ---------------------------------------------------------------------------
# 3. fan-out / fan-in and Send (map-reduce)
# ---------------------------------------------------------------------------


def fanout_scenario(cfg):
    yield Invoke({"items": ["a", "b", "c"]}, cfg)
    yield Stream({"items": ["x", "y"]}, cfg)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_fanout_and_send(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        lambda: build_fanout_graph(barrier=durability != "async"),
        fanout_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert out.test_dump["t1"]["state"].values["results"] == [
        "0:A", "1:B", "2:C", "0:X", "1:Y",
    ]


# ---------------------------------------------------------------------------
# 4. nested subgraphs, get_state(subgraphs=True), subgraph interrupt
# ---------------------------------------------------------------------------


def nested_scenario(cfg):
    yield Invoke({"trail": ["start"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield Stream({"trail": ["again"]}, cfg, {"subgraphs": True})
    yield History(cfg)


@MODES
def test_nested_subgraphs(jsonl_saver_factory, tmp_path, mode):
    out = differential(
        build_nested_subgraph_graph, nested_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": 3},
    )
    assert len(out.test_dump["t1"]["namespaces"]) > 1  # subgraph namespaces exist


def subgraph_interrupt_scenario(cfg):
    yield Invoke({"trail": ["start"]}, cfg)
    yield GetState(cfg, subgraphs=True)
    yield GetState(cfg)
    yield Invoke(Command(resume="leafy"), cfg)
    yield GetState(cfg, subgraphs=True)
    yield History(cfg)


@DURABILITIES
@MODES
def test_subgraph_interrupt(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        lambda: build_nested_subgraph_graph(with_interrupt=True),
        subgraph_interrupt_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 2},
    )
    paused = out.test_transcript[1][1]
    assert paused.next == ("mid",)
    inner = paused.tasks[0].state
    assert isinstance(inner, StateSnapshot) and inner.next == ("leaf",)
    assert inner.tasks[0].state.next == ("l_ask",)
    assert "leaf-answer=leafy" in out.test_dump["t1"]["state"].values["trail"]


# ---------------------------------------------------------------------------
# 5. time travel: replay and forks
# ---------------------------------------------------------------------------


def time_travel_scenario(cfg):
    yield Invoke({"n": 1}, cfg)
    yield Invoke({"n": 10}, cfg)
    hist = yield History(cfg)
    before_double = [h for h in hist if h.next == ("double",)][-1]  # oldest one
    before_report = [h for h in hist if h.next == ("report",)][-1]
    yield GetState(before_double.config)
    # replay from an old checkpoint
    yield Invoke(None, before_double.config)
    # fork: update an old checkpoint, then continue from the fork
    fork = yield UpdateState(before_double.config, {"n": 100})
    yield GetState(fork)
    yield Invoke(None, fork)
    # fork as a specific node
    fork2 = yield UpdateState(before_report.config, {"trail": ["patched"]}, as_node="double")
    yield Invoke(None, fork2)
    # continue the thread head with new input
    yield Invoke({"n": 5}, cfg)
    hist = yield History(cfg)
    # list() arguments as used by get_state_history
    yield History(cfg, limit=3)
    yield History(cfg, before=hist[4].config)
    yield History(cfg, before=hist[4].config, limit=2)
    yield History(cfg, filter={"source": "update"})
    yield History(cfg, filter={"source": "loop", "step": 2})


@MODES
@pytest.mark.parametrize("snapshot_every", [1, 3, 64])
def test_time_travel_and_forks(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_counter_graph, time_travel_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
    )


# ---------------------------------------------------------------------------
# 6. update_state, with and without as_node
# ---------------------------------------------------------------------------


def update_state_scenario(cfg):
    yield Invoke({"n": 2}, cfg, {"interrupt_before": ["double"]})
    yield UpdateState(cfg, {"n": 50})  # as_node inferred ("inc")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield UpdateState(cfg, {"trail": ["after-end"]}, as_node="report")
    yield UpdateState(cfg, {"n": 7}, as_node="inc")  # schedules "double"
    yield GetState(cfg)
    yield Invoke(None, cfg, {"interrupt_after": ["double"]})
    yield UpdateState(cfg, {"n": 1}, as_node="__input__")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield UpdateState(cfg, None, as_node="__copy__")
    yield UpdateState(cfg, None, as_node=END)  # clear pending tasks
    yield GetState(cfg)
    yield History(cfg)


def review_update_scenario(cfg):
    # bypass a pending interrupt by answering as the interrupted node
    yield Invoke({"topic": "dogs"}, cfg)
    yield UpdateState(cfg, {"approved": True}, as_node="review")
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield History(cfg)


@MODES
@pytest.mark.parametrize("snapshot_every", [2, 64])
def test_update_state_as_node(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_counter_graph, update_state_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
    )


def test_update_state_over_interrupt(jsonl_saver_factory, tmp_path):
    out = differential(
        build_review_graph, review_update_scenario, jsonl_saver_factory, tmp_path
    )
    assert out.test_dump["t1"]["state"].values["draft"] == "DRAFT V0 ABOUT DOGS"


# ---------------------------------------------------------------------------
# extra: task error stored as pending write, then retry
# ---------------------------------------------------------------------------


def flaky_scenario(cfg):
    yield Invoke({"log": ["go"]}, cfg, expect_error=True)
    yield GetState(cfg)
    yield Invoke(None, cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_error_then_retry(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_flaky_graph, flaky_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability,
    )
    assert out.test_transcript[0][1][0] == "raised"


# ---------------------------------------------------------------------------
# 7. DeltaChannel
# ---------------------------------------------------------------------------


def delta_scenario(cfg):
    yield Invoke({"target": 8}, cfg)
    yield GetState(cfg)
    yield Invoke({"target": 20}, cfg)
    yield UpdateState(cfg, {"items": ["manual"], "msgs": [AIMessage("manual", id="m-1")]})
    yield Invoke({"target": 26}, cfg)
    hist = yield History(cfg)
    old = hist[len(hist) // 2]
    fork = yield UpdateState(old.config, {"items": ["forked"]})
    yield Invoke(None, fork)
    yield GetState(fork)
    yield GetState(cfg)
    yield History(cfg)


@DURABILITIES
@MODES
def test_delta_channel(jsonl_saver_factory, tmp_path, mode, durability):
    out = differential(
        build_delta_graph, delta_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, durability=durability, saver_kwargs={"snapshot_every": 3},
        delta_channels=("items", "msgs"),
    )
    # the reference run really exercised several delta snapshots
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    snaps = [
        t for t in out.ref_dump["t1"]["namespaces"][""]["list"]
        if isinstance(t.checkpoint["channel_values"].get("items"), _DeltaSnapshot)
    ]
    assert len(snaps) >= 3


# ---------------------------------------------------------------------------
# 8. long thread, non-append edits, small snapshot interval
# ---------------------------------------------------------------------------

LONG_TURNS = 150


def _long_op(i: int) -> str:
    if i % 25 == 24:
        return "summarise"
    return {3: "replace", 6: "remove"}.get(i % 10, "append")


def long_thread_scenario(cfg, turns: int = LONG_TURNS):
    for i in range(turns):
        yield Invoke({"messages": [human(f"msg {i}", f"h{i}")], "op": _long_op(i)}, cfg)
        yield GetState(cfg)
    # (the full history is compared by the dump, live and after reload)


@pytest.mark.parametrize(("mode", "turns"), [("sync", LONG_TURNS), ("async", 80)])
def test_long_thread(jsonl_saver_factory, tmp_path, mode, turns):
    out = differential(
        build_long_chat_graph, lambda cfg: long_thread_scenario(cfg, turns),
        jsonl_saver_factory, tmp_path, mode=mode, saver_kwargs={"snapshot_every": 5},
    )
    assert len(out.ref_dump["t1"]["namespaces"][""]["list"]) >= 3 * turns


@pytest.mark.parametrize("durability", ["async", "exit"])
def test_long_thread_other_durabilities(jsonl_saver_factory, tmp_path, durability):
    def scenario(cfg):
        for i in range(60):
            yield Invoke({"messages": [human(f"msg {i}", f"h{i}")], "op": _long_op(i)}, cfg)

    differential(
        build_long_chat_graph, scenario, jsonl_saver_factory, tmp_path,
        mode="async", durability=durability, saver_kwargs={"snapshot_every": 5},
    )


# ---------------------------------------------------------------------------
# 9. nodes mutating state in place
# ---------------------------------------------------------------------------


def mutation_scenario(cfg):
    for i in range(6):
        yield Invoke({"messages": [human(f"in {i}", f"mh{i}")]}, cfg)
        yield GetState(cfg)
    yield History(cfg)


@SQLITE_DIFFERS(
    "SqliteSaver stores every checkpoint's full channel_values, so a value "
    "mutated in place without being returned is persisted; InMemorySaver only "
    "stores blobs for channels in new_versions"
)
@MODES
@pytest.mark.parametrize("snapshot_every", [1, 4])
def test_in_place_mutation(jsonl_saver_factory, tmp_path, mode, snapshot_every):
    differential(
        build_mutating_graph, mutation_scenario, jsonl_saver_factory, tmp_path,
        mode=mode, saver_kwargs={"snapshot_every": snapshot_every},
    )


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
