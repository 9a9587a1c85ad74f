"""Simulated power loss: real workloads under the shim, their crash images checked.

:class:`PowerLossRound` runs one random workload on a fresh store under the shim: put
and put_writes through a :class:`MirroredSaver` (acknowledged calls mirrored into an
``InMemorySaver``), LangGraph agent runs, delete_thread, prune, compact, copy_thread,
delete_for_runs, torn tails and their repair, reopens. It draws crash images at file
operations and checks them (``powerloss_checks``) when the call in flight returns;
some images are recovered under a second shim that draws crash images during the
recovery too. :func:`run_battery` runs rounds until enough states were checked.

Used by ``tests/test_crash_powerloss.py`` (CI subset) and ``stress.powerloss``.
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import langgraph_jsonl_checkpoint.disk.files as files_module
import langgraph_jsonl_checkpoint.disk.log as log_module
from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.disk.store import thread_file_stem
from tests.harness.answers import answers, mem_copy_thread, mem_delete_for_runs, mem_prune_keep_latest
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.powerloss_checks import (
    EMPTY,
    ID_PREFIX,
    PROBE_PREFIX,
    RECOVERY_PREFIX,
    SAVER_KWARGS,
    Expected,
    _put_probe,
    check_image,
    quarantine_of,
)
from tests.harness.powerloss_fs import CrashImage, PowerLossFS
from tests.harness.powerloss_shim import watching
from tests.harness.raw_log import ThreadFiles
from tests.harness.scripted_agent import agent_input, build_agent

# ---------------------------------------------------------------------------
# the workload
# ---------------------------------------------------------------------------


@dataclass
class Call:
    """A saver call in flight: the threads it may change and their state before it."""

    label: str
    tids: tuple[str, ...]
    before: dict[str, dict]


class MirroredSaver(JsonlSaver):
    """A ``JsonlSaver`` whose ``put``/``put_writes`` run as calls of a
    :class:`PowerLossRound` and, once they returned, are applied to its
    ``InMemorySaver`` (what was acknowledged). LangGraph's graphs use it as is."""

    driver: PowerLossRound

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[override]
        tid = str(config["configurable"]["thread_id"])
        mirror = copy.deepcopy((checkpoint, metadata, new_versions))
        with self.driver.call("put", [tid]):
            out = super().put(config, checkpoint, metadata, new_versions)
            self.driver.mem.put(config, *mirror)
        return out

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        tid = str(config["configurable"]["thread_id"])
        mirror = copy.deepcopy(list(writes))
        with self.driver.call("put_writes", [tid]):
            super().put_writes(config, writes, task_id, task_path)
            self.driver.mem.put_writes(config, mirror, task_id, task_path)


@dataclass
class RoundStats:
    """Figures of one round (or of a whole battery, summed)."""

    rounds: int = 0
    ops: int = 0
    steps: int = 0
    states: int = 0
    recovery_states: int = 0
    states_by_op: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def add(self, other: RoundStats) -> None:
        self.rounds += other.rounds
        self.ops += other.ops
        self.steps += other.steps
        self.states += other.states
        self.recovery_states += other.recovery_states
        for k, v in other.states_by_op.items():
            self.states_by_op[k] = self.states_by_op.get(k, 0) + v
        self.violations += other.violations


RUNS = ("run-a", "run-b", "run-c")
DELETING = ("delete", "delete_for_runs")  # call labels that may delete a thread's files
THREADS = ("t0", "t1", "t2")
#: Workload steps and their weights.
STEPS: dict[str, int] = {
    "put": 30, "put_big": 8, "put_writes": 16, "agent": 5, "agent_continue": 2,
    "delete": 4, "prune": 4, "prune_delete": 1, "compact": 3, "copy": 3, "delete_for_runs": 3,
    "torn_tail": 5, "reopen": 4, "reopen_without_close": 2, "other_writer": 5,
}


