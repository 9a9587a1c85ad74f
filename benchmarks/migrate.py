"""Moving threads: SQLite -> store and store -> PostgreSQL (and back), in checkpoints/s.

Reproduce (from the repository root, with the venv active and PostgreSQL on
127.0.0.1:5432, user postgres, trust auth; ``LANGGRAPH_JSONL_BENCH_PG`` names another
server's admin URL)::

    python benchmarks/migrate.py              # 1,000 threads x 50 turns
    python benchmarks/migrate.py --quick      # 50 threads x 50 turns
    python benchmarks/migrate.py --threads 200 --turns 50
    python benchmarks/migrate.py --cases import,export   # only SQLite -> store, store -> PostgreSQL

The source: one conversation of the benchmark agent (``_common.build_agent_graph``,
500-character answers, a tool call every turn: about 4 checkpoints a turn) run for
``--turns`` turns on ``SqliteSaver``, then cloned inside the database to every thread id
(as SQL rows: what a year of an app's threads looks like to the copy, without running
the graph 50,000 times). Each case is ``copy_threads`` as the CLI runs it, with
verification (every thread read back from the target and compared, decoded) unless
the case says otherwise:

- ``SQLite -> store``: ``langgraph-jsonl import sqlite:///app.db ./checkpoints``;
- ``SQLite -> store, no verify``: the same with ``--no-verify``: what verifying costs;
- ``store -> PostgreSQL``: ``langgraph-jsonl export ./checkpoints postgresql://... --setup``;
- ``PostgreSQL -> store``: the way back;
- ``SQLite -> SQLite``: the reference in the same run (the same engine into another
  SqliteSaver file): the ratio column divides by it.

One sample per case (thousands of threads are their own average); the machine is shared
(2 cores), so compare ratios, not absolute figures, across runs.

``--long TURNS`` measures one long thread instead (``TURNS`` turns of the same agent in a
store, about 4 checkpoints a turn): ``langgraph-jsonl copy STORE sqlite:///...`` and
``langgraph-jsonl export STORE postgresql://... --setup``, each in a child process, in
seconds and peak RSS. Each checkpoint of a long conversation holds its whole message
list, so a copy holding the thread at once grows with its square. ``--before DIR``
runs the same cases with the package of another checkout too (``git worktree add DIR
<commit>``), for a before/after in one run::

    python benchmarks/migrate.py --long 500 --before /tmp/base   # 2,000 checkpoints
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.migrate import copy_threads

from _common import Table, build_agent_graph, path_bytes, user_message, write_results

NAME = "migrate"
#: Case keys, in the order they run (``export`` copies the store ``import`` made).
CASES = ("reference", "import", "import-no-verify", "export", "back")
ADMIN = os.environ.get("LANGGRAPH_JSONL_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def fill_sqlite(path: Path, threads: int, turns: int) -> int:
    """The source file; returns its number of checkpoints."""
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = build_agent_graph(saver)
        for turn in range(turns):
            graph.invoke({"messages": [user_message(7, turn)]}, {"configurable": {"thread_id": "template"}})
    conn = sqlite3.connect(path)
    with conn:
        for i in range(threads):
            tid = f"user-{i:05d}"
            conn.execute("INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, "
                         "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                         "WHERE thread_id = 'template'", (tid,))
            conn.execute("INSERT INTO writes SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, "
                         "idx, channel, type, value FROM writes WHERE thread_id = 'template'", (tid,))
        conn.execute("DELETE FROM checkpoints WHERE thread_id = 'template'")
        conn.execute("DELETE FROM writes WHERE thread_id = 'template'")
    n = int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0])
    conn.close()
    return n


def new_database() -> tuple[str, str]:
    name = f"lgj_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, urlunsplit(urlsplit(ADMIN)._replace(path="/" + name))


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: A child process running one CLI command: its exit status, seconds and peak RSS on stderr.
_MEASURED = """
import json, resource, sys, time
from langgraph_jsonl_checkpoint.cli import main
started = time.perf_counter()
code = main(sys.argv[1:])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"code": code, "seconds": time.perf_counter() - started, "peak_rss": peak}), file=sys.stderr)
"""


def fill_long_store(path: Path, turns: int) -> int:
    """A store with one thread of ``turns`` turns; returns its number of checkpoints."""
    with JsonlSaver(path) as saver:
        graph = build_agent_graph(saver)
        for turn in range(turns):
            graph.invoke({"messages": [user_message(7, turn)]}, {"configurable": {"thread_id": "long"}})
        return sum(len(ids) for ids in saver.store.thread_log("long").refresh().checkpoints.values())


def measured(argv: list[str], package: str | None) -> dict[str, float]:
    """Run ``langgraph-jsonl ARGV`` in a child (with ``package`` first on its path)."""
    env = dict(os.environ)
    if package:
        env["PYTHONPATH"] = package
    done = subprocess.run([sys.executable, "-c", _MEASURED, *argv], env=env, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stderr.strip().splitlines()[-1])
    assert figures["code"] == 0, done.stdout + done.stderr
    return figures


def long_thread(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-migrate-long-", dir=args.tmp))
    table = Table()
    raw: dict[str, object] = {"turns": args.long}
    databases = []
    try:
        store = work / "store"
        started = time.perf_counter()
        total = fill_long_store(store, args.long)
        raw.update(checkpoints=total, store_bytes=path_bytes(store))
        print(f"source: 1 thread, {total} checkpoints, {path_bytes(store) / 2**20:.1f} MiB, "
              f"built in {time.perf_counter() - started:.1f} s")
        case = f"1 thread x {args.long} turns ({total:,} checkpoints)"
        builds = [("this checkout", None)] + ([("before", args.before)] if args.before else [])
        for build, package in builds:
            for label, kind in (("store -> SQLite", "sqlite"), ("store -> PostgreSQL", "postgres")):
                if kind == "sqlite":
                    argv = ["copy", str(store), f"sqlite:///{work / f'{build}.db'}"]
                else:
                    db_name, pg = new_database()
                    databases.append(db_name)
                    argv = ["export", str(store), pg, "--setup"]
                figures = measured(argv, package)
                name = f"{label} ({build})"
                print(f"{name}: {figures['seconds']:.1f} s, peak RSS {figures['peak_rss'] / 2**20:,.0f} MiB")
                # The ratio column divides by the "sqlite" row: this checkout's store -> SQLite.
                key = "sqlite" if name == "store -> SQLite (this checkout)" else name
                table.add(case, "seconds", key, figures["seconds"], "s")
                table.add(case, "peak RSS MiB", key, figures["peak_rss"] / 2**20, "MiB")
                raw[name] = figures
    finally:
        for db_name in databases:
            drop_database(db_name)
        shutil.rmtree(work, ignore_errors=True)
    notes = [
        f"Source: one thread of {raw['checkpoints']:,} checkpoints in a store "
        f"({int(raw['store_bytes']) / 2**20:.1f} MiB). Each case is one CLI command "
        "in a child process, with verification; peak RSS is the child's ru_maxrss.",
        "The ratio column divides by this checkout's store -> SQLite row.",
        "One sample per case; the machine is shared (2 cores).",
    ]
    command = f"python benchmarks/migrate.py --long {args.long}" + (" --before DIR" if args.before else "")
    header = "Copying one long thread: seconds and peak RSS\n\n" + f"Command: `{command}`"
    _, md = write_results(f"{NAME}-long", {"raw": raw}, table, header=header, notes=notes)
    print(md.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 threads")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--workers", type=int, default=4, help="threads copied at once (the CLI's default)")
    parser.add_argument("--tmp", default=None, help="where the files go (default $TMPDIR)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"which cases, comma-separated (default all: {','.join(CASES)})")
    parser.add_argument("--long", type=int, default=None, metavar="TURNS",
                        help="one thread of TURNS turns instead: seconds and peak RSS of copying it")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="with --long: also run the cases with the package of the checkout in DIR")
    args = parser.parse_args()
    if args.long:
        long_thread(args)
        return
    n = args.threads or (50 if args.quick else 1_000)
    work = Path(tempfile.mkdtemp(prefix="bench-migrate-", dir=args.tmp))
    table = Table()
    raw: dict[str, object] = {"threads": n, "turns": args.turns}
    db_name = None
    try:
        src = work / "app.db"
        started = time.perf_counter()
        total = fill_sqlite(src, n, args.turns)
        raw.update(checkpoints=total, sqlite_bytes=path_bytes(src))
        print(f"source: {n} threads, {total} checkpoints, built in {time.perf_counter() - started:.1f} s")
        db_name, pg = new_database()
        case = f"{n:,} threads x {args.turns} turns ({total:,} checkpoints)"
        chosen = set(args.cases.split(","))
        runs = [
            ("SQLite -> SQLite (reference)", "sqlite", f"sqlite:///{work / 'copy.db'}", {"src": f"sqlite:///{src}"}),
            ("SQLite -> store", "jsonl", str(work / "store"), {"src": f"sqlite:///{src}"}),
            ("SQLite -> store, no verify", "jsonl", str(work / "store2"),
             {"src": f"sqlite:///{src}", "verify": False}),
            ("store -> PostgreSQL", "postgres", pg, {"src": str(work / "store"), "setup": True}),
            ("PostgreSQL -> store", "jsonl", str(work / "back"), {"src": pg}),
        ]
        for (label, _kind, target, opts), key in zip(runs, CASES):
            if key not in chosen:
                continue
            source = str(opts.pop("src"))
            started = time.perf_counter()
            report = copy_threads(source, target, workers=args.workers, **opts)  # type: ignore[arg-type]
            secs = time.perf_counter() - started
            assert report.ok and report.checkpoints == total, report.to_json()
            print(f"{label}: {secs:.1f} s, {total / secs:,.0f} checkpoints/s")
            # The Table's ratio column divides by the "sqlite" row of the case: the reference.
            table.add(case, "checkpoints/s", "sqlite" if label.startswith("SQLite -> SQLite") else label,
                      total / secs, "/s")
            table.add(case, "seconds", "sqlite" if label.startswith("SQLite -> SQLite") else label, secs, "s")
            raw[label] = {"seconds": secs, "bytes": report.bytes, "writes": report.writes}
    finally:
        if db_name is not None:
            drop_database(db_name)
        shutil.rmtree(work, ignore_errors=True)

    notes = [
        f"Source: {raw['sqlite_bytes'] / 2**20:.1f} MiB of SQLite ({raw['checkpoints']:,} checkpoints). "
        "Every case copies every checkpoint and pending write and verifies it unless it says otherwise.",
        "The ratio column divides by the same engine copying SQLite into another SqliteSaver file "
        "(\"SqliteSaver\" rows), in the same run.",
        "One sample per case; the machine is shared (2 cores).",
    ]
    command = "python benchmarks/migrate.py" + (" --quick" if args.quick else "")
    command += (f" --threads {args.threads}" if args.threads else "")
    command += (f" --turns {args.turns}" if args.turns != 50 else "")
    command += (f" --workers {args.workers}" if args.workers != 4 else "")
    command += (f" --cases {args.cases}" if set(args.cases.split(",")) != set(CASES) else "")
    header = __doc__.split("\n\n")[0] + f"\n\nCommand: `{command}`"
    _, md = write_results(NAME, {"raw": raw}, table, header=header, notes=notes, quick=args.quick)
    print(md.read_text())


if __name__ == "__main__":
    main()
