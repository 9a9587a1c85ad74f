"""A real ``langgraph dev`` server, driven by ``langgraph-sdk``: runs per second with this
package's factory against the same server on ``AsyncSqliteSaver``.

Reproduce (from the repository root, with the venv active and ``pip install -e '.[test]'``,
which brings ``langgraph-cli[inmem]``)::

    python benchmarks/server.py            # full run: 200 threads x 5 runs, 3 repeats
    python benchmarks/server.py --quick    # smoke test: 40 threads x 2 runs, 1 repeat
    python benchmarks/server.py --profile /tmp/prof   # py-spy each server (pip install py-spy)

The two servers, each on a fresh store or database in a fresh temp folder:

- ``jsonl``: ``langgraph_jsonl_checkpoint.server.checkpointer``, the package's own factory
  (``JsonlSaver``, ``concurrent_runs="hold"``, store ``$LANGGRAPH_JSONL_STORE``);
- ``sqlite_async``: ``AsyncSqliteSaver`` on a file, through ``server_app.py``'s
  ``sqlite_checkpointer`` (the same shape: an async context manager factory, which the
  server enters once per OS thread that needs a checkpointer).

Same graph for both: ``server_app.py``'s ``graph``, the benchmark agent (fake
tool-calling chat model, one tool, no network; a run is user message -> agent -> tool ->
agent, four messages). The server is ``langgraph dev --no-reload`` (the in-memory
runtime; blocking calls in its event loop raise) with ``--n-jobs-per-worker`` ``--jobs``
(10, the server's own default; ``langgraph dev`` alone runs one job at a time), and the
runs' durability is the server's default (``"async"``).

Interleaved: each repeat starts both servers, warms each up (``--concurrency`` runs at
once, each on a thread of its own, not counted: the first runs import and start what
later runs reuse), creates ``--threads`` threads on each, then runs the threads in
``--batches`` batches (5: 40 threads, 200 runs each), the servers taking turns batch by
batch (the order alternating), so both are measured under the same load of a shared
machine. Within a batch, ``--concurrency`` (20) client workers take the batch's threads
one at a time and run each thread's ``--runs`` runs one after the other with
``client.runs.wait`` (create the run, wait for its end and its values, as a client that
wants the answer does). So at most 20 runs are in flight, each thread has one at a time,
and the server queues what its jobs cannot start yet (a run's latency includes that
wait). Runs per second = runs / the time of the server's batches. The in-memory runtime
looks for queued runs every 0.5 s once it found none, so each batch starts and ends with
a short stall, the same for both servers; it dilutes the ratio a little towards 1.

Checked, or the benchmark fails (a failed run is not speed): every ``runs.wait``
answered the thread's messages so far (4 per run, the agent's answer last); after the
batches, every thread lists ``--runs`` runs, all ``success``, and its final state holds
``4 * --runs`` messages and nothing next; nothing in the server's output reads
``Traceback``, ``BlockingError``, ``ThreadBusyError`` or ``ConcurrentRunError``.

Also reported: the server's CPU seconds per run over its batches (``/proc``; and of it the
kernel's, where the file system's syncs show), the
client's, the server's resident memory at the end and its peak, the bytes of the store or
database. Server and client share the machine (2 cores here). The full run takes about
4-5 minutes.

``--profile DIR``: ``py-spy record --gil --threads --nonblocking`` of each server over the batches
(raw folded stacks in ``DIR``), summarised in ``results/<name>-profile.txt``: the
samples of the thread holding the GIL (the server is one Python process) by part (the
checkpointer, LangGraph's loop, the graph's nodes, the server's runtime and HTTP), and
the checkpointer's functions. Profiling slows the servers: the figures of a profiled
run go to ``results/<name>-profiled.*``, never over the benchmark's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from server_profile import PROFILE_RATE, start_profiler, write_profile

from _common import (
    HERE,
    LABELS,
    Table,
    environment,
    path_bytes,
    quantile,
    sqlite_paths,
    summary,
    text,
    write_results,
)

NAME = "server"
#: The variable naming AsyncSqliteSaver's database (``server_app.SQLITE_ENV``; not
#: imported from there, which would build the graph in this process).
SQLITE_ENV = "BENCH_SQLITE_DB"
KINDS = ("jsonl", "sqlite_async")
CHECKPOINTER_PATHS = {
    "jsonl": "langgraph_jsonl_checkpoint.server.checkpointer",
    "sqlite_async": f"{HERE / 'server_app.py'}:sqlite_checkpointer",
}
#: Messages one run adds: the user's, the tool call, the tool's answer, the reply.
MESSAGES_PER_RUN = 4
#: Longest wait for the server to answer ``/ok``.
START_TIMEOUT = 120.0
#: What must not show in a server's output.
BAD_OUTPUT = ("Traceback", "BlockingError", "ThreadBusyError", "ConcurrentRunError")


# ---------------------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DevServer:
    """One ``langgraph dev`` process for checkpointer ``kind``, in ``workdir``: the
    project (``langgraph.json``) in ``workdir/project``, the store or database beside it
    (the dev server watches nothing with ``--no-reload``, but keep data out anyway)."""

    def __init__(self, kind: str, workdir: Path, jobs: int) -> None:
        self.kind = kind
        self.workdir = workdir
        self.jobs = jobs
        self.project = workdir / "project"
        db = workdir / "checkpoints.sqlite"
        #: What the checkpointer keeps on disk.
        self.data = [workdir / "store"] if kind == "jsonl" else sqlite_paths(db)
        self.log = workdir / "server.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def write_project(self) -> None:
        self.project.mkdir(parents=True)
        config = {
            "graphs": {"agent": f"{HERE / 'server_app.py'}:graph"},
            "checkpointer": {"path": CHECKPOINTER_PATHS[self.kind]},
            "dependencies": [str(HERE)],
        }
        (self.project / "langgraph.json").write_text(json.dumps(config, indent=2))

    def start(self) -> float:
        """Start the server; the seconds until it answered ``/ok``."""
        exe = shutil.which("langgraph", path=os.path.dirname(sys.executable)) or shutil.which("langgraph")
        if exe is None:
            raise SystemExit("the langgraph command is missing: pip install -e '.[test]' "
                             "(it brings langgraph-cli[inmem])")
        self.write_project()
        self.port = free_port()
        env = {**os.environ, "LANGGRAPH_JSONL_STORE": str(self.workdir / "store"),
               SQLITE_ENV: str(self.workdir / "checkpoints.sqlite"),
               "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
        for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_JSONL_TTL"):
            env.pop(var, None)
        t0 = time.perf_counter()
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [exe, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
                 "--port", str(self.port), "--n-jobs-per-worker", str(self.jobs)],
                cwd=self.project, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"langgraph dev exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/ok", timeout=2) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - t0
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"langgraph dev did not answer within {START_TIMEOUT:.0f} s:\n{self.tail()}")

    def stop(self) -> None:
        """SIGINT to the server's process group, SIGKILL after 20 s."""
        p, self.process = self.process, None
        if p is None or p.poll() is not None:
            return
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def cpu_seconds(self) -> tuple[float, float]:
        """``(user, system)`` CPU seconds of the server process so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick

    def memory_mib(self) -> tuple[float, float]:
        """``(resident now, peak resident)`` of the server process, MiB."""
        got = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                got[key] = int(value.split()[0]) / 1024
        return got["VmRSS"], got["VmHWM"]


# ---------------------------------------------------------------------------------------
# the client
# ---------------------------------------------------------------------------------------


def user_input(thread: int, run: int) -> dict[str, Any]:
    """One user message; its id fixed, so both servers store the same conversation."""
    return {"messages": [{"role": "user", "content": text(thread * 100_003 + run, 100),
                          "id": f"user-{thread}-{run}"}]}


def check_values(values: Any, expected: int, where: str) -> None:
    """The thread's messages after a run: ``expected`` of them, the agent's answer last."""
    messages = values.get("messages") if isinstance(values, dict) else None
    if not isinstance(messages, list) or len(messages) != expected:
        got = len(messages) if isinstance(messages, list) else values
        raise AssertionError(f"{where}: expected {expected} messages, got {got}")
    last = messages[-1]
    if last.get("type") != "ai" or not last.get("content") or last.get("tool_calls"):
        raise AssertionError(f"{where}: the last message is not the agent's answer: {last}")


async def warm_up(client: Any, concurrency: int) -> None:
    """``concurrency`` runs at once, each on a new thread (not measured)."""

    async def one(i: int) -> None:
        tid = (await client.threads.create())["thread_id"]
        values = await client.runs.wait(tid, "agent", input=user_input(-1 - i, 0))
        check_values(values, MESSAGES_PER_RUN, "warm-up run")

    await asyncio.gather(*(one(i) for i in range(concurrency)))


async def run_batch(client: Any, threads: list[tuple[int, str]], n_runs: int,
                    concurrency: int) -> tuple[float, list[float], list[str]]:
    """Every run of ``threads`` (``(number, thread id)``): ``concurrency`` workers, each
    running one thread's runs one after the other, then taking the next thread.

    Returns:
        ``(wall seconds, latency of each run, failures)``.
    """
    todo = list(reversed(threads))
    latencies: list[float] = []
    failures: list[str] = []

    async def worker() -> None:
        while todo:
            i, tid = todo.pop()
            for r in range(n_runs):
                t = time.perf_counter()
                try:
                    values = await client.runs.wait(tid, "agent", input=user_input(i, r))
                    latencies.append(time.perf_counter() - t)
                    check_values(values, MESSAGES_PER_RUN * (r + 1), f"thread {i} run {r}")
                except Exception as exc:  # noqa: BLE001 - counted, then the benchmark fails
                    failures.append(f"thread {i} ({tid}) run {r}: {type(exc).__name__}: {exc}")

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0, latencies, failures


async def check_threads(client: Any, thread_ids: list[str], n_runs: int) -> list[str]:
    """Each thread lists ``n_runs`` runs, all ``success``; its state is finished and holds
    every run's messages. Returns the failures."""
    failures = []
    for i, tid in enumerate(thread_ids):
        try:
            runs = await client.runs.list(tid, limit=n_runs + 10)
            statuses = sorted(r["status"] for r in runs)
            if statuses != ["success"] * n_runs:
                raise AssertionError(f"run statuses {statuses}")
            state = await client.threads.get_state(tid)
            check_values(state["values"], MESSAGES_PER_RUN * n_runs, "final state")
            if state["next"]:
                raise AssertionError(f"the thread still has next {state['next']}")
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            failures.append(f"thread {i} ({tid}): {type(exc).__name__}: {exc}")
    return failures


