"""Crash battery 12: security and refusals.

Hostile thread ids never escape the store or collide; planted symlinks (for the log and
for its companion files) are refused and never written through; a store writable by
others is refused; files are 0600 and directories 0700 even under umask 000; a log the
saver refused stays refused (later calls on the same saver must not serve or append to
it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import (
    ConfigError,
    ForeignFileError,
    FormatVersionError,
    JsonlSaver,
    StoreError,
)
from langgraph_jsonl_checkpoint.disk.framing import frame
from langgraph_jsonl_checkpoint.disk.store import thread_file_stem
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _put(
    saver: JsonlSaver, tid: str, cid: str = cp_id(1), value: object = 1, parent: str | None = None
) -> None:
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config(tid, "", parent), make_checkpoint(cid, {"m": value}, v), {}, v)


HOSTILE_IDS = [
    "../escape", "../../etc/passwd", "/abs/path", "a/b/c", "..", ".", "...", "STORE.json", "threads",
    "x.lock", "x.jsonl", "x.idx", "nul\0byte", "new\nline", "tab\tid", " spaced ", "x" * 10_000,
    "Case", "case", "CASE", "ｃａｓｅ", "İstanbul", "istanbul", "straße", "strasse", "ﬁle", "file",
    "🙂" * 30, "CON", "nul", "-rf", "*", "$(touch pwned)", "%2e%2e%2f", "\\..\\windows",
]


def test_hostile_thread_ids_stay_inside_and_do_not_collide(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    for n, tid in enumerate(HOSTILE_IDS):
        _put(saver, tid, value=n)
    names = sorted(os.listdir(store / "threads"))
    logs = [n for n in names if n.endswith(".jsonl")]
    assert len(logs) == len(HOSTILE_IDS)
    assert len({thread_file_stem(t) for t in HOSTILE_IDS}) == len(HOSTILE_IDS)
    assert all(len(n) < 100 and "/" not in n and "\0" not in n and not n.startswith(".") for n in names)
    assert sorted(os.listdir(tmp_path)) == ["s"]
    assert sorted(os.listdir(store)) == ["STORE.json", "threads", "tmp"]
    fresh = JsonlSaver(store)
    for n, tid in enumerate(HOSTILE_IDS):
        assert fresh.get_tuple(config(tid)).checkpoint["channel_values"]["m"] == n
    assert sorted(fresh.store.thread_ids()) == sorted(HOSTILE_IDS)
    for tid in HOSTILE_IDS[::3]:
        fresh.delete_thread(tid)
    assert sorted(JsonlSaver(store).store.thread_ids()) == sorted(set(HOSTILE_IDS) - set(HOSTILE_IDS[::3]))


@pytest.mark.parametrize("tid", ["\ud800", "a\udcffb"])
def test_unencodable_thread_id_is_a_clear_error_and_leaves_nothing(tmp_path: Path, tid: str) -> None:
    """A lone surrogate cannot be written into the (UTF-8 JSON) header: refuse it with a
    ConfigError saying so, before touching the store."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    with pytest.raises(ConfigError, match="lone surrogate"):
        _put(saver, tid)
    assert os.listdir(store / "threads") == []


# -- planted symlinks -------------------------------------------------------------------


@pytest.fixture
def planted(tmp_path: Path):
    """A store with thread 't' written, and a log of 't' kept outside the store."""
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    _put(saver, "t", value="original")
    saver.close()
    files = ThreadFiles.of(store, "t")
    outside = tmp_path / "outside"
    outside.mkdir()
    return store, files, outside


def test_symlinked_log_is_refused_and_not_written_through(planted) -> None:
    store, files, outside = planted
    target = outside / "t.jsonl"
    shutil.move(files.log, target)
    os.unlink(files.idx)
    os.symlink(target, files.log)
    before = target.read_bytes()
    saver = JsonlSaver(store)
    with pytest.raises(ForeignFileError, match="symbolic link"):
        saver.get_tuple(config("t"))
    with pytest.raises(ForeignFileError, match="symbolic link"):
        _put(saver, "t", cp_id(2), "through the link", cp_id(1))
    with pytest.raises(ForeignFileError, match="symbolic link"):
        saver.put_writes(config("t", "", cp_id(1)), [("m", "x")], "task")
    with pytest.raises(ForeignFileError, match="symbolic link"):
        list(saver.list(None))
    with pytest.raises(ForeignFileError, match="symbolic link"):
        list(JsonlSaver(store).list(None))
    assert target.read_bytes() == before
    assert os.path.islink(files.log)


