"""Every-byte truncation of the reference log, checked in forked children.

A copy of the reference log cut at any byte must open, serve exactly what was
acknowledged before the cut, keep the torn bytes in the quarantine file, take a new put
as one clean batch and serve it after a reopen (``check_cut``). ``run_truncation``
splits the cuts over children forked by ``children.spawn``; their entry point
``truncation_worker`` lives here, and the fork server preloads this module.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.children import spawn
from tests.harness.raw_log import ThreadFiles, read_quarantine
from tests.harness.reference_log import ReferenceLog

AFTER_CUT_ID = cp_id(10**9)


def check_cut(store: str, ref: ReferenceLog, cut: int) -> list[str]:
    """Cut the reference log at ``cut`` bytes and check open, read, put, reopen, quarantine."""
    tid = ref.thread_id
    files = ThreadFiles.of(store, tid)
    for p in (files.idx, files.quarantine):
        if os.path.exists(p):
            os.unlink(p)
    with open(files.log, "wb") as f:
        f.write(ref.data[:cut])
    end, want = ref.expected_at(cut)
    problems = []
    try:
        saver = JsonlSaver(store)
        got = answers(saver, tid)
    except Exception as exc:  # noqa: BLE001
        return [f"cut {cut}: opening/reading raised {type(exc).__name__}: {exc}"]
    d = diff_answers(got, want)
    if d:
        problems.append(f"cut {cut} (committed end {end}): {d}")
    latest = want["latest"].get("")
    parent = latest.checkpoint["id"] if latest else None
    versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
    values = dict(latest.checkpoint["channel_values"]) if latest else {}
    values["m"] = list(values.get("m", [])) + ["after-cut"]
    nv = {"m": saver.get_next_version(versions.get("m"), None)}
    try:
        saver.put(config(tid, "", parent), make_checkpoint(AFTER_CUT_ID, values, {**versions, **nv}),
                  {"after": cut}, nv)
        reopened = JsonlSaver(store)
        new = reopened.get_tuple(config(tid))
        old_latest = reopened.get_tuple(config(tid, "", parent)) if parent else None
    except Exception as exc:  # noqa: BLE001
        return problems + [f"cut {cut}: put/reopen raised {type(exc).__name__}: {exc}"]
    if new is None or new.checkpoint["id"] != AFTER_CUT_ID:
        problems.append(f"cut {cut}: the put after the cut is not the latest after reopen")
    else:
        if new.checkpoint["channel_values"] != values:
            problems.append(f"cut {cut}: the put after the cut reads back different values")
        if (new.parent_config or {}).get("configurable", {}).get("checkpoint_id") != parent:
            problems.append(f"cut {cut}: the put after the cut lost its parent")
    if parent and old_latest != want["list"][("", parent)]:
        problems.append(f"cut {cut}: after put + reopen the parent checkpoint reads differently")
    torn = ref.data[end:cut]
    if torn:
        try:
            entries = read_quarantine(files.quarantine)
        except (OSError, AssertionError, ValueError) as exc:
            entries = []
            problems.append(f"cut {cut}: quarantine unreadable: {exc}")
        if len(entries) != 1 or entries[0][1] != torn or entries[0][0].get("offset") != end:
            problems.append(
                f"cut {cut}: the {len(torn)} torn bytes at {end} are not what the quarantine holds"
            )
    elif os.path.exists(files.quarantine):
        problems.append(f"cut {cut}: a clean cut at a batch end wrote a quarantine file")
    # The log must now be exactly the committed prefix plus one new committed batch, so
    # a reopen serves what was checked above plus the new checkpoint.
    with open(files.log, "rb") as f:
        now = f.read()
    if not now.startswith(ref.data[:end]):
        problems.append(f"cut {cut}: committed bytes before {end} were changed")
    else:
        added = framing.scan(now[end:], end)
        kinds = [(r.record.get("t"), r.record.get("id", r.record.get("cp"))) for r in added.records]
        if (
            added.tail_bytes
            or added.corrupt_offset is not None
            or not kinds
            or kinds[0] != ("checkpoint", AFTER_CUT_ID)
            or any(k[1] != AFTER_CUT_ID for k in kinds)
        ):
            problems.append(
                f"cut {cut}: after the put the log past {end} is not one clean new batch: {kinds}"
            )
    return problems


def truncation_worker(ref: ReferenceLog, cuts: list[int], store: str, result_path: str) -> None:
    """Child: check every cut in ``cuts``; write (checked, problems) to ``result_path``."""
    import pickle

    try:
        JsonlSaver(store)  # make the store (STORE.json, threads/)
        problems: list[str] = []
        checked = 0
        for cut in cuts:
            problems += check_cut(store, ref, cut)
            checked += 1
            if len(problems) > 50:
                break
        with open(result_path, "wb") as f:
            pickle.dump((checked, problems), f)
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)


def run_truncation(
    ref: ReferenceLog, cuts: Sequence[int], scratch: str, workers: int = 2
) -> tuple[int, list[str]]:
    """Check ``cuts`` split over ``workers`` forked children; (cuts checked, problems)."""
    import pickle

    procs = []
    for w in range(workers):
        store = os.path.join(scratch, f"store-{w}")
        result = os.path.join(scratch, f"result-{w}.pickle")
        procs.append((spawn(truncation_worker, ref, list(cuts[w::workers]), store, result), result))
    checked, problems = 0, []
    for p, result in procs:
        p.join()
        if p.exitcode != 0:
            problems.append(f"truncation worker failed with exit code {p.exitcode}")
            continue
        with open(result, "rb") as f:
            c, pr = pickle.load(f)
        checked += c
        problems += pr
    return checked, problems
