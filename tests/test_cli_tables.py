"""Tables of ``langgraph-jsonl`` line up in a terminal whatever the ids hold: columns
are measured in display cells (a CJK character takes two, a combining mark none), and
an id longer than ``ID_WIDTH`` cells is cut with an ellipsis in tables (``--json``
keeps it whole), so one long id does not widen every row."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.cli.columns import ID_WIDTH, clip, display_width, table_lines
from tests.harness.checkpoints import config, cp_id, make_checkpoint

LONG = "user-" + "x" * 295  # 300 characters
CJK = "日本語のスレッド"  # eight wide characters: sixteen cells
COMBINING = "cafe\u0301-thread"  # é as e + a combining acute: 11 cells
IDS = ["plain", CJK, COMBINING, LONG, "ｆｕｌｌ"]  # the last: fullwidth Latin


def cells(text: str) -> int:
    """Display cells by a definition written out independently of the package's."""
    n = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def test_display_width_counts_cells() -> None:
    assert display_width("plain") == 5
    assert display_width(CJK) == 16
    assert display_width(COMBINING) == 11
    assert display_width("ｆｕｌｌ") == 8
    assert display_width("a\u200db") == 2  # a zero-width joiner takes no cell


@pytest.mark.parametrize("text", IDS + ["", "ab", "日本", "e\u0301" * 50])
@pytest.mark.parametrize("width", [1, 2, 3, 5, 10, 40])
def test_clip_fits_the_width_and_keeps_what_fits(text: str, width: int) -> None:
    got = clip(text, width)
    assert display_width(got) <= width
    if display_width(text) <= width:
        assert got == text
    else:
        assert got.endswith("…") and text.startswith(got[:-1])
        assert display_width(got) >= width - 1  # nothing more would have fitted
        assert not unicodedata.combining(text[len(got) - 1])  # no mark cut from its letter


def test_table_columns_line_up_in_cells() -> None:
    lines = table_lines(["THREAD", "STATUS", "DETAIL"], [[i, "done", "x"] for i in IDS[:3]])
    starts = {display_width(line.split("done")[0]) for line in lines[1:]}
    assert starts == {16 + 2}, lines  # the widest cell (CJK), then two spaces
    assert display_width(lines[0].split("STATUS")[0]) == 18


def _store(path: Path, threads: list[str]) -> None:
    with JsonlSaver(path) as saver:
        for i, tid in enumerate(threads):
            v = {"messages": saver.get_next_version(None, None)}
            message = HumanMessage(f"hello from {tid}", id=f"m-{i}")
            saver.put(config(tid), make_checkpoint(cp_id(i), {"messages": [message]}, v), {}, v)


def test_threads_and_search_tables_line_up_and_cut_long_ids(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", IDS)
    assert main(["threads", str(tmp_path / "s")]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert len(rows) == len(IDS)
    status_at = {cells(line.split("  done")[0]) for line in rows}
    assert status_at == {cells(header.split("  STATUS")[0])} == {ID_WIDTH}, rows
    long_row = next(line for line in rows if line.startswith("user-x"))
    assert long_row.split("  done")[0].rstrip().endswith("…")
    assert any(line.startswith(CJK + " ") for line in rows)
    assert any(line.startswith(COMBINING) for line in rows)
    assert main(["threads", str(tmp_path / "s"), "--json"]) == 0
    assert {r["thread_id"] for r in json.loads(capsys.readouterr().out)} == set(IDS)

    assert main(["search", str(tmp_path / "s"), "hello"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert len(rows) == len(IDS)
    assert {cells(line.split("  1ef")[0]) for line in rows} == {cells(header.split("  CHECKPOINT")[0])}
    assert main(["search", str(tmp_path / "s"), "hello", "--json"]) == 0
    assert {r["thread_id"] for r in json.loads(capsys.readouterr().out)} == set(IDS)


def test_short_ids_keep_a_narrow_column(tmp_path: Path, capsys) -> None:
    _store(tmp_path / "s", ["a", "b"])
    assert main(["threads", str(tmp_path / "s")]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.startswith("THREAD  STATUS")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_table_printed_escaped_lines_up_as_printed(tmp_path: Path, encoding: str) -> None:
    """On a terminal that cannot show the ids (``PYTHONIOENCODING=ascii``, a Latin-1
    locale) they are printed escaped (``\\u65e5...``), but the columns were padded for the
    cells the characters themselves take: the row's STATUS stood 24 characters right of
    the others. The table is now measured as it is printed."""
    import os
    import subprocess
    import sys

    _store(tmp_path / "s", ["plain", CJK])
    run = subprocess.run([sys.executable, "-m", "langgraph_jsonl_checkpoint", "threads", str(tmp_path / "s")],
                         capture_output=True, env={**os.environ, "PYTHONIOENCODING": encoding}, timeout=60)
    assert run.returncode == 0, run.stderr
    header, *rows = run.stdout.decode(encoding).splitlines()
    assert any("\\u65e5" in row for row in rows), rows  # printed escaped
    assert {row.index("  done") for row in rows} == {header.index("  STATUS")}, [header, *rows]
