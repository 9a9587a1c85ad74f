"""Docs that run: every Python and shell block of README.md and of every page of the
documentation site (docs/**/*.md; every page of mkdocs.yml's nav is one of them).

A Python block runs as a program in a fresh folder (exit 0 within the time limit), or,
marked ``# fragment: <reason>``, is compiled. A shell block runs with ``bash -e`` in a
fresh folder holding ``./checkpoints`` (thread ``t-1``, made by a real graph run, idle
for eight days) and the repository's ``examples/``; the steps that need the network are
left out by name (``tests/harness/doc_blocks.py``). A block marked
``# shown, run elsewhere: tests/<file>.py`` must name a test file that runs its program;
one marked ``# synopsis: <reason>`` (usage lines with placeholders) must parse with the
CLI's parser.
A ``langgraph.json`` block names a checkpointer the server can load, and ``langgraph dev``
accepts the whole file (other JSON blocks
are records of ``docs/format.md``, with elisions).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import build_parser
from langgraph_jsonl_checkpoint.maintenance.retention import TTL_VARIABLES
from tests.harness.doc_blocks import (
    ELSEWHERE,
    FRAGMENT,
    ROOT,
    SYNOPSIS,
    DocBlock,
    blocks,
    doc_files,
    runnable_shell,
    synopsis_argv,
)

TIMEOUT = 300
PYTHON_BLOCKS = blocks("python")
BASH_BLOCKS = blocks("bash")
JSON_BLOCKS = [b for b in blocks("json") if "checkpointer" in b.text]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("LANGGRAPH_JSONL_STORE", None)
    for name in TTL_VARIABLES:  # a policy of the environment would change what sweep prints
        env.pop(name, None)
    return env


def test_the_docs_have_blocks_to_run() -> None:
    assert len(PYTHON_BLOCKS) >= 5 and len(BASH_BLOCKS) >= 4
    runnable = [b for b in PYTHON_BLOCKS if not FRAGMENT.match(b.first_line)]
    assert runnable, "no Python block of the docs runs as a program"


def _nav_pages(entry: object) -> list[str]:
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, dict):
        return [p for v in entry.values() for p in _nav_pages(v)]
    if isinstance(entry, list):
        return [p for v in entry for p in _nav_pages(v)]
    return []


def test_every_page_of_the_site_is_run_and_every_page_is_in_the_site() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = {f"docs/{page}" for page in _nav_pages(config["nav"])}
    pages = {str(p.relative_to(ROOT)) for p in doc_files()} - {"README.md"}
    assert nav == pages, (
        f"pages not in mkdocs.yml's nav: {sorted(pages - nav)}; "
        f"nav entries without a page: {sorted(nav - pages)}"
    )
    run = {b.path for b in PYTHON_BLOCKS + BASH_BLOCKS}
    assert run > {"README.md", "docs/cli.md", "docs/getting-started.md"}


def test_a_page_whose_block_breaks_fails(tmp_path: Path) -> None:
    def block(lang: str, text: str) -> DocBlock:
        return DocBlock("docs/some-page.md", 3, lang, text)

    with pytest.raises(AssertionError, match="docs/some-page.md:3 failed"):
        test_python_block(block("python", "raise SystemExit('broken')\n"), tmp_path)
    with pytest.raises(SyntaxError):
        test_python_block(block("python", "# fragment: a piece of a program\nif\n"), tmp_path)
    shell = tmp_path / "shell"
    shell.mkdir()
    with pytest.raises(AssertionError, match="docs/some-page.md:3 failed"):
        test_shell_block(block("bash", "langgraph-jsonl show ./checkpoints no-such-thread\n"), shell)
    with pytest.raises(AssertionError, match="does not parse"):
        test_shell_block(block("bash", "# synopsis: usage\nlanggraph-jsonl shw THREAD\n"), tmp_path)


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.name)
def test_python_block(block: DocBlock, tmp_path: Path) -> None:
    fragment = FRAGMENT.match(block.first_line)
    if fragment:
        assert len(fragment.group(1)) > 10, f"{block.name}: say why it is a fragment"
        compile(block.text, block.name, "exec")
        return
    program = tmp_path / "block.py"
    program.write_text(block.text)
    run = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, f"{block.name} failed:\n{run.stdout}\n{run.stderr}"


@pytest.mark.parametrize("block", [b for b in PYTHON_BLOCKS if not FRAGMENT.match(b.first_line)],
                         ids=lambda b: b.name)
def test_python_block_runs_again_in_the_same_folder(block: DocBlock, tmp_path: Path) -> None:
    """A newcomer runs a page's program, then runs it again to see it once more: the
    second run must work too (a program that finds its own files of the first run and
    fails on them, a traceback from a `check=True`, is a broken page)."""
    program = tmp_path / "block.py"
    program.write_text(block.text)
    for attempt in ("first", "second"):
        run = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=_env(),
                             capture_output=True, text=True, timeout=TIMEOUT)
        assert run.returncode == 0, f"{block.name} failed on its {attempt} run:\n{run.stdout}\n{run.stderr}"


def _shell_folder(tmp_path: Path) -> Path:
    """A folder with ./checkpoints (thread t-1, idle for eight days) and examples/."""
    model = FakeListChatModel(responses=["the answer is 5"])
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "agent")
    with JsonlSaver(tmp_path / "checkpoints") as saver:
        graph = builder.compile(checkpointer=saver)
        for text in ("what is 3 + 2?", "thanks"):
            graph.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": "t-1"}})
        log = saver.store.thread_log("t-1").path
    idle = time.time() - 8 * 24 * 3600
    os.utime(log, (idle, idle))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


@pytest.mark.parametrize("block", BASH_BLOCKS, ids=lambda b: b.name)
def test_shell_block(block: DocBlock, tmp_path: Path) -> None:
    elsewhere = ELSEWHERE.match(block.first_line)
    if elsewhere:
        runner = ROOT / elsewhere.group(1)
        assert runner.is_file(), f"{block.name}: {elsewhere.group(1)} does not exist"
        program = next(line for line in block.text.splitlines() if line and not line.startswith("#"))
        command = next(w for w in program.split() if "=" not in w)  # past VAR=value prefixes
        source = runner.read_text() + "".join(
            (ROOT / "tests" / "harness" / f).read_text() for f in os.listdir(ROOT / "tests" / "harness")
            if f.endswith(".py")
        )
        assert f'"{command}"' in source or f"'{command}'" in source, (
            f"{block.name}: {elsewhere.group(1)} does not run {command}"
        )
        return
    if SYNOPSIS.match(block.first_line):
        lines = [argv for line in block.text.splitlines() if (argv := synopsis_argv(line)) is not None]
        assert lines, block.name
        for argv in lines:
            if argv == ["--version"]:
                continue
            try:
                build_parser().parse_args(argv)
            except SystemExit as exc:
                shown = " ".join(argv)
                raise AssertionError(f"{block.name}: `langgraph-jsonl {shown}` does not parse") from exc
        return
    script, skipped = runnable_shell(block.text)
    if not script.strip():  # every step needs the network or is this suite (named in doc_blocks)
        assert skipped, block.name
        return
    folder = _shell_folder(tmp_path)
    run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=folder, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, f"{block.name} failed:\n{script}\n{run.stdout}\n{run.stderr}"


#: Pages a newcomer follows from the top, in a folder of their own.
WALKTHROUGHS = ["README.md", "docs/getting-started.md"]


@pytest.mark.parametrize("page", WALKTHROUGHS)
def test_a_walkthrough_page_runs_top_to_bottom_in_an_empty_folder(page: str, tmp_path: Path) -> None:
    """Each block after the ones before it, as a reader runs them, with no ./checkpoints
    made beforehand: a command must find what the page's earlier steps made."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    steps = [b for b in PYTHON_BLOCKS + BASH_BLOCKS if b.path == page]
    steps.sort(key=lambda b: b.line)
    ran = 0
    for block in steps:
        if any(marker.match(block.first_line) for marker in (FRAGMENT, ELSEWHERE, SYNOPSIS)):
            continue
        if block.lang == "python":
            program = tmp_path / "block.py"
            program.write_text(block.text)
            argv = [sys.executable, str(program)]
        else:
            argv = ["bash", "-e", "-o", "pipefail", "-c", runnable_shell(block.text)[0]]
        run = subprocess.run(argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert run.returncode == 0, (
            f"{block.name}, after the blocks above it, failed:\n{run.stdout}\n{run.stderr}"
        )
        ran += 1
    assert ran >= 2, page


@pytest.mark.parametrize("block", JSON_BLOCKS, ids=lambda b: b.name)
def test_json_block(block: DocBlock, tmp_path: Path) -> None:
    config = json.loads(block.text)
    if "graphs" in config:  # a whole langgraph.json: `langgraph dev` must take it as it is
        from langgraph_cli.config import validate_config_file

        (tmp_path / "langgraph.json").write_text(block.text)
        try:
            validate_config_file(tmp_path / "langgraph.json")
        except Exception as exc:  # click.UsageError: what `langgraph dev` prints and exits on
            raise AssertionError(f"{block.name}: langgraph dev refuses it: {exc}") from exc
    path = config["checkpointer"]["path"]
    # loaded as langgraph-api loads an installed module's attribute
    module, _, attr = path.rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr)), block.name


