"""A head file's index lines: a log reopened is indexed from its head, not scanned.

The head file of a short log (``docs/format.md``, "Head files") carries, after its
record, the log's index as sidecar block lines. A process opening the log again (a
server's run on a thread let go from the open set, or a fresh process) loads the index
from them instead of scanning the log, when the head names exactly the log's bytes
(size and CRC-32) and the lines cover every record; anything else is scanned as before.
These tests hold that the answers are the same either way, that damaged, torn, stale or
older heads are scanned instead, and that ``verify`` reports index lines that disagree
with the log.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk import framing, head_file, sidecar_checks
from tests.harness.bounded import within
from tests.harness.checkpoints import config, cp_id
from tests.harness.differential import DURABILITIES, MODES, differential
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.raw_log import ThreadFiles
from tests.test_differential_flow import agent_scenario
from tests.test_head_file import _put_turns as _turns


def _head(store: Path, thread: str = "t") -> Path:
    return Path(ThreadFiles.of(store, thread).head)


def _fill(store: Path, n: int = 6) -> None:
    saver = JsonlSaver(store)
    _turns(saver, "t", n)
    saver.close()  # writes the head, index lines and all


@pytest.fixture
def head_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each log opened found an index in its head file (``True``) or was
    indexed otherwise (``False``)."""
    seen: list[bool] = []
    real = head_file.head_index

    def counted(*args: Any) -> Any:
        found = real(*args)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(head_file, "head_index", counted)
    yield seen


def _everything(saver: JsonlSaver, thread: str = "t") -> list[Any]:
    """Every checkpoint tuple of the thread, newest first (the index whole)."""
    with within(10):
        return list(saver.list(config(thread)))


def _from_a_scan(store: Path, thread: str = "t") -> list[Any]:
    """What a saver that scans the log serves (a copy of the store, head removed)."""
    copy = store.parent / f"{store.name}-scanned"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy)
    _head(copy, thread).unlink(missing_ok=True)
    saver = JsonlSaver(copy, read_only=True)
    try:
        return _everything(saver, thread)
    finally:
        saver.close()
        shutil.rmtree(copy)


def _configs_of(tuples: list[Any]) -> list[Any]:
    return [(t.config, t.parent_config, t.checkpoint, t.metadata, t.pending_writes) for t in tuples]


