"""``langgraph-jsonl sweep``, ``archived`` and ``restore`` as a person meets them: the
policy read from the variables the server reads, in the server's order, and said with
where it came from; dry runs, ``--json``, a mistyped store, a thread that is not there.

A restore's dry run is checked against the real restore run right after it on the same
store: the same archive, log and files, the same refusal and exit status; and every
file of the store (content and modification time) is as it was after the dry run.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.scratch import file_snapshot

HOUR = 3600.0
SERVER_VARIABLES = ("LANGGRAPH_JSONL_TTL", "LANGGRAPH_THREAD_TTL", "LANGGRAPH_CHECKPOINTER")


@pytest.fixture(autouse=True)
def _no_policy_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SERVER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _store(path: Path, idle: dict[str, float]) -> str:
    """A store of one-checkpoint threads, each idle for the given seconds."""
    with JsonlSaver(path) as saver:
        for tid, seconds in idle.items():
            saver.put(config(tid), make_checkpoint(cp_id(0), {"x": tid}, {"x": "1"}), {"step": 0}, {"x": "1"})
            log = saver.store.thread_log(tid).path
            os.utime(log, (time.time() - seconds, time.time() - seconds))
    return str(path)


@pytest.mark.parametrize(("variable", "value"), [
    ("LANGGRAPH_THREAD_TTL", "60"),
    ("LANGGRAPH_CHECKPOINTER", json.dumps({"path": "langgraph_jsonl_checkpoint.server.checkpointer",
                                           "ttl": {"strategy": "delete", "default_ttl": 60}})),
])
def test_sweep_reads_the_servers_ttl_as_the_server_factory_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    variable: str, value: str,
) -> None:
    """A server configured with its own TTL variable (not this package's): the command
    said "say how long threads may stay idle" (exit 2) although the server sweeps by it;
    it now applies the server's policy and says where it came from."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR, "new": 0})
    monkeypatch.setenv(variable, value)
    assert main(["sweep", store, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [f"policy: delete threads idle 60 minutes or more (from {variable})",
                                    "old\twould be deleted"], out
    assert main(["sweep", store, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["swept"], report["default_ttl"], report["strategy"]) == (["old"], 60, "delete")
    assert report["policy_from"] == variable


def test_sweep_takes_the_variables_in_the_servers_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "s", {"old": 2 * HOUR})
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps({"ttl": {"default_ttl": 1}}))
    monkeypatch.setenv("LANGGRAPH_THREAD_TTL", "30")
    monkeypatch.setenv("LANGGRAPH_JSONL_TTL", '{"default_ttl": 600, "strategy": "keep_latest"}')
    assert main(["sweep", store, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["policy_from"], report["default_ttl"], report["strategy"]) == (
        "LANGGRAPH_JSONL_TTL", 600, "keep_latest")
    monkeypatch.delenv("LANGGRAPH_JSONL_TTL")
    assert main(["sweep", store, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["policy_from"], report["default_ttl"]) == ("LANGGRAPH_THREAD_TTL", 30)
    # an option in place of its part of the variable's policy says so
    assert main(["sweep", store, "--dry-run", "--ttl", "90"]) == 0
    out = capsys.readouterr().out
    assert "from LANGGRAPH_THREAD_TTL, --ttl in its place" in out, out
    assert main(["sweep", store, "--dry-run", "--ttl", "90", "--strategy", "archive", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["policy_from"] == "--ttl and --strategy"


def test_sweep_help_names_every_variable_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in SERVER_VARIABLES:
        assert name in text, name


def test_without_any_policy_the_error_names_every_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path / "s", {"old": 2 * HOUR})
    assert main(["sweep", store]) == 2
    err = capsys.readouterr().err
    for name in ("--ttl MINUTES", "LANGGRAPH_JSONL_TTL", "LANGGRAPH_THREAD_TTL"):
        assert name in err, err


def test_archived_of_a_thread_with_no_archive_says_so_not_that_there_are_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``archived --thread`` with an id that has no archive said "no archived threads"
    while the store held some: untrue, and it sent a person who mistyped the id away."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR, "new": 0})
    assert main(["sweep", store, "--ttl", "60", "--strategy", "archive"]) == 0
    capsys.readouterr()
    assert main(["archived", store, "--thread", "olb"]) == 0
    out = capsys.readouterr().out
    assert "no archived threads" not in out, out
    assert "olb;" in out and "1 archived thread" in out and f"langgraph-jsonl archived {store}" in out, out
    assert main(["archived", store, "--thread", "new"]) == 0
    out = capsys.readouterr().out
    assert "thread new:" in out and "is in the store" in out, out
    assert main(["archived", store, "--thread", "olb", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["archived", store, "--thread", "old"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[0] == "old"


def test_archived_of_a_thread_id_with_a_newline_shows_it_once_as_other_commands_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``archived --thread $'new\\nline'`` said ``no archive of thread '"new\\\\nline"'``: the
    id quoted twice (a JSON string inside a Python repr). It is shown once, as ``show`` and
    the other commands show such an id: a JSON string."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR})
    assert main(["sweep", store, "--ttl", "60", "--strategy", "archive"]) == 0
    capsys.readouterr()
    assert main(["archived", store, "--thread", "new\nline"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('no archive of thread "new\\nline"; 1 archived thread(s) in all'), out
    assert main(["show", store, "new\nline"]) == 2
    assert 'has no thread "new\\nline"' in capsys.readouterr().err


def test_without_a_policy_the_error_points_at_the_ttl_block_of_langgraph_json_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's ttl block is in langgraph.json, which only ``langgraph dev`` turns
    into ``LANGGRAPH_CHECKPOINTER``: run from the project folder, the command says the
    block is there and the options that apply it (it does not sweep by a file it was
    not pointed at); a LANGGRAPH_CHECKPOINTER without a ttl block is not "none set"."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR})
    (tmp_path / "langgraph.json").write_text(json.dumps({
        "graphs": {"agent": "./agent.py:graph"},
        "checkpointer": {"path": "langgraph_jsonl_checkpoint.server.checkpointer",
                         "ttl": {"strategy": "keep_latest", "default_ttl": 10080}}}))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", store]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "langgraph.json" in err and "--ttl 10080 --strategy keep_latest" in err, err
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps({"path": "x.y"}))
    assert main(["sweep", store]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "LANGGRAPH_CHECKPOINTER is set without a ttl block" in err and "none is set" not in err, err
    assert JsonlSaver(store, read_only=True).store.has_thread("old")


@pytest.mark.parametrize("given", ["-5", "nan"])
def test_a_ttl_option_that_is_no_number_of_minutes_is_named_as_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    """``--ttl -5`` was refused as "ttl: default_ttl must be ...": a name the person never
    typed (it is the server's ttl block's); the option is named now, as argparse names it."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR})
    with pytest.raises(SystemExit) as exited:
        main(["sweep", store, "--ttl", given])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --ttl" in err, err
    assert "default_ttl" not in err and "0 or more" in err, err


def test_archived_accepts_dry_run_and_lists_as_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``archived --dry-run`` was argparse's "unrecognized arguments" while sweep and
    restore take it: it only lists, so it is accepted and changes nothing."""
    store = _store(tmp_path / "s", {"old": 2 * HOUR, "new": 0})
    assert main(["sweep", store, "--ttl", "60", "--strategy", "archive"]) == 0
    capsys.readouterr()
    assert main(["archived", store, "--json"]) == 0
    listed = capsys.readouterr().out
    assert main(["archived", store, "--dry-run", "--json"]) == 0
    assert capsys.readouterr().out == listed and [e["thread_id"] for e in json.loads(listed)] == ["old"]
    assert main(["archived", store, "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[0] == "old"


def _archived_store(path: Path, archived: list[str], *, quarantined: str = "", big: bool = False) -> str:
    """A store whose ``archived`` threads a sweep archived (``quarantined``'s with a
    quarantine file, which travels with it; each ``big``: more than the 64 KiB of an
    archive's head that listing it reads), and one thread ``new`` still in it."""
    store = _store(path, {**{tid: 2 * HOUR for tid in archived}, "new": 0})
    if big:
        with JsonlSaver(store) as saver:
            for tid in archived:
                log = saver.store.thread_log(tid).path
                saver.put(config(tid), make_checkpoint(cp_id(1), {"x": os.urandom(60_000).hex()}, {"x": "2"}),
                          {"step": 1}, {"x": "2"})
                os.utime(log, (time.time() - 2 * HOUR, time.time() - 2 * HOUR))
    if quarantined:
        with JsonlSaver(store, read_only=True) as saver:
            Path(saver.store.log_paths(quarantined).quarantine).write_bytes(b"a torn tail\n")
    assert main(["sweep", store, "--ttl", "60", "--strategy", "archive"]) == 0
    return store


def _start_anew(store: str, tid: str) -> None:
    """A run writes to an archived thread's id: a new thread of that id."""
    with JsonlSaver(store) as saver:
        saver.put(config(tid), make_checkpoint(cp_id(5), {"x": "again"}, {"x": "1"}), {"step": 0}, {"x": "1"})


def test_restore_dry_run_says_what_the_restore_does_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _archived_store(tmp_path / "s", ["old"], quarantined="old")
    capsys.readouterr()
    with JsonlSaver(store, read_only=True) as saver:
        (entry,) = saver.archived("old")
        paths = saver.store.log_paths("old")
    files = file_snapshot(store)

    assert main(["restore", store, "--thread", "old", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"would restore {paths.log}",
        f"would restore {paths.quarantine}",
        f"thread old: would be restored from {entry.path}; nothing was changed (--dry-run)",
    ]
    assert main(["restore", store, "--thread", "old", "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert file_snapshot(store) == files  # the dry runs changed nothing, not even a time

    assert main(["restore", store, "--thread", "old", "--json"]) == 0
    real = json.loads(capsys.readouterr().out)
    assert real == {"thread_id": "old", "restored_from": entry.path, "log": paths.log,
                    "companions": [paths.quarantine], "dry_run": False}
    assert dry == {**real, "dry_run": True}
    assert Path(paths.quarantine).read_bytes() == b"a torn tail\n" and os.path.exists(paths.log)


DAMAGED = {  # how an archive is damaged: (big: more than the 64 KiB of head listing reads, how)
    "damaged archive": (True, "checksum"),
    "big archive flipped in its head": (True, "head"),
    "small archive flipped": (False, "middle"),
    "small archive cut short": (False, "cut"),
}


def _damage(archive: Path, how: str) -> None:
    data = bytearray(archive.read_bytes())
    if how == "checksum":
        data[-1] ^= 0xFF  # its checksum: the head still reads, the whole does not
    elif how == "head":  # its first block: the head listing reads does not decompress
        data[14:40] = bytes(b ^ 0xFF for b in data[14:40])
    elif how == "middle":
        data[len(data) // 2] ^= 0xFF
    else:
        del data[-8:]
    archive.write_bytes(bytes(data))


@pytest.mark.parametrize("case", ["started anew", "restored already", "mistyped", *DAMAGED])
def test_restore_dry_run_is_refused_as_the_restore_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """The dry run says the refusal the restore would say, word for word, with its exit
    status (2), and that nothing was changed. A damaged archive, of any size, is said to
    be damaged (one under 64 KiB was said not to be an archive of this store)."""
    store = _archived_store(tmp_path / "s", ["old"], big=DAMAGED.get(case, (False, ""))[0])
    tid = "olb" if case == "mistyped" else "old"
    archive = None
    if case == "started anew":
        _start_anew(store, "old")
    elif case == "restored already":
        assert main(["restore", store, "--thread", "old"]) == 0
    elif case in DAMAGED:
        with JsonlSaver(store, read_only=True) as saver:
            archive = Path(saver.archived("old")[0].path)
        _damage(archive, DAMAGED[case][1])
    capsys.readouterr()
    files = file_snapshot(store)

    for extra in ([], ["--json"]):
        assert main(["restore", store, "--thread", tid, "--dry-run", *extra]) == 2
        dry = capsys.readouterr()
        assert dry.out == ""
        said, error = dry.err.splitlines()
        assert said == (f"thread {tid}: a restore would be refused; nothing was changed (--dry-run). "
                        "It would say:")
        assert file_snapshot(store) == files
    assert main(["restore", store, "--thread", tid]) == 2
    assert capsys.readouterr().err.splitlines() == [error]
    assert error.startswith("error: ") and f"'{tid}'" in error, error
    assert ("damaged" in error) == (case in DAMAGED), error
    if archive is not None:
        assert error.startswith(f"error: thread 'old': archive {archive} is damaged ("), error
        assert "nothing was changed" in error and "Move it out" not in error, error
        assert file_snapshot(store) == files  # times too: the refused restore took no lock
        assert main(["archived", store]) == 1  # listed, as the thread's, marked damaged
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.startswith("old ") and f"  thread 'old': archive {archive} is damaged (" in row, row
        assert main(["restore", store, "--dry-run", "--json"]) == 1
        (row,) = [r for r in json.loads(capsys.readouterr().out) if r["thread_id"] == "old"]
        assert row["restored_from"] == str(archive), row
        assert row["refused"] == error.removeprefix("error: "), (row, error)  # word for word


def test_restore_dry_run_without_a_thread_says_what_restoring_each_would_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The restore itself needs --thread; its dry run without one says, for each
    archived thread, what restoring it would do (exit 1 if one would be refused)."""
    store = _archived_store(tmp_path / "s", ["a", "b"])
    _start_anew(store, "b")
    capsys.readouterr()
    with JsonlSaver(store, read_only=True) as saver:
        archives = {e.thread_id: e.path for e in saver.archived()}
        logs = {tid: saver.store.log_paths(tid).log for tid in archives}
    files = file_snapshot(store)

    assert main(["restore", store, "--dry-run"]) == 1
    *rows_said, summary = capsys.readouterr().out.splitlines()
    said = dict(line.split("\t", 1) for line in rows_said)  # in the order `archived` lists them
    assert said["a"] == f"would be restored from {archives['a']} to {logs['a']}"
    assert said["b"].startswith("would be refused: thread 'b' has a log again"), said
    assert summary == ("2 archived thread(s): 1 would be restored, 1 would be refused; nothing was "
                       "changed (--dry-run). A restore takes one: --thread THREAD")
    assert main(["restore", store, "--dry-run", "--json"]) == 1
    rows = {r["thread_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert {tid: (r["restored_from"], r["log"], r["dry_run"]) for tid, r in rows.items()} == {
        tid: (archives[tid], logs[tid], True) for tid in ("a", "b")}
    assert rows["a"]["refused"] is None and "has a log again" in rows["b"]["refused"]
    assert file_snapshot(store) == files

    assert main(["restore", store]) == 2  # the restore itself: one thread, named
    assert "name the thread with --thread THREAD" in capsys.readouterr().err
    assert main(["restore", store, "--thread", "a", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["restored_from"] == archives["a"]
    assert main(["restore", store, "--dry-run"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("1 archived thread(s): 0 would be restored")
    with JsonlSaver(store) as saver:
        saver.delete_thread("b")
    assert main(["restore", store, "--thread", "b"]) == 0
    capsys.readouterr()
    assert main(["restore", store, "--dry-run"]) == 0
    assert capsys.readouterr().out == "no archived threads: nothing to restore\n"


def test_restore_dry_run_without_a_thread_lists_the_files_that_come_back_with_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --thread, the dry run's text named each thread's log, but not its other
    files a restore brings back (quarantine file, debug trace), which --json lists: it
    names them, per thread, as the dry run of one thread does (`would restore PATH`)."""
    store = _archived_store(tmp_path / "s", ["a", "b"], quarantined="a")
    capsys.readouterr()
    with JsonlSaver(store, read_only=True) as saver:
        archives = {e.thread_id: e.path for e in saver.archived()}
        paths = {tid: saver.store.log_paths(tid) for tid in archives}

    assert main(["restore", store, "--dry-run", "--json"]) == 0
    companions = {r["thread_id"]: r["companions"] for r in json.loads(capsys.readouterr().out)}
    assert companions == {"a": [paths["a"].quarantine], "b": []}
    assert main(["restore", store, "--thread", "a", "--dry-run"]) == 0
    one = capsys.readouterr().out.splitlines()
    assert f"would restore {paths['a'].quarantine}" in one, one

    assert main(["restore", store, "--dry-run"]) == 0
    *rows, summary = capsys.readouterr().out.splitlines()
    assert rows == [
        f"a\twould be restored from {archives['a']} to {paths['a'].log}",
        f"a\twould restore {paths['a'].quarantine}",
        f"b\twould be restored from {archives['b']} to {paths['b'].log}",
    ], rows
    assert summary.startswith("2 archived thread(s): 2 would be restored, 0 would be refused"), summary


@pytest.mark.parametrize("how", ["checksum", "middle", "cut", "emptied"])
def test_archived_marks_a_damaged_archive_and_still_lists_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """A damaged archive (a byte flipped, the file cut short) was listed by ``archived``
    like a good one, though ``restore`` refuses it: nothing told the user before the
    restore failed. It is now marked damaged, text and ``--json``, with the restore's own
    words (the thread, the file, what to do); the other archives are listed as before,
    and the exit status is 1 (problems found), as ``threads`` gives for a damaged thread.
    The words are the restore's exactly, what Zstandard said included: the listing said
    "zstd decompressor error: ..." (or "it was cut short") where the restore said
    "decompression error: ..." (or "did not decompress full frame")."""
    store = _archived_store(tmp_path / "s", ["a", "b", "c"])
    with JsonlSaver(store, read_only=True) as saver:
        paths = {e.thread_id: e.path for e in saver.archived()}
    if how == "emptied":
        Path(paths["b"]).write_bytes(Path(paths["b"]).read_bytes()[:12])
    else:
        _damage(Path(paths["b"]), how)
    capsys.readouterr()

    assert main(["restore", store, "--thread", "b", "--dry-run"]) == 2
    refusal = capsys.readouterr().err.splitlines()[-1].removeprefix("error: ")
    assert main(["archived", store, "--json"]) == 1
    listed = {e["thread_id"]: e for e in json.loads(capsys.readouterr().out)}
    assert {t: e["path"] for t, e in listed.items()} == paths
    assert listed["a"]["problem"] is None and listed["c"]["problem"] is None, listed
    problem = listed["b"]["problem"]
    assert problem.startswith(f"thread 'b': archive {paths['b']} is damaged ("), problem
    assert problem.endswith("Restore the file from a backup."), problem
    assert problem == refusal, (problem, refusal)  # word for word, what Zstandard said too

    assert main(["archived", store]) == 1
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["THREAD", "ARCHIVED", "SIZE", "FILE", "PROBLEM"], header
    by_thread = {row.split()[0]: row for row in rows}
    assert set(by_thread) == {"a", "b", "c"}, rows
    assert by_thread["b"].rstrip().endswith(problem), by_thread["b"]
    assert by_thread["a"].endswith(paths["a"]) and by_thread["c"].endswith(paths["c"]), rows


def test_archived_lists_a_damaged_archive_whose_thread_cannot_be_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An archive damaged in its header, whose thread no tombstone names any more,
    made the whole listing fail (exit 2), hiding every good archive. It is now one row
    with no thread (``?``; ``--json``: ``null``), naming the file and what to do."""
    store = _archived_store(tmp_path / "s", ["a", "b"])
    with JsonlSaver(store, read_only=True) as saver:
        paths = {e.thread_id: e.path for e in saver.archived()}
        Path(saver.store.log_paths("b").tombstone).unlink()
    Path(paths["b"]).write_bytes(Path(paths["b"]).read_bytes()[:12])
    capsys.readouterr()

    assert main(["archived", store, "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert [(e["thread_id"], e["path"]) for e in listed] == [("a", paths["a"]), (None, paths["b"])], listed
    assert listed[0]["problem"] is None
    assert listed[1]["problem"].startswith(f"archive {paths['b']} is damaged ("), listed[1]
    assert "--thread THREAD` lists it under its thread" in listed[1]["problem"], listed[1]
    assert main(["archived", store]) == 1
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["a", "?"], rows
    assert paths["b"] in rows[1] and "is damaged" in rows[1], rows
    assert main(["archived", store, "--thread", "olb"]) == 0  # a mistyped id: said, as without it
    assert capsys.readouterr().out.startswith("no archive of thread olb; 1 archived thread(s) in all")


def test_restore_dry_run_without_a_thread_goes_on_past_an_archive_whose_thread_cannot_be_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dry run of every restore failed as a whole (exit 2, nothing said of the good
    archives) on an archive damaged in its header whose thread no tombstone names: it
    now says of each thread what a restore would do, and of that file that it cannot be
    restored (exit 1), changing nothing."""
    store = _archived_store(tmp_path / "s", ["a", "b"])
    with JsonlSaver(store, read_only=True) as saver:
        paths = {e.thread_id: e.path for e in saver.archived()}
        log_a = saver.store.log_paths("a").log
        Path(saver.store.log_paths("b").tombstone).unlink()
    Path(paths["b"]).write_bytes(Path(paths["b"]).read_bytes()[:12])
    files = file_snapshot(store)
    capsys.readouterr()

    assert main(["restore", store, "--dry-run"]) == 1
    *rows_said, summary = capsys.readouterr().out.splitlines()
    assert rows_said[0] == f"a\twould be restored from {paths['a']} to {log_a}", rows_said
    assert rows_said[1].startswith(f"?\twould be refused: archive {paths['b']} is damaged ("), rows_said
    assert summary.startswith("2 archived thread(s): 1 would be restored, 1 would be refused"), summary
    assert main(["restore", store, "--dry-run", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["thread_id"], r["restored_from"], r["refused"] is None) for r in rows] == [
        ("a", paths["a"], True), (None, paths["b"], False)], rows
    assert file_snapshot(store) == files


def _aged(store: str) -> None:
    """Every file of the store last modified an hour ago: a write now shows in its time."""
    past = time.time() - HOUR
    for dirpath, _, names in os.walk(store):
        for name in names:
            os.utime(os.path.join(dirpath, name), (past, past))


@pytest.mark.parametrize("run_file", ["there", "gone"])
@pytest.mark.parametrize("case", ["started anew", "companion in the way", *DAMAGED])
def test_a_refused_restore_changes_nothing_on_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, run_file: str
) -> None:
    """A real restore refused (a damaged archive, a new log of the thread, a file where
    an archived one would go back) took the thread's live-run lock first: it wrote its
    record into the thread's ``.run`` file (or created the file) and emptied it again,
    so the file's time changed, though the refusal said "nothing was changed". It now
    refuses before taking any lock: every file's bytes and time, and the set of files,
    are as they were."""
    store = _archived_store(tmp_path / "s", ["old"], quarantined="old", big=DAMAGED.get(case, (False, ""))[0])
    with JsonlSaver(store, read_only=True) as saver:
        archive = Path(saver.archived("old")[0].path)
        paths = saver.store.log_paths("old")
    if case == "started anew":
        _start_anew(store, "old")
    elif case == "companion in the way":
        Path(paths.quarantine).write_bytes(b"a later run's torn tail\n")
    else:
        _damage(archive, DAMAGED[case][1])
    if run_file == "gone":
        Path(paths.run).unlink(missing_ok=True)
    _aged(store)
    files = file_snapshot(store)
    capsys.readouterr()

    assert main(["restore", store, "--thread", "old"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: thread 'old'") and error.count("\n") == 1, error
    assert ("is damaged" in error) == (case in DAMAGED), error
    assert file_snapshot(store) == files
