"""``repair`` in-process, result by result: what it keeps, what it drops and why (with
byte ranges), the archive copy, the new generation, and its refusals.

Written for maintenance/repair.py, whose mutants no fast test reached in-process (the
crash tests run repair through the CLI in child processes; stress/mutation.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import orjson
import pytest

from langgraph_jsonl_checkpoint import ConfigError, FormatVersionError, JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.maintenance.repair import repair, salvage_records
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _fill(saver: JsonlSaver, thread: str, n: int) -> None:
    parent = config(thread)
    items: list[str] = []
    for i in range(1, n + 1):
        items = items + [f"item {i}"]
        v = {"m": f"{i:032}.{0:016}"}
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items}, v), {}, v)


def _lines(path: str) -> list[bytes]:
    return Path(path).read_bytes().splitlines(keepends=True)


def _durable_log(store: Path) -> tuple[str, list[bytes]]:
    """Thread "t" with six checkpoints, closed (its sidecar says records 1-6 durable): its
    log's path and lines."""
    saver = JsonlSaver(store, snapshot_every=10_000)
    _fill(saver, "t", 6)
    saver.close()
    log = ThreadFiles.of(store, "t").log
    return log, _lines(log)


def test_repair_keeps_every_readable_record_and_says_what_it_dropped(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=10_000)
    _fill(saver, "t", 6)
    _fill(saver, "healthy", 2)
    saver.close()
    log = ThreadFiles.of(store, "t").log
    lines = _lines(log)  # header, then checkpoints 1..6 (1 full, then deltas)
    off = [len(b"".join(lines[:i])) for i in range(len(lines) + 1)]
    damaged = lines[4][:10] + b"#" + lines[4][11:]  # checkpoint 4: its delta is lost
    unfinished = framing.frame({"t": "writes", "ns": "", "cp": cp_id(6), "task": "x", "path": "",
                                "w": [], "seq": 7, "more": 1})
    original = b"".join(lines[:4] + [damaged] + lines[5:] + [lines[2], unfinished])
    Path(log).write_bytes(original)

    saver = JsonlSaver(store)
    result = repair(saver, "t")
    end = len(original)
    stale_at = off[7]
    assert result.thread_id == "t"
    assert result.dropped[:3] == [
        f"bytes {off[4]}-{off[5]}: damaged line (checksum does not match)",
        f"bytes {stale_at}-{stale_at + len(lines[2])}: record 2 out of sequence (a stale copy)",
        f"bytes {stale_at + len(lines[2])}-{end}: an unfinished batch at the end (never acknowledged)",
    ]
    later = result.dropped[3:]  # checkpoints 5 and 6 extend the lost value
    assert [d.split(" at byte ")[0] for d in later] == [f"checkpoint {cp_id(5)}", f"checkpoint {cp_id(6)}"]
    assert [d.split(" at byte ")[1].split(":")[0] for d in later] == [str(off[5]), str(off[6])]
    assert result.kept_records == 3
    assert result.kept_bytes == len(Path(log).read_bytes())
    assert result.dropped_bytes == end - result.kept_bytes
    assert result.archived_to is not None and Path(result.archived_to).read_bytes() == original
    assert Path(result.archived_to).parent == store / "archive"
    stem = Path(log).name[: -len(".jsonl")]
    assert re.fullmatch(re.escape(stem) + r"\.\d{8}T\d{12}Z\.jsonl", Path(result.archived_to).name)
    header = json.loads(_lines(log)[0])
    assert header["gen"] == 2 and header["thread"] == "t"
    assert [t.checkpoint["id"] for t in saver.list(config("t"))] == [cp_id(3), cp_id(2), cp_id(1)]
    assert saver.get_tuple(config("t")).checkpoint["channel_values"]["m"] == ["item 1", "item 2", "item 3"]

    untouched = repair(saver, "healthy")
    assert (untouched.archived_to, untouched.dropped, untouched.dropped_bytes, untouched.kept_records) == (
        None, [], 0, 2)
    with pytest.raises(ConfigError, match=r"has no thread 'nope' \(no file .*\); `langgraph-jsonl thr") as no:
        repair(saver, "nope")
    assert f"`langgraph-jsonl threads {shlex.quote(saver.store.path)}` lists" in str(no.value)  # runnable
    saver.close()


