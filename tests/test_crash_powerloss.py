"""Crash battery 9: simulated power loss.

The shim in ``tests/harness/powerloss_shim.py`` and ``powerloss_fs.py`` records every file
operation the package makes and draws crash images — what the disk may hold if the power
went right after that operation: unsynced sectors kept, lost, zeroed or garbled;
directory operations not yet fsynced kept or undone. Each image must open (no false
corruption report), serve every acknowledged checkpoint and write exactly once with its
values and nothing partial, keep deleted threads deleted, take a further put, verify
clean and leave no temp files.

Below: the shim's own contract, the CI subset of the battery, then regressions the
battery found. The full battery is ``python -m stress.powerloss --states 5000``.
Environment: ``CRASH_POWERLOSS_STATES`` (default 600), ``CRASH_SEED`` (default 31).
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

import langgraph_jsonl_checkpoint.disk.files as files_module
from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import Mirror, config, cp_id, make_checkpoint
from tests.harness.powerloss_fs import CrashImage, FileModel, PowerLossFS
from tests.harness.powerloss_rounds import run_battery
from tests.harness.powerloss_shim import watching
from tests.harness.raw_log import ThreadFiles, read_quarantine, stray_temp_files, write_in_place
from tests.harness.reference_log import build_reference_log
from tests.harness.scratch import fast_dir

STATES = int(os.environ.get("CRASH_POWERLOSS_STATES", "600"))
SEED = int(os.environ.get("CRASH_SEED", "31"))


# -- the shim ------------------------------------------------------------------


def test_crash_bytes_never_change_synced_data_and_cover_every_fate() -> None:
    f = FileModel(1)
    durable = os.urandom(1000)
    f.write(0, durable)
    f.sync()
    unsynced = b"\x01" * 3000
    f.write(1000, unsynced)
    rng = random.Random(0)
    seen = set()
    for _ in range(400):
        out = f.crash_bytes(rng, (0.25, 0.25, 0.25, 0.25))
        assert out[:1000] == durable and 1000 <= len(out) <= 4000
        tail = out[1000:]
        seen.add("shorter" if len(out) < 4000 else "full length")
        seen.update(
            "kept" if chunk == b"\x01" * len(chunk) else "zeroed" if not any(chunk) else "garbled"
            for chunk in (tail[i : i + 512] for i in range(24, len(tail), 512))
            if chunk
        )
    assert seen == {"shorter", "full length", "kept", "zeroed", "garbled"}
    for _ in range(20):  # one bad sector: full length, all kept but one sector
        out = f.crash_bytes(rng, None)
        assert out[:1000] == durable and len(out) == 4000
        assert sum(out[i : i + 512] != b"\x01" * len(out[i : i + 512]) for i in range(1024, 4000, 512)) <= 1
    f.sync()
    assert all(f.crash_bytes(rng, (0, 0, 0.5, 0.5)) == durable + unsynced for _ in range(20))


def test_directory_operations_are_durable_only_after_a_directory_fsync(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "old").write_bytes(b"old")
    fs = PowerLossFS(root)
    with watching(fs):
        px = files_module.os  # the proxy, as log.py sees it
        fd = px.open(str(root / "d" / "new"), os.O_WRONLY | os.O_CREAT, 0o600)
        px.write(fd, b"new")
        px.fsync(fd)
        px.close(fd)
        px.replace(str(root / "d" / "new"), str(root / "d" / "old"))
        assert fs.durable_content("d/old") == b"old"  # the rename may still be undone
        rng = random.Random(1)
        seen = {tuple(sorted(fs.crash_image(rng).files)) for _ in range(50)}
        assert len(seen) > 1
        files_module.fsync_dir(str(root / "d"))
        assert fs.durable_content("d/old") == b"new" and fs.durable_content("d/new") is None
    assert not fs.check_against_disk()


# -- the battery (CI subset) ---------------------------------------------------------


def test_power_loss_at_random_operations_of_real_workloads(tmp_path: Path) -> None:
    """Puts, put_writes (multi-record batches, snapshots), LangGraph agent runs with
    durability="sync", delete_thread, prune, copy_thread, delete_for_runs, torn tails
    and their repair, sidecar rewrites, reopens; crash images at random operations and
    during recovery from some of them."""
    required = {"create", "write", "fdatasync", "fsync", "ftruncate", "rename", "fsync-dir", "unlink"}

    def kinds() -> set[str]:
        return {k.removeprefix("recovery ") for k in result.states_by_op}

    scratch = fast_dir(tmp_path)
    try:
        result = run_battery(STATES, SEED, scratch, steps=30)
        # A crash right after a rare operation (a tail repair's cut: a few among hundreds
        # of operations) is drawn or not depending on the workload's exact bytes (inode
        # numbers, timestamps and the sidecar's size shift the draws): a few more rounds,
        # from further seeds, until every kind was drawn.
        for extra in range(1, 4):
            if required <= kinds():
                break
            result.add(run_battery(STATES // 3, SEED + 1000 * extra, scratch, steps=30))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert not result.violations, f"{len(result.violations)} violations (seed {SEED}):\n" + "\n".join(
        v[:2000] for v in result.violations[:10])
    assert result.states >= STATES
    assert result.recovery_states >= STATES // 10
    # crashes right after every kind of operation, the tail repair's cut included
    assert required <= kinds(), kinds()


@pytest.mark.parametrize("leftover", [b"", b'{"store": "langgraph-js', b"\0" * 512])
def test_a_store_whose_creation_was_cut_short_opens(tmp_path: Path, leftover: bytes) -> None:
    """A power cut while the store is created leaves ``STORE.json.tmp`` without the
    marker. That is an empty store, not a foreign directory."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "STORE.json.tmp").write_bytes(leftover)
    assert JsonlSaver(store, read_only=True).get_tuple(config("t")) is None
    saver = JsonlSaver(store)
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)
    assert JsonlSaver(store).get_tuple(config("t")).checkpoint["id"] == cp_id(1)
    assert (store / "STORE.json").exists()
    assert not stray_temp_files(store), stray_temp_files(store)


