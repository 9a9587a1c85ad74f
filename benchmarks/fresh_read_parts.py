"""Where a fresh process's first ``get_state`` of a short thread spends its time: the
measurement behind issue 28's missed fresh-read target.

    python benchmarks/fresh_read_parts.py                # 8 threads x 10 turns, about 1.5 min
    python benchmarks/fresh_read_parts.py --turns 20

Stores are filled by the benchmark agent (``_common.build_agent_graph``, durability
"sync", round-robin), JsonlSaver and SqliteSaver with the same conversations, and closed.
Then, per round, a fresh process per saver opens it, builds the graph (not timed), and
times ``graph.get_state`` of one thread (the first read of the process) and then of
another thread (a log this process has not seen, read with warm code). JsonlSaver's
reads are split by wrapping its internals:

- *find the log*: ``Store.thread_log`` (the thread's paths and its view);
- *open the log*: ``LogView._load`` less the watermark (open, header probe and check);
- *durable watermark*: ``SidecarFile.load_watermark`` (a short log's sidecar read for its
  last durable record, its blocks checked);
- *scan and index*: ``LogView._scan_from`` (read the log, check every record's checksum,
  parse it, build the index columns);
- *rebuild the values*: ``CheckpointReads.build_tuple`` (the messages put together from
  the log's delta records, decoded, revived);
- *the rest*: LangGraph's ``get_state`` around ``get_tuple`` and the saver's own calls.

Last, in the JsonlSaver process, *parse only*: ``orjson.loads`` of every line of a third
log no read has touched: what any read that must look at every record pays at least.

And a read no release makes, to price the lever the others leave: *a head record*
(emulated). Before the rounds, each thread's latest tuple is written to a file of its
own, as a per-thread head record would hold it (the checkpoint and metadata as JSON,
every channel value and pending write as one whole cell of the saver's codec, the log's
size; a checksum over it all). A third fresh process per round serves ``get_tuple``
from that file (the log found and ``stat``-ed to check the head is current, the file
read, checked, parsed, its cells decoded) and times ``get_state`` the same way. Writing
the file is timed too, on its own (the latest tuple's cells encoded, the file written and
renamed into place, no fsync; 20 times per thread): what a writer keeping it would add
at each let-go or run end. No release writes or reads such a file: this prices the
reopen a head record would allow, not its crash safety or its upkeep.

Rounds alternate the savers; the machine is shared, so read ratios within a round's
medians. Results in ``results/fresh_read_parts.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

from many_threads import thread_ids
from reopen_parts import fill

from _common import Table, build_agent_graph, open_saver, run_worker, summary, time_calls, write_results

NAME = "fresh_read_parts"
STAGES = ("find the log", "open the log", "durable watermark", "scan and index",
          "rebuild the values", "the rest")


def _timing(totals: dict[str, float], obj: Any, name: str, label: str) -> None:
    """Add the time spent in ``obj.name`` to ``totals[label]``."""

    def add(seconds: float) -> None:
        totals[label] += seconds

    time_calls(obj, name, add)


def _jsonl_stages(totals: dict[str, float], total: float) -> dict[str, float]:
    """The exclusive stages of one read from the wrapped calls' (nested) totals."""
    stages = {
        "find the log": totals["thread_log"],
        "open the log": totals["_load"] - totals["load_watermark"],
        "durable watermark": totals["load_watermark"],
        "scan and index": totals["_scan_from"],
        "rebuild the values": totals["build_tuple"],
    }
    stages["the rest"] = total - sum(stages.values())
    return stages


def _head_path(heads: Path, thread_id: str) -> Path:
    return heads / f"{thread_id}.head"


def _sealed(body: bytes) -> bytes:
    """A head file's bytes: the body's CRC-32 in hex, then the body."""
    return b"%08x" % zlib.crc32(body) + body


def _unsealed(data: bytes) -> memoryview:
    """The body of a head file's bytes, its checksum checked."""
    body = memoryview(data)[8:]
    if data[:8] != b"%08x" % zlib.crc32(body):
        raise AssertionError("head file damaged")
    return body