async def drive(servers: dict[str, DevServer], rep: int, n_threads: int, n_runs: int,
                args: argparse.Namespace, profile_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Warm up each server, create its threads, run the batches (timed, the servers
    taking turns), check every thread (see the module docstring).

    Raises:
        AssertionError: A run failed or answered wrong, or a thread ended wrong.
    """
    from langgraph_sdk import get_client

    kinds = list(servers)
    out: dict[str, dict[str, Any]] = {
        k: {"saver": k, "rep": rep, "batch_walls": [], "latencies": [], "server_cpu": 0.0,
            "server_system_cpu": 0.0, "client_cpu": 0.0} for k in kinds}
    failures: list[str] = []
    async with AsyncExitStack() as stack:
        clients = {k: await stack.enter_async_context(get_client(url=s.url, timeout=300))
                   for k, s in servers.items()}
        thread_ids: dict[str, list[str]] = {}
        for k in kinds:
            await warm_up(clients[k], args.concurrency)
            t0 = time.perf_counter()
            thread_ids[k] = [(await clients[k].threads.create())["thread_id"] for _ in range(n_threads)]
            out[k]["create_seconds"] = time.perf_counter() - t0

        spies = {k: start_profiler(s.pid, profile_dir / f"{k}-rep{rep}.folded")
                 for k, s in servers.items()} if profile_dir is not None else {}
        try:
            for b, numbers in enumerate(batches(n_threads, args.batches)):
                for k in (kinds if (rep + b) % 2 == 0 else kinds[::-1]):
                    (user0, sys0), client0 = servers[k].cpu_seconds(), _client_cpu()
                    wall, latencies, failed = await run_batch(
                        clients[k], [(i, thread_ids[k][i]) for i in numbers], n_runs, args.concurrency)
                    user1, sys1 = servers[k].cpu_seconds()
                    out[k]["server_cpu"] += user1 - user0 + sys1 - sys0
                    out[k]["server_system_cpu"] += sys1 - sys0
                    out[k]["client_cpu"] += _client_cpu() - client0
                    out[k]["batch_walls"].append(wall)
                    out[k]["latencies"] += latencies
                    failures += [f"{LABELS[k]}: {f}" for f in failed]
        finally:
            for spy in spies.values():
                spy.send_signal(signal.SIGINT)
                spy.wait(60)

        for k in kinds:
            out[k]["server_rss_mib"], out[k]["server_peak_rss_mib"] = servers[k].memory_mib()
            if not failures:
                wrong = await check_threads(clients[k], thread_ids[k], n_runs)
                failures += [f"{LABELS[k]}: {f}" for f in wrong]
    if failures:
        raise AssertionError(f"{len(failures)} failures, the first ones:\n" + "\n".join(failures[:10]))
    for r in out.values():
        r["runs"] = n_threads * n_runs
        r["wall"] = sum(r["batch_walls"])
        r["runs_per_s"] = r["runs"] / r["wall"]
    return out


def batches(n_threads: int, n_batches: int) -> list[range]:
    """Thread numbers ``0 .. n_threads - 1`` cut into ``n_batches`` runs of consecutive ones."""
    n_batches = max(1, min(n_batches, n_threads))
    edges = [round(n_threads * b / n_batches) for b in range(n_batches + 1)]
    return [range(edges[b], edges[b + 1]) for b in range(n_batches)]


def _client_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------------------------------
# one repeat: both servers, start to stop
# ---------------------------------------------------------------------------------------


def run_repeat(rep: int, kinds: list[str], args: argparse.Namespace, n_threads: int, n_runs: int,
               tmp: Path, profile_dir: Path | None) -> list[dict[str, Any]]:
    """Start a server per checkpointer (fresh folders), drive them, stop them, check
    their output."""
    order = kinds if rep % 2 == 0 else kinds[::-1]
    servers = {k: DevServer(k, Path(tempfile.mkdtemp(prefix=f"server-{k}-", dir=tmp)), args.jobs)
               for k in order}
    try:
        started = {k: s.start() for k, s in servers.items()}
        try:
            results = asyncio.run(drive(servers, rep, n_threads, n_runs, args, profile_dir))
        except AssertionError:
            for s in servers.values():
                print(f"--- {LABELS[s.kind]}'s server:\n{s.tail()}", file=sys.stderr)
            raise
        for k, s in servers.items():
            s.stop()
            bad = [b for b in BAD_OUTPUT if b in s.output()]
            if bad:
                print(s.tail(120), file=sys.stderr)
                raise AssertionError(f"{LABELS[k]}'s server printed {bad}")
            results[k].update(start_seconds=started[k], bytes_on_disk=sum(map(path_bytes, s.data)))
        return [results[k] for k in kinds]
    finally:
        for s in servers.values():
            s.stop()
            shutil.rmtree(s.workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: 40 threads x 2 runs, 1 repeat")
    p.add_argument("--threads", type=int, help="threads per server (full 200)")
    p.add_argument("--runs", type=int, help="runs per thread (full 5)")
    p.add_argument("--repeats", type=int, help="times both servers are started and driven (full 3)")
    p.add_argument("--batches", type=int, help="turns the servers take per repeat (full 5, quick 2)")
    p.add_argument("--concurrency", type=int, default=20, help="runs in flight (default 20)")
    p.add_argument("--jobs", type=int, default=10, help="the server's --n-jobs-per-worker (default 10)")
    p.add_argument("--savers", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--profile", metavar="DIR",
                   help="py-spy record each server's timed part into DIR; summary in "
                        "results/<name>-profile.txt")
    p.add_argument("--name", default=NAME, help="results/<name>.* (default server)")
    p.add_argument("--tmp", default=None, help="where stores are created (default: $TMPDIR)")
    args = p.parse_args()
    n_threads = args.threads or (40 if args.quick else 200)
    n_runs = args.runs or (2 if args.quick else 5)
    repeats = args.repeats or (1 if args.quick else 3)
    args.batches = args.batches or (2 if args.quick else 5)

    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-server-", dir=args.tmp))
    profile_dir = Path(args.profile) if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    try:
        for rep in range(repeats):
            for r in run_repeat(rep, args.savers, args, n_threads, n_runs, tmp, profile_dir):
                results.append(r)
                lat = r["latencies"]
                print(f"[{NAME}] rep {rep} {LABELS[r['saver']]:16s} {r['runs_per_s']:6.1f} runs/s "
                      f"({r['runs']} runs in {r['wall']:.1f} s), latency median "
                      f"{quantile(lat, 0.5) * 1e3:.0f} ms p90 {quantile(lat, 0.9) * 1e3:.0f} ms "
                      f"p99 {quantile(lat, 0.99) * 1e3:.0f} ms; server CPU "
                      f"{r['server_cpu'] / r['runs'] * 1e3:.1f} ms/run, client "
                      f"{r['client_cpu'] / r['runs'] * 1e3:.1f} ms/run; server RSS "
                      f"{r['server_rss_mib']:.0f} MiB", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    table = Table()
    case = (f"{n_threads} threads x {n_runs} runs, {args.concurrency} in flight, "
            f"{args.jobs} server jobs")
    by_kind = {k: [r for r in results if r["saver"] == k] for k in args.savers}

    def per_server(key: str, per: float = 1.0) -> Any:
        return lambda rs: summary([r[key] / per for r in rs])

    def all_latencies(rs: list[dict[str, Any]]) -> list[float]:
        return [x for r in rs for x in r["latencies"]]

    def pooled_rate(rs: list[dict[str, Any]]) -> float:
        return sum(r["runs"] for r in rs) / sum(r["wall"] for r in rs)

    rows = (
        ("runs per second, all repeats pooled (runs / time)", pooled_rate, "/s"),
        ("runs per second (one sample per repeat)", per_server("runs_per_s"), "/s"),
        ("run latency, runs.wait (all runs)", lambda rs: summary(all_latencies(rs)), "s"),
        ("run latency p99 (all runs)", lambda rs: quantile(all_latencies(rs), 0.99), "s"),
        ("server CPU per run", lambda rs: summary([r["server_cpu"] / r["runs"] for r in rs]), "s"),
        ("server CPU per run, of it system", per_server("server_system_cpu", n_threads * n_runs), "s"),
        ("client CPU per run", lambda rs: summary([r["client_cpu"] / r["runs"] for r in rs]), "s"),
        ("threads.create (per thread)", per_server("create_seconds", n_threads), "s"),
        ("server RSS after the runs", per_server("server_rss_mib"), "MiB"),
        ("server peak RSS", per_server("server_peak_rss_mib"), "MiB"),
        ("bytes on disk after the runs", per_server("bytes_on_disk"), "B"),
        ("server start to /ok", per_server("start_seconds"), "s"),
    )
    for metric, get, unit in rows:
        for kind, rs in by_kind.items():
            if rs:
                table.add(case, metric, kind, get(rs), unit)

    # Paired: the same repeat (and batch), the servers taking turns.
    rep_ratios: list[float] = []
    batch_ratios: list[float] = []
    if set(KINDS) <= set(args.savers):
        for rep in range(repeats):
            a = next(r for r in results if r["rep"] == rep and r["saver"] == "jsonl")
            b = next(r for r in results if r["rep"] == rep and r["saver"] == "sqlite_async")
            rep_ratios.append(a["runs_per_s"] / b["runs_per_s"])
            batch_ratios += [wb / wa for wa, wb in zip(a["batch_walls"], b["batch_walls"], strict=True)]
        table.add(case, "runs/s ÷ AsyncSqliteSaver's, per repeat", "jsonl", summary(rep_ratios), "×")
        table.add(case, "runs/s ÷ AsyncSqliteSaver's, per batch pair", "jsonl", summary(batch_ratios), "×")
    notes = [
        "Runs per second: higher is better, so a ratio > 1 means JsonlSaver's server is "
        "faster. Every run was checked (above): none failed.",
        f"The servers take turns batch by batch ({args.batches} batches of "
        f"{n_threads // max(1, args.batches)} threads each per repeat, the order alternating), "
        "so a pair of batches ran seconds apart under the same load: the per-repeat and "
        "per-batch ratios are the paired figures; the pooled rows are all runs over all time.",
        "JsonlSaver runs/s ÷ AsyncSqliteSaver runs/s per repeat: "
        + (", ".join(f"{x:.2f}" for x in rep_ratios) or "–") + "; per batch pair: "
        + (f"median {quantile(batch_ratios, 0.5):.2f}, p10 {quantile(batch_ratios, 0.1):.2f}, "
           f"min {min(batch_ratios):.2f}, {sum(x < 1 for x in batch_ratios)} of "
           f"{len(batch_ratios)} below 1" if batch_ratios else "–") + ".",
        "Latency is a runs.wait call from the client's side: the server's queue "
        f"({args.concurrency} in flight, {args.jobs} jobs), the run, its answer.",
        "Server and client share a 2-core machine with other work; CPU per run shows where "
        "the cores went. Treat differences under ~20% as noise.",
    ]
    payload = {"threads": n_threads, "runs": n_runs, "repeats": repeats, "batches": args.batches,
               "concurrency": args.concurrency, "jobs": args.jobs, "ratios_per_repeat": rep_ratios,
               "ratios_per_batch": batch_ratios,
               "results": results, "total_seconds": time.perf_counter() - t_start}
    header = (
        __doc__.split("\n\n")[0] + "\n\n"
        f"Per server: {n_threads} threads x {n_runs} runs of the benchmark agent (4 messages a run) "
        f"through `client.runs.wait`, {args.concurrency} runs in flight (each thread's runs one "
        f"after the other), `langgraph dev --no-reload --n-jobs-per-worker {args.jobs}`, the "
        f"server's default durability (\"async\"). Both servers up at once in each of {repeats} "
        f"repeat(s), taking turns in {args.batches} batches, a fresh store or database each. "
        "Every run checked: "
        "each answer, each thread's runs all `success`, its final state "
        f"{MESSAGES_PER_RUN * n_runs} messages."
    )
    name = args.name + ("-profiled" if profile_dir is not None else "")
    jpath, mpath = write_results(name, payload, table, header=header,
                                 notes=notes, quick=args.quick)
    if profile_dir is not None:
        env = environment()
        ppath = write_profile(args.name + ("-quick" if args.quick else ""), profile_dir, results,
                              f"py-spy record --gil --threads --nonblocking --rate {PROFILE_RATE} of each "
                              f"langgraph dev server over its timed part ({case}); "
                              f"{env['when']}, package git {env['git']}, "
                              f"load avg {env['loadavg'][0]:.2f}. "
                              f"Raw folded stacks: {profile_dir}.")
        print(f"[{NAME}] wrote {ppath}")
    if rep_ratios:
        print(f"[{NAME}] JsonlSaver / AsyncSqliteSaver runs/s: pooled "
              f"{pooled_rate(by_kind['jsonl']) / pooled_rate(by_kind['sqlite_async']):.2f}, per repeat "
              + ", ".join(f"{x:.2f}" for x in rep_ratios)
              + f"; per batch pair median {quantile(batch_ratios, 0.5):.2f} "
              f"(p10 {quantile(batch_ratios, 0.1):.2f}, p90 {quantile(batch_ratios, 0.9):.2f})")
    print(f"[{NAME}] wrote {jpath}, {mpath} ({time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