def test_a_foreign_directory_is_still_refused(tmp_path: Path) -> None:
    from langgraph_jsonl_checkpoint import StoreError

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "STORE.json.tmp").write_bytes(b"")
    (store / "notes.txt").write_text("mine")
    with pytest.raises(StoreError):
        JsonlSaver(store)


# -- damage inside the batch being written is a torn tail, not mid-log damage --------


def _batches(*sizes: int) -> tuple[bytes, list[tuple[int, int]]]:
    """A log of batches of the given sizes; (bytes, [(start, end) of each batch])."""
    out = [framing.frame({"t": "header", "seq": 0})]
    spans, seq, pos = [], 1, len(out[0])
    for n in sizes:
        lines = framing.frame_batch_lines([{"t": "a", "seq": seq + i, "pad": "x" * 300} for i in range(n)])
        spans.append((pos, pos + sum(map(len, lines))))
        out += lines
        pos += sum(map(len, lines))
        seq += n
    return b"".join(out), spans


def _zero(data: bytes, start: int, n: int) -> bytes:
    return data[:start] + b"\0" * n + data[start + n :]


@pytest.mark.parametrize("where", ["first record", "middle record", "two sectors"])
def test_sectors_lost_inside_the_last_batch_are_a_torn_tail(where: str) -> None:
    """After a power cut, sectors of the batch being written can be lost while later ones
    of the same batch survive: the batch is uncommitted, not the log corrupt."""
    data, spans = _batches(1, 2, 6)
    start, end = spans[-1]
    hole = {"first record": (start + 10, 200), "middle record": (start + 700, 100),
            "two sectors": (start + 300, 1024)}[where]
    result = framing.scan(_zero(data, *hole))
    assert result.corrupt_offset is None
    assert result.committed_end == start and result.tail_bytes == end - start


@pytest.mark.parametrize("victim", ["middle of a batch", "end of a batch", "single record"])
def test_damage_followed_by_a_later_batch_is_still_mid_log_damage(victim: str) -> None:
    """A later batch after the damage proves the damaged batch was synced: corrupt, even
    when the damage is the last record of the batch before the last one."""
    data, spans = _batches(1, 3, 1, 2)
    target = {"middle of a batch": spans[1][0] + 400, "end of a batch": spans[1][1] - 50,
              "single record": spans[2][0] + 5}[victim]
    result = framing.scan(_zero(data, target, 20))
    assert result.corrupt_offset is not None and result.corrupt_offset <= target


def _group(data: bytes, spans: list, first_seq: int, *sizes: int) -> tuple[bytes, list[tuple[int, int]]]:
    """Append the batches of one group commit (one sync unit) to ``data``."""
    out, pos, seq = [data], len(data), first_seq
    for n in sizes:
        lines = framing.frame_batch_lines(
            [{"t": "a", "seq": seq + i, "pad": "x" * 300} for i in range(n)], unit=first_seq
        )
        spans = spans + [(pos, pos + sum(map(len, lines)))]
        out += lines
        pos += sum(map(len, lines))
        seq += n
    return b"".join(out), spans


