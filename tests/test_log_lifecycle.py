"""A thread log's whole-file life: generations, deletion's tombstone, what a new process
finds on disk.

Written for mutants of ``disk/log.py`` and ``disk/generations.py`` that survived the
suite (stress/mutation.py): the tombstone was only ever checked by the saver that wrote
it, and no test read the generation numbers a rewrite installs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver, ThreadDeletedError
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import AFTER_DELETE, ThreadFiles


def _put(saver: JsonlSaver, thread: str, i: int, parent: dict | None = None) -> dict:
    v = {"m": saver.get_next_version(None, None)}
    return saver.put(parent or config(thread), make_checkpoint(cp_id(i), {"m": [f"v{i}"]}, v), {}, v)


def _header(path: str) -> dict:
    with open(path, "rb") as f:
        return json.loads(f.readline())


def test_a_fresh_saver_refuses_late_writes_to_a_deleted_thread(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    _put(saver, "t", 1)
    cfg = _put(saver, "t", 2, config("t", checkpoint_id=cp_id(1)))
    saver.delete_thread("t")
    saver.close()
    files = ThreadFiles.of(tmp_path / "s", "t")
    assert files.left_on_disk() <= AFTER_DELETE and ".deleted" in files.left_on_disk()
    with open(files.log[: -len(".jsonl")] + ".deleted", "rb") as f:
        tombstone = json.loads(f.readline())
    # As docs/format.md gives it: {"t":"deleted","seq":0,"thread":<id>,"upto":<checkpoint id>,"c":…}
    assert list(tombstone) == ["t", "seq", "thread", "upto", "c"]
    assert (tombstone["t"], tombstone["seq"], tombstone["thread"], tombstone["upto"]) == (
        "deleted", 0, "t", cp_id(2))
    again = JsonlSaver(tmp_path / "s")
    with pytest.raises(ThreadDeletedError, match="'t'"):
        again.put_writes(cfg, [("m", "late")], "late-task")
    with pytest.raises(ThreadDeletedError, match="'t'"):  # the put of cp 2 landing late
        _put(again, "t", 2, config("t", checkpoint_id=cp_id(1)))
    assert again.get_tuple(config("t")) is None
    # A checkpoint continuing a deleted one is a late write too (the run that was going
    # when the thread was deleted): it would bring the deleted values back.
    with pytest.raises(ThreadDeletedError, match="'t'"):
        _put(again, "t", 3, cfg)
    assert again.get_tuple(config("t")) is None
    # A new run (a checkpoint with no parent) starts the thread again; after it, the
    # late write is still refused, and the new run's own checkpoints are not.
    _put(again, "t", 3)
    assert again.get_tuple(config("t")).config["configurable"]["checkpoint_id"] == cp_id(3)
    with pytest.raises(ThreadDeletedError, match="'t'"):
        _put(again, "t", 4, cfg)
    with pytest.raises(ThreadDeletedError, match="'t'"):
        again.put_writes(cfg, [("m", "late")], "late-task")
    _put(again, "t", 5, config("t", checkpoint_id=cp_id(3)))
    assert [t.checkpoint["id"] for t in again.list(config("t"))] == [cp_id(5), cp_id(3)]
    again.close()


def test_each_rewrite_installs_the_next_generation(tmp_path: Path) -> None:
    saver = JsonlSaver(tmp_path / "s")
    parent = None
    for i in range(1, 4):
        parent = _put(saver, "t", i, parent)
    files = ThreadFiles.of(tmp_path / "s", "t")
    assert _header(files.log)["gen"] == 1
    saver.compact("t")
    assert _header(files.log)["gen"] == 2
    saver.prune(["t"], strategy="keep_latest")
    assert _header(files.log)["gen"] == 3
    saver.close()
    fresh = JsonlSaver(tmp_path / "s")
    assert fresh.get_tuple(config("t")).config["configurable"]["checkpoint_id"] == cp_id(3)
    _put(fresh, "t", 4, fresh.get_tuple(config("t")).config)
    assert _header(files.log)["gen"] == 3
    fresh.compact("t")
    assert _header(files.log)["gen"] == 4
    fresh.close()


@pytest.mark.parametrize("handle", ["_wfd", "_rfd"])
def test_ctrl_c_as_a_log_handle_is_closed_leaves_no_stale_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handle: str
) -> None:
    """A KeyboardInterrupt (Ctrl-C) delivered as delete_thread closed the log's write or
    read handle (the signal handler runs as close() returns) left the closed descriptor's
    number recorded: the next delete_thread or run of that thread in the process failed
    with 'OSError: [Errno 9] Bad file descriptor', and once the number was reused by a
    file opened meanwhile, closing it again would close that other file. The handle is
    forgotten before it is closed."""
    import langgraph_jsonl_checkpoint.disk.files as files_module

    saver = JsonlSaver(tmp_path / "s")
    _put(saver, "t", 1)
    log = saver.store.thread_log("t")
    target = getattr(log, handle)
    assert target is not None
    real = files_module.os

    class CtrlC:
        def __getattr__(self, name: str):
            attr = getattr(real, name)
            if name != "close":
                return attr

            def interrupted(fd: int) -> None:
                attr(fd)
                if fd == target:
                    raise KeyboardInterrupt  # the signal handler runs as the call returns

            return interrupted

    monkeypatch.setattr(files_module, "os", CtrlC())
    with pytest.raises(KeyboardInterrupt):
        saver.delete_thread("t")
    monkeypatch.setattr(files_module, "os", real)
    assert getattr(log, handle) is None
    saver.delete_thread("t")
    _put(saver, "t", 3)
    assert saver.get_tuple(config("t")).checkpoint["id"] == cp_id(3)
    saver.close()


def test_a_new_thread_gets_no_index_file_until_it_has_records_to_index(tmp_path: Path) -> None:
    """A thread's first put creates its log (header, then the checkpoint) but no sidecar:
    one holding the header alone indexes nothing, and creating it cost every new thread
    a file made and renamed. What the saver answers is the same before and after a
    close (which writes the sidecar), and in a fresh process without one (a crash)."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    files = ThreadFiles.of(store, "t")
    _put(saver, "t", 1)
    assert files.left_on_disk() <= {".jsonl", ".lock", ".run"} and ".idx" not in files.left_on_disk()
    before = saver.get_tuple(config("t"))
    crashed = JsonlSaver(store)  # another process, the writer never closed
    assert crashed.get_tuple(config("t")) == before
    crashed.close()
    _put(saver, "t", 2, config("t", checkpoint_id=cp_id(1)))
    saver.close()
    assert ".idx" in files.left_on_disk()
    fresh = JsonlSaver(store)
    got = fresh.get_tuple(config("t"))
    assert got is not None and got.checkpoint["id"] == cp_id(2)
    assert [t.checkpoint["id"] for t in fresh.list(config("t"))] == [cp_id(2), cp_id(1)]
    fresh.close()