class PowerLossRound:
    """One workload on a fresh store under the shim, with crash images checked as it goes.

    After every operation the shim records, with probability ``rate``, ``per_point``
    crash images are drawn; they are checked when the call in flight returns (so both
    the state before it and after it are known). With probability ``recovery_rate`` a
    checked image is also *recovered under the shim*: opened writable and given a put on
    every thread, with crash images drawn during that recovery and checked the same way.

    Args:
        workdir: Scratch directory (tmpfs is best); the round uses ``<workdir>/r<seed>``.
        seed: Seeds the workload and every image.
        steps: Workload steps.
        rate, per_point, recovery_rate: See above.
        recovery_op_rate: Probability of an image at each operation of a recovery (at
            most 4 pending at once).
        max_states: Stop drawing images after this many (the workload still finishes).
        stop_after: Stop drawing images after this many violations.
    """

    def __init__(self, workdir: str, seed: int, *, steps: int = 40, rate: float = 0.3,
                 per_point: int = 2, recovery_rate: float = 0.15, recovery_op_rate: float = 0.25,
                 max_states: int | None = None, stop_after: int = 10) -> None:
        self.dir = os.path.join(workdir, f"r{seed}")
        self.live = os.path.join(self.dir, "live")
        os.makedirs(self.live)
        self.seed = seed
        self.rng = random.Random(seed)
        self.image_rng = random.Random(seed * 7919 + 1)
        self.steps, self.rate, self.per_point = steps, rate, per_point
        self.recovery_rate, self.recovery_op_rate = recovery_rate, recovery_op_rate
        self.max_states = max_states
        self.stop_after = stop_after
        self.fs = PowerLossFS(self.live)
        self.fs.on_op = self._on_op
        self.mem = InMemorySaver()
        self.expected: dict[str, dict] = {}
        self.tombstones: dict[str, str] = {}
        self.cuts_seen = 0  # of self.fs.cuts, folded into self.quarantined
        self.quarantined: dict[str, list[tuple[str, bytes]]] = {}  # thread stem -> cuts
        self.lock = threading.RLock()
        self.in_flight: Call | None = None
        self.pending: list[tuple[CrashImage, Call | None, str, list]] = []
        self.stats = RoundStats(rounds=1)
        self.threads = list(THREADS)
        self.agents: list[str] = []
        self.n = 0
        self.saver: MirroredSaver | None = None
        self.other: MirroredSaver | None = None  # a second instance, as another process
        self.step = ""

    # -- calls and crash images -----------------------------------------------------

    @contextmanager
    def call(self, label: str, tids: list[str] | tuple[str, ...]) -> Iterator[Call]:
        """Run a saver call: images drawn meanwhile may show it done or not done."""
        with self.lock:
            self._settle({})
            c = Call(label, tuple(tids), {t: self.expected.get(t, EMPTY) for t in tids})
            self.in_flight = c
            try:
                yield c
            finally:
                self.in_flight = None
                after = {t: answers(self.mem, t) for t in c.tids}
                self._settle(after)
                self._fold_cuts()  # a cut made by this very call (a delete's tail repair) goes with it
                for t, ans in after.items():
                    if c.before[t]["list"] and not ans["list"] and label in DELETING:
                        newest = max(cid for _, cid in c.before[t]["list"])
                        self.tombstones[t] = max(newest, self.tombstones.get(t, newest))
                        self.quarantined.pop(thread_file_stem(t), None)  # deleted with the log
                    self.expected[t] = ans

    def _budget_left(self) -> bool:
        if len(self.stats.violations) >= self.stop_after:
            return False
        return self.max_states is None or self.stats.states + len(self.pending) < self.max_states

    def _on_op(self, fs: PowerLossFS, kind: str, rel: str) -> None:
        self.stats.ops += 1
        # Every kind of operation gets images the first time it happens (rare ones, like
        # the tail repair's cut, would otherwise depend on the draw); then at ``rate``.
        first = kind not in self.stats.states_by_op
        if (self.rng.random() >= self.rate and not first) or not self._budget_left():
            return
        where = f"{self.step} / {kind} {rel} (op {fs.ops})"
        required = self._required_quarantine()
        for _ in range(self.per_point):
            self.pending.append((fs.crash_image(self.image_rng), self.in_flight, where, required))
        self.stats.states_by_op[kind] = self.stats.states_by_op.get(kind, 0) + self.per_point

    def _fold_cuts(self) -> None:
        """Note the durable cuts made since the last call (by thread) as quarantine
        contents the images must have from now on."""
        for q in quarantine_of(self.fs.cuts[self.cuts_seen :]):
            stem = os.path.basename(q[0])[: -len(".quarantine")]
            self.quarantined.setdefault(stem, []).append(q)
        self.cuts_seen = len(self.fs.cuts)

    def _required_quarantine(self) -> list[tuple[str, bytes]]:
        """Quarantine contents an image drawn now must have (see :func:`quarantine_of`)."""
        self._fold_cuts()
        c = self.in_flight
        skip = {thread_file_stem(t) for t in c.tids} if c is not None and c.label in DELETING else set()
        return [q for stem, qs in self.quarantined.items() if stem not in skip for q in qs]

    def _expected_for(self, c: Call | None, after: dict[str, dict], quarantined: list) -> Expected:
        cands = {t: [a] for t, a in self.expected.items()}
        if c is not None:
            for t in c.tids:
                cands[t] = [c.before[t], after[t]]
        # deleted and not written again since (a late write may then be refused)
        tombs = {t: u for t, u in self.tombstones.items() if cands.get(t, [EMPTY]) == [EMPTY]}
        return Expected(cands, tombs, quarantined)

    def _settle(self, after: dict[str, dict]) -> None:
        """Check the images drawn so far; ``after``: states once the call in flight returned."""
        pending, self.pending = self.pending, []
        for image, c, where, quarantined in pending:
            exp = self._expected_for(c, after, quarantined)
            problems, served = self._check(image, exp, where)
            if not problems and served is not None and self.image_rng.random() < self.recovery_rate:
                self._recover(image, served, exp, where)

    def _check(
        self, image: CrashImage, exp: Expected, where: str, recovery: bool = False
    ) -> tuple[list[str], Any]:
        self.stats.states += 1
        self.stats.recovery_states += recovery
        target = os.path.join(self.dir, f"crash-{self.stats.states}")
        probe = cp_id(self.stats.states, PROBE_PREFIX)
        try:
            problems, served = check_image(image, target, exp, probe)
        except Exception:  # noqa: BLE001 - a bug of the battery itself: report it
            problems, served = [f"the check crashed: {traceback.format_exc()}"], None
        if problems:
            self.stats.violations.append(
                f"seed {self.seed}, {'recovery of ' if recovery else ''}crash at {where}, image "
                f"{image.desc}: " + "; ".join(problems) + f" [kept in {target}]")
        else:
            shutil.rmtree(target, ignore_errors=True)
        return problems, served

    def _recover(self, image: CrashImage, served: dict[str, dict], exp: Expected, where: str) -> None:
        """Recover a crash image under a second shim, with crashes during the recovery."""
        b = os.path.join(self.dir, f"recovery-{self.stats.states}")
        image.write(b)
        fs = PowerLossFS(b)
        expected = {t: a for t, a in served.items()}
        state: dict[str, Any] = {"tids": (), "before": {}}
        drawn: list[tuple[CrashImage, dict, str, list]] = []

        def on_op(f: PowerLossFS, kind: str, rel: str) -> None:
            if len(drawn) < 4 and self.rng.random() < self.recovery_op_rate and self._budget_left():
                cands = {t: [a] for t, a in expected.items()}
                for t in state["tids"]:
                    cands[t] = [state["before"][t], None]  # None: filled in once the put returned
                drawn.append((f.crash_image(self.image_rng), cands, f"{where} -> recovery {kind} {rel}",
                              list(f.cuts)))
                key = f"recovery {kind}"
                self.stats.states_by_op[key] = self.stats.states_by_op.get(key, 0) + 1

        def settle(after: dict[str, dict]) -> None:
            for img, cands, w, cuts in drawn:
                cands = {t: [a if a is not None else after[t] for a in v] for t, v in cands.items()}
                quarantined = exp.quarantined + quarantine_of(cuts)
                tombs = {t: u for t, u in exp.tombstones.items() if cands.get(t, [EMPTY]) == [EMPTY]}
                self._check(img, Expected(cands, tombs, quarantined), w, recovery=True)
            drawn.clear()

        fs.on_op = on_op
        with watching(fs):
            saver = JsonlSaver(b, **SAVER_KWARGS)
            settle({})
            for t in sorted(set(saver.store.thread_ids()) | set(served)):
                state["tids"], state["before"] = (t,), {t: expected.get(t, EMPTY)}
                probe_id = cp_id(self.stats.states, RECOVERY_PREFIX)
                _put_probe(saver, t, probe_id)
                after = answers(JsonlSaver(b, read_only=True), t)
                state["tids"] = ()
                if set(after["list"]) != set(expected.get(t, EMPTY)["list"]) | {("", probe_id)}:
                    self.stats.violations.append(f"seed {self.seed}, recovery of crash at {where}: "
                                                 f"thread {t!r} after a put serves {sorted(after['list'])}")
                settle({t: after})
                expected[t] = after
            saver.close()
            settle({})
        problems = fs.check_against_disk()
        if problems:
            self.stats.violations.append(f"seed {self.seed}: shim model out of step (recovery): {problems}")
        shutil.rmtree(b, ignore_errors=True)

    # -- the workload ----------------------------------------------------------------

    def run(self) -> RoundStats:
        """Run the workload; returns the round's figures (violations included)."""
        saved_rewrite = log_module.INDEX_REWRITE_RECORDS
        log_module.INDEX_REWRITE_RECORDS = 3  # sidecar rewrites every few records
        try:
            with watching(self.fs):
                self._open()
                for _ in range(self.steps):
                    self.step = self.rng.choices(list(STEPS), list(STEPS.values()))[0]
                    getattr(self, "_" + self.step)()
                    self.stats.steps += 1
                self.step = "close"
                with self.call("close", ()):
                    self.saver.close()  # type: ignore[union-attr]
                with self.lock:
                    self._settle({})
        finally:
            log_module.INDEX_REWRITE_RECORDS = saved_rewrite
        problems = self.fs.check_against_disk()
        if problems:
            self.stats.violations.append(f"seed {self.seed}: shim model out of step: {problems}")
        if not self.stats.violations:
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.stats

    def _next_id(self) -> str:
        self.n += 1
        return cp_id(self.n, ID_PREFIX)

    def _open(self) -> None:
        with self.call("open", ()):
            saver = MirroredSaver(self.live, **SAVER_KWARGS)
            saver.driver = self
            self.saver = saver

    def _reopen(self) -> None:
        with self.call("close", ()):
            self.saver.close()  # type: ignore[union-attr]
        self._open()

    def _reopen_without_close(self) -> None:
        self._open()

    def _other_writer(self) -> None:
        """A put or put_writes through a second saver instance on the same store."""
        main = self.saver
        if self.other is None or self.rng.random() < 0.3:
            self._open()
            self.other = self.saver
        self.saver = self.other
        try:
            self._put() if self.rng.random() < 0.6 else self._put_writes()
        finally:
            self.saver = main

    def _latest(self, tid: str, ns: str) -> Any:
        return self.mem.get_tuple(config(tid, ns))

    def _put(self, tid: str | None = None, big: bool = False) -> None:
        rng = self.rng
        tid = tid or rng.choice(self.threads)
        ns = "" if rng.random() < 0.8 else "child:1"
        latest = self._latest(tid, ns)
        versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
        values = dict(latest.checkpoint["channel_values"]) if latest else {}
        cid = self._next_id()
        item = f"{tid}-{self.n}" + ("x" * rng.randint(600, 4000) if big else "")
        items = list(values.get("m", []))[-6:] + [item]
        changes: dict[str, Any] = {"m": items}
        if rng.random() < 0.3:
            changes["n"] = self.n
        new_versions = {ch: self.saver.get_next_version(versions.get(ch), None) for ch in changes}  # type: ignore[union-attr]
        versions.update(new_versions)
        values.update(changes)
        md = {"run_id": rng.choice(RUNS), "step": self.n}
        self.saver.put(config(tid, ns, latest.checkpoint["id"] if latest else None),  # type: ignore[union-attr]
                       make_checkpoint(cid, values, versions), md, new_versions)

    def _put_big(self) -> None:
        self._put(big=True)

    def _put_writes(self) -> None:
        rng = self.rng
        tid = rng.choice(self.threads)
        ns = "" if rng.random() < 0.8 else "child:1"
        ids = sorted(self.mem.storage.get(tid, {}).get(ns, {}))
        if not ids:
            self._put(tid)
            return
        cid = ids[-1] if rng.random() < 0.7 else rng.choice(ids)
        task = f"task-{rng.randrange(6)}" if rng.random() < 0.3 else f"task-{self.n}"  # some retried slots
        self.n += 1
        writes = [
            ("m", [f"w-{self.n}-{j}" + "y" * rng.choice((0, 0, 700))]) for j in range(rng.randint(1, 3))
        ]
        if rng.random() < 0.2:
            writes.append(("__error__", {"error": f"boom {self.n}"}))
        self.saver.put_writes(config(tid, ns, cid), writes, task, f"~path, {self.n}")  # type: ignore[union-attr]

    def _agent(self) -> None:
        tid = f"agent-{len(self.agents)}"
        self.agents.append(tid)
        graph = build_agent(self.saver, rounds=self.rng.randint(1, 2))
        graph.invoke(agent_input(), {"configurable": {"thread_id": tid}}, durability="sync")

    def _agent_continue(self) -> None:
        if not self.agents:
            self._agent()
            return
        tid = self.rng.choice(self.agents)
        self.n += 1
        graph = build_agent(self.saver, rounds=1)
        graph.invoke({"messages": [HumanMessage(content="and again", id=f"human-{self.n}")]},
                     {"configurable": {"thread_id": tid}}, durability="sync")

    def _delete(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("delete", [tid]):
            self.saver.delete_thread(tid)  # type: ignore[union-attr]
            self.mem.delete_thread(tid)

    def _prune(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("prune", [tid]):
            self.saver.prune([tid])  # type: ignore[union-attr]
            mem_prune_keep_latest(self.mem, tid)

    def _compact(self) -> None:
        tid = self.rng.choice(self.threads + self.agents)
        with self.call("compact", [tid]):
            self.saver.compact(tid)  # type: ignore[union-attr]  # answers do not change

    def _prune_delete(self) -> None:
        tid = self.rng.choice(self.threads)
        with self.call("delete", [tid]):
            self.saver.prune([tid], strategy="delete")  # type: ignore[union-attr]
            self.mem.delete_thread(tid)

    def _copy(self) -> None:
        src = self.rng.choice(self.threads + self.agents)
        dst = f"copy-{self.n}"
        self.n += 1
        with self.call("copy", [dst]):
            self.saver.copy_thread(src, dst)  # type: ignore[union-attr]
            mem_copy_thread(self.mem, src, dst)
        if len(self.threads) < 5:
            self.threads.append(dst)

    def _delete_for_runs(self) -> None:
        run = self.rng.choice(RUNS)
        tids = sorted(set(self.expected) | set(self.threads) | set(self.agents))
        with self.call("delete_for_runs", tids):
            self.saver.delete_for_runs([run])  # type: ignore[union-attr]
            mem_delete_for_runs(self.mem, {run})

    def _torn_tail(self) -> None:
        """A writer killed mid-batch left a torn tail (written through the shim, so it is
        modelled); the next put must set it aside and cut it before appending."""
        tid = self.rng.choice(self.threads)
        path = ThreadFiles.of(self.live, tid).log
        if not os.path.exists(path):
            self._put(tid)
            return
        with open(path, "rb") as f:
            scanned = framing.scan(f.read())
        seq = scanned.records[-1].record["seq"] + 1 if scanned.records else 1
        kind = self.rng.choice(("batch-prefix", "nul", "junk"))
        if kind == "batch-prefix":
            rec = {
                "t": "writes",
                "ns": "",
                "cp": "torn",
                "task": "torn",
                "path": "",
                "w": [[0, "m", {"json": "t"}]],
            }
            data = framing.frame({**rec, "seq": seq, "more": 1}) + framing.frame({**rec, "seq": seq + 1})
            data = data[: self.rng.randint(len(data) // 2, len(data) - 1)]
        elif kind == "nul":
            data = b'{"t":"checkpoint","part' + b"\0" * self.rng.randint(1, 3000)
        else:
            data = self.rng.randbytes(self.rng.randint(1, 1500))
        with self.call("torn tail", ()):
            px = files_module.os
            fd = px.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                px.write(fd, data)
                if self.rng.random() < 0.5:
                    px.fdatasync(fd)
            finally:
                px.close(fd)
        self._put(tid)


# ---------------------------------------------------------------------------
# the battery
# ---------------------------------------------------------------------------


def run_battery(states: int, seed: int, workdir: str, *, steps: int = 40, rate: float = 0.3,
                per_point: int = 2, recovery_rate: float = 0.15, stop_after: int = 20,
                progress: Callable[[RoundStats, float], None] | None = None) -> RoundStats:
    """Run rounds (seeds ``seed``, ``seed + 1``, ...) until ``states`` crash images were checked.

    Returns:
        The summed figures; ``violations`` lists every problem found.
    """
    total = RoundStats()
    t0 = time.monotonic()
    r = 0
    while total.states < states and len(total.violations) < stop_after:
        rnd = PowerLossRound(workdir, seed + r, steps=steps, rate=rate, per_point=per_point,
                             recovery_rate=recovery_rate, max_states=states - total.states,
                             stop_after=stop_after - len(total.violations))
        try:
            total.add(rnd.run())
        except Exception:  # noqa: BLE001 - the live workload itself failed: report it
            total.add(rnd.stats)
            total.violations.append(f"seed {seed + r}: the workload failed at step "
                                    f"{rnd.step}: {traceback.format_exc()}")
        r += 1
        if progress is not None:
            progress(total, time.monotonic() - t0)
    return total
