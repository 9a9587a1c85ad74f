"""The langgraph-jsonl CLI: every command documented, verify finds damage, repair fixes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import build_parser, main

CP = [f"1ef00000-0000-6000-8000-{i:012d}" for i in range(20)]


def _store(path: Path, n: int = 12) -> None:
    saver = JsonlSaver(path, snapshot_every=3)
    cfg = {"configurable": {"thread_id": "t-1", "checkpoint_ns": ""}}
    msgs: list = []
    version = None
    for i in range(n):
        msgs = msgs + [f"message {i}"]
        version = saver.get_next_version(version, None)
        cp = {"v": 4, "id": CP[i], "ts": "x", "channel_values": {"m": msgs},
              "channel_versions": {"m": version}, "versions_seen": {}, "updated_channels": ["m"]}
        cfg = saver.put(cfg, cp, {"step": i}, {"m": version})
    saver.close()


def test_threads_verify_repair_compact_are_registered() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"threads", "verify", "repair", "compact"} <= set(subparsers.choices)


def test_verify_is_clean_on_a_healthy_store_and_checks_snapshot_hashes(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s")
    assert main(["verify", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "ok" in out and "0 snapshot" not in out


def test_verify_reports_damage_and_repair_keeps_every_readable_record(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s")
    cfg = {"configurable": {"thread_id": "t-1"}}
    before = {t.checkpoint["id"]: t.checkpoint for t in JsonlSaver(tmp_path / "s").list(cfg)}
    (log,) = (tmp_path / "s" / "threads").glob("*.jsonl")
    data = bytearray(log.read_bytes())
    lines = data.split(b"\n")
    middle = sum(len(x) + 1 for x in lines[:6]) + 10
    data[middle] ^= 0x01
    log.write_bytes(bytes(data))
    assert main(["verify", str(tmp_path / "s")]) == 1
    out = capsys.readouterr().out
    assert out.count("PROBLEM") == 1 and "damaged record" in out  # reported once
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "repair", str(tmp_path / "s"),
                          "--thread", "t-1"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "the original is in" in run.stdout
    archived = list((tmp_path / "s" / "archive").iterdir())
    assert [a.read_bytes() for a in archived] == [bytes(data)]
    assert main(["verify", str(tmp_path / "s")]) == 0
    saver = JsonlSaver(tmp_path / "s")
    history = {t.checkpoint["id"]: t.checkpoint for t in saver.list(cfg)}
    # line 6 is checkpoint 4's record; checkpoint 5 extends its value, but the snapshot
    # record after checkpoint 5 holds that value in full: only checkpoint 4 is lost
    assert sorted(history) == [c for c in CP[:12] if c != CP[4]]
    assert all(history[c] == before[c] for c in history)
    assert f"dropped checkpoint {CP[5]}" not in run.stdout


def test_threads_lists_ids(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", n=3)
    assert main(["threads", str(tmp_path / "s")]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["THREAD", "STATUS", "CHECKPOINTS", "CREATED", "UPDATED", "SIZE", "DETAIL"]
    assert row.split()[:3] == ["t-1", "done", "3"]


def test_threads_with_no_match_says_so_and_how_many_threads_there_are(tmp_path: Path, capsys) -> None:
    # A filter that matches nothing printed the header line alone: a newcomer could not
    # tell "no thread waits" from a store with nothing in it or a command that failed.
    _store(tmp_path / "s", n=3)
    assert main(["threads", str(tmp_path / "s"), "--status", "waiting", "--status", "running"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "no thread matches --status waiting --status running; the store has 1 thread(s): 1 done"
    ]
    assert main(["threads", str(tmp_path / "s"), "--status", "waiting", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    JsonlSaver(tmp_path / "empty").close()
    assert main(["threads", str(tmp_path / "empty")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"no threads in store {tmp_path / 'empty'}"]
    assert main(["threads", str(tmp_path / "empty"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["threads", str(tmp_path / "s"), "--limit", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == ["--limit 0 lists no thread"]


def test_history_that_lists_no_checkpoint_says_why(tmp_path: Path, capsys) -> None:
    """`history --limit 0`, or `--since` past the newest checkpoint, printed the header
    line alone (as `threads` did before it said why)."""
    _store(tmp_path / "s", n=3)
    thread = "t-1"
    assert main(["history", str(tmp_path / "s"), thread, "--limit", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == ["--limit 0 lists no checkpoint"]
    assert main(["history", str(tmp_path / "s"), thread, "--since", "1s"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"no checkpoint of thread {thread} since 1s"), out
    assert main(["history", str(tmp_path / "s"), thread, "--limit", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_compact_keeps_every_checkpoint_and_keep_latest_prunes(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s")
    cfg = {"configurable": {"thread_id": "t-1"}}
    before = [t.checkpoint for t in JsonlSaver(tmp_path / "s").list(cfg)]
    assert main(["compact", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "thread 't-1': " in out and "compacted: " in out
    sizes = [int(x) for x in out.split("compacted: ")[1].split(" bytes")[0].split(" -> ")]
    assert sizes[1] < sizes[0]  # the snapshot records are gone
    assert [t.checkpoint for t in JsonlSaver(tmp_path / "s").list(cfg)] == before
    assert main(["verify", str(tmp_path / "s")]) == 0
    assert main(["compact", str(tmp_path / "s"), "--thread", "t-1", "--keep-latest"]) == 0
    after = list(JsonlSaver(tmp_path / "s").list(cfg))
    assert [t.checkpoint for t in after] == before[:1]


def _files(store: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}


def test_compact_dry_run_says_what_compact_would_do_and_changes_nothing(tmp_path: Path, capsys) -> None:
    store = tmp_path / "s"
    _store(store)
    before = _files(store)
    assert main(["compact", str(store), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "nothing was changed" in out and "thread 't-1': " in out
    planned = [int(x) for x in out.split("would compact: ")[1].split(" bytes")[0].split(" -> ")]
    assert planned[1] < planned[0]
    assert _files(store) == before  # no rewrite, no sidecar, no head, no lock file
    assert main(["compact", str(store), "--thread", "t-1", "--keep-latest", "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["dry_run"] is True
    (row,) = shown["threads"]
    assert (row["thread_id"], row["checkpoints_before"], row["checkpoints_after"]) == ("t-1", 12, 1)
    assert _files(store) == before
    assert main(["compact", str(store)]) == 0
    done = [int(x) for x in capsys.readouterr().out.split("compacted: ")[1].split(" bytes")[0].split(" -> ")]
    assert done == planned  # the dry run's figures are the compaction's
    assert main(["compact", str(store), "--thread", "t-1", "--keep-latest", "--json"]) == 0
    (pruned,) = json.loads(capsys.readouterr().out)["threads"]
    assert (pruned["checkpoints_before"], pruned["checkpoints_after"]) == (12, 1)
    assert pruned["after"] == row["after"]  # what --keep-latest --dry-run said it would leave


def test_compact_waiting_for_a_writer_lock_another_process_holds_says_so(tmp_path: Path, capsys) -> None:
    """`compact` (or `repair`, or a put) behind a thread's writer lock another process
    holds waited without a word for as long as it was held. After a second it now says
    what it waits for (once); it still goes on once the lock is free."""
    import fcntl
    import os
    import queue
    import threading
    import time

    from langgraph_jsonl_checkpoint.disk import files
    from tests.harness.checkpoints import config, cp_id, make_checkpoint

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        for i in range(3):
            saver.put(config("t"), make_checkpoint(cp_id(i), {}, {}), {}, {})
        lock_path = saver.store.log_paths("t").lock
    holder = os.open(lock_path, os.O_RDWR)  # another open file description: as another process
    fcntl.flock(holder, fcntl.LOCK_EX)
    said: queue.Queue[str] = queue.Queue()
    try:
        compact = subprocess.Popen(
            [sys.executable, "-m", "langgraph_jsonl_checkpoint", "compact", str(store)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert compact.stderr is not None and compact.stdout is not None
        reader = threading.Thread(target=lambda: [said.put(line) for line in compact.stderr], daemon=True)
        reader.start()
        # However long its start takes on a loaded machine: it says so once it has waited.
        first = said.get(timeout=60)
        time.sleep(1.5)  # the notice is said once, not again while it goes on waiting
        assert compact.poll() is None  # still waiting for the lock
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    assert compact.wait(timeout=60) == 0
    out = compact.stdout.read()
    reader.join(timeout=30)
    compact.stdout.close()
    compact.stderr.close()
    rest = []
    while not said.empty():
        rest.append(said.get())
    assert "waiting for the writer lock of thread 't'" in first and lock_path in first, first
    assert not any("waiting for" in line for line in rest), rest
    assert "compacted" in out and files.LOCK_WAIT_NOTICE <= 1.5


def test_verify_accepts_dry_run_and_says_so_in_its_help(tmp_path: Path, capsys) -> None:
    """``verify --dry-run`` was argparse's bare "unrecognized arguments" (exit 2): a
    person adding --dry-run to every maintenance command to look first got stuck on
    the one that changes nothing anyway. It is accepted and verify runs as without it."""
    _store(tmp_path / "s")
    assert main(["verify", str(tmp_path / "s"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("checked 1 thread(s)") and out.rstrip().endswith(": ok"), out
    assert main(["verify", str(tmp_path / "s"), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    help_text = " ".join(_help("verify").split())
    assert "--dry-run" in help_text and "changes nothing" in help_text, help_text


def _help(name: str) -> str:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return str(sub.choices[name].format_help())
