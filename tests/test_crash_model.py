"""Crash battery 11: a Hypothesis state machine against ``InMemorySaver``.

Operations: put (chained, forked, growing lists for deltas, channels removed, two
namespaces), put_writes (regular and special channels, retried slots, writes that
arrive before their checkpoint), delete_thread, copy_thread, prune (keep_latest and
delete), compact (changes no answer), delete_for_runs, a second saver instance on the
same directory writing too (what another process does), reopen with and without ``close()``, and a "crash"
(an uncommitted, torn batch appended to a log, as a killed writer leaves it).

After every step, every thread's ``list`` (all namespaces) and latest checkpoint per
namespace must equal ``InMemorySaver``'s. InMemorySaver has no copy_thread, prune or
delete_for_runs: those are modelled on its dictionaries in ``tests.harness.answers``
(``mem_copy_thread``, ``mem_prune_keep_latest``) and below.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadDeletedError
from tests.harness.answers import (
    answers,
    diff_answers,
    mem_copy_thread,
    mem_delete_for_runs,
    mem_prune_keep_latest,
)
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import AFTER_DELETE, ThreadFiles

THREADS = ["t0", "t1", "t2"]
NAMESPACES = ["", "sub:1"]
RUNS = ["run-a", "run-b", "run-c"]
SPECIAL = list(WRITES_IDX_MAP)


def _mem_has_data(mem: InMemorySaver, thread: str) -> bool:
    return any(by_id for by_id in mem.storage.get(thread, {}).values()) or any(
        k[0] == thread for k in mem.writes
    )



class SaverMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = tempfile.mkdtemp(
            prefix="crash-model-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        )
        self.path = os.path.join(self.base, "store")
        # concurrent_runs="unchecked": the model compares storage with InMemorySaver, which
        # stores every put as given (refusals are tested in test_saver.py).
        self.saver = JsonlSaver(self.path, snapshot_every=3, concurrent_runs="unchecked")
        self.other = JsonlSaver(self.path, snapshot_every=3, concurrent_runs="unchecked")
        self.mem = InMemorySaver()
        self.counter = 0

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------

    def _ids(self, thread: str, ns: str) -> list[str]:
        return sorted(self.mem.storage.get(thread, {}).get(ns, {}))

    def _writer(self, via_other: bool) -> JsonlSaver:
        return self.other if via_other else self.saver

    # -- rules --------------------------------------------------------------------

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent_pick=st.integers(0, 10),
        grow=st.integers(0, 3),
        shape=st.sampled_from(["extend", "extend", "extend", "replace", "drop-b", "set-b", "message"]),
        run=st.sampled_from(RUNS),
        via_other=st.booleans(),
    )
    def put(self, thread, ns, parent_pick, grow, shape, run, via_other) -> None:
        self.counter += 1
        cid = cp_id(self.counter)
        ids = self._ids(thread, ns)
        parent = None
        if ids:
            # mostly the latest; sometimes a fork from an older checkpoint
            parent = ids[-1] if parent_pick < 7 else ids[parent_pick % len(ids)]
        if parent:
            tup = self.mem.get_tuple(config(thread, ns, parent))
            versions = dict(tup.checkpoint["channel_versions"])
            values = dict(tup.checkpoint["channel_values"])
        else:
            versions, values = {}, {}
        saver = self._writer(via_other)
        changes = {}
        m = list(values.get("m", []))
        if shape == "replace":
            changes["m"] = [f"fresh-{self.counter}"]
        elif shape == "message":
            changes["m"] = m + [HumanMessage(content=f"hi {self.counter}", id=f"h{self.counter}")]
        else:
            changes["m"] = (
                m
                + [self.counter * 10 + i for i in range(grow)]
                + ([{"k": self.counter}] if grow == 3 else [])
            )
        if shape == "set-b":
            changes["b"] = {"n": self.counter}
        new_versions = {ch: saver.get_next_version(versions.get(ch), None) for ch in changes}
        values.update(changes)
        if shape == "drop-b" and "b" in values:
            new_versions["b"] = saver.get_next_version(versions.get("b"), None)
            del values["b"]
        versions.update(new_versions)
        md = {"step": self.counter, "run_id": run}
        cfg = config(thread, ns, parent)
        saver.put(cfg, make_checkpoint(cid, values, versions), md, new_versions)
        self.mem.put(cfg, make_checkpoint(cid, values, versions), md, new_versions)

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        pick=st.integers(0, 10),
        task=st.sampled_from(["task-a", "task-b", "task-c"]),
        path=st.sampled_from(["", "~a", "~b"]),
        n=st.integers(1, 3),
        special=st.sampled_from([None] + SPECIAL),
        future=st.integers(0, 12),
        via_other=st.booleans(),
    )
    def put_writes(self, thread, ns, pick, task, path, n, special, future, via_other) -> None:
        ids = self._ids(thread, ns)
        if future == 0 or not ids:
            target = cp_id(self.counter + 1)  # a write that arrives before its checkpoint
        else:
            target = ids[pick % len(ids)]
        writes = [("m", [f"w{self.counter}-{i}"]) for i in range(n)]
        if special:
            writes.append((special, {"special": self.counter}))
        cfg = config(thread, ns, target)
        self._writer(via_other).put_writes(cfg, writes, task, path)
        self.mem.put_writes(cfg, writes, task, path)

    @rule(thread=st.sampled_from(THREADS), via_other=st.booleans())
    def delete_thread(self, thread, via_other) -> None:
        self._writer(via_other).delete_thread(thread)
        self.mem.delete_thread(thread)
        # nothing of the thread stays on disk (a torn tail's quarantine included)
        left = ThreadFiles.of(self.path, thread).left_on_disk()
        assert left <= AFTER_DELETE, f"thread {thread}: {sorted(left - AFTER_DELETE)} left after delete"

    @rule(src=st.sampled_from(THREADS), dst=st.sampled_from(THREADS), via_other=st.booleans())
    def copy_thread(self, src, dst, via_other) -> None:
        if src == dst or _mem_has_data(self.mem, dst):
            return  # copying into a thread that has data is not modelled
        self._writer(via_other).copy_thread(src, dst)
        mem_copy_thread(self.mem, src, dst)

    @rule(thread=st.sampled_from(THREADS), strategy=st.sampled_from(["keep_latest", "keep_latest", "delete"]),
          via_other=st.booleans())
    def prune(self, thread, strategy, via_other) -> None:
        self._writer(via_other).prune([thread], strategy=strategy)
        if strategy == "delete":
            self.mem.delete_thread(thread)
        else:
            mem_prune_keep_latest(self.mem, thread)

    @rule(thread=st.sampled_from(THREADS), via_other=st.booleans())
    def compact(self, thread, via_other) -> None:
        self._writer(via_other).compact(thread)  # the model does not change

    @rule(runs=st.sets(st.sampled_from(RUNS), min_size=1, max_size=2), via_other=st.booleans())
    def delete_for_runs(self, runs, via_other) -> None:
        self._writer(via_other).delete_for_runs(sorted(runs))
        mem_delete_for_runs(self.mem, set(runs))

    @rule(close=st.booleans(), which=st.sampled_from(["saver", "other"]))
    def reopen(self, close, which) -> None:
        old = getattr(self, which)
        if close:
            old.close()
        setattr(self, which, JsonlSaver(self.path, snapshot_every=3, concurrent_runs="unchecked"))

    @rule(thread=st.sampled_from(THREADS), junk=st.sampled_from(["half", "nuls", "uncommitted"]))
    def crash_leaves_a_torn_tail(self, thread, junk) -> None:
        """A writer killed mid-append leaves a torn batch; nothing acknowledged changes."""
        files = ThreadFiles.of(self.path, thread)
        if not os.path.exists(files.log):
            return
        tails = {
            "half": b'{"t":"checkpoint","ns":"","id":"torn","pa',
            "nuls": b"\0" * 700,
            "uncommitted": (
                b'{"t":"writes","ns":"","cp":"x","task":"t","path":"","w":[],"seq":999999,"more":1,'
                b'"c":"00000000"}\n{"t":'
            ),
        }
        with open(files.log, "ab") as f:
            f.write(tails[junk])

    # -- the comparison ------------------------------------------------------------

    @invariant()
    def same_answers(self) -> None:
        for thread in THREADS:
            for saver in (self.saver, self.other):
                got = answers(saver, thread)
                want = answers(self.mem, thread)
                d = diff_answers(got, want)
                assert not d, f"thread {thread}: {d}"


SaverMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("CRASH_MODEL_EXAMPLES", "120")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSaverMachine = SaverMachine.TestCase


def test_a_late_put_writes_to_a_deleted_thread_is_refused(tmp_path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    v = {"m": saver.get_next_version(None, None)}
    cfg = saver.put(config("t"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    saver.delete_thread("t")
    with pytest.raises(ThreadDeletedError, match="'t'"):
        saver.put_writes(cfg, [("m", "late")], "late-task")
    assert not os.path.exists(ThreadFiles.of(tmp_path / "s", "t").log)
