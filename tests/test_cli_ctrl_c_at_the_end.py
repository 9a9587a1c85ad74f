"""Ctrl-C that lands as a command ends: a command whose work is done (its summary being
printed, its status being returned) exits with its own status; one stopped before its
work was done says so and exits 130. The signal is sent from a hook at the exact point
(the summary's write, the first thread's end), not by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint

AT_THE_SUMMARY = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
class Out:
    def __init__(self, real):
        self.real = real
    def write(self, text):
        n = self.real.write(text)
        if text.startswith({said!r}):
            self.real.flush()
            os.kill(os.getpid(), signal.SIGINT)  # acts at the next bytecode: inside print
        return n
    def __getattr__(self, name):
        return getattr(self.real, name)
sys.stdout = Out(sys.stdout)
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""

AFTER_THE_FIRST_THREAD = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.cli.maintenance as maintenance
real = maintenance._compacted
def compacted(*args, **kwargs):
    result = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
    return result
maintenance._compacted = compacted
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


def _store(path: Path, threads: list[str]) -> None:
    with JsonlSaver(path) as saver:
        for tid in threads:
            for i in range(3):
                v = {"m": saver.get_next_version(None, None)}
                saver.put(config(tid), make_checkpoint(cp_id(i), {"m": [i]}, v), {}, v)


def _run(script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=60)


def test_ctrl_c_as_compact_prints_its_summary_exits_0(tmp_path: Path) -> None:
    """``compact`` printed ``compacted: ...`` and exited 130 when Ctrl-C landed as it
    printed its summary: the work was done, but the shell (and a script) saw a command
    that was stopped. It now exits with its own status, saying nothing of an interrupt."""
    store = tmp_path / "s"
    _store(store, ["t1", "t2"])
    run = _run(AT_THE_SUMMARY.format(said="compacted:"), "compact", str(store))
    assert "compacted:" in run.stdout, run.stderr
    assert run.returncode == 0, run.stderr
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_ctrl_c_as_a_reading_command_prints_its_last_line_exits_with_its_status(tmp_path: Path) -> None:
    """The same for a command that only reads: ``verify`` prints its verdict and exits 0."""
    store = tmp_path / "s"
    _store(store, ["t1"])
    run = _run(AT_THE_SUMMARY.format(said="ok"), "verify", str(store))
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_ctrl_c_before_the_work_is_done_says_so_and_exits_130(tmp_path: Path) -> None:
    """Ctrl-C after the first of two threads is compacted: no summary, the one line that
    says it was interrupted and how to finish, 130; the command run again finishes."""
    store = tmp_path / "s"
    _store(store, ["t1", "t2"])
    run = _run(AFTER_THE_FIRST_THREAD, "compact", str(store))
    assert run.returncode == 130, run.stderr
    assert "compacted:" not in run.stdout, run.stdout
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("interrupted: langgraph-jsonl compact stopped before it finished"), line


def test_ctrl_c_as_a_sweep_prints_what_it_swept_exits_0(tmp_path: Path) -> None:
    """``sweep`` stops at its next thread on Ctrl-C; once it has swept every thread, a
    Ctrl-C as it printed its lines ended it with 130 and 'stopped before it finished'
    (its own handler was gone by then). It now exits 0 with every line printed."""
    store = tmp_path / "s"
    _store(store, ["t1", "t2"])
    run = _run(AT_THE_SUMMARY.format(said="t1\t"), "sweep", str(store), "--ttl", "0", "--strategy", "archive")
    assert run.returncode == 0, run.stderr
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert "t2\tarchived" in run.stdout, run.stdout


def test_ctrl_c_as_restore_says_it_restored_exits_0(tmp_path: Path) -> None:
    """``restore`` brought the thread back, then a Ctrl-C as it said so ended it with 130
    and "Run it again to finish", which then failed: the thread was no longer archived.
    It now exits 0."""
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    _store(store, ["t1"])
    assert main(["sweep", str(store), "--ttl", "0", "--strategy", "archive"]) == 0
    run = _run(AT_THE_SUMMARY.format(said="thread "), "restore", str(store), "--thread", "t1")
    assert run.returncode == 0, run.stderr
    assert "interrupted" not in run.stderr and "restored from" in run.stdout, (run.stdout, run.stderr)


# A terminal's Ctrl-C goes to the whole pipeline (`langgraph-jsonl threads STORE | slow`):
# the reader ends, and the command sees either its Ctrl-C or its closed pipe first.
PIPED_TO_A_READER_THE_CTRL_C_ENDS = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
said, first = sys.argv[1], sys.argv[2]
r, w = os.pipe()  # stdout: a pipe to a reader (this process holds its end)
os.dup2(w, 1)
os.close(w)
class Out:
    broken = signalled = False
    def __init__(self, real):
        self.real = real
    def write(self, text):
        if said in text and not Out.broken:
            Out.broken = True
            os.close(r)  # the reader is gone
            if first == "ctrl-c":
                os.kill(os.getpid(), signal.SIGINT)  # acts at the next bytecode: inside print
            else:  # the closed pipe first; the Ctrl-C lands as the command deals with it
                raise BrokenPipeError(32, "Broken pipe")
        return self.real.write(text)
    def __getattr__(self, name):
        if Out.broken and first == "pipe" and not Out.signalled:
            Out.signalled = True
            os.kill(os.getpid(), signal.SIGINT)
        return getattr(self.real, name)
sys.stdout = Out(sys.stdout)
sys.argv = ["langgraph-jsonl", *sys.argv[3:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


AFTER_THE_LOG_IS_BACK = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.disk.archive as archive
real_fsync_dir = archive.fsync_dir
def fsync_dir(path):
    real_fsync_dir(path)
    if any(name.endswith(".jsonl") for name in os.listdir(os.path.join(sys.argv[2], "threads"))):
        os.kill(os.getpid(), signal.SIGINT)  # the log renamed back: Ctrl-C as the restore tidies up
archive.fsync_dir = fsync_dir
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("first", ["pipe", "ctrl-c"])
@pytest.mark.parametrize("argv, last", [  # the command's last line, and a word of it
    (["threads"], "t-9"), (["history", "t-9"], "000000000000"), (["show", "t-9"], "m: [2]"),
    (["search", "m"], "no message matches"),
])
def test_ctrl_c_that_also_ends_the_reader_of_the_output_is_one_line_and_130(
    tmp_path: Path, argv: list[str], last: str, first: str
) -> None:
    """A reading command piped to a reader, both ended by one Ctrl-C as it prints its last
    line: when the closed pipe came first, the Ctrl-C landed in main()'s handler of it and
    escaped as a BrokenPipeError-then-KeyboardInterrupt traceback (the process killed by
    SIGINT). Either way it is the one line and exit status 130."""
    store = tmp_path / "s"
    _store(store, [f"t-{i}" for i in range(10)])
    run = _run(PIPED_TO_A_READER_THE_CTRL_C_ENDS, last, first, argv[0], str(store), *argv[1:])
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr
    assert run.returncode == 130, (run.returncode, run.stderr)
    assert run.stderr == f"interrupted: langgraph-jsonl {argv[0]} stopped before it finished; it changes " \
        "nothing in the store. Run it again for the whole answer.\n", run.stderr


def test_ctrl_c_once_restore_has_brought_the_log_back_says_it_restored_exits_0(tmp_path: Path) -> None:
    """Ctrl-C as ``restore`` synced the directories after renaming the log back (the one
    step that restores the thread) ended it with 130 and "Run it again to finish"; run
    again, it failed (exit 2, "no archive left to restore"). The thread is restored, so
    it now says so and exits 0; the thread reads as before it was archived."""
    from langgraph_jsonl_checkpoint.cli import main
    from tests.harness.answers import answers
    from tests.harness.bounded import within

    store = tmp_path / "s"
    _store(store, ["t1"])
    with within(30), JsonlSaver(store) as saver:
        before = answers(saver, "t1")
    assert main(["sweep", str(store), "--ttl", "0", "--strategy", "archive"]) == 0
    run = _run(AFTER_THE_LOG_IS_BACK, "restore", str(store), "--thread", "t1")
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0 and "thread t1: restored from" in run.stdout, (run.stdout, run.stderr)
    assert main(["verify", str(store)]) == 0
    with within(30), JsonlSaver(store) as saver:
        assert answers(saver, "t1") == before
        assert saver.archived() == []


AFTER_THE_NEW_LOG_IS_IN_PLACE = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.disk.log as log_module
real_install = log_module.install
def install(*args, **kwargs):
    real_install(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # the repaired log renamed into place: Ctrl-C as it is indexed
log_module.install = install
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


def test_ctrl_c_once_repair_has_put_the_new_log_in_place_says_what_it_dropped_exits_0(tmp_path: Path) -> None:
    """Ctrl-C as ``repair`` indexed the repaired log it had just renamed into place ended
    it with 130 and "Run it again to finish"; run again, it said "nothing to repair", so
    the records it had dropped, and where the original went, were never said. The repair
    is done: it now prints them, as an uninterrupted repair does, and exits 0."""
    from langgraph_jsonl_checkpoint.cli import main
    from tests.harness.raw_log import ThreadFiles

    store = tmp_path / "s"
    _store(store, ["t1"])
    log = Path(ThreadFiles.of(store, "t1").log)
    data = bytearray(log.read_bytes())
    data[data.index(b'{"t":"checkpoint"') + 20] ^= 0x01  # the first checkpoint: valid records follow
    log.write_bytes(bytes(data))
    run = _run(AFTER_THE_NEW_LOG_IS_IN_PLACE, "repair", str(store), "--thread", "t1")
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert "\ndropped " in "\n" + run.stdout and "the original is in" in run.stdout, run.stdout
    assert main(["verify", str(store)]) == 0


AFTER_THE_ARCHIVE_COPY = """
import os, signal, stat, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from langgraph_jsonl_checkpoint.disk import files
from langgraph_jsonl_checkpoint.disk.log import ThreadLog
from langgraph_jsonl_checkpoint.disk.store import Store
when = sys.argv[1]
real_archive, real_fsync, real_rewrite = Store.archive, files.os.fsync, ThreadLog.rewrite
def archive(self, log):  # "during": Ctrl-C as the copy, written, is synced
    def fsync(fd):
        real_fsync(fd)
        if stat.S_ISREG(os.fstat(fd).st_mode):  # the copy's, not a folder's
            os.kill(os.getpid(), signal.SIGINT)
    files.os.fsync = fsync
    try:
        return real_archive(self, log)
    finally:
        files.os.fsync = real_fsync