def test_salvage_refuses_a_log_of_a_newer_format_and_keeps_the_generation() -> None:
    header = {"t": "header", "seq": 0, "format": 1, "thread": "t", "gen": 5}
    rec = {"t": "tool", "ns": "", "cp": "x", "call": "c", "ev": "requested", "seq": 1}
    salvage = salvage_records(framing.frame(header) + framing.frame(rec), "t")
    assert salvage.gen == 5 and salvage.dropped == [] and [r["seq"] for r in salvage.records] == [1]
    assert salvage_records(framing.frame({**header, "gen": "x"}), "t").gen == 1
    newer = orjson.loads(framing.frame(header))
    del newer["c"]
    newer["format"] = 99
    with pytest.raises(FormatVersionError) as err:
        salvage_records(framing.frame(newer), "t")
    assert str(err.value) == ("thread 't': the log has format version 99; this version of the package reads"
                              " format 1. Upgrade langgraph-jsonl-checkpoint to repair it.")


def test_repair_drops_a_checkpoint_whose_unchanged_value_was_in_a_damaged_record(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    v1 = {"m": f"{1:032}.{0:016}", "n": f"{1:032}.{0:016}"}
    first = saver.put(config("t"), make_checkpoint(cp_id(1), {"m": ["a"], "n": {"k": 1}}, v1), {}, v1)
    v2 = {"m": f"{2:032}.{0:016}", "n": v1["n"]}  # n unchanged: stored in checkpoint 1 only
    saver.put(first, make_checkpoint(cp_id(2), {"m": {"other": 1}, "n": {"k": 1}}, v2), {}, {"m": v2["m"]})
    saver.close()
    log = ThreadFiles.of(store, "t").log
    lines = _lines(log)
    off = [len(b"".join(lines[:i])) for i in range(len(lines) + 1)]
    Path(log).write_bytes(b"".join([lines[0], lines[1][:8] + b"#" + lines[1][9:], *lines[2:]]))
    result = repair(JsonlSaver(store), "t")
    assert result.dropped == [
        f"bytes {off[1]}-{off[2]}: damaged line (checksum does not match)",
        f"checkpoint {cp_id(2)} at byte {off[2]}: the values of ['n'] were in the damaged line at bytes "
        f"{off[1]}-{off[2]}",
    ]
    assert result.kept_records == 0


def test_repair_of_a_log_starting_with_an_empty_line_drops_only_that_line(tmp_path: Path) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store)
    _fill(saver, "t", 2)
    saver.close()
    log = ThreadFiles.of(store, "t").log
    Path(log).write_bytes(b"\n" + Path(log).read_bytes())
    salvage = salvage_records(Path(log).read_bytes(), "t")
    assert salvage.dropped == ["bytes 0-1: damaged line (checksum does not match)"]
    assert [r["id"] for r in salvage.records] == [cp_id(1), cp_id(2)]


def test_repair_of_a_log_cut_at_a_record_boundary_reports_the_records_lost(tmp_path: Path) -> None:
    """A log cut right after a record reads as whole, but its sidecar says later records
    were durable: every read refuses it and names ``repair``. Repair must then act: keep
    what is there as a new generation, say which records were lost, keep the original."""
    from langgraph_jsonl_checkpoint import CorruptLogError

    store = tmp_path / "s"
    log, lines = _durable_log(store)
    Path(log).write_bytes(b"".join(lines[:-2]))  # records 5 and 6 gone (same inode)
    saver = JsonlSaver(store)
    with pytest.raises(CorruptLogError, match="repair"):
        saver.get_tuple(config("t"))
    result = repair(saver, "t")
    assert result.archived_to is not None and Path(result.archived_to).read_bytes() == b"".join(lines[:-2])
    assert result.kept_records == 4
    assert [d for d in result.dropped if "records 5-6" in d and "durable" in d], result.dropped
    saver.close()
    fresh = JsonlSaver(store)
    tup = fresh.get_tuple(config("t"))
    assert tup is not None and tup.checkpoint["id"] == cp_id(4)
    assert repair(fresh, "t").archived_to is None  # whole now: nothing more to do
    fresh.close()