def test_a_log_opened_again_is_indexed_from_its_head_with_the_same_answers(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    store = tmp_path / "s"
    _fill(store)
    assert len(_head(store).read_bytes().split(b"\n")) > 2  # the record, then index lines
    expected = _configs_of(_from_a_scan(store))
    saver = JsonlSaver(store)
    assert _configs_of(_everything(saver)) == expected
    assert head_loads[-1] is True
    saver.close()


def test_appends_after_an_index_from_the_head_write_what_appends_after_a_scan_write(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    """The same puts on the same store, once indexed from the head and once scanned,
    leave byte-identical logs (delta or full value, snapshot or not, write slots)."""
    store, twin = tmp_path / "s", tmp_path / "twin"
    _fill(store, n=4)
    shutil.copytree(store, twin)
    _head(twin).unlink()
    for path in (store, twin):
        saver = JsonlSaver(path, snapshot_every=3)
        _turns(saver, "t", 5, start=5)
        # A retried regular write is not stored twice; a special one replaces the last.
        latest = saver.get_tuple(config("t"))
        assert latest is not None
        saver.put_writes(latest.config, [("messages", [AIMessage("pending 9", id="p9")])], "task-9", "~9")
        saver.put_writes(latest.config, [("__error__", "boom")], "task-9", "~9")
        saver.close()
    assert head_loads.count(True) == 1  # the store's saver; the twin's scanned
    logs = [Path(ThreadFiles.of(path, "t").log).read_bytes() for path in (store, twin)]
    assert logs[0] == logs[1]
    assert _configs_of(_from_a_scan(store)) == _configs_of(_from_a_scan(twin))


def _damage(head: Path, how: str, earlier: bytes, later: bytes) -> None:
    record, _, lines = head.read_bytes().partition(b"\n")
    if how == "torn-index":
        head.write_bytes(record + b"\n" + lines[: len(lines) // 2])
    elif how == "flipped-index":
        data = bytearray(lines)
        data[len(data) // 2] ^= 0x01
        head.write_bytes(record + b"\n" + bytes(data))
    elif how == "no-index":  # a head as releases before index lines wrote it
        head.write_bytes(record + b"\n")
    elif how == "stale-index":  # the lines of a head made before the last turn
        head.write_bytes(record + b"\n" + earlier.partition(b"\n")[2])
    elif how == "other-bytes":  # names a log of the same size with other bytes
        rec = framing.parse_line(record)
        assert rec is not None
        rec["crc"] = f"{int(rec['crc'], 16) ^ 1:08x}"
        head.write_bytes(framing.frame({k: v for k, v in rec.items() if k != "c"}) + lines)
    elif how == "index-of-a-longer-log":  # the lines of a head made after one more turn
        head.write_bytes(record + b"\n" + later.partition(b"\n")[2])
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how", ["torn-index", "flipped-index", "no-index", "stale-index", "index-of-a-longer-log", "other-bytes"]
)
def test_a_head_whose_index_lines_do_not_cover_the_log_whole_has_it_scanned(
    tmp_path: Path, head_loads: list[bool], how: str
) -> None:
    store = tmp_path / "s"
    _fill(store, n=3)
    earlier = _head(store).read_bytes()
    saver = JsonlSaver(store)
    _turns(saver, "t", 2, start=4)
    saver.close()
    current = _head(store).read_bytes()
    later_store = tmp_path / "later"
    shutil.copytree(store, later_store)
    saver = JsonlSaver(later_store)
    _turns(saver, "t", 1, start=6)
    saver.close()
    _head(store).write_bytes(current)
    _damage(_head(store), how, earlier, _head(later_store).read_bytes())
    expected = _configs_of(_from_a_scan(store))
    head_loads.clear()
    saver = JsonlSaver(store)
    assert _configs_of(_everything(saver)) == expected
    assert head_loads == [False]
    saver.close()


def test_what_follows_the_index_lines_is_ignored_as_a_crash_leaves_it(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    """A head is written over the one before, then cut to its length: a crash between
    the two leaves the end of a longer head after the new one's lines."""
    store = tmp_path / "s"
    _fill(store, n=3)
    head = _head(store)
    data = head.read_bytes()
    head.write_bytes(data + data.splitlines(keepends=True)[-1][5:])
    expected = _configs_of(_from_a_scan(store))
    head_loads.clear()
    saver = JsonlSaver(store)
    assert _configs_of(_everything(saver)) == expected
    assert head_loads == [True]
    saver.close()


def test_verify_reports_index_lines_that_disagree_with_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s"
    _fill(store, n=3)
    assert main(["verify", str(store)]) == 0
    head = _head(store)
    record, _, lines = head.read_bytes().partition(b"\n")
    first = framing.parse_line(lines.split(b"\n")[0])
    assert first is not None and first["p"][1] is not None
    first["p"][1] = cp_id(3)  # a checkpoint's parent, forged; line checksum made good
    forged = framing.frame({k: v for k, v in first.items() if k != "c"})
    head.write_bytes(record + b"\n" + forged + b"\n".join(lines.split(b"\n")[1:]))
    capsys.readouterr()
    assert main(["verify", str(store)]) != 0
    out = capsys.readouterr().out
    assert str(head) in out and "index" in out


@DURABILITIES
@MODES
def test_agent_runs_on_threads_reopened_from_their_heads_match_in_memory(
    tmp_path: Path, head_loads: list[bool], mode: str, durability: str
) -> None:
    """Two interleaved threads with one log open at a time: every run after the first
    reopens its thread's log from the head the last run's end wrote."""
    differential(
        build_agent_graph, agent_scenario, lambda path, **kw: JsonlSaver(path, **kw), tmp_path,
        mode=mode, durability=durability, thread_ids=("t1", "t2"),
        saver_kwargs={"snapshot_every": 3, "max_open_threads": 1},
    )
    assert head_loads.count(True) >= 3


def test_kill_at_every_file_operation_of_a_rotation_never_serves_a_wrong_index(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    """SIGKILL at each file operation of puts on two threads in turn with one log open
    (every switch lets a log go, writes its head over the last one, and opens the other
    from its head): a fresh saver then serves each thread exactly as a scan of its log."""
    from tests.harness.children import kill_at_op_child, spawn
    from tests.harness.reference_log import build_reference_log

    base = tmp_path / "base"
    build_reference_log(base, puts=8, thread_id="t")
    problems, crashes = [], 0
    for k in range(1, 400):
        store = tmp_path / f"rotate-{k}"
        shutil.copytree(base, store)
        p = spawn(kill_at_op_child, str(store), "rotate", k, str(tmp_path / f"rotate-{k}.ops"))
        p.join(60)
        for thread in ("t", "u"):
            if not Path(ThreadFiles.of(store, thread).log).exists():
                continue
            expected = _configs_of(_from_a_scan(store, thread))
            saver = JsonlSaver(store, read_only=True)
            try:
                if _configs_of(_everything(saver, thread)) != expected:
                    problems.append(f"op {k}: thread {thread!r} served otherwise than a scan")
            finally:
                saver.close()
        if p.exitcode == 0:
            break
        assert p.exitcode == -9, f"child failed at op {k}: exit {p.exitcode}"
        crashes += 1
        shutil.rmtree(store)
    assert not problems, "\n".join(problems)
    assert crashes > 20 and head_loads.count(True) > 10


def test_a_log_opened_from_its_head_keeps_the_crc_of_what_it_appends(tmp_path: Path) -> None:
    """The head written at the next let-go names the log's bytes without reading them
    again: the CRC-32 kept as the log appended is the file's."""
    store = tmp_path / "s"
    _fill(store, n=3)
    saver = JsonlSaver(store)
    _turns(saver, "t", 2, start=4)  # opened from the head, then appended to
    log = saver.store.thread_log("t")
    data = Path(ThreadFiles.of(store, "t").log).read_bytes()
    assert log.indexed_crc() == (len(data), head_file.log_crc(data))
    saver.close()


def test_a_log_another_process_appended_to_has_its_bytes_read_for_the_head(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    store = tmp_path / "s"
    _fill(store, n=3)
    saver = JsonlSaver(store)
    _turns(saver, "t", 1, start=4)
    other = JsonlSaver(store)
    _turns(other, "t", 1, start=5)  # appended behind the first saver's back
    other.close()
    log = saver.store.thread_log("t")
    log.refresh()
    assert log.indexed_crc() is None  # it did not append those bytes itself
    saver.close()  # writes the head from the bytes read
    head_loads.clear()
    expected = _configs_of(_from_a_scan(store))
    fresh = JsonlSaver(store)
    assert _configs_of(_everything(fresh)) == expected
    assert head_loads[-1] is True
    fresh.close()


def test_threads_taking_turns_are_opened_from_their_heads_every_time(
    tmp_path: Path, head_loads: list[bool]
) -> None:
    saver = JsonlSaver(tmp_path / "s", max_open_threads=1)
    for turn in range(4):
        for thread in ("a", "b"):
            _turns(saver, thread, 1, start=turn + 1)
    # Each thread was opened four times: first new, then from the head its let-go wrote.
    assert head_loads.count(True) == 6
    saver.close()


@pytest.fixture
def line_decodes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many head index lines were decoded with their columns checked (``checked``)
    and as lines this process wrote or checked before (``known``)."""
    counts = {"checked": 0, "known": 0}
    for name, key in (("decode_block", "checked"), ("decode_known_block", "known")):
        real = getattr(sidecar_checks, name)

        def counted(*args: Any, _real: Any = real, _key: str = key) -> Any:
            counts[_key] += 1
            return _real(*args)

        monkeypatch.setattr(sidecar_checks, name, counted)
    return counts


def test_index_lines_this_process_wrote_or_checked_are_not_checked_again(
    tmp_path: Path, head_loads: list[bool], line_decodes: dict[str, int]
) -> None:
    store = tmp_path / "s"
    saver = JsonlSaver(store, max_open_threads=1)
    for turn in range(3):
        for thread in ("a", "b"):
            _turns(saver, thread, 1, start=turn + 1)
    saver.close()
    # Opened from the heads their let-gos wrote (four times): the lines as written.
    assert head_loads.count(True) == 4
    assert line_decodes == {"checked": 0, "known": 4}
    expected = {t: _configs_of(_from_a_scan(store, t)) for t in ("a", "b")}
    # Another process (a new saver) checks them once, then knows them.
    line_decodes.update(checked=0, known=0)
    saver = JsonlSaver(store, max_open_threads=1)
    for _ in range(2):
        for thread in ("a", "b"):
            assert _configs_of(_everything(saver, thread)) == expected[thread]
    assert line_decodes == {"checked": 2, "known": 2}
    saver.close()


def test_index_lines_changed_since_this_process_wrote_them_are_checked_again(
    tmp_path: Path, head_loads: list[bool], line_decodes: dict[str, int]
) -> None:
    """Lines of other bytes than this process wrote, checksum made good (another
    process's, or a hand's), are checked column by column: ones that fail are not
    used, and the log is scanned."""
    store = tmp_path / "s"
    saver = JsonlSaver(store, max_open_threads=1)
    for turn in range(2):
        for thread in ("a", "b"):
            _turns(saver, thread, 1, start=turn + 1)
    _turns(saver, "b", 1, start=3)  # "a" let go again: its head written by this saver
    head = _head(store, "a")
    record, _, lines = head.read_bytes().partition(b"\n")
    first = framing.parse_line(lines.split(b"\n")[0])
    assert first is not None
    first["t"][0] = 99  # no record kind: the columns' check refuses the line
    forged = framing.frame({k: v for k, v in first.items() if k != "c"})
    head.write_bytes(record + b"\n" + forged + b"\n".join(lines.split(b"\n")[1:]))
    expected = _configs_of(_from_a_scan(store, "a"))
    head_loads.clear()
    line_decodes.update(checked=0, known=0)
    assert _configs_of(_everything(saver, "a")) == expected
    assert head_loads == [False] and line_decodes == {"checked": 1, "known": 0}
    saver.close()