def test_every_markdown_file_the_scripts_name_exists() -> None:
    """The scripts' help and docstrings (stress/, benchmarks/, examples/) pointed at a
    RELIABILITY.md that is docs/reliability.md: every .md file they name must exist, from
    the repository root or the script's folder."""
    named = re.compile(r"(?<![\w./])((?:[\w-]+/)*[\w-]+\.md)\b")
    missing = [
        f"{script.relative_to(ROOT)}: {name}"
        for folder in ("stress", "benchmarks", "examples")
        for script in sorted((ROOT / folder).glob("*.py"))
        for name in named.findall(script.read_text())
        if not ((ROOT / name).exists() or (script.parent / name).exists())
    ]
    assert missing == []


def _readme_before_the_rule() -> str:
    """The README's opening part: how to run the example and the tests."""
    return (ROOT / "README.md").read_text().split("\n---\n", 1)[0]


def test_the_readme_names_every_system_tool_the_tests_need() -> None:
    """A newcomer runs the README's test command on their own machine: every tool .ci/run
    installs for the tests (jq runs the docs' recipe, Chromium renders the HTML export)
    must be named where that command is, or the tests that need it fail unexplained."""
    ci = (ROOT / ".ci" / "run").read_text()
    tools = re.findall(r"^command -v (\w+) >/dev/null 2>&1 \|\| missing=", ci, re.M)
    assert len(tools) >= 2, "the list of system tools in .ci/run was not found"
    opening = _readme_before_the_rule()
    unnamed = [tool for tool in tools if not re.search(rf"apt-get install -y [^`]*\b{tool}\b", opening)]
    assert unnamed == [], f"README.md's test paragraph does not say to install {unnamed}"


