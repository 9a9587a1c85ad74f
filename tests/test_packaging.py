"""What is released: one version everywhere (the package, its installed metadata,
``langgraph-jsonl --version``, a CHANGELOG section), and a wheel and an sdist that
``twine check`` accepts, the wheel holding the package, ``py.typed`` and the license and
nothing of tests/, benchmarks/ or stress/, the sdist building the same wheel.

The build test is slow (``python -m build`` makes an isolated environment twice);
``.ci/run`` also installs the wheel into a fresh virtualenv and runs the example from it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from langgraph_jsonl_checkpoint import __version__

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "langgraph_jsonl_checkpoint"
DIST_INFO = f"{PACKAGE}-{__version__}.dist-info"


def test_the_version_is_the_installed_metadata_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__
    assert metadata.version("langgraph-jsonl-checkpoint") == __version__, (
        "the installed metadata is stale: run `pip install -e .` again"
    )


def test_the_command_prints_the_version() -> None:
    run = subprocess.run([sys.executable, "-m", PACKAGE, "--version"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"langgraph-jsonl {__version__}"
    script = Path(sys.executable).parent / "langgraph-jsonl"  # the entry point pip installed
    if script.exists():
        run = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
        assert run.stdout.strip() == f"langgraph-jsonl {__version__}", run.stderr


def test_the_changelog_has_a_section_for_the_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Unreleased", headings[:3]
    assert any(re.fullmatch(rf"{re.escape(__version__)} — \d{{4}}-\d{{2}}-\d{{2}}", h) for h in headings), (
        f"CHANGELOG.md has no section `## {__version__} — YYYY-MM-DD`"
    )


# -- the wheel and the sdist ----------------------------------------------------------------


def _build(source: Path, outdir: Path, *kinds: str) -> None:
    run = subprocess.run([sys.executable, "-m", "build", *kinds, "--outdir", str(outdir), str(source)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]


def wheel_names(path: Path) -> list[str]:
    """The files a wheel holds, sorted."""
    with zipfile.ZipFile(path) as wheel:
        return sorted(wheel.namelist())


def stray_files(names: list[str]) -> list[str]:
    """The names of a wheel outside the package and its dist-info."""
    return [n for n in names if not n.startswith((f"{PACKAGE}/", f"{DIST_INFO}/"))]


def test_the_stray_file_check_can_fail() -> None:
    assert stray_files([f"{PACKAGE}/__init__.py", f"{DIST_INFO}/RECORD"]) == []
    assert stray_files(["tests/test_cli.py", "benchmarks/run.py", f"{PACKAGE}/x.py"]) == [
        "tests/test_cli.py", "benchmarks/run.py",
    ]


@pytest.mark.slow
def test_the_wheel_and_sdist_build_pass_twine_and_hold_only_the_package(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _build(ROOT, dist, "--wheel", "--sdist")
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert wheel.name == f"{PACKAGE}-{__version__}-py3-none-any.whl"
    assert sdist.name == f"{PACKAGE}-{__version__}.tar.gz"
    run = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    names = wheel_names(wheel)
    assert stray_files(names) == []
    assert not [n for n in names if re.search(r"(^|/)(tests|benchmarks|stress)/", n)]
    assert f"{PACKAGE}/py.typed" in names
    assert f"{DIST_INFO}/licenses/LICENSE" in names
    source = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / PACKAGE).rglob("*") if p.suffix == ".py" or p.name == "py.typed"
    }
    assert source - set(names) == set(), "modules of the package missing from the wheel"
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(f"{DIST_INFO}/METADATA").decode()
    assert f"Version: {__version__}" in meta and "License-Expression: MIT" in meta
    assert "Project-URL: Documentation, https://langgraph-jsonl.github.io/" in meta
    assert "Classifier: Typing :: Typed" in meta

    with tarfile.open(sdist) as tar:
        members = tar.getnames()
        top = f"{PACKAGE}-{__version__}"
        for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", f"{PACKAGE}/py.typed"):
            assert f"{top}/{needed}" in members, needed
        assert not [m for m in members if re.match(rf"{top}/(tests|benchmarks|stress|docs)/", m)]
        tar.extractall(tmp_path / "unpacked", filter="data")
    _build(tmp_path / "unpacked" / top, tmp_path / "from-sdist", "--wheel")
    (again,) = (tmp_path / "from-sdist").glob("*.whl")
    assert wheel_names(again) == names
