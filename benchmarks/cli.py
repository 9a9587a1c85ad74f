"""The reading commands of ``langgraph-jsonl`` on large stores: ``threads`` over 10,000
threads, ``search`` over 1,000 threads x 200 turns.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/cli.py            # full run: ~6 min on a 2-core machine
    python benchmarks/cli.py --quick    # smoke test: 500 threads; 50 threads x 40 turns, < 60 s

Stores are filled with direct ``put`` / ``put_writes`` calls (``_common.CheckpointStream``:
a chat thread whose messages grow by one ~200-character message per checkpoint, with
LangGraph-shaped metadata and a pending write per step), as the micro benchmarks do:
graph runs would take an hour for 200,000 turns.

1. ``threads``: 10,000 threads of 4 checkpoints each. Timed: the command in a fresh
   process (``langgraph-jsonl threads STORE --json``, imports included, output to a
   pipe) without the listing cache (``LISTING.idx`` removed before each run: every log
   read), with the cache the previous listing left (no log read), and after another
   process appended a checkpoint to 100 threads (those 100 read again); the same with
   ``--limit 20`` (a first page: only those threads are read), and
   ``thread_summaries`` in this process (the library: no cache). Baseline in the same run: the same
   10,000 threads in a ``SqliteSaver`` and what an inspection script does there (the
   distinct thread ids, then ``get_tuple`` of each thread's latest checkpoint), which
   gives neither status nor size.
2. ``search``: 1,000 threads of 200 turns (a turn: a user message and an answer, one
   checkpoint; 400 messages per thread). Timed: ``search_messages`` for a word in one
   thread only (most logs are skipped by the byte filter), for a word in about one
   message in a hundred (every log is read and matching lines parsed), and the command in
   a fresh process for the rare word. Baseline in the same run: what a script does
   without the command: ``get_tuple`` of each thread's latest checkpoint and a
   substring test over its messages (SqliteSaver is not filled to this size: its
   stores grow with the square of the conversation, ~6 GB here).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.inspection.listing import LISTING
from langgraph_jsonl_checkpoint.inspection.search import search_messages
from langgraph_jsonl_checkpoint.inspection.threads import thread_summaries

from _common import LABELS, CheckpointStream, Table, open_saver, summary, text, timed, write_results

NAME = "cli"
RARE = "zanzibar"
COMMON = "barometer"


def fill_threads(saver, n_threads: int, checkpoints: int) -> None:  # type: ignore[no-untyped-def]
    """``n_threads`` short threads, with a pending write after each checkpoint."""
    for i in range(n_threads):
        stream = CheckpointStream(saver, f"thread-{i:05d}", msg_chars=120)
        for _ in range(checkpoints):
            cfg, msg = stream.put()
            saver.put_writes(cfg, [("messages", [msg])], f"task-{stream.step}")


def fill_conversations(path: Path, n_threads: int, turns: int) -> int:
    """``n_threads`` conversations of ``turns`` turns; returns the messages holding
    :data:`COMMON`. The rare word is in one message of thread 0."""
    common = 0
    rng = random.Random(7)
    with JsonlSaver(path) as saver:
        for i in range(n_threads):
            tid = f"conv-{i:04d}"
            messages: list = []
            versions: dict = {}
            checkpoint = empty_checkpoint()
            parent = None
            for turn in range(turns):
                user = text(i * 1_000_003 + turn, 100)
                if rng.random() < 0.01:
                    user += f" {COMMON}"
                    common += 1
                if i == 0 and turn == turns // 2:
                    user += f" {RARE}"
                answer = text(i * 7_000_001 + turn, 300)
                messages = messages + [HumanMessage(user, id=f"u-{i}-{turn}"),
                                       AIMessage(answer, id=f"a-{i}-{turn}")]
                new = {"messages": saver.get_next_version(versions.get("messages"), None)}
                versions.update(new)
                cp = create_checkpoint(checkpoint, None, turn)
                cp["channel_values"] = {"messages": messages}
                cp["channel_versions"] = dict(versions)
                cp["versions_seen"] = {"agent": {"messages": versions["messages"]}}
                checkpoint = cp
                cfg = {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
                if parent:
                    cfg["configurable"]["checkpoint_id"] = parent
                saver.put(cfg, cp, {"source": "loop", "step": turn, "parents": {}}, new)
                parent = cp["id"]
    return common


def cli(args: list[str]) -> float:
    """Wall time of ``langgraph-jsonl ARGS`` in a fresh process (output to a pipe)."""
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", *args],
                         capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - t0
    assert run.returncode == 0, run.stderr[-2000:]
    return elapsed


APPEND = """
import sys
from langgraph.checkpoint.base import create_checkpoint
from langgraph_jsonl_checkpoint import JsonlSaver
with JsonlSaver(sys.argv[1]) as saver:
    for tid in sys.argv[2:]:
        latest = saver.get_tuple({"configurable": {"thread_id": tid}})
        cp = create_checkpoint(latest.checkpoint, None, latest.metadata["step"] + 1)
        new = {"step": saver.get_next_version(cp["channel_versions"].get("step"), None)}
        cp["channel_values"] = {**cp["channel_values"], "step": latest.metadata["step"] + 1}
        cp["channel_versions"] = {**cp["channel_versions"], **new}
        saver.put(latest.config, cp, {**latest.metadata, "step": latest.metadata["step"] + 1}, new)
