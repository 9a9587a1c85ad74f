"""Crash battery 10: I/O faults.

Short writes (a real ``RLIMIT_FSIZE`` in a child process, ``SIGXFSZ`` ignored), and
ENOSPC / EIO injected into ``os.write`` / ``os.fdatasync`` / ``os.fsync`` /
``os.ftruncate`` as ``langgraph_jsonl_checkpoint.disk.log`` sees them (its ``os`` is replaced
by a proxy; nothing else in the process is affected).

Every fault must give a clear ``JsonlCheckpointError`` (``DurabilityError``), nothing
may be acknowledged, a reopened saver must serve exactly what was acknowledged before
(no partial batch), bytes cut from a log must be in the quarantine file, no temp files
may be left behind, and the next ``put`` must succeed.
"""

from __future__ import annotations

import errno
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import langgraph_jsonl_checkpoint.disk.files as files_module
import langgraph_jsonl_checkpoint.disk.log as log_module
from langgraph_jsonl_checkpoint import DurabilityError, JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from tests.harness.answers import answers, diff_answers
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.children import fsize_child, spawn
from tests.harness.raw_log import ThreadFiles, read_quarantine, stray_temp_files
from tests.harness.reference_log import ReferenceLog, build_reference_log


class FaultyOS:
    """``os`` for log.py, with faults injected by a rule ``(call, path, args) -> action``.

    An action is ``None`` (call the real function), an ``OSError`` to raise, or for
    ``write`` an int: write only that many bytes for real and return the count.
    """

    def __init__(self, rule: Callable[[str, str, tuple], Any]) -> None:
        self._rule = rule
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def _path(fd: int) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return "?"

    def _do(self, name: str, fd: int, *args: Any) -> Any:
        path = self._path(fd)
        self.calls.append((name, path))
        action = self._rule(name, path, args)
        if isinstance(action, OSError):
            raise action
        if name == "write" and isinstance(action, int):
            return os.write(fd, args[0][:action])
        return getattr(os, name)(fd, *args)

    def write(self, fd: int, data: bytes) -> int:
        return self._do("write", fd, data)

    def fdatasync(self, fd: int) -> None:
        return self._do("fdatasync", fd)

    def fsync(self, fd: int) -> None:
        return self._do("fsync", fd)

    def ftruncate(self, fd: int, length: int) -> None:
        return self._do("ftruncate", fd, length)


def enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def eio() -> OSError:
    return OSError(errno.EIO, os.strerror(errno.EIO))


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, ReferenceLog]:
    reflog = build_reference_log(tmp_path / "store", puts=6)
    return tmp_path / "store", reflog


def _next_put(saver: JsonlSaver, reflog: ReferenceLog, cid: str, extra: Any) -> dict:
    latest = reflog.acked[-1][1]["latest"][""]
    versions = dict(latest.checkpoint["channel_versions"])
    values = {**latest.checkpoint["channel_values"], "m": latest.checkpoint["channel_values"]["m"] + [extra]}
    nv = {"m": saver.get_next_version(versions["m"], None)}
    saver.put(config(reflog.thread_id, "", latest.checkpoint["id"]),
              make_checkpoint(cid, values, {**versions, **nv}), {"extra": str(extra)}, nv)
    return values


FAILED_ID = cp_id(900)
NEXT_ID = cp_id(901)


def _after_fault_checks(
    store: Path, reflog: ReferenceLog, saver: JsonlSaver, expect_log: bytes | None
) -> None:
    files = ThreadFiles.of(store, reflog.thread_id)
    want = reflog.acked[-1][1]
    if expect_log is not None:
        with open(files.log, "rb") as f:
            assert f.read() == expect_log, "the failed call left bytes in the log"
    got = answers(JsonlSaver(store), reflog.thread_id)
    assert not diff_answers(got, want), "after the fault a reopened saver serves: " + diff_answers(
        got, want
    )
    assert not stray_temp_files(store), stray_temp_files(store)
    # the next put succeeds, on the same saver, and a reopen serves it and nothing unacked
    values = _next_put(saver, reflog, NEXT_ID, "next")
    again = answers(JsonlSaver(store), reflog.thread_id)
    assert again["list"].pop(("", NEXT_ID)).checkpoint["channel_values"] == values
    assert ("", FAILED_ID) not in again["list"], "the put that failed is served"
    assert again["list"] == want["list"]
    with open(files.log, "rb") as f:
        scanned = framing.scan(f.read())
    assert scanned.tail_bytes == 0 and scanned.corrupt_offset is None


