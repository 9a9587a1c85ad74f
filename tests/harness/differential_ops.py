"""Scenario operations of the differential tests, and how a graph executes them.

A scenario is a generator: it yields operations (``Invoke``, ``Stream``,
``UpdateState``, ``GetState``, ``History``) and is sent each one's result, so one
scenario definition drives sync and async runs (``_run_scenario_sync``,
``_run_scenario_async``); the transcript of results is what the driver compares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable
from typing import Any

from tests.harness.differential_normalise import _HEX32_RE, _UUID_RE

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
