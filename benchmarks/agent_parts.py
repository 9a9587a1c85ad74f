"""Where a long conversation's turn goes: the saver's parts timed at the last turns.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/agent_parts.py --saver jsonl --seed-turns 1000 --turns 30
    python benchmarks/agent_parts.py --saver floor --seed-turns 1000 --turns 30

Instead of running 1,000 turns first, the thread is *seeded*: the messages of
``--seed-turns`` turns of ``agent_conversation.py``'s graph (made once with "LangGraph
alone" and cached in ``$TMPDIR``) go in with one ``invoke``; then ``--turns`` turns run
and the last 20 are reported. The log is shorter than after 1,000 real turns (one full
value, no long delta chain), but a turn does the same work: read the checkpoint
(revive every message, witness them), then 4 puts that prove the list grew.

Each part is the wall time inside one function (monkeypatched wrappers, summed over
threads), plus the cyclic collector's time per generation (``gc.callbacks``) and
``fdatasync``. Medians and minimums per turn, in ms, as one JSON line. Compare two
package versions by running this with ``PYTHONPATH`` pointing at each, interleaved.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import build_agent_graph, open_saver, time_calls, user_message

_acc: dict[str, float] = {}
_lock = threading.Lock()


def _add(key: str, dt: float) -> None:
    with _lock:
        _acc[key] = _acc.get(key, 0.0) + dt


def _wrap(owner: Any, name: str, key: str) -> None:
    time_calls(owner, name, lambda dt: _add(key, dt))


def _instrument_jsonl() -> None:
    from langgraph_jsonl_checkpoint.disk import files
    from langgraph_jsonl_checkpoint.saver import reads, writes
    from langgraph_jsonl_checkpoint.values import cache, reader, records, witness

    _wrap(reads.CheckpointReads, "get_tuple", "read: get_tuple")
    _wrap(reader.ValueReader, "value", "read: revive values")
    _wrap(reads, "witness_lists", "read: witness lists")
    _wrap(cache.ValueCache, "prove", "proof replaced (frees the old)")
    _wrap(writes.CheckpointWrites, "run_alone", "write: put/put_writes")
    _wrap(records.RecordBuilder, "values", "write: value entries")
    _wrap(witness.ListWitness, "prefix_of", "write: witness check")
    _wrap(witness.ListWitness, "extended", "write: witness extended")

    class _Door:  # files.os with fdatasync timed
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def fdatasync(fd: int) -> None:
            t = time.perf_counter()
            try:
                os.fdatasync(fd)
            finally:
                _add("fdatasync", time.perf_counter() - t)

    files.os = _Door()  # type: ignore[assignment]


def _gc_timer() -> None:
    started: dict[int, float] = {}

    def callback(phase: str, info: dict[str, Any]) -> None:
        tid = threading.get_ident()
        if phase == "start":
            started[tid] = time.perf_counter()
        elif tid in started:
            _add(f"gc gen{info['generation']}", time.perf_counter() - started.pop(tid))

    gc.callbacks.append(callback)


def seed_messages(turns: int) -> list[Any]:
    """The messages of ``turns`` turns (made once with LangGraph alone, then cached)."""
    path = Path(tempfile.gettempdir()) / f"agent_parts-messages-{turns}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())  # noqa: S301 - our own cache file
    h = open_saver("floor", Path(tempfile.mkdtemp()))
    graph = build_agent_graph(h.saver)
    config = {"configurable": {"thread_id": "seed"}}
    for turn in range(turns):
        graph.invoke({"messages": [user_message(1, turn)]}, config, durability="sync")
    messages = graph.get_state(config).values["messages"]
    path.write_bytes(pickle.dumps(messages))
    return messages


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--saver", default="jsonl", choices=["jsonl", "sqlite", "floor"])
    p.add_argument("--seed-turns", type=int, default=1000)
    p.add_argument("--turns", type=int, default=30)
    p.add_argument("--label", default="")
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    messages = seed_messages(args.seed_turns) if args.seed_turns else []
    if args.saver == "jsonl":
        _instrument_jsonl()
    _gc_timer()
    workdir = Path(tempfile.mkdtemp(prefix="agent-parts-", dir=args.tmp))
    try:
        h = open_saver(args.saver, workdir)
        graph = build_agent_graph(h.saver)
        config = {"configurable": {"thread_id": "conversation-1"}}
        if messages:  # without the last answer, so the agent answers and turns alternate
            graph.invoke({"messages": messages[:-1]}, config, durability="sync")
        rows = []
        for turn in range(args.turns):
            _acc.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            graph.invoke({"messages": [user_message(1, args.seed_turns + turn)]}, config, durability="sync")
            row = dict(_acc)
            row["turn (wall)"] = time.perf_counter() - t0
            row["turn (cpu)"] = time.process_time() - c0
            rows.append(row)
        h.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = rows[-20:]
    keys = sorted({k for r in rows for k in r})
    print(json.dumps({
        "saver": args.saver, "label": args.label, "seed_turns": args.seed_turns,
        "median_ms": {k: round(statistics.median(r.get(k, 0.0) for r in rows) * 1e3, 2) for k in keys},
        "min_ms": {k: round(min(r.get(k, 0.0) for r in rows) * 1e3, 2) for k in keys},
    }))


if __name__ == "__main__":
    main()
