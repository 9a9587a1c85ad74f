"""The LangGraph server's rollback over a store of many threads: how long
``delete_for_runs([run_id])`` takes (what ``multitask_strategy="rollback"`` and
``runs.cancel(action="rollback")`` call, while the new run waits).

Reproduce (from the repository root, with the venv active)::

    python benchmarks/rollback.py                 # 1,500 threads, about a minute
    python benchmarks/rollback.py --threads 200 --quick

The store: ``--threads`` threads, each one agent turn (the benchmark agent) run with a
``run_id`` of its own in its metadata, as the server runs it. Then ``--rollbacks``
rollbacks, each of one thread's run, timed:

- ``a run of this process``: by the saver whose process ran it (the server's case: the
  run and its rollback are in one process; the savers of a store share which threads
  each run wrote to), so only that run's thread is opened;
- ``a run this process did not see``: by a saver opened afresh on the same store (the
  run was another process's, or ran before a restart), so every thread is looked in.

No saver LangGraph ships implements ``delete_for_runs`` (``InMemorySaver`` and
``SqliteSaver`` raise ``NotImplementedError``), so there is no same-run reference: the
rows are absolute, and the second case is what every rollback cost before.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.saver import run_threads

from _common import Table, build_agent_graph, summary, user_message, write_results

NAME = "rollback"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1500)
    p.add_argument("--rollbacks", type=int, default=20)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-rollback-", dir=args.tmp))
    store = tmp / "store"
    table = Table()
    case = f"{args.threads} threads, one run each; delete_for_runs of one run"
    try:
        runs: dict[str, str] = {}
        with JsonlSaver(store) as saver:
            graph = build_agent_graph(saver)
            for i in range(args.threads):
                tid, run_id = f"thread-{i:05d}", str(uuid.uuid4())
                graph.invoke({"messages": [user_message(i, 0)]},
                             {"configurable": {"thread_id": tid}, "metadata": {"run_id": run_id}})
                runs[tid] = run_id
            picked = list(runs)[:: max(1, args.threads // (2 * args.rollbacks))]
            known, unknown = picked[: args.rollbacks], picked[args.rollbacks: 2 * args.rollbacks]
            times = []
            for tid in known:
                t0 = time.perf_counter()
                saver.delete_for_runs([runs[tid]])
                times.append(time.perf_counter() - t0)
                assert saver.get_tuple({"configurable": {"thread_id": tid}}) is None
            table.add(case, "a run of this process", "jsonl", summary(times), "s")
        # As another process (or this one after a restart): the table of which threads
        # each run wrote to is the process's, shared by its savers of the store.
        run_threads._tables.clear()
        times = []
        for tid in unknown:
            with JsonlSaver(store) as fresh:  # a saver that did not see the run
                t0 = time.perf_counter()
                fresh.delete_for_runs([runs[tid]])
                times.append(time.perf_counter() - t0)
                assert fresh.get_tuple({"configurable": {"thread_id": tid}}) is None
        table.add(case, "a run this process did not see (every thread looked in)", "jsonl",
                  summary(times), "s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(table.markdown())
    write_results(NAME, {"threads": args.threads, "rollbacks": args.rollbacks}, table, quick=args.quick,
                  header="The LangGraph server's rollback (delete_for_runs of one run) over a store of "
                  "many threads: a run of this process opens only the threads it wrote; one this "
                  "process did not see is looked for in every thread (what every rollback cost before).",
                  notes=["No saver LangGraph ships implements delete_for_runs: there is no same-run "
                         "reference; the rows are absolute."])


if __name__ == "__main__":
    main()