@pytest.mark.parametrize("companion", ["lock", "idx", "quarantine"])
def test_symlinked_companion_file_is_never_written_through(planted, companion: str) -> None:
    """A link planted for the lock, sidecar or quarantine file must not be followed for
    writing; the saver refuses with a ForeignFileError naming it, or works around it."""
    store, files, outside = planted
    link = getattr(files, companion)
    if os.path.exists(link):
        os.unlink(link)
    target = outside / f"victim.{companion}"
    target.write_bytes(b"precious\n")
    os.symlink(target, link)
    with open(files.log, "ab") as f:
        f.write(b'{"t":"torn')  # so the next put cuts a tail into the quarantine file
    errors = []
    saver = JsonlSaver(store)
    for op in ("get", "put", "writes", "close"):
        try:
            if op == "get":
                saver.get_tuple(config("t"))
            elif op == "put":
                _put(saver, "t", cp_id(2), "after the link", cp_id(1))
            elif op == "writes":
                saver.put_writes(config("t", "", cp_id(1)), [("m", "x")], "task")
            else:
                saver.close()
        except ForeignFileError as exc:  # refused, naming the planted link
            if "symbolic link" not in str(exc):
                errors.append(f"{op}: ForeignFileError without saying why: {exc}")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{op}: {type(exc).__name__}: {exc}")
    assert target.read_bytes() == b"precious\n", "a planted symlink was written through"
    assert not errors, errors


def test_symlinked_threads_directory_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "s"
    JsonlSaver(store).close()
    elsewhere = tmp_path / "elsewhere"
    shutil.move(store / "threads", elsewhere)
    os.symlink(elsewhere, store / "threads")
    with pytest.raises(StoreError, match="symbolic link"):
        JsonlSaver(store)


# -- permissions -----------------------------------------------------------------------


@pytest.mark.parametrize("which", ["store", "threads"])
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702, 0o1777])
def test_store_writable_by_others_is_refused(tmp_path: Path, which: str, mode: int) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    _put(saver, "t")
    saver.close()
    os.chmod(store if which == "store" else store / "threads", mode)
    with pytest.raises(StoreError, match="chmod 700"):
        JsonlSaver(store)


def test_umask_000_still_gives_0600_files_and_0700_directories(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = tmp_path / "s"
        saver = JsonlSaver(store, snapshot_every=2)
        parent = None
        for i in range(5):
            _put(saver, "t", cp_id(i), list(range(i + 1)), parent)
            parent = cp_id(i)
        saver.put_writes(config("t", "", parent), [("m", 1)], "task")
        files = ThreadFiles.of(store, "t")
        with open(files.log, "ab") as f:
            f.write(b"\0" * 10)
        _put(saver, "t", cp_id(9), [1], parent)  # cuts the tail: quarantine file
        saver.copy_thread("t", "copy")
        saver.prune(["t"])
        saver.delete_thread("copy")
        _put(saver, "copy", cp_id(10), [2])  # a new run (older ids are refused after a delete)
        saver.close()
        JsonlSaver(store).close()
    finally:
        os.umask(old)
    assert os.path.exists(files.quarantine)
    seen = 0
    for root, dirs, fnames in os.walk(store):
        for d in dirs:
            assert stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode) == 0o700, d
        for f in fnames:
            seen += 1
            assert stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode) == 0o600, f
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o700
    assert seen >= 6


# -- a refused log stays refused ---------------------------------------------------------


def _plant(store: Path, files: ThreadFiles, how: str) -> None:
    if how == "other-thread":
        other = ThreadFiles.of(store, "other")
        shutil.copy(other.log, files.log)
    elif how == "future-format":
        lines = Path(files.log).read_bytes().splitlines(keepends=True)
        header = json.loads(lines[0])
        header.pop("c")
        header["format"] = 99
        with open(files.log, "wb") as f:
            f.write(frame(header) + b"".join(lines[1:]))
    elif how == "not-a-header":
        lines = Path(files.log).read_bytes().splitlines(keepends=True)
        with open(files.log, "wb") as f:
            f.write(b"".join(lines[1:]))


@pytest.mark.parametrize("how", ["other-thread", "future-format", "not-a-header"])
def test_a_refused_log_stays_refused_on_the_same_saver(tmp_path: Path, how: str) -> None:
    store = tmp_path / "s"
    setup = JsonlSaver(store)
    _put(setup, "t", cp_id(1), "mine")
    _put(setup, "t", cp_id(2), "mine too", cp_id(1))
    _put(setup, "other", cp_id(1), "someone else's data")
    setup.close()
    files = ThreadFiles.of(store, "t")
    os.unlink(files.idx)
    _plant(store, files, how)
    planted_bytes = Path(files.log).read_bytes()
    expected = FormatVersionError if how == "future-format" else ForeignFileError
    saver = JsonlSaver(store)
    with pytest.raises(expected):
        saver.get_tuple(config("t"))
    # the same error every time, on reads and writes alike
    with pytest.raises(expected):
        saver.get_tuple(config("t"))  # the same saver, again
    with pytest.raises(expected):
        list(saver.list(config("t")))
    with pytest.raises(expected):
        _put(saver, "t", cp_id(3), "appended", cp_id(2))
    with pytest.raises(expected):
        saver.put_writes(config("t", "", cp_id(2)), [("m", "w")], "task")
    assert Path(files.log).read_bytes() == planted_bytes, "the refused file was written to"