def rewrite(self, *args, **kwargs):  # "after": the copy made, Ctrl-C as the rewrite starts
    os.kill(os.getpid(), signal.SIGINT)
    return real_rewrite(self, *args, **kwargs)
if when == "during":
    Store.archive = archive
else:
    ThreadLog.rewrite = rewrite
sys.argv = ["langgraph-jsonl", *sys.argv[2:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("when", ["during", "after"])
def test_ctrl_c_before_repair_rewrites_leaves_no_archive_copy_behind(tmp_path: Path, when: str) -> None:
    """Ctrl-C as ``repair`` made (or had just made) its archive copy of the damaged log,
    before it rewrote anything, left that copy in ``archive/`` beside the damaged log,
    still in place: a second copy at each rerun, of a log the message says is as it was.
    The copy is now taken back; the log is as it was, and a rerun repairs it."""
    from langgraph_jsonl_checkpoint.cli import main
    from tests.harness.raw_log import ThreadFiles

    store = tmp_path / "s"
    _store(store, ["t1"])
    log = Path(ThreadFiles.of(store, "t1").log)
    data = bytearray(log.read_bytes())
    data[data.index(b'{"t":"checkpoint"') + 20] ^= 0x01
    log.write_bytes(bytes(data))
    run = _run(AFTER_THE_ARCHIVE_COPY, when, "repair", str(store), "--thread", "t1")
    assert run.returncode == 130 and "Traceback" not in run.stderr, (run.returncode, run.stderr)
    assert "the log of thread 't1' is as it was, not repaired" in run.stderr, run.stderr
    assert log.read_bytes() == bytes(data)
    archive = store / "archive"
    assert not archive.exists() or list(archive.iterdir()) == []
    assert main(["repair", str(store), "--thread", "t1"]) == 0
    assert len(list(archive.iterdir())) == 1
    assert main(["verify", str(store)]) == 0


AGAIN_AFTER_THE_FIRST_THREAD = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.cli.maintenance as maintenance
real = maintenance._compacted
def compacted(*args, **kwargs):
    result = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)
    return result
maintenance._compacted = compacted
class Err:
    def __init__(self, real):
        self.real = real
    def write(self, text):
        n = self.real.write(text)
        if {when!r} == "saying" and text.startswith("interrupted:"):
            self.real.flush()
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again as the line is printed
        return n
    def __getattr__(self, name):
        return getattr(self.real, name)
sys.stderr = Err(sys.stderr)
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
status = main()
if {when!r} == "exiting":
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again as the process ends (threads joined)
sys.exit(status)
"""


@pytest.mark.parametrize("when", ["saying", "exiting"])
def test_ctrl_c_again_as_an_interrupted_command_ends_is_no_traceback(tmp_path: Path, when: str) -> None:
    """Ctrl-C pressed several times: one that came while ``compact`` said it was
    interrupted, or as its process ended (Python joining threads), printed a traceback
    ending in KeyboardInterrupt (and "Exception ignored in threading._shutdown"). The
    process now ends at once with 130 and the one line."""
    store = tmp_path / "s"
    _store(store, ["t1", "t2"])
    run = _run(AGAIN_AFTER_THE_FIRST_THREAD.format(when=when), "compact", str(store))
    assert "Traceback" not in run.stderr and "KeyboardInterrupt" not in run.stderr, run.stderr
    assert run.returncode == 130, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("interrupted: langgraph-jsonl compact stopped before it finished"), line


AROUND_THE_RENAME_OF_THE_NEW_LOG = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import langgraph_jsonl_checkpoint.disk.files as files
when = sys.argv[1]
real_replace = files.os.replace
def replace(src, dst, *args, **kwargs):
    if not str(dst).endswith(".jsonl"):
        return real_replace(src, dst, *args, **kwargs)
    if when == "before":
        os.kill(os.getpid(), signal.SIGINT)  # acts at the next bytecode: the rename is not made
    real_replace(src, dst, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGINT)  # the new log renamed into place: Ctrl-C as it is synced
files.os.replace = replace
sys.argv = ["langgraph-jsonl", *sys.argv[2:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


def _store_with_snapshots(path: Path, threads: list[str]) -> None:
    """Threads whose logs hold snapshot records: compacting them makes them smaller."""
    with JsonlSaver(path, snapshot_every=2, snapshot_ratio=0) as saver:
        for tid in threads:
            for i in range(8):
                v = {"m": saver.get_next_version(None, None)}
                saver.put(config(tid), make_checkpoint(cp_id(i), {"m": list(range(i))}, v), {}, v)


@pytest.mark.parametrize("keep_latest", [False, True])
def test_ctrl_c_once_compact_has_put_the_new_log_in_place_says_the_sizes_exits_0(
    tmp_path: Path, keep_latest: bool
) -> None:
    """Ctrl-C as ``compact --thread`` synced the directory after renaming the new log over
    the old one ended it with 130, "interrupted", and no sizes: whether the log had been
    compacted could not be told. The compaction is done: it now prints the sizes (and,
    with --keep-latest, the checkpoints dropped) as an uninterrupted run does, exits 0."""
    from langgraph_jsonl_checkpoint.cli import main
    from tests.harness.raw_log import ThreadFiles

    store = tmp_path / "s"
    _store_with_snapshots(store, ["t1", "t2"])
    log = Path(ThreadFiles.of(store, "t1").log)
    before = log.stat().st_size
    argv = ["compact", str(store), "--thread", "t1", *(["--keep-latest"] if keep_latest else [])]
    run = _run(AROUND_THE_RENAME_OF_THE_NEW_LOG, "after", *argv)
    assert "interrupted" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, (run.stdout, run.stderr)
    after = log.stat().st_size
    assert after < before
    dropped = "; dropped 7 of 8 checkpoints" if keep_latest else ""
    assert run.stdout.splitlines() == [f"thread 't1': {before} -> {after} bytes{dropped}",
                                       f"compacted: {before} -> {after} bytes"], run.stdout
    assert main(["verify", str(store)]) == 0


def test_ctrl_c_once_compact_has_put_the_new_log_in_place_json_says_the_sizes(tmp_path: Path) -> None:
    """The same with ``--json``: the thread's figures, as without the Ctrl-C."""
    store = tmp_path / "s"
    _store_with_snapshots(store, ["t1"])
    run = _run(AROUND_THE_RENAME_OF_THE_NEW_LOG, "after", "compact", str(store), "--thread", "t1", "--json")
    assert run.returncode == 0, (run.stdout, run.stderr)
    answer = json.loads(run.stdout)
    (thread,) = answer["threads"]
    assert thread["thread_id"] == "t1" and thread["after"] < thread["before"], answer
    assert thread["checkpoints_before"] == thread["checkpoints_after"] == 8, answer
    assert (answer["before"], answer["after"]) == (thread["before"], thread["after"]), answer


def test_ctrl_c_before_compact_put_the_new_log_in_place_changes_nothing_says_so(tmp_path: Path) -> None:
    """Ctrl-C as ``compact --thread`` was about to rename the new log over the old one:
    it said "the store is consistent ... Run it again to finish", which does not say
    whether the thread was compacted, and left the new log's temp file behind. Nothing
    was changed, so it now says so (exit 130), and every file is as it was."""
    from tests.harness.scratch import file_snapshot

    store = tmp_path / "s"
    _store_with_snapshots(store, ["t1", "t2"])
    files_before = file_snapshot(str(store))
    run = _run(AROUND_THE_RENAME_OF_THE_NEW_LOG, "before", "compact", str(store), "--thread", "t1")
    assert run.returncode == 130, (run.stdout, run.stderr)
    assert run.stdout == "", run.stdout
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("interrupted: langgraph-jsonl compact stopped before it finished; nothing "
                           "was changed"), line
    assert "'t1'" in line and "Run it again" in line, line
    assert file_snapshot(str(store)) == files_before


BEFORE_THE_SWEEP = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from langgraph_jsonl_checkpoint.saver.jsonl_saver import JsonlSaver
real = JsonlSaver.sweep
def sweep(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # the sweep's own handler: it stops at its first thread
    len(())
    return real(*args, **kwargs)
JsonlSaver.sweep = sweep
sys.argv = ["langgraph-jsonl", *sys.argv[1:]]
from langgraph_jsonl_checkpoint.__main__ import main
sys.exit(main())
"""


def test_ctrl_c_before_a_sweep_swept_anything_says_nothing_was_changed(tmp_path: Path) -> None:
    """A Ctrl-C before ``sweep`` swept its first thread said "the store is consistent
    (each thread's change is all or nothing). Run it again to finish", as if part of
    the work were done. It now says nothing was changed, and every file is as it was."""
    from tests.harness.scratch import file_snapshot

    store = tmp_path / "s"
    _store(store, ["t1", "t2"])
    files = file_snapshot(str(store))
    run = _run(BEFORE_THE_SWEEP, "sweep", str(store), "--ttl", "0", "--strategy", "archive")
    assert run.returncode == 130, run.stderr
    assert run.stderr == ("interrupted: langgraph-jsonl sweep stopped after 0 thread(s) swept; nothing "
                          "was changed. Run it again to sweep.\n"), run.stderr
    assert file_snapshot(str(store)) == files
