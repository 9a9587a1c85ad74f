"""Child processes of the crash batteries: a cheap fork, a SIGKILL on time, the entry points.

``spawn`` runs a target in a child forked by a ``forkserver`` whose server has already
imported LangGraph and the modules that hold the targets (this one and ``truncation``):
a fork costs milliseconds instead of a second of imports. A forked child shares no
saver state with its parent: the server never opens a store. ``kill_at`` SIGKILLs a
child after a delay unless it ended first.

The entry points are looked up by name in the child, so they stay at module level:
``agent_child`` (run or resume the scripted agent: kill -9 battery), ``mp_writer`` and
``mp_reader`` (multi-process battery), ``open_store_child`` (concurrent store creation),
``fsize_child`` (short writes under ``RLIMIT_FSIZE``), ``kill_at_op_child`` (SIGKILL
at the k-th file operation), ``busy_worker_child`` and ``holding_run_child`` (several
workers on one thread), ``sweep_child`` (several processes sweeping one store).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
import traceback
from typing import Any

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.busy import holding_graph, take_turns, turn_agent
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles
from tests.harness.scripted_agent import AckingSaver, agent_input, build_agent, message_summary

# ---------------------------------------------------------------------------
# child processes (forkserver)
# ---------------------------------------------------------------------------

_CTX: Any = None

_CHILD_PREFIX = "crashkit-"


def mp_context() -> Any:
    """A forkserver context whose server has imported LangGraph and the modules holding
    the children's entry points (this one and ``truncation``).

    Two details make the fork cheap. The server is started with the repository root on
    ``PYTHONPATH`` (Python 3.11's forkserver ignores the parent's ``sys.path`` when it
    preloads). And our children skip re-running the parent's ``__main__`` (pytest's
    script, or a stress script): their targets live in those modules and are found by
    name.
    """
    global _CTX
    if _CTX is None:
        import multiprocessing.forkserver as forkserver
        import multiprocessing.spawn as mp_spawn

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["tests.harness.children", "tests.harness.truncation"])
        original = mp_spawn.get_preparation_data
        if not getattr(original, "_crashkit", False):

            def get_preparation_data(name: str) -> dict:
                data = original(name)
                if name.startswith(_CHILD_PREFIX):
                    data.pop("init_main_from_path", None)
                    data.pop("init_main_from_name", None)
                return data

            get_preparation_data._crashkit = True  # type: ignore[attr-defined]
            mp_spawn.get_preparation_data = get_preparation_data
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = root + (os.pathsep + old if old else "")
        try:
            forkserver.ensure_running()
        finally:
            if old is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = old
        _CTX = ctx
    return _CTX


def _child_setup(err_path: str | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if err_path:
        fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.dup2(fd, 1)
        os.close(fd)


def _child_fail(err_path: str | None) -> None:
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(70)


def spawn(target: Any, *args: Any) -> Any:
    p = mp_context().Process(
        target=target, args=args, daemon=True, name=f"{_CHILD_PREFIX}{target.__name__}"
    )
    p.start()
    return p


def kill_at(p: Any, delay: float) -> bool:
    """SIGKILL ``p`` after ``delay`` seconds unless it ended first. True if it was killed."""
    p.join(delay)
    if p.exitcode is None:
        p.kill()  # SIGKILL; tolerates the child having just exited (the forkserver reaps it)
        p.join()
        return p.exitcode == -signal.SIGKILL
    return False


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


# ---------------------------------------------------------------------------
# the agent run of the kill -9 battery, and a worker opening a store
# ---------------------------------------------------------------------------


def agent_child(
    store: str, thread_id: str, ack_path: str, err_path: str, mode: str, result_path: str
) -> None:
    """Run (``mode="run"``) or resume (``mode="resume"``) the agent on ``thread_id``.

    ``resume`` is what an application does after a crash: if the thread has a checkpoint,
    ``graph.invoke(None, config)``; otherwise start the run again. The final messages
    are written to ``result_path`` (one ``repr`` line) when the run finishes.
    """
    _child_setup(err_path)
    try:
        saver = AckingSaver(store)
        saver.ack_fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        graph = build_agent(saver)
        cfg = {"configurable": {"thread_id": thread_id}}
        if mode == "run":
            graph.invoke(agent_input(), cfg, durability="sync")
        else:
            state = graph.get_state(cfg)
            if state.created_at is None:  # nothing stored: the run never started
                graph.invoke(agent_input(), cfg, durability="sync")
            else:
                graph.invoke(None, cfg, durability="sync")
        final = graph.get_state(cfg)
        text = repr((message_summary(final.values.get("messages", [])), tuple(final.next)))
        fd = os.open(result_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, text.encode())
        os.close(fd)
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def open_store_child(store: str, thread_id: str, start_at: float, err_path: str) -> None:
    """At ``start_at`` (wall clock), open a saver on ``store`` as a new worker of a server
    does, store one checkpoint in ``thread_id`` and close."""
    _child_setup(err_path)
    try:
        time.sleep(max(0.0, start_at - time.time()))
        saver = JsonlSaver(store)
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config(thread_id), make_checkpoint(cp_id(1), {"m": [thread_id]}, v), {}, v)
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


# ---------------------------------------------------------------------------
# several workers on one thread
# ---------------------------------------------------------------------------


def busy_worker_child(
    store: str, concurrent_runs: str, thread_id: str, worker: int, start_at: float,
    seconds: float, ack_path: str, result_path: str, err_path: str,
) -> None:
    """Worker ``worker``: from ``start_at`` (wall clock), take turns on ``thread_id`` for
    ``seconds`` (see :func:`~tests.harness.busy.take_turns`); acks go to ``ack_path``,
    the tally (JSON) to ``result_path``."""
    import json

    _child_setup(err_path)
    try:
        saver = JsonlSaver(store, concurrent_runs=concurrent_runs)
        graph = turn_agent(saver)
        ack_fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        time.sleep(max(0.0, start_at - time.time()))
        tally = take_turns(graph, thread_id, worker, seconds, ack_fd)
        saver.close()
        with open(result_path, "w") as f:
            json.dump(tally.as_dict(), f)
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def holding_run_child(store: str, thread_id: str, inside_path: str, err_path: str) -> None:
    """Start a run on ``thread_id`` that holds it (its node sleeps) until it is killed."""
    _child_setup(err_path)
    try:
        graph = holding_graph(JsonlSaver(store), inside_path, hold_seconds=120)
        graph.invoke({"visits": []}, {"configurable": {"thread_id": thread_id}}, durability="sync")
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


# ---------------------------------------------------------------------------
# the writers and the reader of the multi-process battery
# ---------------------------------------------------------------------------

SHARED = "shared"
BASE_ID = cp_id(0, "0000-base")


def mp_writer(store: str, k: int, ack_path: str, err_path: str, seed: int, iterations: int) -> None:
    """Writer ``k``: put_writes on the shared base checkpoint (task ids ``w<k>-<j>``),
    puts chaining onto the shared thread's latest checkpoint, and puts + writes on its
    own thread ``own-<k>``. Acks are appended to ``ack_path`` after each call returned."""
    _child_setup(err_path)
    try:
        rng = random.Random(seed)
        saver = AckingSaver(store)
        saver.ack_fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        own = f"own-{k}"
        own_parent: str | None = None
        own_items: list[str] = []
        own_versions: dict[str, Any] = {}
        for j in range(iterations):
            saver.put_writes(config(SHARED, "", BASE_ID), [("ch", f"{k}-{j}")], f"w{k}-{j}")
            # chain onto whatever is latest in the shared thread right now
            latest = saver.get_tuple(config(SHARED))
            assert latest is not None
            lv = latest.checkpoint["channel_versions"]
            items = list(latest.checkpoint["channel_values"].get("m", []))[-20:] + [f"{k}-{j}"]
            nv = {"m": saver.get_next_version(lv.get("m"), None)}
            new_id = f"{time.time_ns():020d}-{k:02d}-{j:06d}"
            saver.put(
                config(SHARED, "", latest.checkpoint["id"]),
                make_checkpoint(new_id, {"m": items}, {**lv, **nv}),
                {"writer": k, "j": j},
                nv,
            )
            own_items = own_items + [j]
            nv = {"m": saver.get_next_version(own_versions.get("m"), None)}
            own_versions = {**own_versions, **nv}
            own_id = f"{time.time_ns():020d}-{k:02d}-{j:06d}"
            saver.put(
                config(own, "", own_parent),
                make_checkpoint(own_id, {"m": own_items}, own_versions),
                {"j": j},
                nv,
            )
            own_parent = own_id
            if rng.random() < 0.5:
                saver.put_writes(config(own, "", own_id), [("a", j), ("b", [j] * 3)], f"ow{k}-{j}")
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def mp_reader(store: str, threads: list[str], seen_path: str, err_path: str) -> None:
    """Tail the store: record every checkpoint id and shared write it ever saw."""
    _child_setup(err_path)
    try:
        saver = JsonlSaver(store)
        fd = os.open(seen_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        seen: set[tuple] = set()
        while True:
            lines = []
            for tid in threads:
                for t in saver.list(config(tid)):
                    key = ("R", tid, t.checkpoint["id"])
                    if key not in seen:
                        seen.add(key)
                        lines.append(f"R {tid} {t.checkpoint['id']}\n")
            base = saver.get_tuple(config(SHARED, "", BASE_ID))
            for task, _, _ in base.pending_writes if base else []:
                key = ("RW", task)
                if key not in seen:
                    seen.add(key)
                    lines.append(f"RW {SHARED} {task}\n")
            if lines:
                os.write(fd, "".join(lines).encode())
            time.sleep(0.005)
    except BaseException:
        _child_fail(err_path)


# ---------------------------------------------------------------------------
# short writes through RLIMIT_FSIZE (child process)
# ---------------------------------------------------------------------------


def fsize_child(store: str, thread_id: str, extras: list[int], result_path: str) -> None:
    """For each ``extra``: cap the file size at (log size + extra) and ``put`` (it must
    fail: the batch is longer), lift the cap and ``put`` again (it must succeed).

    Writes a list of (extra, exception class name or None, log size before, log size
    after, failed id, good id) to ``result_path``.
    """
    import pickle
    import resource

    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        saver = JsonlSaver(store)
        files = ThreadFiles.of(store, thread_id)
        out = []
        for n, extra in enumerate(extras):
            latest = saver.get_tuple(config(thread_id))
            versions = dict(latest.checkpoint["channel_versions"])
            values = dict(latest.checkpoint["channel_values"])
            big = ["x" * 64] * 8  # the batch is far longer than any ``extra`` used
            nv = {"m": saver.get_next_version(versions.get("m"), None)}
            before = os.path.getsize(files.log)
            bad_id, good_id = cp_id(2 * n, "2f00-fail"), cp_id(2 * n + 1, "2f00-good")
            resource.setrlimit(resource.RLIMIT_FSIZE, (before + extra, hard))
            error = None
            try:
                saver.put(config(thread_id, "", latest.checkpoint["id"]),
                          make_checkpoint(bad_id, {**values, "m": list(values.get("m", [])) + big},
                                          {**versions, **nv}), {}, nv)
            except BaseException as exc:  # noqa: BLE001
                error = type(exc).__name__
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            after = os.path.getsize(files.log)
            nv = {"m": saver.get_next_version(versions.get("m"), None)}
            saver.put(config(thread_id, "", latest.checkpoint["id"]),
                      make_checkpoint(good_id, {**values, "m": list(values.get("m", [])) + [n]},
                                      {**versions, **nv}), {}, nv)
            out.append((extra, error, before, after, bad_id, good_id))
        with open(result_path, "wb") as f:
            pickle.dump(out, f)
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)


# ---------------------------------------------------------------------------
# SIGKILL at the k-th file operation (child process)
# ---------------------------------------------------------------------------

FILE_OPS = ("open", "write", "fsync", "fdatasync", "ftruncate", "replace", "unlink", "rename")


class _KillAtOp:
    """``os`` for log.py/store.py that SIGKILLs the process at the k-th file operation."""

    def __init__(self, k: int, log_path: str) -> None:
        self._k = k
        self._n = 0
        self._log = log_path

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in FILE_OPS:
            return real

        def op(*args: Any, **kwargs: Any) -> Any:
            self._n += 1
            fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.write(fd, f"{self._n} {name} {args[0] if args else ''}\n".encode())
            os.close(fd)
            if self._n == self._k:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return op


def kill_at_op_child(store: str, action: str, k: int, ops_log: str) -> None:
    """Run ``action`` on thread ``t`` ("prune": prune keep_latest; "compact"; "create": the first
    put of thread ``new``; "rotate": puts on ``u`` and ``t`` in turn with one log open, so
    that each lets the other go, its head file written, and opens it again from it;
    "copy": copy_thread t -> copy; "sweep-<strategy>": a sweep that finds
    every thread expired; "restore": restore t from the archive) and SIGKILL at file op ``k``.
    Exit 0 if the action finished before op ``k``."""
    import langgraph_jsonl_checkpoint.disk.files as files_module

    try:
        saver = JsonlSaver(store)
        saver.store.thread_log("t").refresh()
        files_module.os = _KillAtOp(k, ops_log)  # type: ignore[attr-defined]
        if action == "prune":
            saver.prune(["t"])
        elif action == "compact":
            saver.compact("t")
        elif action == "create":
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config("new"), make_checkpoint(cp_id(1), {"m": ["new"]}, v), {}, v)
        elif action == "copy":
            saver.copy_thread("t", "copy")
        elif action.startswith("sweep-"):
            saver.sweep({"default_ttl": 0, "strategy": action[len("sweep-"):]}, now=time.time() + 3600)
        elif action == "restore":
            saver.restore("t")
        elif action == "rotate":
            _rotate(store)
        saver.close()
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)


def _rotate(store: str) -> None:
    saver = JsonlSaver(store, max_open_threads=1)
    for i in range(3):
        for tid in ("u", "t"):
            latest = saver.get_tuple(config(tid))
            old = latest.checkpoint if latest else None
            v = {"m": saver.get_next_version(old["channel_versions"]["m"] if old else None, None)}
            before = old["channel_values"].get("m") if old else None
            values = [*(before if isinstance(before, list) else []), f"{tid}{i}"]
            saver.put(config(tid, "", old["id"]) if old else config(tid),
                      make_checkpoint(cp_id(100 + i), {"m": values}, v), {}, v)
    saver.close()


# ---------------------------------------------------------------------------
# several processes sweeping one store
# ---------------------------------------------------------------------------


def sweep_child(store: str, strategy: str, start_at: float, out_path: str, err_path: str) -> None:
    """Sweep ``store`` (every thread expired) from ``start_at`` on; write the report as JSON."""
    import json

    try:
        saver = JsonlSaver(store)
        time.sleep(max(0.0, start_at - time.time()))
        report = saver.sweep({"default_ttl": 0, "strategy": strategy}, now=time.time() + 3600)
        saver.close()
        with open(out_path, "w") as f:
            json.dump({"swept": [t for t, _ in report.swept], "live": report.live,
                       "errors": report.errors, "settled": report.settled}, f)
    except BaseException:
        _child_fail(err_path)
    os._exit(0)