"""


def append_elsewhere(store: Path, thread_ids: list[str]) -> None:
    """One checkpoint more on each of ``thread_ids``, put by another process."""
    subprocess.run([sys.executable, "-c", APPEND, str(store), *thread_ids], check=True, timeout=600)


def bench_threads(tmp: Path, n: int, reps: int, table: Table) -> dict:
    store = tmp / "threads"
    t0 = time.perf_counter()
    with JsonlSaver(store) as saver:
        fill_threads(saver, n, 4)
    print(f"[{NAME}] filled {n} threads (jsonl) in {time.perf_counter() - t0:.1f} s", flush=True)
    with JsonlSaver(store, read_only=True) as reader:
        rows = list(thread_summaries(reader))
        assert len(rows) == n and all(r.status == "done" for r in rows), rows[:3]
    in_process = []
    for _ in range(reps):
        with JsonlSaver(store, read_only=True) as reader:
            t = time.perf_counter()
            assert len(list(thread_summaries(reader))) == n
            in_process.append(time.perf_counter() - t)
    cache = store / LISTING
    cold = []
    for _ in range(reps):  # no listing cache: every log is read
        cache.unlink(missing_ok=True)
        cold.append(cli(["threads", str(store), "--json"]))
    cli(["threads", str(store), "--json"])  # makes the cache
    warm = [cli(["threads", str(store), "--json"]) for _ in range(reps)]
    appended = []
    for rep in range(reps):  # another process appends to 100 threads, then a listing
        touched = [f"thread-{i:05d}" for i in range(rep * 100, rep * 100 + 100)]
        append_elsewhere(store, touched)
        appended.append(cli(["threads", str(store), "--json"]))
    first_page = [cli(["threads", str(store), "--json", "--limit", "20"]) for _ in range(reps)]
    case = f"{n:,} threads x 4 checkpoints"
    table.add(case, "threads, no listing cache (fresh process, --json)", "jsonl", summary(cold), "s")
    table.add(case, "threads, cache of the previous listing (fresh process, --json)", "jsonl",
              summary(warm), "s")
    table.add(case, "threads, 100 threads appended by another process since (fresh process, --json)",
              "jsonl", summary(appended), "s")
    table.add(case, "threads --limit 20 (fresh process, --json)", "jsonl", summary(first_page), "s")
    table.add(case, "thread_summaries (in process)", "jsonl", summary(in_process), "s")

    sqlite_dir = tmp / "sqlite-threads"
    sqlite_dir.mkdir()
    h = open_saver("sqlite", sqlite_dir)
    t0 = time.perf_counter()
    fill_threads(h.saver, n, 4)
    print(f"[{NAME}] filled {n} threads (sqlite) in {time.perf_counter() - t0:.1f} s", flush=True)

    def sqlite_script() -> None:
        with h.saver.cursor(transaction=False) as cur:
            ids = [r[0] for r in cur.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()]
        latest = [h.saver.get_tuple({"configurable": {"thread_id": t}}) for t in ids]
        assert len(latest) == n

    baseline = timed(sqlite_script, reps)
    h.close()
    table.add(case, "thread_summaries (in process)", "sqlite", summary(baseline), "s",
              note="thread ids + latest get_tuple each")
    return {"threads": n, "cold": cold, "warm": warm, "appended_100": appended, "first_page": first_page,
            "in_process": in_process, "sqlite_script": baseline}


def bench_search(tmp: Path, n: int, turns: int, reps: int, table: Table) -> dict:
    store = tmp / "conversations"
    t0 = time.perf_counter()
    common = fill_conversations(store, n, turns)
    fill = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    print(f"[{NAME}] filled {n} x {turns} turns in {fill:.1f} s ({size / 2**20:.0f} MiB)", flush=True)
    case = f"{n:,} threads x {turns} turns ({size / 2**20:.0f} MiB)"
    results: dict = {"threads": n, "turns": turns, "bytes": size, "fill_seconds": fill,
                     "common_matches": common}
    for word, expected, label in ((RARE, 1, "search, a word in 1 thread"),
                                  (COMMON, common, "search, a word in 1% of messages")):  # of user messages
        times = []
        for _ in range(reps):
            with JsonlSaver(store, read_only=True) as reader:
                t = time.perf_counter()
                hits = list(search_messages(reader, word))
                times.append(time.perf_counter() - t)
            assert len(hits) == expected, (word, len(hits), expected)
        table.add(case, label, "jsonl", summary(times), "s")
        results[word] = times

    def script() -> None:
        found = 0
        with JsonlSaver(store, read_only=True) as reader:
            for tid in reader.store.thread_ids():
                tup = reader.get_tuple({"configurable": {"thread_id": tid}})
                found += sum(1 for m in tup.checkpoint["channel_values"]["messages"] if RARE in m.content)
        assert found == 1

    baseline = timed(script, reps)
    table.add(case, "search, a word in 1 thread", "jsonl", summary(baseline), "s",
              note="script: get_tuple of each thread + substring")
    fresh = [cli(["search", str(store), RARE, "--json"]) for _ in range(reps)]
    table.add(case, "search (fresh process, --json), a word in 1 thread", "jsonl", summary(fresh), "s")
    results.update(script=baseline, fresh=fresh)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--threads", type=int, default=None, help="threads for the threads case (10,000)")
    p.add_argument("--search-threads", type=int, default=None, help="threads for search (1,000)")
    p.add_argument("--turns", type=int, default=None, help="turns per thread for search (200)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--tmp", default=None)
    p.add_argument("--threads-only", action="store_true",
                   help="only the threads case; results in results/cli-threads.*")
    args = p.parse_args()
    n_threads = args.threads or (500 if args.quick else 10_000)
    n_search = args.search_threads or (50 if args.quick else 1_000)
    turns = args.turns or (40 if args.quick else 200)
    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-", dir=args.tmp))
    table = Table()
    try:
        threads = bench_threads(tmp, n_threads, args.reps, table)
        search = None if args.threads_only else bench_search(tmp, n_search, turns, args.reps, table)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(table.markdown())
    header = (f"`langgraph-jsonl threads` over {n_threads:,} threads and `search` over {n_search:,} "
              f"threads x {turns} turns ({LABELS['jsonl']}; SqliteSaver where a script is the baseline).")
    if args.threads_only:
        header = (f"`langgraph-jsonl threads` over {n_threads:,} threads ({LABELS['jsonl']}; "
                  "SqliteSaver where a script is the baseline).")
    notes = [
        "The ratio column compares with SqliteSaver's row of the same case and metric: for "
        "threads, a script listing the thread ids and reading each one's latest checkpoint "
        "(no status, no size); for search there is no SqliteSaver row (its store would hold "
        "about 6 GB): the 'script' row is the same search done with JsonlSaver.get_tuple.",
        "Fresh-process rows include Python start-up and imports: the command line alone "
        "(about 0.1 s on a quiet machine); a listing that reads logs (changed ones, a "
        "--limit page) also imports the value codec, LangChain's messages and LangGraph's "
        "serializer (about 0.3 s), never the saver or LangGraph's graph runtime.",
    ]
    name = NAME + ("-threads" if args.threads_only else "")
    jpath, mpath = write_results(name, {"threads_case": threads, "search_case": search}, table,
                                 header=header, notes=notes, quick=args.quick)
    print(f"wrote {jpath} and {mpath}")
    print(json.dumps({"ok": True}))


if __name__ == "__main__":
    main()
