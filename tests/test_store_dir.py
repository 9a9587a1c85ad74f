"""The store directory: an empty directory made private, leftovers of dead processes
swept at open, foreign and unreadable files named with what to do, a marker from a newer
release refused.

Written for mutants of ``disk/store.py`` that survived the suite (stress/mutation.py).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import FormatVersionError, JsonlCheckpointError, JsonlSaver, StoreError
from langgraph_jsonl_checkpoint.disk import store as store_mod
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.read_only_fs import unwritable

DEAD_PID = 2**22 + 12345  # above the kernel's pid_max default: never a live process


def _put(saver: JsonlSaver, thread: str) -> None:
    v = {"m": saver.get_next_version(None, None)}
    saver.put(config(thread), make_checkpoint(cp_id(1), {"m": [1]}, v), {}, v)


def test_an_empty_directory_becomes_a_private_store(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    d.chmod(0o755)
    JsonlSaver(d).close()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert (d / store_mod.MARKER).exists()


def test_temp_files_of_dead_processes_are_swept_at_open(tmp_path: Path) -> None:
    d = tmp_path / "s"
    saver = JsonlSaver(d)
    _put(saver, "t")
    saver.close()
    tmp = d / store_mod.TEMP_DIR
    dead, live = tmp / f"t.compact.{DEAD_PID}-1", tmp / f"t.compact.{os.getpid()}-1"
    marker_dead = d / f"{store_mod.MARKER_TEMP}.{DEAD_PID}-7"
    marker_live = d / f"{store_mod.MARKER_TEMP}.{os.getpid()}-7"
    for p in (dead, live, marker_dead, marker_live):
        p.write_bytes(b"partial")
    again = JsonlSaver(d)
    assert again.get_tuple(config("t")) is not None
    assert not dead.exists() and not marker_dead.exists()
    assert live.exists() and marker_live.exists()  # this process is alive: its files stay
    again.close()


def test_foreign_and_unreadable_thread_files_are_named_with_what_to_do(tmp_path: Path) -> None:
    d = tmp_path / "s"
    saver = JsonlSaver(d)
    _put(saver, "t")
    threads = d / store_mod.THREADS_DIR
    (threads / "notes.jsonl").write_text('{"hello": 1}\n')
    os.symlink(tmp_path / "nowhere", threads / "gone.jsonl")
    found = {os.path.basename(f.path): f for f in saver.store.catalog()}
    assert found[[n for n in found if n not in ("notes.jsonl", "gone.jsonl")][0]].thread_id == "t"
    notes, gone = found["notes.jsonl"], found["gone.jsonl"]
    assert notes.thread_id is None and notes.path == str(threads / "notes.jsonl")
    assert str(notes.error) == (f"{threads / 'notes.jsonl'} is not a langgraph-jsonl-checkpoint log"
                                " (no header record). Move it out of the store directory.")
    assert gone.thread_id is None and gone.path == str(threads / "gone.jsonl")
    assert str(gone.error).startswith(f"cannot open {threads / 'gone.jsonl'} (")
    assert str(gone.error).endswith(
        "); the store only holds regular files it created. Remove or fix that file.")
    saver.close()


def test_a_directory_or_fifo_named_like_a_log_is_an_entry_with_an_error(tmp_path: Path) -> None:
    """Not a traceback (a directory opens, then cannot be read) nor a hang (a FIFO's open
    waits for a writer): the catalog names each, with what to do, and lists the others."""
    d = tmp_path / "s"
    saver = JsonlSaver(d)
    _put(saver, "t")
    threads = d / store_mod.THREADS_DIR
    (threads / "x-0.jsonl").mkdir()
    os.mkfifo(threads / "y-0.jsonl")
    listed: list[store_mod.ThreadFile] = []
    raised: list[BaseException] = []

    def list_catalog() -> None:
        try:
            listed.extend(saver.store.catalog())
        except BaseException as exc:  # reported below, not as a thread's unhandled error
            raised.append(exc)

    reader = threading.Thread(target=list_catalog, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # let the blocked open go before failing
        os.close(os.open(threads / "y-0.jsonl", os.O_RDWR | os.O_NONBLOCK))
        pytest.fail("listing the store waited on a FIFO")
    assert not raised, raised
    found = {os.path.basename(f.path): f for f in listed}
    assert len(found) == 3 and {"x-0.jsonl", "y-0.jsonl"} <= set(found)
    for name, kind in (("x-0.jsonl", "a directory"), ("y-0.jsonl", "a FIFO")):
        assert found[name].thread_id is None
        assert str(found[name].error) == (
            f"{threads / name} is not a regular file ({kind}); the store only holds regular files "
            "it created. Move it out of the store directory.")
    assert [f.thread_id for f in found.values() if f.error is None] == ["t"]
    saver.close()


def test_a_store_of_a_newer_format_is_refused_with_the_upgrade_to_make(tmp_path: Path) -> None:
    d = tmp_path / "s"
    JsonlSaver(d).close()
    marker = d / store_mod.MARKER
    data = json.loads(marker.read_text())
    data["format"] = store_mod.STORE_FORMAT + 1
    marker.write_text(json.dumps(data))
    with pytest.raises(FormatVersionError) as err:
        JsonlSaver(d)
    assert str(err.value).endswith(
        f"reads store format {store_mod.STORE_FORMAT}. The store was written by a newer release: upgrade"
        " the package (pip install -U langgraph-jsonl-checkpoint) to open it.")


def test_a_store_that_cannot_be_written_is_refused_at_open_naming_the_way_out(tmp_path: Path) -> None:
    """A writable saver on a store it cannot write (a read-only mount, another user's
    files) used to open, read, and fail at the first run with a bare ``OSError`` naming
    an internal lock file; it is refused at open, saying what to do, and the store
    still opens read-only."""
    d = tmp_path / "s"
    saver = JsonlSaver(d)
    _put(saver, "t-1")
    saver.close()
    with unwritable(d) as how:
        with pytest.raises(StoreError) as err:
            JsonlSaver(d)
        text = str(err.value)
        assert str(d) in text and "cannot be written" in text and "read_only=True" in text, (how, text)
        reader = JsonlSaver(d, read_only=True)
        assert reader.get_tuple(config("t-1")) is not None
        reader.close()


def test_a_store_that_stops_being_writable_fails_the_run_with_a_clear_error(tmp_path: Path) -> None:
    """A file system remounted read-only under a running app (as ext4 does on errors):
    a run on an existing thread or a new one fails with the package's error naming the
    thread and what to do, and the saver still reads what was acknowledged."""
    from langchain_core.messages import HumanMessage

    from tests.harness.flow_graphs import build_agent_graph

    d = tmp_path / "s"
    saver = JsonlSaver(d, concurrent_runs="hold")  # as the server's factory opens it
    graph = build_agent_graph().compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("what is 1 + 2?")]}, {"configurable": {"thread_id": "t-1"}})
    with unwritable(d):
        for thread in ("t-1", "t-new"):
            cfg = {"configurable": {"thread_id": thread}}
            with pytest.raises(JsonlCheckpointError) as err:
                graph.invoke({"messages": [HumanMessage("what is 2 + 2?")]}, cfg)
            text = str(err.value)
            assert f"thread {thread!r}" in text and "not writable" in text, text
            assert "read_only=True" in text, text
        assert graph.get_state({"configurable": {"thread_id": "t-1"}}).values["messages"]
    saver.close()


def test_a_new_store_under_an_unwritable_folder_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    parent = tmp_path / "p"
    parent.mkdir()
    with unwritable(parent) as how:
        for d in (parent / "s", parent):
            with pytest.raises(StoreError) as err:
                JsonlSaver(d)
            text = str(err.value)
            assert str(parent) in text, text
            if how == "read-only mount" or d == parent:  # the store's own directory: make it writable
                assert "cannot be written" in text, text
            else:  # not permitted to make it there: elsewhere
                assert f"{d} cannot be created" in text and "regular, writable file system" in text, text


@pytest.mark.parametrize("where", ["under /sys", "EACCES", "EROFS"])
def test_a_store_that_may_not_be_made_there_says_to_choose_another_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """``JsonlSaver("/sys/x")`` (EPERM, even for root) was told to remount the file system
    read-write or run as the store's owner: advice for a read-only mount, which /sys is
    not. Not permitted to make the directory there (EPERM, EACCES), it is told to choose
    a path on a regular, writable file system; a read-only file system (EROFS) keeps its
    advice."""
    from langgraph_jsonl_checkpoint.cli import main

    source = tmp_path / "source"
    with JsonlSaver(source):
        pass
    path = "/sys/lgj-store" if where == "under /sys" else str(tmp_path / "s")
    code = getattr(errno, where, 0)
    if where == "under /sys":
        try:  # what this machine says (root: EPERM; ENOENT where /sys takes no name at all)
            os.mkdir(path)
        except OSError as exc:
            code = exc.errno or 0
        else:
            os.rmdir(path)
            raise AssertionError(f"{path} could be made: no refusal to test here")
    else:
        _makedirs_fails(monkeypatch, code)
    with pytest.raises(JsonlCheckpointError) as caught:
        JsonlSaver(path)
    text = str(caught.value)
    assert path in text and os.strerror(code) in text, text
    if code == errno.EROFS:
        assert "remount the file system read-write" in text, text
    elif code == errno.ENOENT:
        assert "takes no new directories" in text and "remount" not in text, text
    else:
        assert code in (errno.EPERM, errno.EACCES), text
        assert f"JsonlSaver path {path} cannot be created" in text, text
        assert "regular, writable file system" in text and "remount" not in text, text
        assert "owns the store" not in text, text  # there is no store yet
    capsys.readouterr()
    assert main(["import", str(source), path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and path in err, err
    assert ("remount" in err) == (code == errno.EROFS), err


def test_a_store_path_starting_with_a_tilde_is_in_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``JsonlSaver("~/checkpoints")``, or ``LANGGRAPH_JSONL_STORE=~/checkpoints`` from a
    ``.env`` file (nothing expands it there): the store was made in a directory named
    ``~`` under the working directory, where ``langgraph-jsonl threads ~/checkpoints``
    (the shell expanding it) found no store. Now ``~`` is the home directory, as the
    shell has it."""
    from langgraph_jsonl_checkpoint.cli import main
    from langgraph_jsonl_checkpoint.migrate import copy_threads

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    with JsonlSaver("~/checkpoints") as saver:
        assert saver.store.path == str(home / "checkpoints")
        saver.put(config("t"), make_checkpoint(cp_id(1), {}, {}), {}, {})
    assert not (cwd / "~").exists()
    monkeypatch.setenv("LANGGRAPH_JSONL_STORE", "~/checkpoints")
    assert main(["threads", "--json"]) == 0
    assert [row["thread_id"] for row in json.loads(capsys.readouterr().out)] == ["t"]
    assert copy_threads("~/checkpoints", "~/copy").ok
    assert main(["import", "~/checkpoints", "~/imported"]) == 0
    assert (home / "copy" / "STORE.json").is_file() and (home / "imported" / "STORE.json").is_file()
    assert not (cwd / "~").exists()


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_file_system_without_file_locks_is_refused_at_open_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """A store on a mount without ``flock`` (some NFS, SMB and container volume mounts):
    the first put failed with a bare ``OSError: [Errno 37] No locks available`` naming
    neither the store nor what to do. Opening it to write now says so; read-only still
    opens (a reader takes no lock)."""
    import fcntl

    JsonlSaver(tmp_path / "s").close()

    def no_locks(fd: int, how: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(StoreError, match="file locks") as caught:
        JsonlSaver(tmp_path / "s")
    assert str(tmp_path / "s") in str(caught.value) and "local file system" in str(caught.value)
    with pytest.raises(StoreError, match="file locks"):
        JsonlSaver(tmp_path / "new")
    with JsonlSaver(tmp_path / "s", read_only=True) as saver:
        assert list(saver.list(None)) == []


@pytest.mark.parametrize("damage", ["deleted", "cut"])
def test_a_store_whose_marker_was_lost_says_how_to_recreate_it(tmp_path: Path, damage: str) -> None:
    """STORE.json deleted (or cut short) beside the threads it marked: the error said to
    point JsonlSaver at an empty directory, or to "restore it" without saying what it
    holds. It names the threads found and the marker's content; writing that content
    back opens the store with every checkpoint."""
    d = tmp_path / "s"
    with JsonlSaver(d) as saver:
        _put(saver, "t1")
    marker = d / store_mod.MARKER
    original = marker.read_bytes()
    if damage == "deleted":
        marker.unlink()
    else:
        marker.write_bytes(original[:20])
    with pytest.raises(StoreError) as caught:
        JsonlSaver(d)
    said = str(caught.value)
    assert "1 thread log" in said and "If this is your store" in said and "is not empty" not in said
    assert "'{\"store\": \"langgraph-jsonl-checkpoint\", \"format\": 1}'" in said and str(marker) in said
    assert json.loads(said.split("'")[1]) == json.loads(original)
    marker.write_bytes(original)
    with JsonlSaver(d) as saver:
        assert saver.get_tuple(config("t1")) is not None


@pytest.mark.parametrize("edited", [{"store": "langgraph-jsonl", "format": 1},
                                    {"store": "langgraph-jsonl-checkpoint", "format": "1"},
                                    {"store": "langgraph-jsonl-checkpoint", "format": 0}])
def test_an_edited_marker_says_what_to_write_back(tmp_path: Path, edited: dict) -> None:
    """STORE.json edited by hand: the error said only that it was not a marker, or that
    the store was written by a newer release (upgrade the package) for a format of "1"
    or 0. It names what the marker holds and says what to write back."""
    d = tmp_path / "s"
    with JsonlSaver(d) as saver:
        _put(saver, "t1")
    marker = d / store_mod.MARKER
    original = marker.read_bytes()
    marker.write_text(json.dumps(edited))
    with pytest.raises(StoreError) as caught:
        JsonlSaver(d)
    said = str(caught.value)
    assert not isinstance(caught.value, FormatVersionError) and "upgrade" not in said
    assert "If this is your store" in said and json.dumps(edited) in said
    marker.write_bytes(original)
    with JsonlSaver(d) as saver:
        assert saver.get_tuple(config("t1")) is not None


def test_a_store_moved_while_open_is_named_as_gone_and_keeps_what_was_written(tmp_path: Path) -> None:
    """The store directory renamed (mv) while a saver had it open: the next put raised a
    bare FileNotFoundError naming a `.run` or `.lock` file. It says the store is gone
    from where it was opened, what to do, and nothing acknowledged before is lost."""
    d, moved = tmp_path / "s", tmp_path / "moved"
    with JsonlSaver(d) as saver:
        _put(saver, "t1")
        d.rename(moved)
        for thread in ("t1", "t3"):
            v = {"m": saver.get_next_version(None, None)}
            with pytest.raises(StoreError) as caught:
                saver.put(config(thread), make_checkpoint(cp_id(2), {"m": [2]}, v), {}, v)
            said = str(caught.value)
            assert f"thread {thread!r}" in said and str(d) in said and "moved or deleted" in said
    assert not d.exists()
    with JsonlSaver(moved) as saver:
        assert saver.get_tuple(config("t1")).checkpoint["id"] == cp_id(1)
        assert saver.get_tuple(config("t3")) is None


def test_a_store_copied_with_a_loose_umask_names_every_directory_to_fix_at_once(tmp_path: Path) -> None:
    """A store copied with `cp -r` under umask 002 (its folders group-writable): the error
    named one folder and its chmod; after running it the next open named the next
    folder, and then the next. It names them all in one command, which opens the store."""
    d = tmp_path / "s"
    with JsonlSaver(d) as saver:
        _put(saver, "t1")
    for sub in (d, d / "threads", d / "tmp"):
        sub.chmod(0o770)
    with pytest.raises(StoreError) as caught:
        JsonlSaver(d)
    said = str(caught.value)
    command = said.split("`")[1]
    assert command == f"chmod 700 {d} {d / 'threads'} {d / 'tmp'}"
    os.system(command)
    with JsonlSaver(d) as saver:
        assert saver.get_tuple(config("t1")) is not None


def test_a_fifo_where_a_threads_log_goes_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Opening a FIFO waits for a writer: a read or a put of the thread whose log name a
    FIFO took must say what is wrong at once, as the catalog does."""
    d = tmp_path / "s"
    saver = JsonlSaver(d)
    _put(saver, "t")
    log = saver.store.thread_log("t").paths
    saver.close()
    for derived in (log.head, log.index):
        Path(derived).unlink(missing_ok=True)
    os.unlink(log.log)
    os.mkfifo(log.log)
    raised: list[BaseException] = []

    def use() -> None:
        for act in ("read", "put"):
            fresh = JsonlSaver(d)
            try:
                fresh.get_tuple(config("t")) if act == "read" else _put(fresh, "t")
            except BaseException as exc:  # checked below, not a thread's unhandled error
                raised.append(exc)
            fresh.close()

    worker = threading.Thread(target=use, daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # let the blocked open go before failing
        os.close(os.open(log.log, os.O_RDWR | os.O_NONBLOCK))
        pytest.fail("a read of the thread waited on a FIFO")
    assert len(raised) == 2, raised
    for exc in raised:
        assert isinstance(exc, JsonlCheckpointError), exc
        assert str(exc).startswith(f"thread 't': {log.log} is not a regular file (a FIFO)"), exc
        assert "Move it out of the store directory" in str(exc), exc


@pytest.mark.parametrize("where", ["under /proc", "under /proc/self", "name too long", "symlink loop", "NUL"])
def test_a_store_path_that_cannot_be_made_is_a_clear_error(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``JsonlSaver("/proc/nope/x")`` raised a bare ``FileNotFoundError`` naming
    ``/proc/nope`` (and a name over 255 bytes a bare ``OSError``, a symlink loop
    ``FileExistsError``, a NUL ``ValueError``): now a ``ConfigError`` naming the store's
    path and what to do, from the saver and from a command that makes a store (exit
    status 2, one line, no traceback). Nothing is made."""
    from langgraph_jsonl_checkpoint import ConfigError
    from langgraph_jsonl_checkpoint.cli import main

    (tmp_path / "loop").symlink_to("loop")
    path, said = {
        "under /proc": ("/proc/nope/x", "virtual file system"),
        "under /proc/self": ("/proc/self/lgj-store", "virtual file system"),
        "name too long": (str(tmp_path / ("a" * 300) / "x"), "too long"),
        "symlink loop": (str(tmp_path / "loop" / "x"), "loop of symbolic links"),
        "NUL": (str(tmp_path / "a\0b"), "NUL character"),
    }[where]
    with pytest.raises(ConfigError) as caught:
        JsonlSaver(path)
    text = str(caught.value)
    assert said in text and (path in text or repr(path) in text) and "pass " in text.lower(), text
    assert not isinstance(caught.value.__context__, ConfigError)
    source = JsonlSaver(tmp_path / "source")
    _put(source, "t-1")
    source.close()
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    assert main(["import", str(tmp_path / "source"), path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and (path in err or repr(path) in err), err
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EEXIST])
def test_a_store_the_file_system_refuses_to_make_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """A full disk (or quota), a failing one, a file made where the directory was going:
    ``makedirs`` failed with a bare ``OSError``; now a ``StoreError`` naming the store,
    the file system's words and what to do."""
    _makedirs_fails(monkeypatch, code)
    with pytest.raises(StoreError) as caught:
        JsonlSaver(tmp_path / "s")
    text = str(caught.value)
    assert f"store {tmp_path / 's'} cannot be made or opened" in text, text
    assert os.strerror(code) in text, text
    assert ("df -i" if code in (errno.ENOSPC, errno.EDQUOT) else "mounted and healthy") in text, text


def _makedirs_fails(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The package's ``os.makedirs`` fails with ``code`` (everything else of ``os`` as is)."""
    from langgraph_jsonl_checkpoint.disk import files

    real = files.os

    class Door:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def makedirs(self, name: str, *args: object, **kwargs: object) -> None:
            raise OSError(code, os.strerror(code), name)

    monkeypatch.setattr(files, "os", Door())
