"""One round of the kill -9 battery and one of the multi-process battery (CI tests and ``stress/``).

- ``kill_round``: run the scripted agent in a child, SIGKILL it at a random instant (and
  maybe its first resume too), check that every acknowledged checkpoint and write is
  served exactly once, resume, and compare the run with ``reference_agent_result``.
- ``mp_round``: writers and a tailing reader on one store, each SIGKILLed at its own
  instant; then every acknowledged checkpoint and write, and everything the reader
  saw, must be served, before and after a further put and a reopen.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from dataclasses import dataclass

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, make_checkpoint
from tests.harness.children import (
    BASE_ID,
    SHARED,
    agent_child,
    kill_at,
    mp_context,
    mp_reader,
    mp_writer,
    read_text,
    spawn,
)
from tests.harness.raw_log import ThreadFiles, checkpoint_record_counts
from tests.harness.scripted_agent import Acks, read_acks

# ---------------------------------------------------------------------------
# the kill -9 round (used by the CI test and stress.kill9)
# ---------------------------------------------------------------------------


@dataclass
class KillRound:
    thread_id: str
    killed: list[bool]
    acked_before_kill: int
    acks: int
    violations: list[str]


def reference_agent_result(workdir: str) -> tuple[str, float]:
    """Final messages of an uninterrupted run, and how long the run took."""
    mp_context()  # start the fork server first: its start-up is not part of a run
    times = []
    results = set()
    for i in range(3):
        store = os.path.join(workdir, f"reference-store-{i}")
        paths = [os.path.join(workdir, f"reference-{i}.{x}") for x in ("ack", "err", "out")]
        t0 = time.perf_counter()
        p = spawn(agent_child, store, "reference", paths[0], paths[1], "run", paths[2])
        p.join()
        times.append(time.perf_counter() - t0)
        if p.exitcode != 0:
            raise RuntimeError(f"reference run failed: {read_text(paths[1])}")
        shutil.rmtree(store)
        results.add(read_text(paths[2]))
    if len(results) != 1:
        raise RuntimeError(f"the agent is not deterministic: {results}")
    return results.pop(), sorted(times)[1]


def check_acked_present(store: str, thread_id: str, acks: Acks, seen_by: str) -> list[str]:
    """Every acknowledged checkpoint is listed exactly once and every acked write is pending."""
    violations = []
    saver = JsonlSaver(store)
    try:
        listed = [
            (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
            for t in saver.list(config(thread_id))
        ]
    except Exception as exc:  # noqa: BLE001 - any failure to open is a violation
        return [f"{seen_by}: store does not open: {type(exc).__name__}: {exc}"]
    if len(listed) != len(set(listed)):
        violations.append(f"{seen_by}: list() returns a checkpoint twice")
    files = ThreadFiles.of(store, thread_id)
    counts = checkpoint_record_counts(files.log) if os.path.exists(files.log) else {}
    for key in acks.checkpoints:
        if key not in listed:
            violations.append(f"{seen_by}: acknowledged checkpoint {key} missing")
        if counts.get(key, 0) != 1:
            violations.append(f"{seen_by}: acknowledged checkpoint {key} has {counts.get(key, 0)} records")
    wanted: dict[tuple[str, str, str], list[str]] = {}
    for ns, cid, task, idx, channel in acks.writes:
        # a regular slot is kept once (a retry adds nothing); special slots are replaced
        slots = wanted.setdefault((ns, cid, task), [])
        if idx >= 0 or channel not in slots:
            slots.append(channel)
    for (ns, cid, task), channels in wanted.items():
        tup = saver.get_tuple(config(thread_id, ns, cid))
        if tup is None:
            violations.append(f"{seen_by}: checkpoint {cid} of acknowledged writes of {task} missing")
            continue
        got = sorted(ch for t, ch, _ in tup.pending_writes if t == task)
        if set(channels) - set(got):
            violations.append(
                f"{seen_by}: acknowledged writes of {task} on {cid}: {sorted(channels)}, pending: {got}"
            )
    saver.close()
    return violations


def kill_round(
    store: str, workdir: str, thread_id: str, rng: random.Random, run_seconds: float,
    reference: str, *, kill_resume: bool,
) -> KillRound:
    """One round: run the agent, SIGKILL it at a random instant, check, resume, check.

    With ``kill_resume`` the first resume is killed at a random instant too (a crash
    during recovery), and a second resume finishes the run.
    """
    ack = os.path.join(workdir, f"{thread_id}.ack")
    err = os.path.join(workdir, f"{thread_id}.err")
    out = os.path.join(workdir, f"{thread_id}.out")
    violations: list[str] = []
    killed = []
    p = spawn(agent_child, store, thread_id, ack, err, "run", out)
    killed.append(kill_at(p, rng.uniform(0, run_seconds)))
    if not killed[-1] and p.exitcode != 0:
        violations.append(f"writer failed on its own (exit {p.exitcode}): {read_text(err)[-2000:]}")
    acked_before_kill = len(read_acks(ack).checkpoints)
    violations += check_acked_present(store, thread_id, read_acks(ack), "after kill")
    attempts = 2 if kill_resume else 1
    for attempt in range(attempts):
        if os.path.exists(out):
            os.unlink(out)
        p = spawn(agent_child, store, thread_id, ack, err, "resume", out)
        if attempt < attempts - 1:
            killed.append(kill_at(p, rng.uniform(0, run_seconds)))
            violations += check_acked_present(store, thread_id, read_acks(ack), "after killed resume")
            continue
        p.join(60)
        if p.exitcode != 0:
            if p.exitcode is None:
                p.kill()
                p.join()
            violations.append(f"resume failed (exit {p.exitcode}): {read_text(err)[-3000:]}")
    result = read_text(out)
    if not violations and result != reference:
        violations.append(f"resumed run ended differently:\n  got {result}\n  want {reference}")
    violations += check_acked_present(store, thread_id, read_acks(ack), "after resume")
    return KillRound(thread_id, killed, acked_before_kill, len(read_acks(ack).checkpoints), violations)


# ---------------------------------------------------------------------------
# the multi-process round (used by the CI test and stress.multiprocess)
# ---------------------------------------------------------------------------


def mp_round(store: str, workdir: str, rng: random.Random, *, writers: int, max_seconds: float,
             iterations: int = 10_000) -> tuple[int, int, list[str]]:
    """One multi-process round. Returns (acknowledged checkpoints, writes, violations)."""
    os.makedirs(workdir, exist_ok=True)
    if not os.path.exists(ThreadFiles.of(store, SHARED).log):
        s = JsonlSaver(store)
        v = {"m": s.get_next_version(None, None)}
        s.put(config(SHARED), make_checkpoint(BASE_ID, {"m": []}, v), {"base": True}, v)
        s.close()
    tag = f"{rng.randrange(1 << 30):08x}"
    procs = []
    for k in range(writers):
        ack = os.path.join(workdir, f"w{k}-{tag}.ack")
        err = os.path.join(workdir, f"w{k}-{tag}.err")
        procs.append(
            ("writer", spawn(mp_writer, store, k, ack, err, rng.randrange(1 << 30), iterations), ack, err)
        )
    threads = [SHARED] + [f"own-{k}" for k in range(writers)]
    seen_path = os.path.join(workdir, f"reader-{tag}.seen")
    rerr = os.path.join(workdir, f"reader-{tag}.err")
    reader = spawn(mp_reader, store, threads, seen_path, rerr)
    violations: list[str] = []
    # Kill each writer at its own random instant; the others keep writing meanwhile.
    deadlines = sorted((rng.uniform(0.05, max_seconds), i) for i in range(writers))
    t0 = time.monotonic()
    for when, i in deadlines:
        _, p, _, err = procs[i]
        killed = kill_at(p, max(0.0, when - (time.monotonic() - t0)))
        if not killed and p.exitcode != 0:
            violations.append(f"writer {i} failed on its own (exit {p.exitcode}): {read_text(err)[-3000:]}")
    killed_reader = kill_at(reader, rng.uniform(0.0, 0.05))
    if not killed_reader:
        violations.append(f"reader failed (exit {reader.exitcode}): {read_text(rerr)[-3000:]}")
    # -- invariants
    all_acks = [read_acks(ack) for _, _, ack, _ in procs]
    cps = sum(len(a.checkpoints) for a in all_acks)
    ws = sum(len(a.writes) for a in all_acks)
    for stage in ("after kill", "after a put and reopen"):
        saver = JsonlSaver(store)
        try:
            counts = {tid: checkpoint_record_counts(ThreadFiles.of(store, tid).log) for tid in threads
                      if os.path.exists(ThreadFiles.of(store, tid).log)}
            listed = {tid: [t.checkpoint["id"] for t in saver.list(config(tid))] for tid in threads}
            base = saver.get_tuple(config(SHARED, "", BASE_ID))
            pending = [task for task, _, _ in base.pending_writes] if base else []
        except Exception as exc:  # noqa: BLE001
            violations.append(f"{stage}: store does not open: {type(exc).__name__}: {exc}")
            return cps, ws, violations
        for tid, ids in listed.items():
            if len(ids) != len(set(ids)):
                violations.append(f"{stage}: thread {tid} lists a checkpoint twice")
        for k, acks in enumerate(all_acks):
            for ns, cid in acks.checkpoints:
                found = [t for t in threads if cid in listed[t]]
                if len(found) != 1:
                    violations.append(
                        f"{stage}: acknowledged checkpoint {cid} of writer {k} found in {found}"
                    )
                elif counts.get(found[0], {}).get((ns, cid), 0) != 1:
                    violations.append(
                        f"{stage}: checkpoint {cid} has {counts[found[0]].get((ns, cid), 0)} records"
                    )
            for ns, cid, task, _idx, _ in acks.writes:
                if cid == BASE_ID:
                    if pending.count(task) != 1:
                        violations.append(
                            f"{stage}: acknowledged write {task} on the shared base appears "
                            f"{pending.count(task)} times"
                        )
                else:
                    tup = saver.get_tuple(config(f"own-{k}", ns, cid))
                    got = [w for w in (tup.pending_writes if tup else []) if w[0] == task]
                    if len(got) != 2:
                        violations.append(f"{stage}: acknowledged writes of {task} on {cid}: {len(got)} of 2")
        for line in read_text(seen_path).splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue
            if parts[0] == "R" and parts[2] not in listed.get(parts[1], []):
                violations.append(
                    f"{stage}: checkpoint {parts[2]} of {parts[1]} seen by the reader disappeared"
                )
            if parts[0] == "RW" and parts[2] not in pending:
                violations.append(f"{stage}: write {parts[2]} seen by the reader disappeared")
        if stage == "after kill":
            # every thread must take a new append (tail repair) and reopen
            for tid in threads:
                latest = saver.get_tuple(config(tid))
                if latest is None:
                    continue
                lv = latest.checkpoint["channel_versions"]
                nv = {"m": saver.get_next_version(lv.get("m"), None)}
                items = list(latest.checkpoint["channel_values"].get("m", [])) + ["parent"]
                new_id = f"{time.time_ns():020d}-zz"
                saver.put(config(tid, "", latest.checkpoint["id"]),
                          make_checkpoint(new_id, {"m": items}, {**lv, **nv}), {}, nv)
        saver.close()
    return cps, ws, violations
