"""Simulated power loss: what a crash image may serve, and the check of one image.

:class:`Expected` holds, per thread, the states a crash image may serve (the
acknowledged one, and the one with the call in flight done), the deleted threads, and
the bytes a durable tail repair cut from a log. :func:`check_image` writes an image and
checks every invariant of a power loss there: read-only and writable opens serve an
allowed state and raise nothing, no temp files remain, tombstones hold, a further put
on every thread is served after a reopen, ``verify`` finds nothing wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadDeletedError
from langgraph_jsonl_checkpoint.disk.store import THREADS_DIR
from langgraph_jsonl_checkpoint.maintenance.verify import verify
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, make_checkpoint
from tests.harness.powerloss_fs import CrashImage
from tests.harness.raw_log import stray_temp_files

# ---------------------------------------------------------------------------
# checking one crash image
# ---------------------------------------------------------------------------


EMPTY: dict = {"list": {}, "latest": {}}
#: Saver settings of the workload and the checks: snapshots (two-record batches) often.
SAVER_KWARGS: dict[str, Any] = {"snapshot_every": 2, "snapshot_ratio": 0.0}
#: Checkpoint ids of the workload sort after LangGraph's (uuid6, "1f0..."): a put after
#: a copy of an agent thread was deleted is newer than the tombstone.
ID_PREFIX = "2ef00000-0000-6000-8000"
PROBE_PREFIX = "fff00000-0000-6000-8000"  # a check's probe sorts after every other id
RECOVERY_PREFIX = "ffe00000-0000-6000-8000"  # ... and after the probes of a recovery


@dataclass
class Expected:
    """What a crash image may serve.

    Attributes:
        candidates: Per thread, the answers (``answers.answers``) it may serve: the
            acknowledged state, and the state with the call in flight done. Threads not
            named must serve nothing.
        tombstones: Deleted threads (``delete_thread`` returned) with the newest deleted
            checkpoint id: a late write for it must be refused.
        quarantined: ``(quarantine file, bytes)``: durable bytes a tail repair cut from a
            log (the cut is durable) that the thread's quarantine file must hold.
    """

    candidates: dict[str, list[dict]]
    tombstones: dict[str, str] = field(default_factory=dict)
    quarantined: list[tuple[str, bytes]] = field(default_factory=list)

    def allowed(self, thread_id: str) -> list[dict]:
        return self.candidates.get(thread_id, [EMPTY])


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _served(saver: JsonlSaver, exp: Expected, stage: str, problems: list[str]) -> dict[str, dict] | None:
    """Answers for every thread expected or present; problems if any is not allowed."""
    try:
        tids = sorted(set(exp.candidates) | set(saver.store.thread_ids()))
        got = {t: answers(saver, t) for t in tids}
    except Exception as exc:  # noqa: BLE001 - any failure to open or read is a violation
        problems.append(f"{stage}: the store does not open/read: {_describe(exc)}")
        return None
    for t, ans in got.items():
        allowed = exp.allowed(t)
        if not any(ans == a for a in allowed):
            diffs = " | or: ".join(diff_answers(ans, a) for a in allowed)
            problems.append(f"{stage}: thread {t!r} serves a state never acknowledged: {diffs}")
    return got


def check_image(
    image: CrashImage, target: str, exp: Expected, probe_id: str
) -> tuple[list[str], dict[str, dict] | None]:
    """Write ``image`` to ``target`` and check every invariant of a power loss there.

    1. A read-only open, then a writable one, serve for every thread one of the allowed
       states (no acknowledged checkpoint or write lost, each exactly once with its
       values, nothing partial, nothing never started) and raise nothing (no false
       corruption report). The read-only open changes no file.
    2. No temp files remain after the writable open; bytes cut from a log by a durable
       tail repair are in its quarantine file.
    3. A late write for a deleted thread is refused (its tombstone survived).
    4. A further ``put`` on every thread (deleted ones too: they come back) works, and
       a reopen serves it and everything served before.
    5. ``verify`` finds nothing wrong (torn tails were cut, snapshots rebuild).

    Returns:
        The problems found, and the answers the writable open served (``None`` if it
        failed).
    """
    image.write(target)
    problems: list[str] = []
    for rel, cut in exp.quarantined:
        try:
            with open(os.path.join(target, rel), "rb") as f:
                kept = cut in f.read()
        except FileNotFoundError:
            kept = False
        if not kept:
            problems.append(f"{len(cut)} durable bytes cut from a log are not in {rel}")
    before = _tree(target)
    try:
        ro = JsonlSaver(target, read_only=True)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"read-only open raised {_describe(exc)}")
    else:
        _served(ro, exp, "read-only open", problems)
        ro.close()
    if _tree(target) != before:
        problems.append("a read-only open changed files")
    try:
        saver = JsonlSaver(target, **SAVER_KWARGS)
    except Exception as exc:  # noqa: BLE001
        return problems + [f"writable open raised {_describe(exc)}"], None
    got = _served(saver, exp, "writable open", problems)
    stray = stray_temp_files(target)
    if stray:
        problems.append(f"temp files left after a writable open: {stray}")
    if got is None:
        return problems, None
    for t, upto in sorted(exp.tombstones.items()):
        if got.get(t, EMPTY) != EMPTY:
            continue
        try:
            saver.put_writes(config(t, "", upto), [("m", "late")], "late-task")
            problems.append(
                f"deleted thread {t!r} took a late write for its checkpoint {upto}: the tombstone is lost"
            )
        except ThreadDeletedError:
            pass
        except Exception as exc:  # noqa: BLE001
            problems.append(f"a late write for deleted thread {t!r} raised {_describe(exc)}")
    probes: dict[str, dict] = {}
    try:
        for t in sorted(set(saver.store.thread_ids()) | set(exp.candidates)):
            probes[t] = _put_probe(saver, t, probe_id)
        saver.close()
        reopened = JsonlSaver(target, **SAVER_KWARGS)
        for t, values in probes.items():
            after = answers(reopened, t)
            before = got.get(t, EMPTY)
            key = ("", probe_id)
            probe = after["list"].pop(key, None)
            if probe is None or probe.checkpoint["channel_values"] != values:
                problems.append(f"thread {t!r}: the put after recovery is not served as written")
            elif after["latest"].get("") != probe:
                problems.append(f"thread {t!r}: the put after recovery is not the latest checkpoint")
            if after["list"] != before["list"]:
                problems.append(f"thread {t!r}: after a put and reopen: {diff_answers(after, before)}")
        reopened.close()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"put after recovery / reopen raised {_describe(exc)}")
        return problems, got
    try:
        report = verify(JsonlSaver(target, read_only=True))
        problems += [f"verify: {f.path}@{f.offset}: {f.problem}" for f in report.findings]
    except Exception as exc:  # noqa: BLE001
        problems.append(f"verify raised {_describe(exc)}")
    stray = stray_temp_files(target)
    if stray:
        problems.append(f"temp files left after recovery: {stray}")
    return problems, got


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                out[os.path.join(dirpath, name)] = f.read()
    return out


def _put_probe(saver: JsonlSaver, thread_id: str, probe_id: str) -> dict:
    """Put one checkpoint (a new channel ``pl``) after the thread's latest; its values."""
    latest = saver.get_tuple(config(thread_id))
    versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
    values = dict(latest.checkpoint["channel_values"]) if latest else {}
    nv = {"pl": saver.get_next_version(versions.get("pl"), None)}
    values["pl"] = [probe_id]
    saver.put(config(thread_id, "", latest.checkpoint["id"] if latest else None),
              make_checkpoint(probe_id, values, {**versions, **nv}), {"probe": True}, nv)
    return values


def quarantine_of(cuts: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``(quarantine file, bytes)`` for the durable cuts of thread logs among ``cuts``."""
    out = []
    for path, cut in cuts:
        if path.endswith(".jsonl") and os.path.dirname(path) == THREADS_DIR:
            out.append((path[: -len(".jsonl")] + ".quarantine", cut))
    return out