LOG = ".jsonl"


def _only(call: str, suffix: str, action: Callable[[tuple], Any], times: int = 1) -> Callable:
    state = {"n": 0}

    def rule(name: str, path: str, args: tuple) -> Any:
        if name == call and path.endswith(suffix) and state["n"] < times:
            state["n"] += 1
            return action(args)
        return None

    return rule


def _short_then_enospc() -> Callable:
    state = {"n": 0}

    def rule(name: str, path: str, args: tuple) -> Any:
        if name == "write" and path.endswith(LOG) and state["n"] < 2:
            state["n"] += 1
            return len(args[0]) // 2 if state["n"] == 1 else enospc()
        return None

    return rule


#: fault name -> factory of a fresh (stateful) rule
APPEND_FAULTS: dict[str, Callable[[], Callable]] = {
    "write-enospc": lambda: _only("write", LOG, lambda a: enospc()),
    "write-eio": lambda: _only("write", LOG, lambda a: eio()),
    "write-returns-zero": lambda: _only("write", LOG, lambda a: 0),
    "short-write-then-enospc": _short_then_enospc,
    "fdatasync-eio": lambda: _only("fdatasync", LOG, lambda a: eio()),
    "fdatasync-enospc": lambda: _only("fdatasync", LOG, lambda a: enospc()),
}