def test_a_thread_created_again_drops_the_index_file_of_its_deleted_log(tmp_path: Path) -> None:
    """The sidecar of a deleted thread's log, if one was left (a crash between the two
    unlinks), never describes the new log: it is removed as the new log is created."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    files = ThreadFiles.of(store, "t")
    for i in (1, 2, 3):
        _put(saver, "t", i, config("t", checkpoint_id=cp_id(i - 1)) if i > 1 else None)
    saver.close()
    stale = Path(files.idx).read_bytes()
    saver = JsonlSaver(store)
    saver.delete_thread("t")
    Path(files.idx).write_bytes(stale)  # left behind
    _put(saver, "t", 7)
    assert not Path(files.idx).exists()
    got = saver.get_tuple(config("t"))
    assert got is not None and got.checkpoint["id"] == cp_id(7)
    assert [t.checkpoint["id"] for t in saver.list(config("t"))] == [cp_id(7)]
    saver.close()


def test_a_thread_deleted_takes_its_checkpoints_back_from_a_backup(tmp_path: Path) -> None:
    """docs/format.md: a checkpoint with no parent starts a deleted thread again. One
    whose own id was older than the deleted log's newest was refused, telling the user
    to "pass a config without a checkpoint_id", which the call did: a thread restored
    from a backup (its checkpoints listed before ``delete_thread``, put back oldest
    first), or seeded from an older thread's checkpoint, could not be written. InMemorySaver
    takes both; a late write continuing a deleted checkpoint is still refused."""
    from langgraph.checkpoint.memory import InMemorySaver

    seen = []
    for saver in (InMemorySaver(), JsonlSaver(tmp_path / "s")):
        first = _put(saver, "t", 1)
        late = _put(saver, "t", 2, first)
        backup = list(saver.list(config("t")))[::-1]
        saver.delete_thread("t")
        if isinstance(saver, JsonlSaver):  # a run still going: its next save is refused
            with pytest.raises(ThreadDeletedError, match="'t'"):
                _put(saver, "t", 3, late)
        for t in backup:
            versions = t.checkpoint["channel_versions"]
            saver.put(t.parent_config or config("t"), t.checkpoint, t.metadata, versions)
        seen.append([t.checkpoint["channel_values"] for t in saver.list(config("t"))])
        saver.delete_thread("t")
        _put(saver, "t", 1)  # a root put of an old id: the thread starts again from it
        seen.append([t.checkpoint["id"] for t in saver.list(config("t"))])
    assert seen[0] == seen[2] == [{"m": ["v2"]}, {"m": ["v1"]}]
    assert seen[1] == seen[3] == [cp_id(1)]