def make_heads(args: argparse.Namespace) -> dict[str, Any]:
    """Write every thread's latest tuple as a head record would hold it (see the module
    docstring), ``--head-writes`` times each: the median file size, and the time of each
    write (the value cells encoded, the file written and renamed into place)."""
    import orjson

    from langgraph_jsonl_checkpoint import JsonlSaver

    heads = Path(args.heads)
    heads.mkdir()
    sizes, writes = [], []
    with JsonlSaver(Path(args.workdir) / "jsonl-store", read_only=True) as saver:
        codec = saver.codec
        for tid in thread_ids(args.threads):
            tup = saver.get_tuple({"configurable": {"thread_id": tid, "checkpoint_ns": ""}})
            assert tup is not None
            log_size = os.stat(saver.store.thread_log(tid).path).st_size
            path = _head_path(heads, tid)
            parent = tup.parent_config["configurable"]["checkpoint_id"] if tup.parent_config else None
            for _ in range(args.head_writes):
                t0 = time.perf_counter()
                checkpoint = dict(tup.checkpoint)
                values = checkpoint.pop("channel_values")
                head = {
                    "log_size": log_size,
                    "id": checkpoint["id"],
                    "parent": parent,
                    "cp": checkpoint,
                    "md": tup.metadata,
                    "values": {ch: codec.encode(v) for ch, v in values.items()},
                    "writes": [[task, ch, codec.encode(v)] for task, ch, v in tup.pending_writes or ()],
                }
                data = _sealed(orjson.dumps(head))
                temp = path.with_suffix(".tmp")
                temp.write_bytes(data)  # no fsync: derived data, checked on read
                os.replace(temp, path)
                writes.append(time.perf_counter() - t0)
            sizes.append(len(data))
    return {"head_bytes": statistics.median(sizes), "head_writes": writes}