@pytest.mark.parametrize("fault", sorted(APPEND_FAULTS))
def test_append_fault_acknowledges_nothing(store, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    path, reflog = store
    saver = JsonlSaver(path)
    assert saver.get_tuple(config(reflog.thread_id)) is not None
    monkeypatch.setattr(files_module, "os", FaultyOS(APPEND_FAULTS[fault]()))
    with pytest.raises(DurabilityError):
        _next_put(saver, reflog, FAILED_ID, "failed")
    # put_writes goes through the same append path
    monkeypatch.setattr(files_module, "os", FaultyOS(APPEND_FAULTS[fault]()))
    with pytest.raises(DurabilityError):
        saver.put_writes(config(reflog.thread_id, "", cp_id(2)), [("m", "failed write")], "failed-task")
    monkeypatch.setattr(files_module, "os", os)
    tup = JsonlSaver(path).get_tuple(config(reflog.thread_id, "", cp_id(2)))
    assert "failed-task" not in [t for t, _, _ in tup.pending_writes]
    _after_fault_checks(path, reflog, saver, reflog.data)


def test_fdatasync_error_then_truncate_error_never_serves_the_unacknowledged_batch(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsyncgate: after an fsync error the pages may be gone from disk while the page
    cache still shows them. If cutting the batch back fails too, the saver must not go
    on appending after (and serving) a batch it never acknowledged."""
    path, reflog = store
    saver = JsonlSaver(path)
    state = {"sync": 0, "trunc": 0}

    def rule(name: str, p: str, args: tuple) -> Any:
        if name == "fdatasync" and p.endswith(LOG) and not state["sync"]:
            state["sync"] = 1
            return eio()
        if name == "ftruncate" and p.endswith(LOG) and not state["trunc"]:
            state["trunc"] = 1
            return eio()
        return None

    monkeypatch.setattr(files_module, "os", FaultyOS(rule))
    with pytest.raises(DurabilityError):
        _next_put(saver, reflog, FAILED_ID, "failed")
    monkeypatch.setattr(files_module, "os", os)
    _next_put(saver, reflog, NEXT_ID, "next")
    got = answers(JsonlSaver(path), reflog.thread_id)
    assert ("", FAILED_ID) not in got["list"], "a batch whose fdatasync failed is served and built upon"


def _dirty(path: Path, reflog: ReferenceLog) -> bytes:
    files = ThreadFiles.of(path, reflog.thread_id)
    tail = b'{"t":"checkpoint","partial' + b"\0" * 3000
    with open(files.log, "ab") as f:
        f.write(tail)
    return tail


REPAIR_FAULTS: dict[str, Callable[[], Callable]] = {
    "quarantine-write-enospc": lambda: _only("write", ".quarantine", lambda a: enospc()),
    "quarantine-short-write": lambda: _only("write", ".quarantine", lambda a: len(a[0]) // 3),
    "quarantine-fsync-eio": lambda: _only("fsync", ".quarantine", lambda a: eio()),
    "cut-ftruncate-eio": lambda: _only("ftruncate", LOG, lambda a: eio()),
    "cut-fsync-eio": lambda: _only("fsync", LOG, lambda a: eio()),
}


@pytest.mark.parametrize("fault", sorted(REPAIR_FAULTS))
def test_tail_repair_fault_is_a_durability_error_and_loses_no_bytes(
    store, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A torn tail is cut (after copying it to the quarantine file) before the next
    append. A fault in that repair must raise DurabilityError, and never leave bytes cut
    from the log that are not in the quarantine file."""
    path, reflog = store
    tail = _dirty(path, reflog)
    files = ThreadFiles.of(path, reflog.thread_id)
    saver = JsonlSaver(path)
    monkeypatch.setattr(files_module, "os", FaultyOS(REPAIR_FAULTS[fault]()))
    error: BaseException | None = None
    try:
        _next_put(saver, reflog, FAILED_ID, "failed")
    except Exception as exc:  # noqa: BLE001
        error = exc
    monkeypatch.setattr(files_module, "os", os)
    with open(files.log, "rb") as f:
        now = f.read()
    quarantined = (b"".join(e[1] for e in read_quarantine(files.quarantine))
                   if os.path.exists(files.quarantine) else b"")
    assert now.startswith(reflog.data), "committed bytes were lost"
    if not now.startswith(reflog.data + tail):
        assert tail in quarantined, (
            f"{len(tail)} torn bytes were cut from the log but the quarantine file holds "
            f"{len(quarantined)} bytes of them ({type(error).__name__ if error else 'no error'})"
        )
    assert error is None or isinstance(error, DurabilityError), f"raw {type(error).__name__}: {error}"
    if error is not None:
        got = answers(JsonlSaver(path), reflog.thread_id)
        assert not diff_answers(got, reflog.acked[-1][1])
        _next_put(saver, reflog, NEXT_ID, "next")
        assert tail in b"".join(e[1] for e in read_quarantine(files.quarantine))


def _dir_fsync_eio() -> Callable:
    state = {"n": 0}

    def rule(name: str, p: str, args: tuple) -> Any:
        if name == "fsync" and os.path.isdir(p) and not state["n"]:
            state["n"] = 1
            return eio()
        return None

    return rule


CREATE_FAULTS: dict[str, Callable[[], Callable]] = {
    "tmp-write-enospc": lambda: _only("write", "", lambda a: enospc()),
    "tmp-fsync-eio": lambda: _only("fsync", "", lambda a: eio()),
    "dir-fsync-eio": _dir_fsync_eio,
}


@pytest.mark.parametrize("fault", sorted(CREATE_FAULTS))
def test_first_put_of_a_thread_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """The first put creates the log (header, temp file + fsync + rename + dir fsync)."""
    store = tmp_path / "store"
    saver = JsonlSaver(store)
    monkeypatch.setattr(files_module, "os", FaultyOS(CREATE_FAULTS[fault]()))
    v = {"m": saver.get_next_version(None, None)}
    with pytest.raises(DurabilityError):
        saver.put(config("new"), make_checkpoint(FAILED_ID, {"m": [1]}, v), {}, v)
    monkeypatch.setattr(files_module, "os", os)
    assert not stray_temp_files(store), stray_temp_files(store)
    assert JsonlSaver(store).get_tuple(config("new")) is None
    saver.put(config("new"), make_checkpoint(NEXT_ID, {"m": [2]}, v), {}, v)
    got = JsonlSaver(store).get_tuple(config("new"))
    assert got.checkpoint["id"] == NEXT_ID and got.checkpoint["channel_values"] == {"m": [2]}


def test_sidecar_write_failure_does_not_fail_a_durable_put(store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidecar is derived data rewritten after the batch was fsynced: a failure there
    must not turn an acknowledged-on-disk put into an error, nor leave temp files."""
    path, reflog = store
    saver = JsonlSaver(path)
    monkeypatch.setattr(log_module, "INDEX_REWRITE_RECORDS", 1)
    monkeypatch.setattr(files_module, "os", FaultyOS(
        lambda name, p, args: enospc() if name == "write" and ".idx" in p else None))
    values = _next_put(saver, reflog, NEXT_ID, "durable")
    monkeypatch.setattr(files_module, "os", os)
    assert not stray_temp_files(path), stray_temp_files(path)
    got = JsonlSaver(path).get_tuple(config(reflog.thread_id))
    assert got.checkpoint["id"] == NEXT_ID and got.checkpoint["channel_values"] == values


def test_prune_write_fault_changes_nothing(store, monkeypatch: pytest.MonkeyPatch) -> None:
    path, reflog = store
    saver = JsonlSaver(path)
    files = ThreadFiles.of(path, reflog.thread_id)
    monkeypatch.setattr(
        files_module,
        "os",
        FaultyOS(
            lambda name, p, args: (
                enospc() if name == "write" and os.path.dirname(p) == str(path / "tmp") else None
            )
        ),
    )
    with pytest.raises(DurabilityError):
        saver.prune([reflog.thread_id])
    monkeypatch.setattr(files_module, "os", os)
    with open(files.log, "rb") as f:
        assert f.read() == reflog.data
    _after_fault_checks(path, reflog, saver, None)


def test_short_writes_from_rlimit_fsize(store, tmp_path: Path) -> None:
    """A real short write: RLIMIT_FSIZE caps the log at every offset from the current end
    to well inside the next batch; the put fails, the log is cut back, the next put works."""
    path, reflog = store
    extras = list(range(0, 48)) + [100, 257, 400]
    result = str(tmp_path / "fsize.pickle")
    p = spawn(fsize_child, str(path), reflog.thread_id, extras, result)
    p.join(120)
    assert p.exitcode == 0
    with open(result, "rb") as f:
        rows = pickle.load(f)
    problems = [r for r in rows if r[1] != "DurabilityError" or r[2] != r[3]]
    assert not problems, f"(extra, error, size before, size after, ...): {problems[:5]}"
    got = answers(JsonlSaver(path), reflog.thread_id)
    for _, _, _, _, bad_id, good_id in rows:
        assert ("", bad_id) not in got["list"]
        assert ("", good_id) in got["list"]
    files = ThreadFiles.of(path, reflog.thread_id)
    with open(files.log, "rb") as f:
        scanned = framing.scan(f.read())
    assert scanned.tail_bytes == 0 and scanned.corrupt_offset is None


@pytest.mark.parametrize("reader_wrote_last", [False, True])
def test_a_reader_that_saw_a_batch_whose_fdatasync_failed_serves_only_acknowledged_data(
    store, monkeypatch: pytest.MonkeyPatch, reader_wrote_last: bool
) -> None:
    """Readers take no lock, so one can index a batch between the writer's write() and
    its failed fdatasync. The writer then cuts the batch and appends the next one at the
    same offset with the same sequence numbers. The reader must not go on serving the
    unacknowledged checkpoint (least of all with the next batch's bytes), and must not
    be wedged: it serves what was acknowledged, including the next put. Also when the
    reader itself appended (and synced) the record before that batch: it spares the
    check of its own last record, not of one another writer appended after it."""
    path, reflog = store
    writer = JsonlSaver(path)
    reader = JsonlSaver(path)
    tid = reflog.thread_id
    assert reader.get_tuple(config(tid)) is not None
    latest = reflog.acked[-1][1]["latest"][""]
    if reader_wrote_last:
        reader.put_writes(config(tid, "", latest.checkpoint["id"]), [("m", ["from the reader"])], "task-r")
    versions = dict(latest.checkpoint["channel_versions"])
    seen = {}

    def rule(name: str, p: str, args: tuple) -> Any:
        if name == "fdatasync" and p.endswith(LOG) and "saw" not in seen:
            seen["saw"] = reader.get_tuple(config(tid))  # the reader looks mid-append
            return eio()
        return None

    def put(cid: str, item: str) -> dict:
        values = {
            **latest.checkpoint["channel_values"],
            "m": latest.checkpoint["channel_values"]["m"] + [item],
        }
        nv = {"m": "9" * 32 + ".0." + item}  # same length for both puts: the records line up
        writer.put(config(tid, "", latest.checkpoint["id"]),
                   make_checkpoint(cid, values, {**versions, **nv}), {}, nv)
        return values

    monkeypatch.setattr(files_module, "os", FaultyOS(rule))
    with pytest.raises(DurabilityError):
        put(FAILED_ID, "AAAA")
    monkeypatch.setattr(files_module, "os", os)
    assert seen["saw"].checkpoint["id"] == FAILED_ID  # the reader did see the batch
    good_values = put(NEXT_ID, "BBBB")
    got = reader.get_tuple(config(tid))
    assert got.checkpoint["id"] == NEXT_ID, (
        f"the reader serves checkpoint {got.checkpoint['id']} with values {got.checkpoint['channel_values']}"
    )
    assert got.checkpoint["channel_values"] == good_values
    assert reader.get_tuple(config(tid, "", FAILED_ID)) is None
