"""Crash battery 5 (CI subset): kill -9 of a real LangGraph agent at random instants.

Each round a forked child runs a tool-calling agent (scripted fake chat model,
``ToolNode``, ``durability="sync"``) on a new thread of one shared store; its
``AckingSaver`` appends a line after every ``put``/``put_writes`` *returned*. The parent
SIGKILLs it at a random instant in the run, then checks: the store opens; every
acknowledged checkpoint is listed exactly once (and has exactly one record in the raw
log); every acknowledged write is pending on its checkpoint. A fresh process then
resumes with ``graph.invoke(None, config)`` (or starts over if nothing was stored) and
must finish with exactly the messages of an uninterrupted run. Every third round the
first resume is itself killed at a random instant (a crash during recovery).

The full battery (1,000 rounds) is ``python -m stress.kill9 --rounds 1000``.
Environment: ``CRASH_KILL_ROUNDS`` (default 40), ``CRASH_SEED``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, make_checkpoint
from tests.harness.children import kill_at_op_child, spawn
from tests.harness.raw_log import stray_temp_files
from tests.harness.reference_log import ReferenceLog, build_reference_log
from tests.harness.rounds import kill_round, reference_agent_result
from tests.harness.truncation import AFTER_CUT_ID

ROUNDS = int(os.environ.get("CRASH_KILL_ROUNDS", "40"))
SEED = int(os.environ.get("CRASH_SEED", "5"))


def test_kill9_of_agent_runs_loses_no_acknowledged_checkpoint_and_resumes(tmp_path: Path) -> None:
    work = str(tmp_path)
    reference, run_seconds = reference_agent_result(work)
    store = str(tmp_path / "store")
    rng = random.Random(SEED)
    violations: list[str] = []
    killed_mid_run = 0
    for r in range(ROUNDS):
        kr = kill_round(store, work, f"agent-{r}", rng, run_seconds, reference, kill_resume=r % 3 == 0)
        violations += [f"round {r} (seed {SEED}): {v}" for v in kr.violations]
        killed_mid_run += kr.killed[0]
    assert not violations, "\n".join(violations[:20])
    # the kills really landed inside runs, not only before or after them
    assert killed_mid_run >= ROUNDS // 4, f"only {killed_mid_run} of {ROUNDS} kills hit a running writer"
    saver = JsonlSaver(store)
    assert sorted(saver.store.thread_ids()) == sorted(f"agent-{r}" for r in range(ROUNDS))
    assert len({t.config["configurable"]["thread_id"] for t in saver.list(None)}) == ROUNDS


def _kill_at_every_op(tmp_path: Path, action: str):
    """Yield (k, store) for a fresh copy of a store SIGKILLed at file op k of ``action``,
    for every k until the action completes."""
    import shutil

    base = tmp_path / "base"
    ref = build_reference_log(base, puts=8, thread_id="t")
    k = 1
    while True:
        store = tmp_path / f"{action}-{k}"
        shutil.copytree(base, store)
        p = spawn(kill_at_op_child, str(store), action, k, str(tmp_path / f"{action}-{k}.ops"))
        p.join(60)
        if p.exitcode == 0:
            return
        assert p.exitcode == -9, f"child failed at op {k}: exit {p.exitcode}"
        yield k, store, ref
        k += 1
        assert k < 200


def _prune_states(ref: ReferenceLog) -> list[dict]:
    """list() of the thread before prune, and after (the latest per namespace, writes kept)."""
    before = ref.acked[-1][1]
    after_keys = {}
    for ns in {k[0] for k in before["list"]}:
        latest = max(cid for n, cid in before["list"] if n == ns)
        after_keys[(ns, latest)] = before["list"][(ns, latest)]
    return [before["list"], after_keys]


def _a_put_after_the_crash_is_served(store: Path) -> bool:
    """Put a checkpoint on thread ``t``'s latest and read it back from a fresh saver."""
    saver = JsonlSaver(store)
    latest = saver.get_tuple(config("t"))
    v = {"m": saver.get_next_version(latest.checkpoint["channel_versions"]["m"], None)}
    saver.put(config("t", "", latest.checkpoint["id"]),
              make_checkpoint(AFTER_CUT_ID, {**latest.checkpoint["channel_values"], "m": [1]},
                                 {**latest.checkpoint["channel_versions"], **v}), {}, v)
    saver.close()
    return JsonlSaver(store).get_tuple(config("t")).checkpoint["id"] == AFTER_CUT_ID


def test_kill_at_every_file_operation_of_prune_leaves_old_or_new_generation(tmp_path: Path) -> None:
    problems = []
    n = 0
    for k, store, ref in _kill_at_every_op(tmp_path, "prune"):
        n += 1
        states = _prune_states(ref)
        try:
            got = answers(JsonlSaver(store), "t")["list"]
        except Exception as exc:  # noqa: BLE001
            problems.append(f"op {k}: store does not open: {type(exc).__name__}: {exc}")
            continue
        if got not in states:
            problems.append(f"op {k}: neither the old nor the new generation: {sorted(got)}")
        if not _a_put_after_the_crash_is_served(store):
            problems.append(f"op {k}: a put after the crash is not served")
    assert n >= 3
    assert not problems, "\n".join(problems)


def test_kill_at_every_file_operation_of_compact_leaves_the_same_answers(tmp_path: Path) -> None:
    """Compaction keeps every answer, so whichever generation survives a crash at any of
    its file operations, the thread reads exactly as before (and takes a new put)."""
    problems = []
    n = 0
    for k, store, ref in _kill_at_every_op(tmp_path, "compact"):
        n += 1
        want = ref.acked[-1][1]
        try:
            got = answers(JsonlSaver(store), "t")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"op {k}: store does not open: {type(exc).__name__}: {exc}")
            continue
        if got != want:
            problems.append(f"op {k}: answers changed: {diff_answers(got, want)}")
        if not _a_put_after_the_crash_is_served(store):
            problems.append(f"op {k}: a put after the crash is not served")
    assert n >= 3
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("action", ["prune", "compact", "create", "copy"])
def test_kill_at_every_file_operation_leaves_no_stray_temp_files_after_recovery(
    tmp_path: Path, action: str
) -> None:
    """RELIABILITY.md item 7: a crash at any file operation leaves no stray temp files
    (once the store has been opened and written again)."""
    leftovers = {}
    for k, store, _ in _kill_at_every_op(tmp_path, action):
        saver = JsonlSaver(store)
        for tid in list(saver.store.thread_ids()):
            latest = saver.get_tuple(config(tid))
            if latest is None:
                continue
            v = {"m": saver.get_next_version(latest.checkpoint["channel_versions"].get("m"), None)}
            saver.put(
                config(tid, "", latest.checkpoint["id"]),
                make_checkpoint(
                    AFTER_CUT_ID, {"m": [1]}, {**latest.checkpoint["channel_versions"], **v}
                ),
                {},
                v,
            )
        saver.close()
        stray = stray_temp_files(store)
        if stray:
            leftovers[k] = [os.path.basename(s) for s in stray]
    assert not leftovers, f"temp files left after a crash and a recovery (op -> files): {leftovers}"
