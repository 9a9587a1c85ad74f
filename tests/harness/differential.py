"""The differential driver: the saver under test vs. ``InMemorySaver``.

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

The scenario operations are in ``differential_ops``, the normalisation and the
comparison in ``differential_normalise``; the scenarios are the
``tests/test_differential_*.py`` files.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.channels.named_barrier_value import NamedBarrierValue, NamedBarrierValueAfterFinish
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel._checkpoint import _replay

from tests.harness.differential_normalise import _HEX32_RE, _UUID_RE, assert_same, normalise
from tests.harness.differential_ops import Scenario, _run_scenario_async, _run_scenario_sync

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
# dumping a thread
# ---------------------------------------------------------------------------


def _group_by_ns(tuples: Iterable[CheckpointTuple]) -> dict[str, list[CheckpointTuple]]:
    by_ns: dict[str, list[CheckpointTuple]] = {}
    for t in tuples:
        by_ns.setdefault(t.config["configurable"].get("checkpoint_ns", ""), []).append(t)
    # deterministic namespace order: by creation (oldest checkpoint id) - ids
    # are uuid6, i.e. time ordered within one run - except that subgraphs run in
    # parallel (a Send to a subgraph node) start in a racy order: those are told
    # apart by the parent checkpoint they started from and their first values
    def key(kv: tuple[str, list[CheckpointTuple]]) -> tuple:
        ns, tups = kv
        oldest = min(tups, key=lambda t: t.config["configurable"]["checkpoint_id"])
        parents = oldest.metadata.get("parents") or {}
        started = parents.get(ns.rsplit("|", 1)[0] if "|" in ns else "", "")
        if ns == "":
            return (False, "", "", oldest.config["configurable"]["checkpoint_id"])
        values = _UUID_RE.sub("*", _HEX32_RE.sub("*", repr(oldest.checkpoint["channel_values"])))
        return (True, started, values, oldest.config["configurable"]["checkpoint_id"])

    return dict(sorted(by_ns.items(), key=key))


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
        # Before anything else reads the thread: a fresh saver serves it from the
        # thread's head file (saver/heads.py) if that is current, else from the log.
        first = saver.get_tuple(_ns_cfg(tid, ""))
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
            "first_read": first,
            "namespaces": namespaces,
            "state": graph.get_state({"configurable": {"thread_id": tid}}, subgraphs=True),
        }
    return out


async def _dump_async(graph, thread_ids, delta_channels) -> dict:
    saver = graph.checkpointer
    out = {}
    for tid in thread_ids:
        first = await saver.aget_tuple(_ns_cfg(tid, ""))  # see _dump_sync
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
            "first_read": first,
            "namespaces": namespaces,
            "state": await graph.aget_state(
                {"configurable": {"thread_id": tid}}, subgraphs=True
            ),
        }
    return out


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
    racy_writes: tuple[str, ...] = (),
) -> Outcome:
    """Run ``scenario`` on InMemorySaver and on the saver under test; compare.

    ``racy_writes``: channels whose pending-write *values* are not compared (presence
    and order are): a graph that mutates in place a value it already wrote races
    LangGraph's background ``put_writes``, so what is stored depends on timing.
    """
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
    masks = {**_storage_masks(out.ref_graph, durability), "mask_writes": set(racy_writes)}
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
