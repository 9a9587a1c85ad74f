"""LangGraph's own test suite, with ``JsonlSaver`` as its only checkpointer.

One command, from the repository root, in the project's virtualenv:

    . .venv/bin/activate && python -m stress.langgraph_suite

It takes the tests of the installed ``langgraph`` release from that release's source
distribution on PyPI (the wheel has none), and runs every test that uses the suite's
checkpointer fixtures (``sync_checkpointer``, ``async_checkpointer``) with those fixtures
redefined to yield a ``JsonlSaver`` on a new store: the suite's hook for a saver of
one's own is its fixtures, so the redefinition is appended to its ``conftest.py``
(honouring ``LANGGRAPH_STRICT_MSGPACK`` as the suite's own fixtures do).

The suite runs in a virtualenv of its own (``.langgraph-suite/venv-<version>``, made
once): the installed release's ``langgraph``, ``langgraph-checkpoint``,
``langgraph-prebuilt`` and ``langchain-core`` at the versions installed here, this
package without extras, and the suite's test tools. Not the project's test virtualenv:
that one has ``langchain`` installed (the ``agents`` extra), which adds its version to
every chat model's ``lc_versions`` metadata, and the suite's snapshots of streamed
messages (``test_large_cases*.py::test_weather_subgraph``) then differ for every saver,
``InMemorySaver`` included.

Arguments after ``--`` go to pytest (``-- -k strict_resume -x``). Prints pytest's
output; writes the summary to ``stress/results/langgraph-suite-<version>.txt`` with
``--record``. Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Packages the suite imports besides langgraph's own (its ``test`` dependency group,
#: without coverage, watchers, profilers and the Docker-only services it skips).
TEST_TOOLS = [
    "pytest", "pytest-mock", "pytest-repeat", "syrupy", "httpx", "redis", "pycryptodome",
    "psycopg[binary]", "psycopg-pool", "anyio",
]

#: Installed here, pinned to the same versions in the suite's virtualenv.
PINNED = [
    "langgraph", "langgraph-checkpoint", "langgraph-prebuilt", "langchain-core",
    "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres", "langgraph-sdk",
]

#: Appended to the suite's conftest.py: its checkpointer fixtures, redefined.
FIXTURES = '''

# --- langgraph-jsonl-checkpoint (stress/langgraph_suite.py): JsonlSaver as the only
# checkpointer. A later definition of a fixture in the same conftest replaces it.
import tempfile as _jsonl_tempfile

from langgraph_jsonl_checkpoint import JsonlSaver as _JsonlSaver
from tests.conftest_checkpointer import _apply_strict_msgpack as _jsonl_strict


@pytest.fixture(scope="function", params=["jsonl"])
def sync_checkpointer(request):
    with _jsonl_tempfile.TemporaryDirectory() as d, _JsonlSaver(d + "/store") as saver:
        _jsonl_strict(saver)
        yield saver


@pytest.fixture(scope="function", params=["jsonl_aio"])
async def async_checkpointer(request):
    with _jsonl_tempfile.TemporaryDirectory() as d:
        async with _JsonlSaver(d + "/store") as saver:
            _jsonl_strict(saver)
            yield saver
'''


def _run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def suite_venv(work: Path, version: str) -> Path:
    """The suite's virtualenv (made and filled once); its python."""
    venv = work / f"venv-{version}"
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if marker.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(venv)])
    pins = []
    for name in PINNED:
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pins.append(name)
    _run([str(python), "-m", "pip", "install", "-q", *pins, *TEST_TOOLS, "-e", str(ROOT)])
    marker.write_text(version)
    return python


def suite_tests(work: Path, version: str, python: Path) -> Path:
    """The release's ``tests`` folder, with the fixtures appended to its conftest."""
    source = work / f"langgraph-{version}"
    conftest = source / "tests" / "conftest.py"
    if conftest.exists() and "langgraph-jsonl-checkpoint" in conftest.read_text():
        return source
    shutil.rmtree(source, ignore_errors=True)
    downloads = work / "sdist"
    _run([str(python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
          f"langgraph=={version}", "-d", str(downloads)])
    archive = downloads / f"langgraph-{version}.tar.gz"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith(f"langgraph-{version}/tests/") and (m.isfile() or m.isdir())]
        tar.extractall(work, members=members, filter="data")
    (source / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\naddopts = \"--strict-markers --snapshot-warn-unused\"\n"
    )
    with conftest.open("a") as f:
        f.write(FIXTURES)
    return source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default=str(ROOT / ".langgraph-suite"),
                        help="where the suite's virtualenv and sources go (default .langgraph-suite/)")
    parser.add_argument("--record", action="store_true",
                        help="write the summary to stress/results/langgraph-suite-<version>.txt")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = parser.parse_args()
    version = importlib.metadata.version("langgraph")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    python = suite_venv(work, version)
    source = suite_tests(work, version, python)
    env = {**os.environ, "NO_DOCKER": "true"}
    env.pop("PYTHONPATH", None)
    cmd = [str(python), "-m", "pytest", "tests", "-k", "jsonl", "-q", "-p", "no:cacheprovider",
           *args.pytest_args]
    print(f"langgraph {version}: its own suite with JsonlSaver as the only checkpointer", flush=True)
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=source, env=env, capture_output=args.record, text=True)
    if args.record:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        summary = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
        summary += done.stdout.strip().splitlines()[-1:]
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        out = ROOT / "stress" / "results" / f"langgraph-suite-{version}.txt"
        out.write_text(
            f"# commit {commit}; langgraph {version}; python -m stress.langgraph_suite --record\n"
            f"# {time.monotonic() - started:.0f} s\n" + "\n".join(summary) + "\n"
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