@pytest.mark.parametrize("victim", ["first batch", "first record", "middle batch", "second-last batch"])
def test_sectors_lost_inside_a_group_commit_are_a_torn_tail(victim: str) -> None:
    """A group commit writes several batches and syncs them once: after a power cut a
    sector of any of them can be lost while later batches of the group survive. That is
    a torn tail (from the first damaged batch on), never mid-log damage."""
    data, spans = _batches(1, 2)
    data, spans = _group(data, spans, 4, 2, 1, 3, 2)  # seqs 4-5, 6, 7-9, 10-11
    target = {"first batch": spans[2][0] + 400, "first record": spans[2][0] + 5,
              "middle batch": spans[4][0] + 350, "second-last batch": spans[4][1] - 30}[victim]
    damaged = {"first batch": 2, "first record": 2, "middle batch": 4, "second-last batch": 4}[victim]
    result = framing.scan(_zero(data, target, 20))
    assert result.corrupt_offset is None
    assert result.committed_end == spans[damaged][0]  # the batches before it stay


def test_damage_before_a_group_commit_is_still_mid_log_damage() -> None:
    """A group after the damage proves the damaged batch was synced before it."""
    data, spans = _batches(1, 3)
    data, spans = _group(data, spans, 5, 2, 2)
    for target in (spans[1][0] + 400, spans[1][1] - 40):
        result = framing.scan(_zero(data, target, 20))
        assert result.corrupt_offset is not None and result.corrupt_offset <= target
    # and a group followed by a later unit: damage in the group is mid-log damage
    data, spans = _batches(1)
    data, spans = _group(data, spans, 2, 2, 2)  # seqs 2-3, 4-5
    tail = framing.frame_batch_lines([{"t": "a", "seq": 6, "pad": "y"}, {"t": "a", "seq": 7}])
    data += b"".join(tail)
    result = framing.scan(_zero(data, spans[2][0] + 300, 20))
    assert result.corrupt_offset is not None


def test_logs_without_batch_marks_keep_the_old_rule() -> None:
    """Before ``b`` existed, a damaged line followed by any newer valid line was mid-log
    damage; a log written then is read the same way."""
    head = framing.frame({"t": "header", "seq": 0})
    old = [framing.frame({"t": "a", "seq": 1, "more": 1}), framing.frame({"t": "a", "seq": 2})]
    data = head + b"\0" * 20 + old[0][20:] + old[1]
    assert framing.scan(data).corrupt_offset == len(head)


def test_a_power_cut_in_a_copy_batch_opens_writable_and_repairs(tmp_path: Path) -> None:
    """The case the battery found: copy_thread's many-record batch, a sector near its
    start lost, its later records intact. The store opens, serves the thread without
    the copy, quarantines the batch and takes the next put."""
    store = tmp_path / "store"
    saver = JsonlSaver(store, snapshot_every=2, snapshot_ratio=0.0)
    mirror = Mirror(saver)
    for i in range(4):
        mirror.put("src", cp_id(i), {"m": [f"item-{j}" * 40 for j in range(i + 1)]})
    mirror.put("dst", cp_id(10), {"m": ["own"]})
    want = answers(mirror.memory, "dst")
    files = ThreadFiles.of(store, "dst")
    before = Path(files.log).read_bytes()
    saver.copy_thread("src", "dst")
    saver.close()
    after = Path(files.log).read_bytes()
    assert len(after) - len(before) > 2048
    sector = (len(before) // 512 + 1) * 512  # the first whole sector of the copy batch
    damaged = _zero(after, sector, 512)
    write_in_place(files.log, damaged)
    os.unlink(files.idx)
    reopened = JsonlSaver(store)
    assert not diff_answers(answers(reopened, "dst"), want)
    v = {"m": reopened.get_next_version(None, None)}
    reopened.put(
        config("dst", "", cp_id(10)), make_checkpoint(cp_id(11), {"m": ["next"]}, v), {}, v
    )
    assert JsonlSaver(store).get_tuple(config("dst")).checkpoint["id"] == cp_id(11)
    [(note, cut)] = read_quarantine(files.quarantine)
    assert cut == damaged[len(before) :] and note["offset"] == len(before)


def test_the_quarantine_file_is_durable_before_the_log_is_cut(tmp_path: Path) -> None:
    """A repair copies a torn tail to a new quarantine file, then cuts the log. Once the
    cut is durable, the quarantine file's name must be too, or a second power cut (during
    recovery from the first) loses the torn bytes for good."""
    store = tmp_path / "store"
    reflog = build_reference_log(store, puts=4)
    files = ThreadFiles.of(store, reflog.thread_id)
    torn = framing.frame({"t": "writes", "seq": 10**6, "more": 1})[:-7]
    with open(files.log, "ab") as f:
        f.write(torn)
    fs = PowerLossFS(store)  # what the store holds now is on disk
    lost: list[str] = []

    def on_op(f: PowerLossFS, kind: str, rel: str) -> None:
        if f.cuts:  # the log's cut is durable from here on
            kept = f.durable_content(os.path.relpath(files.quarantine, store))
            if kept is None or torn not in kept:
                lost.append(f"after {kind} {rel}")

    fs.on_op = on_op
    saver = JsonlSaver(store)
    with watching(fs):
        latest = saver.get_tuple(config(reflog.thread_id))
        saver.put_writes(latest.config, [("m", "after the cut")], "task-after")
    assert fs.cuts and fs.cuts[0][1] == torn
    assert not lost, f"the torn bytes could be lost: {lost}"


def test_a_stale_sidecar_naming_a_reused_inode_is_not_trusted(tmp_path: Path) -> None:
    """A power cut during delete_thread can keep the sidecar but not the log. The thread
    is created again (generation 1 again) and a second power cut undoes that creation's
    unlink of the old sidecar; ext4 gave the new log the freed inode number. The stale
    sidecar then matches generation and inode, and its durable watermark (records the
    new log never had) made a writable open raise CorruptLogError over an intact log."""
    store = tmp_path / "store"
    saver = JsonlSaver(store)
    mirror = Mirror(saver)
    for i in range(6):
        mirror.put("t", cp_id(i), {"m": [i]})
    saver.close()
    files = ThreadFiles.of(store, "t")
    stale = Path(files.idx).read_bytes()
    os.unlink(files.log)
    os.unlink(files.idx)
    saver = JsonlSaver(store)
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(cp_id(100), {"m": ["again"]}, v), {}, v)
    first, rest = stale.split(b"\n", 1)
    head = framing.parse_line(first)
    assert head["gen"] == 1
    head["ino"] = os.stat(files.log).st_ino  # the reused inode number
    Path(files.idx).write_bytes(framing.frame(head) + rest)
    got = JsonlSaver(store).get_tuple(config("t"))
    assert got.checkpoint["id"] == cp_id(100) and got.checkpoint["channel_values"] == {"m": ["again"]}