def test_the_readme_names_the_database_the_tests_connect_to() -> None:
    """A fresh PostgreSQL has no database ``test``, which the harness connects to (to
    create each test's own): the README must name it, and the variable to use another."""
    from urllib.parse import urlsplit

    from tests.harness.postgres import DEFAULT_ADMIN_URL

    database = urlsplit(DEFAULT_ADMIN_URL).path.lstrip("/")
    opening = " ".join(_readme_before_the_rule().split())  # as read: lines joined
    assert f"createdb -h 127.0.0.1 -U postgres {database}" in opening, (
        f"README.md does not say to create the database {database!r} the tests connect to"
    )
    assert "LANGGRAPH_JSONL_TEST_PG" in opening


#: What a command's URL needs installed, and how a page says so.
URL_EXTRAS = {"sqlite:///": "[sqlite]", "postgresql://": "[postgres]", "--strategy archive": "[archive]"}


def test_a_page_says_which_extra_its_database_commands_need_before_them() -> None:
    """The README's install (`pip install -e .`) has no SQLite or PostgreSQL saver, nor
    Zstandard for archives: a reader who runs a page's `copy ... sqlite:///backup.db` (or
    `sweep --strategy archive`) gets an error naming the extra. Each
    page that shows such a command, in a transcript or a block to run, names the extra to
    install above it."""
    missing = []
    for block in blocks("console") + [b for b in BASH_BLOCKS if not SYNOPSIS.match(b.first_line)]:
        above = (ROOT / block.path).read_text().split("\n")[: block.line]
        for url, extra in URL_EXTRAS.items():
            if url in block.text and f"langgraph-jsonl-checkpoint{extra}" not in "\n".join(above):
                missing.append(f"{block.name}: {url} without {extra} above it")
    assert missing == []
