"""`langgraph-jsonl export STORE THREAD -o FILE`: FILE is the whole transcript or stays as
it was. It was opened for writing (emptied) and then written: a full disk, a file size
limit or a Ctrl-C in between left it cut short, the transcript exported before it lost.
Now a temp file beside FILE is written and renamed over it; `-o -` is stdout."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.scratch import CutShort

OLD = "# the transcript exported yesterday\n"


def _store(path: Path) -> None:
    model = FakeListChatModel(responses=["hello! " * 2000])  # a page of ~14 kB
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "agent")
    with JsonlSaver(path) as saver:
        builder.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]},
                                                   {"configurable": {"thread_id": "t-1"}})


def _limit_file_size() -> None:  # in the child: a write past 4 kB fails with EFBIG (a quota)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl"])
def test_an_export_that_fails_midway_leaves_the_file_before_whole(tmp_path: Path, fmt: str) -> None:
    """`ulimit -f 4; langgraph-jsonl export ... -o t-1.html`: the write fails after 4 kB
    (as on a full disk); t-1.html was left 4 kB long. Now it holds what it held, nothing
    else is left beside it, and the error says why in one line."""
    store, out = tmp_path / "checkpoints", tmp_path / "out"
    _store(store)
    out.mkdir()
    page = out / f"t-1.{fmt}"
    page.write_text(OLD)
    ran = subprocess.run(
        [sys.executable, "-m", "langgraph_jsonl_checkpoint", "export", str(store), "t-1", "-o", str(page)],
        capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size, check=False,
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.startswith("error: ") and ran.stderr.count("\n") == 1, ran.stderr
    assert str(page) in ran.stderr and os.strerror(27) in ran.stderr, ran.stderr  # EFBIG
    assert "Traceback" not in ran.stderr
    assert page.read_text() == OLD
    assert os.listdir(out) == [page.name]
    assert main(["export", str(store), "t-1", "-o", str(page)]) == 0  # no limit: written whole
    assert page.stat().st_size > 10_000 and os.listdir(out) == [page.name]


def test_a_ctrl_c_while_the_file_is_written_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C halfway through the write: the file was left half written."""
    from langgraph_jsonl_checkpoint.inspection import export

    store, out = tmp_path / "checkpoints", tmp_path / "out"
    _store(store)
    out.mkdir()
    page = out / "t-1.md"
    page.write_text(OLD)

    from langgraph_jsonl_checkpoint.cli import export as export_command

    for module in (export, export_command):  # wherever -o's file is opened
        monkeypatch.setattr(module, "open", CutShort, raising=False)
    assert main(["export", str(store), "t-1", "-o", str(page)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert page.read_text() == OLD and os.listdir(out) == [page.name]


def test_the_file_keeps_its_mode_and_a_link_stays_a_link(tmp_path: Path) -> None:
    """Renamed into place, the file keeps the mode it had (a new one: as the umask has it),
    and `-o` naming a symbolic link writes the file it points to, the link kept."""
    store, out = tmp_path / "checkpoints", tmp_path / "out"
    _store(store)
    out.mkdir()
    private = out / "private.md"
    private.write_text(OLD)
    private.chmod(0o640)
    (out / "latest.md").symlink_to("private.md")
    assert main(["export", str(store), "t-1", "-o", str(out / "latest.md")]) == 0
    assert (out / "latest.md").is_symlink() and os.readlink(out / "latest.md") == "private.md"
    assert private.read_text().startswith("# Thread") and (private.stat().st_mode & 0o777) == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    assert main(["export", str(store), "t-1", "-o", str(out / "new.md")]) == 0
    assert ((out / "new.md").stat().st_mode & 0o777) == 0o666 & ~umask
    assert sorted(os.listdir(out)) == ["latest.md", "new.md", "private.md"]


def test_dash_is_stdout_and_a_device_is_written_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o -` wrote a file named `-`: it is stdout, streamed, as without -o. A FIFO or a
    device (`-o /dev/null`) is written to, not renamed over."""
    store = tmp_path / "checkpoints"
    _store(store)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["export", str(store), "t-1"]) == 0
    whole = capsys.readouterr().out
    assert main(["export", str(store), "t-1", "-o", "-"]) == 0
    assert capsys.readouterr().out == whole and not (tmp_path / "-").exists()
    assert main(["export", str(store), "t-1", "-o", os.devnull]) == 0
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    assert sorted(os.listdir(tmp_path)) == ["checkpoints"]


def test_a_file_in_the_store_is_refused_as_all_dir_in_it_is(tmp_path: Path, capsys) -> None:
    """`--all DIR` inside the store was refused, but `-o` naming the thread's own log
    (`--format jsonl -o checkpoints/threads/t-1-<hash>.jsonl`) wrote the transcript over
    it: the thread's checkpoints were gone. `-o` into the store, or through a link into
    it, is now refused too, and every file of the store is as it was."""
    from tests.harness.scratch import file_snapshot

    store = tmp_path / "checkpoints"
    _store(store)
    (log,) = (store / "threads").glob("t-1-*.jsonl")
    (tmp_path / "link.jsonl").symlink_to(log)
    files = file_snapshot(str(store))
    for output in (log, store / "notes.md", tmp_path / "link.jsonl"):
        assert main(["export", str(store), "t-1", "--format", "jsonl", "-o", str(output)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: cannot write the transcript to {output}: it is inside the store "
                              f"{store}; nothing was written. -o takes a file outside the store"), err
        assert "e.g. -o ./t-1.jsonl " in err, err  # the thread's own name, in the format asked for
        assert file_snapshot(str(store)) == files


@pytest.mark.parametrize(("thread", "example"), [("chat-42", "./chat-42.html"),
                                                 ("Support/Ann B", "./support_ann_b.html")])
def test_the_refusals_example_names_the_thread_exported(tmp_path: Path, capsys, thread: str,
                                                        example: str) -> None:
    """The refusals of `-o` gave `-o ./t-1.md` as the example whatever the thread and the
    format: `export STORE chat-42 -o /no/such/dir/x.html` was told to write `./t-1.md`.
    The example is the thread's name (made safe as a file name) in the format asked for."""
    store = tmp_path / "checkpoints"
    with JsonlSaver(store) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", lambda state: {"messages": [("ai", "hello")]})
        builder.add_edge(START, "agent")
        builder.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]},
                                                   {"configurable": {"thread_id": thread}})
    for output in (tmp_path / "no" / "such" / "x.html", store / "x.html"):
        assert main(["export", str(store), thread, "-o", str(output)]) == 2
        err = capsys.readouterr().err
        assert f"e.g. -o {example} (-o - is stdout)" in err, err
        assert "t-1" not in err.replace(str(tmp_path), "TMP"), err  # (pytest-1xx holds t-1)


def test_all_dir_in_the_store_through_a_link_is_refused(tmp_path: Path, capsys) -> None:
    """`--all DIR` inside the store was refused by its path as written only: DIR a
    symbolic link to `checkpoints/threads` passed, and `--format jsonl` wrote each page
    (named by the thread's file stem) over the thread's own log, exit 0: every thread of
    the store was gone. A DIR whose real path is inside the store is refused now."""
    from tests.harness.scratch import file_snapshot

    store = tmp_path / "checkpoints"
    _store(store)
    (tmp_path / "pages").symlink_to(store / "threads")
    files = file_snapshot(str(store))
    for directory in (store / "threads", tmp_path / "pages"):
        assert main(["export", str(store), "--all", str(directory), "--format", "jsonl"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: export into a directory outside the store"), err
        assert file_snapshot(str(store)) == files


@pytest.mark.parametrize("form", ["-o", "--output=", "--all="])
def test_a_tilde_in_the_output_path_is_the_home_directory(tmp_path: Path, monkeypatch, form: str) -> None:
    """`export STORE t-1 --output=~/t-1.md` (bash leaves a `~` after `=` alone) made a
    folder named `~` in the current directory, one `rm -rf ~` away from the home
    directory; the store argument already took `~` as home. `-o` and `--all` do too."""
    store, home, cwd = tmp_path / "checkpoints", tmp_path / "home", tmp_path / "cwd"
    _store(store)
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    if form == "--all=":
        argv = ["export", str(store), "--all=~/pages"]
    else:
        argv = ["export", str(store), "t-1", *(["-o", "~/t-1.md"] if form == "-o" else ["--output=~/t-1.md"])]
    assert main(argv) == 0
    assert os.listdir(cwd) == []
    made = home / ("pages" if form == "--all=" else "t-1.md")
    assert made.exists() and (made.is_dir() or "hello!" in made.read_text())