def test_a_log_cut_inside_a_durable_record_is_reported_once_as_lost_not_as_never_acknowledged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file lost its end, inside record 6, which its index says was durable. Repair
    listed the bytes left of it as a "torn tail ... never acknowledged" and then record 6
    as missing: two lines ("dropped 2") for one record, the first of them untrue."""
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    log, lines = _durable_log(store)
    start = sum(map(len, lines[:-1]))
    Path(log).write_bytes(b"".join(lines[:-1]) + lines[-1][:30])  # cut inside record 6
    result = repair(JsonlSaver(store), "t")
    assert result.kept_records == 5
    (line,) = result.dropped
    assert line.startswith(f"bytes {start}-{start + 30}: record 6, cut inside it:"), line
    assert "durable" in line and "never acknowledged" not in line, line
    assert main(["repair", str(store), "--thread", "t"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["a damaged line", "a cut at a record boundary"])
def test_a_dry_run_says_what_repair_would_drop_and_changes_nothing(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    log, lines = _durable_log(store)
    if damage == "a damaged line":
        lines[4] = lines[4][:10] + b"#" + lines[4][11:]
        Path(log).write_bytes(b"".join(lines))
    else:
        Path(log).write_bytes(b"".join(lines[:-2]))
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    reader = JsonlSaver(store, read_only=True)
    planned = repair(reader, "t", dry_run=True)
    reader.close()
    assert planned.dry_run and planned.archived_to is None and planned.dropped
    assert main(["repair", str(store), "--thread", "t", "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert all(f"would drop {line}" in out for line in planned.dropped), out
    assert "nothing was changed" in out
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before  # no archive, no rewrite
    done = repair(JsonlSaver(store), "t")
    assert (done.dropped, done.kept_records) == (planned.dropped, planned.kept_records)
    assert abs(done.kept_bytes - planned.kept_bytes) <= 16  # (the new header's time may differ in width)
    assert main(["repair", str(store), "--thread", "t", "--dry-run"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


@pytest.mark.parametrize("left", [0, 40], ids=["emptied", "cut inside its header"])
def test_a_log_cut_inside_its_header_is_verified_repaired_and_deletable(
    tmp_path: Path, left: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every read refuses a log cut inside its header line whose sidecar says records were
    durable, and names ``repair``. ``verify`` must report it and go on with the other
    threads; ``repair`` must act on it (it said "nothing to repair"); ``delete_thread``
    must delete it (it raised)."""
    from langgraph_jsonl_checkpoint import CorruptLogError
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=10_000)
    _fill(saver, "t", 5)
    _fill(saver, "u", 2)
    saver.close()  # writes the sidecars: records 1-5 durable
    log = ThreadFiles.of(store, "t").log
    original = Path(log).read_bytes()
    Path(log).write_bytes(original[:left])  # same inode
    saver = JsonlSaver(store)
    with pytest.raises(CorruptLogError, match="repair"):
        saver.get_tuple(config("t"))
    saver.close()

    assert main(["verify", str(store)]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM thread 't'" in out and "checked 2 thread(s)" in out, out
    assert "thread 'u'" not in out

    planned = repair(JsonlSaver(store, read_only=True), "t", dry_run=True)
    assert [d for d in planned.dropped if "records 1-5" in d and "durable" in d], planned.dropped
    saver = JsonlSaver(store)
    result = repair(saver, "t")
    assert result.dropped == planned.dropped and result.kept_records == 0
    assert result.archived_to is not None and Path(result.archived_to).read_bytes() == original[:left]
    assert saver.get_tuple(config("t")) is None  # every record was lost: the thread starts anew
    _fill(saver, "t", 1)
    saver.close()
    fresh = JsonlSaver(store)
    tup = fresh.get_tuple(config("t"))
    assert tup is not None and tup.checkpoint["id"] == cp_id(1)
    fresh.close()
    assert main(["verify", str(store)]) == 0
    capsys.readouterr()

    # delete_thread of such a log deletes it, as InMemorySaver's deletes any thread
    Path(log).write_bytes(b"")
    saver = JsonlSaver(store)
    with pytest.raises(CorruptLogError):
        saver.get_tuple(config("t"))
    saver.delete_thread("t")
    assert saver.get_tuple(config("t")) is None
    assert not Path(log).exists()
    assert [t.checkpoint["id"] for t in saver.list(config("u"))] == [cp_id(2), cp_id(1)]
    saver.close()


def test_a_read_only_saver_warns_when_it_serves_a_log_cut_at_a_record_boundary(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A read-only saver serves what a damaged log still holds, with a warning naming the
    thread, the file and repair: a damaged line got one, a log cut short of the records
    its index says were durable got none (the CLI showed the older state as the truth)."""
    import logging

    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=10_000)
    _fill(saver, "t", 6)
    saver.close()
    log = ThreadFiles.of(store, "t").log
    Path(log).write_bytes(b"".join(_lines(log)[:-2]))  # records 5 and 6 gone (same inode)
    reader = JsonlSaver(store, read_only=True)
    with caplog.at_level(logging.WARNING, logger="langgraph_jsonl_checkpoint"):
        tup = reader.get_tuple(config("t"))
        reader.get_tuple(config("t"))
    assert tup is not None and tup.checkpoint["id"] == cp_id(4)  # the part it still holds
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # once per log, not per read
    assert "'t'" in warnings[0] and log in warnings[0] and "langgraph-jsonl repair" in warnings[0]
    assert "records up to 6" in warnings[0] and "serving the 4 records" in warnings[0], warnings[0]
    reader.close()


def test_a_torn_tail_is_named_as_verify_names_it(tmp_path: Path) -> None:
    """A last line without its newline is a write that never finished (never
    acknowledged): verify calls it a torn tail, and repair called it a "damaged line
    (checksum does not match)", the words for damage inside the log."""
    saver = JsonlSaver(tmp_path / "s")
    _fill(saver, "t", 3)
    path = saver.store.thread_log("t").path
    saver.close()
    size = Path(path).stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"t":"checkpoint","ns":"","id":"torn')
    (line,) = salvage_records(Path(path).read_bytes(), "t").dropped
    assert line == f"bytes {size}-{size + 36}: torn tail (a write that never finished; never acknowledged)"
    damaged = bytearray(Path(path).read_bytes())
    damaged[size - 20] ^= 0xFF  # inside the last whole line: damage, not a torn tail
    dropped = salvage_records(bytes(damaged), "t").dropped
    assert any("damaged line (checksum does not match)" in d for d in dropped), dropped


def test_another_thread_s_log_under_this_name_is_refused_by_repair_with_what_to_do(
        tmp_path: Path, capsys) -> None:
    """t2's log copied over t1's (a wrong file restored from a backup): the app refused
    it, verify reported it, and `repair --thread t1` said "nothing to repair" (exit 0),
    leaving the user stuck. Repair refuses, changing nothing, and the app's error and
    repair's both say whose log it is and how to get t1 going again."""
    from langgraph_jsonl_checkpoint import ForeignFileError
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        _fill(saver, "t1", 2)
        _fill(saver, "t2", 3)
    t1, t2 = ThreadFiles.of(store, "t1"), ThreadFiles.of(store, "t2")
    Path(t1.log).write_bytes(Path(t2.log).read_bytes())
    before = Path(t1.log).read_bytes()
    with JsonlSaver(store) as saver:
        with pytest.raises(ForeignFileError) as app:
            saver.get_tuple(config("t1"))
        with pytest.raises(ForeignFileError) as repaired:
            repair(saver, "t1")
    for said in (str(app.value), str(repaired.value)):
        assert "thread 't1'" in said and "holds thread 't2'" in said and t1.log in said
        assert "move it out of the store" in said.lower()
    assert Path(t1.log).read_bytes() == before and not (store / "archive").exists()
    assert main(["repair", str(store), "--thread", "t1"]) != 0
    assert "holds thread 't2'" in capsys.readouterr().err
    Path(t1.log).rename(tmp_path / "t2-copy.jsonl")
    with JsonlSaver(store) as saver:
        assert saver.get_tuple(config("t1")) is None
        assert saver.get_tuple(config("t2")).checkpoint["id"] == cp_id(3)


def test_a_log_whose_line_endings_became_crlf_is_named_and_repaired_without_loss(
        tmp_path: Path, capsys) -> None:
    """A log whose LF line endings were turned into CRLF (an editor, git's autocrlf, a
    text-mode copy): the app and verify called it not a log of this package ("move it
    out of the store"), and repair dropped every record as damaged. Every record is
    intact but for the CR: the app and verify name the conversion and the repair
    command, and repair keeps every record."""
    from langgraph_jsonl_checkpoint import CorruptLogError
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        _fill(saver, "t1", 4)
        want = [t.checkpoint for t in saver.list(config("t1"))]
    t1 = ThreadFiles.of(store, "t1")
    Path(t1.log).write_bytes(Path(t1.log).read_bytes().replace(b"\n", b"\r\n"))
    with JsonlSaver(store) as saver:
        with pytest.raises(CorruptLogError) as app:
            saver.get_tuple(config("t1"))
    assert "CRLF" in str(app.value) and f"repair {store} --thread t1" in str(app.value)
    assert main(["verify", str(store)]) == 1
    out = capsys.readouterr()
    assert "CRLF" in out.out + out.err and "Move it out" not in out.out + out.err
    with JsonlSaver(store) as saver:
        result = repair(saver, "t1")
        assert result.kept_records == 4 and result.archived_to
        assert [t.checkpoint for t in saver.list(config("t1"))] == want
    assert b"\r" not in Path(t1.log).read_bytes()


def test_following_the_hint_to_restore_a_backup_gets_the_thread_read_again(tmp_path: Path) -> None:
    """A cut log's error ends "or restore the file from a backup"; a user who copied the
    backup over the log got the very same error (the index still names the lost
    records), with no way out but repair. The hint names the index and head files to
    delete with a restored backup, and doing what it says serves the backup's
    checkpoints."""
    from langgraph_jsonl_checkpoint import CorruptLogError

    store = tmp_path / "s"
    t1 = ThreadFiles.of(store, "t1")
    with JsonlSaver(store) as saver:
        _fill(saver, "t1", 3)
        backup = Path(t1.log).read_bytes()
        parent = saver.get_tuple(config("t1")).config
        for i in (4, 5):
            v = {"m": f"{i:032}.{0:016}"}
            parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": [i]}, v), {}, v)
    with open(t1.log, "r+b") as f:  # a cut at a record boundary, and the backup copied in place
        f.truncate(len(backup))
    for _ in range(2):
        with JsonlSaver(store) as saver, pytest.raises(CorruptLogError) as caught:
            saver.get_tuple(config("t1"))
        said = str(caught.value)
        assert "restore the file from a backup" in said and t1.idx in said and t1.head in said
        Path(t1.log).write_bytes(backup)
    os.unlink(t1.idx)
    os.unlink(t1.head)
    with JsonlSaver(store) as saver:
        assert saver.get_tuple(config("t1")).checkpoint["id"] == cp_id(3)
        assert len(list(saver.list(config("t1")))) == 3


def test_a_byte_flipped_in_the_header_is_named_as_damage_not_a_foreign_file(
        tmp_path: Path, capsys) -> None:
    """One byte flipped in a log's header line: the app said the file was not a log
    this package wrote and to move it out of the store (and `threads` said the same),
    though every record after it was intact and repair keeps them all. Both name the
    damage and the repair command."""
    from langgraph_jsonl_checkpoint import CorruptLogError
    from langgraph_jsonl_checkpoint.cli import main

    store = tmp_path / "s"
    with JsonlSaver(store) as saver:
        _fill(saver, "t1", 3)
    t1 = ThreadFiles.of(store, "t1")
    data = bytearray(Path(t1.log).read_bytes())
    data[30] ^= 0x01
    Path(t1.log).write_bytes(bytes(data))
    with JsonlSaver(store) as saver, pytest.raises(CorruptLogError) as caught:
        saver.get_tuple(config("t1"))
    said = str(caught.value)
    assert "header" in said and f"repair {store} --thread t1" in said and "move it out" not in said
    main(["threads", str(store)])
    assert "Move it out" not in capsys.readouterr().out
    with JsonlSaver(store) as saver:
        assert repair(saver, "t1").kept_records == 3
        assert saver.get_tuple(config("t1")).checkpoint["id"] == cp_id(3)