def _group_of_four(saver: JsonlSaver, cfg: dict, nv: dict) -> list:
    return [
        (saver._writes.prepare_put_writes, (cfg, [("m", ["a" * 700])], "task-a")),
        (saver._writes.prepare_put_writes, (cfg, [("m", ["b" * 700]), ("x", 1)], "task-b")),
        (saver._writes.prepare_put_writes, (cfg, [("m", ["c" * 700])], "task-c")),
        (saver._writes.prepare_put, (cfg, make_checkpoint(cp_id(2), {"m": [0, 1, "d"]}, nv), {}, nv)),
    ]


def test_power_loss_during_a_group_commit_leaves_a_prefix_of_its_batches(tmp_path: Path) -> None:
    """The async path's group commit under the power-loss shim: at every file operation
    of a group (three put_writes and a put, synced once), crash images are drawn. Each
    must open writable without a corruption report and serve the state before the group
    plus a prefix of its batches (none of them was acknowledged before the sync)."""
    live = tmp_path / "live"
    saver = JsonlSaver(live)
    cfg = config("t", "", cp_id(1))
    versions = {"m": saver.get_next_version(None, None)}
    saver.put(config("t"), make_checkpoint(cp_id(0), {"m": [0]}, versions), {}, versions)
    nv = {"m": saver.get_next_version(versions["m"], None)}
    saver.put(config("t", "", cp_id(0)), make_checkpoint(cp_id(1), {"m": [0, 1]}, nv), {}, nv)
    nv2 = {"m": saver.get_next_version(nv["m"], None)}
    saver.close()
    rng = random.Random(7)
    images: list[CrashImage] = []
    fs = PowerLossFS(live)  # the files as they are now are durable
    fs.on_op = lambda f, kind, rel: images.extend(f.crash_image(rng) for _ in range(40))
    with watching(fs):
        saver = JsonlSaver(live)  # its handles are opened through the shim
        saver.get_tuple(cfg)
        outcomes = saver._run_group("t", _group_of_four(saver, cfg, nv2))
        saver.close()
    assert [exc for _, exc in outcomes] == [None] * 4, outcomes
    assert images

    # the allowed states: before the group, then after each of its batches
    steps = [set(), {"task-a"}, {"task-a", "task-b"}, {"task-a", "task-b", "task-c"}]
    prefixes_seen = set()
    for n, image in enumerate(images):
        target = tmp_path / f"img{n}"
        image.write(str(target))
        s = JsonlSaver(target)
        tasks = {t for t, _, _ in s.get_tuple(cfg).pending_writes}
        latest = s.get_tuple(config("t")).checkpoint["id"]
        assert tasks in steps, (image.desc, tasks)
        assert latest == cp_id(1) or (latest == cp_id(2) and tasks == steps[3]), image.desc
        prefixes_seen.add((len(tasks), latest))
        s.put_writes(cfg, [("m", ["after"])], "after")  # opens writable, repairs the tail
        s.close()
    assert len(prefixes_seen) > 1, prefixes_seen  # the images did cover different fates
