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

JsonlSaver is run twice: as released, where the store's closing wrote each thread's
*head file* (its latest checkpoint whole, ``saver/heads.py``) and the read is served from
it (*read the head*: ``heads.head_tuple``, the head file and the whole log read, the log's
CRC checked, the cells decoded); and *without heads*, on a copy of the store whose head
files are removed before each read (a store written before heads, or a head found
stale), split in the stages above. Writing a head is timed too, on its own (what each
let-go of a log from the open set adds: the latest tuple rebuilt from the indexed log,
its cells encoded, the file written and renamed, no fsync; 20 times per thread).

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


def head_writes(args: argparse.Namespace) -> dict[str, Any]:
    """Each thread's head file written ``--head-writes`` times by the package's own
    keeper (the head removed before each, so it is written whole): the median file size
    and the time of each write."""
    from langgraph_jsonl_checkpoint.disk.head_file import HEAD_LOG_BYTES
    from langgraph_jsonl_checkpoint.saver.heads import HeadKeeper

    handle = open_saver("jsonl", Path(args.workdir), create=False)
    saver = handle.saver
    keeper = next(o for o in saver.store.thread_log(thread_ids(1)[0]).observers if isinstance(o, HeadKeeper))
    sizes, writes = [], []
    for tid in thread_ids(args.threads):
        log = saver.store.thread_log(tid)
        log.refresh()
        assert log.index.committed_end <= HEAD_LOG_BYTES
        for _ in range(args.head_writes):
            os.unlink(log.paths.head)
            t0 = time.perf_counter()
            keeper.closing(log)
            writes.append(time.perf_counter() - t0)
        sizes.append(os.path.getsize(log.paths.head))
    handle.close()
    return {"head_bytes": statistics.median(sizes), "head_writes": writes}


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One fresh process: two first reads of two threads, the JsonlSaver's split in stages."""
    totals: dict[str, float] = defaultdict(float)
    if args.saver == "jsonl-no-head":
        from langgraph_jsonl_checkpoint.disk import sidecar_file, store, view
        from langgraph_jsonl_checkpoint.saver import reads

        _timing(totals, store.Store, "thread_log", "thread_log")
        _timing(totals, view.LogView, "_load", "_load")
        _timing(totals, sidecar_file.SidecarFile, "load_watermark", "load_watermark")
        _timing(totals, view.LogView, "_scan_from", "_scan_from")
        _timing(totals, reads.CheckpointReads, "build_tuple", "build_tuple")
        for head in Path(args.workdir).glob("jsonl-store/threads/*.head"):
            head.unlink()  # the last round's close wrote the heads of the logs it read
    elif args.saver == "jsonl":
        from langgraph_jsonl_checkpoint.saver import reads

        _timing(totals, reads, "head_tuple", "head_tuple")
    handle = open_saver("jsonl" if args.saver == "jsonl-no-head" else args.saver, Path(args.workdir),
                        create=False)
    graph = build_agent_graph(handle.saver)
    ids = thread_ids(args.threads)
    out: dict[str, Any] = {}
    for label, tid in (("first", ids[args.first]), ("second", ids[(args.first + 1) % args.threads])):
        totals.clear()
        t0 = time.perf_counter()
        state = graph.get_state({"configurable": {"thread_id": tid}})
        took = time.perf_counter() - t0
        assert len(state.values["messages"]) == 4 * args.turns, len(state.values["messages"])
        stages: dict[str, float] = {}
        if args.saver == "jsonl-no-head":
            stages = _jsonl_stages(totals, took)
        elif args.saver == "jsonl":
            assert totals["head_tuple"] > 0, "no head file was read"
            assert not handle.saver.store.thread_log(tid).exists(), "the log was indexed"
            stages = {"read the head": totals["head_tuple"], "the rest": took - totals["head_tuple"]}
        out[label] = {"total": took, **stages}
    if args.saver == "jsonl-no-head":
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
    p.add_argument("--time-head-writes", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--head-writes", type=int, default=20, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(head_writes(args) if args.time_head_writes else worker(args)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="fresh-read-parts-"))
    shape = ["--threads", str(args.threads), "--turns", str(args.turns)]
    runs: dict[str, list[dict[str, Any]]] = {"jsonl": [], "jsonl-no-head": [], "sqlite": []}
    try:
        for kind in ("jsonl", "sqlite"):
            (tmp / kind).mkdir()
            fill(kind, tmp / kind, args.threads, args.turns)
        for copy in ("jsonl-no-head", "jsonl-head-writes"):
            shutil.copytree(tmp / "jsonl", tmp / copy)
        made = run_worker(Path(__file__), ["--time-head-writes", "--workdir", str(tmp / "jsonl-head-writes"),
                                           *shape])
        head_bytes = made["head_bytes"]
        for r in range(args.rounds):
            for kind in runs:
                runs[kind].append(run_worker(Path(__file__), [
                    "--saver", kind, "--workdir", str(tmp / kind), "--first", str(r % args.threads), *shape]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table()
    for label, what in (("first", "first get_state of the process"),
                        ("second", "get_state of a second thread (warm code, unseen log)")):
        case = f"{args.threads} threads x {args.turns} turns, fresh process: {what}"
        for kind in ("jsonl", "sqlite"):
            table.add(case, "get_state", kind, summary([x[label]["total"] for x in runs[kind]]), "s")
        for stage in ("read the head", "the rest"):
            table.add(case, stage, "jsonl", summary([x[label][stage] for x in runs["jsonl"]]), "s")
        table.add(case, "get_state", "jsonl", summary([x[label]["total"] for x in runs["jsonl-no-head"]]),
                  "s", note="without head files")
        for stage in STAGES:
            table.add(case, stage, "jsonl", summary([x[label][stage] for x in runs["jsonl-no-head"]]), "s",
                      note="without head files")
    case = f"{args.threads} threads x {args.turns} turns, a head file"
    table.add(case, "write it (as a let-go does): the tuple rebuilt, its cells encoded, the file "
              "written and renamed (no fsync)", "jsonl", summary(made["head_writes"]), "s")
    case = f"{args.threads} threads x {args.turns} turns, a log no read touched"
    table.add(case, "parse only: orjson.loads of every line", "jsonl",
              summary([x["parse_only"] for x in runs["jsonl-no-head"]]), "s")
    log_bytes = statistics.median(x["log_bytes"] for x in runs["jsonl-no-head"])
    log_records = statistics.median(x["log_records"] for x in runs["jsonl-no-head"])
    for label in ("first", "second"):
        def med(kind: str, key: str, label: str = label) -> float:
            return statistics.median(x[label][key] for x in runs[kind]) * 1e3

        parts = ", ".join(f"{s} {med('jsonl-no-head', s):.2f}" for s in STAGES)
        print(f"[{NAME}] {label}: jsonl {med('jsonl', 'total'):.2f} ms (read the head "
              f"{med('jsonl', 'read the head'):.2f}), sqlite {med('sqlite', 'total'):.2f} ms, "
              f"jsonl without heads {med('jsonl-no-head', 'total'):.2f} ms ({parts})", flush=True)
    print(f"[{NAME}] head file {head_bytes:.0f} bytes, written in "
          f"{statistics.median(made['head_writes']) * 1e3:.2f} ms", flush=True)
    notes = [
        f"Each thread's log: {log_bytes:.0f} bytes, {log_records:.0f} lines (header included); "
        "its messages are stored as one full value and then deltas, so without a head the latest "
        "messages are put together from records spread over the whole log.",
        f"Each thread's head file: {head_bytes:.0f} bytes.",
        "Stages are exclusive (the watermark is taken out of 'open the log'); 'the rest' is the "
        "get_state total less the stages.",
        "SqliteSaver's get_state reads one checkpoint row and one blob per channel version.",
    ]
    write_results(NAME, {"threads": args.threads, "turns": args.turns, "runs": runs,
                         "head_bytes": head_bytes, "head_writes": made["head_writes"]}, table,
                  header="Where a fresh process's first get_state of a short thread goes: JsonlSaver "
                  "served from the thread's head file, and without head files split in stages; "
                  "SqliteSaver beside it (each in its own fresh processes, rounds alternating).",
                  notes=notes)


if __name__ == "__main__":
    sys.exit(main())
