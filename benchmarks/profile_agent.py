"""cProfile of the agent conversation, *including LangGraph's background threads*.

Reproduce (from the repository root, with the venv active)::

    python benchmarks/profile_agent.py                  # JsonlSaver, 200 turns
    python benchmarks/profile_agent.py --saver sqlite --turns 200
    python benchmarks/profile_agent.py --quick          # 20 turns, a few seconds
    python benchmarks/profile_agent.py --saver floor --turns 1000 --reads 2  # LangGraph alone

Why not just ``python -m cProfile -s cumtime benchmarks/agent_conversation.py ...``? That
works (and is shown first in the output), but cProfile only sees the thread it was
started in, and LangGraph calls ``put``/``put_writes`` from a per-run thread pool
(``BackgroundExecutor``), so the saver's write path is invisible to it. Here every new
thread gets its own ``cProfile.Profile`` (via ``threading.setprofile``) and the stats are
merged. The workload is ``agent_conversation.py``'s worker (turns, then ``get_state`` and
``get_state_history(limit=20)`` x ``--reads``).

Writes ``results/agent_conversation-profile-<saver>-<turns>.txt``: the top functions by
cumulative time, all of them and then only ``langgraph_jsonl_checkpoint``'s, for the main
thread, the background threads, and both merged.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import threading
import time

from _common import RESULTS

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _thread_start(frame, event, arg):  # noqa: ANN001 - sys.setprofile signature
    sys.setprofile(None)
    prof = cProfile.Profile()
    with _lock:
        _profiles.append(prof)
    prof.enable()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--saver", default="jsonl", choices=["jsonl", "sqlite", "memory", "floor"])
    p.add_argument("--turns", type=int, default=None, help="default 200 (quick 20)")
    p.add_argument("--reads", type=int, default=20)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--tmp", default=None)
    args = p.parse_args()
    turns = args.turns or (20 if args.quick else 200)

    import agent_conversation

    wargs = argparse.Namespace(saver=args.saver, turns=turns, reads=args.reads, tmp=args.tmp)
    threading.setprofile(_thread_start)
    main_prof = cProfile.Profile()
    t0 = time.perf_counter()
    main_prof.enable()
    real_stdout = sys.stdout
    sys.stdout = io.StringIO()  # the worker prints its JSON result
    try:
        agent_conversation.worker(wargs)
    finally:
        sys.stdout = real_stdout
        main_prof.disable()
        threading.setprofile(None)
    wall = time.perf_counter() - t0
    # Every LangGraph run joins its pool threads on exit, so their profiles are complete.
    with _lock:
        bg = list(_profiles)

    out = io.StringIO()

    def section(title: str, stats: pstats.Stats, restrict: str | None, sort: str = "cumulative") -> None:
        out.write(f"\n===== {title} =====\n")
        stats.stream = out
        stats.sort_stats(sort)
        if restrict:
            stats.print_stats(restrict, args.top)
        else:
            stats.print_stats(args.top)

    main_stats = pstats.Stats(main_prof)
    bg_stats = pstats.Stats(bg[0]) if bg else None
    for prof in bg[1:]:
        bg_stats.add(prof)
    merged = pstats.Stats(main_prof)
    for prof in bg:
        merged.add(prof)
    out.write(f"# python benchmarks/profile_agent.py --saver {args.saver} --turns {turns} "
              f"--reads {args.reads}\n# wall time under the profiler: {wall:.1f} s; "
              f"{len(bg)} background threads profiled\n")
    (
        section(
            "background threads (put / put_writes), package functions", bg_stats, "langgraph_jsonl_checkpoint"
        )
        if bg_stats
        else None
    )
    section("background threads, all functions", bg_stats, None) if bg_stats else None
    section("main thread, package functions", main_stats, "langgraph_jsonl_checkpoint")
    section("main thread, all functions", main_stats, None)
    section("merged, package functions", merged, "langgraph_jsonl_checkpoint")
    section("merged, all functions by own time", merged, None, sort="tottime")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"agent_conversation-profile-{args.saver}-{turns}{'-quick' if args.quick else ''}.txt"
    path.write_text(out.getvalue())
    print(f"wrote {path} ({wall:.1f} s under the profiler)")


if __name__ == "__main__":
    sys.exit(main())