def _head_reader(saver: Any, heads: Path) -> Any:
    """A ``get_tuple`` of the latest checkpoint served from the thread's head file."""
    import orjson
    from langgraph.checkpoint.base import CheckpointTuple

    from langgraph_jsonl_checkpoint.saver.config import config_of

    codec = saver.codec

    def get_tuple(config: dict[str, Any]) -> CheckpointTuple:
        tid = config["configurable"]["thread_id"]
        log_size = os.stat(saver.store.thread_log(tid).path).st_size
        head = orjson.loads(_unsealed(_head_path(heads, tid).read_bytes()))
        if head["log_size"] != log_size:
            raise AssertionError("head file is not current")
        checkpoint = head["cp"]
        checkpoint["channel_values"] = {ch: codec.decode(cell) for ch, cell in head["values"].items()}
        return CheckpointTuple(
            config=config_of(tid, "", head["id"]),
            checkpoint=checkpoint,
            metadata=head["md"],
            parent_config=config_of(tid, "", head["parent"]) if head["parent"] else None,
            pending_writes=[(task, ch, codec.decode(cell)) for task, ch, cell in head["writes"]],
        )

    return get_tuple


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One fresh process: two first reads of two threads, the JsonlSaver's split in stages."""
    totals: dict[str, float] = defaultdict(float)
    if args.saver == "jsonl":
        from langgraph_jsonl_checkpoint.disk import sidecar_file, store, view
        from langgraph_jsonl_checkpoint.saver import reads

        _timing(totals, store.Store, "thread_log", "thread_log")
        _timing(totals, view.LogView, "_load", "_load")
        _timing(totals, sidecar_file.SidecarFile, "load_watermark", "load_watermark")
        _timing(totals, view.LogView, "_scan_from", "_scan_from")
        _timing(totals, reads.CheckpointReads, "build_tuple", "build_tuple")
    handle = open_saver("jsonl" if args.saver == "jsonl-head" else args.saver, Path(args.workdir),
                        create=False)
    if args.saver == "jsonl-head":
        handle.saver.get_tuple = _head_reader(handle.saver, Path(args.heads))
    graph = build_agent_graph(handle.saver)
    ids = thread_ids(args.threads)
    out: dict[str, Any] = {}
    for label, tid in (("first", ids[args.first]), ("second", ids[(args.first + 1) % args.threads])):
        totals.clear()
        t0 = time.perf_counter()
        state = graph.get_state({"configurable": {"thread_id": tid}})
        took = time.perf_counter() - t0
        assert len(state.values["messages"]) == 4 * args.turns, len(state.values["messages"])
        out[label] = {"total": took, **(_jsonl_stages(totals, took) if args.saver == "jsonl" else {})}
    if args.saver == "jsonl":
        import orjson

        log = handle.saver.store.thread_log(ids[(args.first + 2) % args.threads])
        data = Path(log.path).read_bytes()
        t0 = time.perf_counter()
        for line in data.splitlines():
            orjson.loads(line)
        out["parse_only"] = time.perf_counter() - t0
        out["log_bytes"] = len(data)
        out["log_records"] = data.count(b"\n")
    handle.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--turns", type=int, default=10)
    p.add_argument("--rounds", type=int, default=15, help="fresh processes per saver")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", default="jsonl", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--heads", help=argparse.SUPPRESS)
    p.add_argument("--make-heads", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--head-writes", type=int, default=20, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(make_heads(args) if args.make_heads else worker(args)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="fresh-read-parts-"))
    shape = ["--threads", str(args.threads), "--turns", str(args.turns)]
    runs: dict[str, list[dict[str, Any]]] = {"jsonl": [], "sqlite": [], "jsonl-head": []}
    heads = tmp / "heads"
    try:
        for kind in ("jsonl", "sqlite"):
            (tmp / kind).mkdir()
            fill(kind, tmp / kind, args.threads, args.turns)
        made = run_worker(Path(__file__), ["--make-heads", "--workdir", str(tmp / "jsonl"),
                                           "--heads", str(heads), *shape])
        head_bytes = made["head_bytes"]
        for r in range(args.rounds):
            for kind in runs:
                workdir = tmp / ("jsonl" if kind == "jsonl-head" else kind)
                runs[kind].append(run_worker(Path(__file__), [
                    "--saver", kind, "--workdir", str(workdir), "--heads", str(heads),
                    "--first", str(r % args.threads), *shape]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    for label, what in (("first", "first get_state of the process"),
                        ("second", "get_state of a second thread (warm code, unseen log)")):
        case = f"{args.threads} threads x {args.turns} turns, fresh process: {what}"
        for kind in ("jsonl", "sqlite"):
            table.add(case, "get_state", kind, summary([x[label]["total"] for x in runs[kind]]), "s")
        table.add(case, "get_state", "jsonl", summary([x[label]["total"] for x in runs["jsonl-head"]]),
                  "s", note="a head record, emulated")
        for stage in STAGES:
            table.add(case, stage, "jsonl", summary([x[label][stage] for x in runs["jsonl"]]), "s")
    case = f"{args.threads} threads x {args.turns} turns, a head record (emulated)"
    table.add(case, "write it: the latest tuple's cells encoded, the file written and renamed (no fsync)",
              "jsonl", summary(made["head_writes"]), "s")
    case = f"{args.threads} threads x {args.turns} turns, a log no read touched"
    table.add(case, "parse only: orjson.loads of every line", "jsonl",
              summary([x["parse_only"] for x in runs["jsonl"]]), "s")
    log_bytes = statistics.median(x["log_bytes"] for x in runs["jsonl"])
    log_records = statistics.median(x["log_records"] for x in runs["jsonl"])
    for label in ("first", "second"):
        def med(kind: str, key: str, label: str = label) -> float:
            return statistics.median(x[label][key] for x in runs[kind]) * 1e3

        parts = ", ".join(f"{s} {med('jsonl', s):.2f}" for s in STAGES)
        print(f"[{NAME}] {label}: jsonl {med('jsonl', 'total'):.2f} ms ({parts}), "
              f"sqlite {med('sqlite', 'total'):.2f} ms, a head record (emulated) "
              f"{med('jsonl-head', 'total'):.2f} ms", flush=True)
    notes = [
        f"Each thread's log: {log_bytes:.0f} bytes, {log_records:.0f} lines (header included); "
        "its messages are stored as one full value and then deltas, so the latest messages are "
        "put together from records spread over the whole log.",
        "Stages are exclusive (the watermark is taken out of 'open the log'); 'the rest' is the "
        "get_state total less the stages.",
        "SqliteSaver's get_state reads one checkpoint row and one blob per channel version.",
        f"'a head record, emulated': get_tuple served from a file of {head_bytes:.0f} bytes holding the "
        "latest tuple whole (see the script's docstring); no release writes or reads such a file.",
    ]
    write_results(NAME, {"threads": args.threads, "turns": args.turns, "runs": runs,
                         "head_bytes": head_bytes, "head_writes": made["head_writes"]}, table,
                  header="Where a fresh process's first get_state of a short thread goes, JsonlSaver "
                  "split in stages, SqliteSaver beside it (each saver in its own fresh processes, "
                  "rounds alternating).", notes=notes)


if __name__ == "__main__":
    sys.exit(main())
