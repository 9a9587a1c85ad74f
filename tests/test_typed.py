"""The typed API: ``py.typed`` ships, the savers' public methods have
``BaseCheckpointSaver``'s signatures (``mypy --strict`` runs in ``.ci/run``), and
``mypy --strict`` passes without the optional extras too."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import sysconfig
from importlib import resources
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_jsonl_checkpoint import AsyncJsonlSaver, JsonlSaver

ROOT = Path(__file__).resolve().parents[1]

#: Every public method a LangGraph checkpointer defines.
CONTRACT = sorted(
    name
    for name, member in vars(BaseCheckpointSaver).items()
    if not name.startswith("_") and inspect.isfunction(member)
)


def test_the_package_is_marked_typed() -> None:
    assert resources.files("langgraph_jsonl_checkpoint").joinpath("py.typed").is_file()


def test_the_contract_is_what_we_think_it_is() -> None:
    # A guard on the test below: it must compare the methods that matter.
    for name in ("get_tuple", "list", "put", "put_writes", "delete_thread", "aget_tuple",
                 "alist", "aput", "aput_writes", "adelete_thread", "copy_thread", "prune",
                 "delete_for_runs", "get_next_version"):
        assert name in CONTRACT


def _compatible(ours: object, theirs: object) -> list[str]:
    """Where ``ours`` cannot stand in for ``theirs``: every parameter by the same name
    and kind, in the same order, with the base's default where it has one (a default the
    base lacks is allowed: InMemorySaver's ``get_next_version`` has one too)."""
    a = list(inspect.signature(ours).parameters.values())  # type: ignore[arg-type]
    b = list(inspect.signature(theirs).parameters.values())  # type: ignore[arg-type]
    if [(p.name, p.kind) for p in a] != [(p.name, p.kind) for p in b]:
        return ["parameter names or kinds differ"]
    return [
        f"default of {p.name!r}: {p.default!r} instead of {q.default!r}"
        for p, q in zip(a, b)
        if q.default is not inspect.Parameter.empty and p.default != q.default
    ]


@pytest.mark.parametrize("saver_class", [JsonlSaver, AsyncJsonlSaver])
@pytest.mark.parametrize("name", CONTRACT)
def test_public_signatures_match_base_checkpoint_saver(saver_class: type, name: str) -> None:
    ours = getattr(saver_class, name)
    theirs = getattr(BaseCheckpointSaver, name)
    assert _compatible(ours, theirs) == [], (
        f"{saver_class.__name__}.{name}{inspect.signature(ours)} cannot stand in for "
        f"BaseCheckpointSaver.{name}{inspect.signature(theirs)}"
    )


def test_the_signature_check_catches_a_renamed_parameter() -> None:
    def get_tuple(self: object, cfg: object) -> None: ...

    assert _compatible(get_tuple, BaseCheckpointSaver.get_tuple) != []


# -- typing that does not depend on the extras installed ----------------------------------

#: The extras that only add optional features (``test`` and ``mutation`` are tools).
FEATURE_EXTRAS = ("agents", "cli", "archive", "sqlite", "postgres")


def _extra_distributions() -> set[str]:
    """Every distribution the feature extras bring, with the packages that exist only
    for them (``types-tqdm``, ``psycopg-binary``), by their normalised names."""
    from importlib import metadata

    from packaging.requirements import Requirement

    ours = metadata.distribution("langgraph-jsonl-checkpoint")
    core = {Requirement(r).name for r in ours.requires or [] if "extra ==" not in r}
    names: set[str] = set()
    for spec in ours.requires or []:
        req = Requirement(spec)
        if req.marker is not None and any(req.marker.evaluate({"extra": e}) for e in FEATURE_EXTRAS):
            names.add(req.name)
            names |= {f"{req.name}-{x}" for x in req.extras}
    names |= {"types-tqdm", "psycopg-binary"}
    return {n.lower().replace("_", "-") for n in names} - {c.lower() for c in core}


def _python_without(hidden: set[str], where: Path) -> str:
    """A Python that sees this environment's packages except the distributions
    ``hidden``: a bare venv whose ``.pth`` names a tree of links to every file of
    site-packages but theirs (a directory left empty would import as a namespace
    package, so none is made)."""
    from importlib import metadata

    skip = set()
    for dist in metadata.distributions():
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in hidden:
            skip |= {os.path.realpath(dist.locate_file(f)) for f in dist.files or []}
    site = sysconfig.get_paths()["purelib"]
    tree = where / "site"
    for root, _, names in os.walk(site):
        for name in names:
            path = os.path.realpath(os.path.join(root, name))
            if path in skip or name.endswith(".pyc"):
                continue
            link = tree / os.path.relpath(os.path.join(root, name), site)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    python = str(where / "venv" / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "site.pth").write_text(f"{tree}\n")
    return python


def test_mypy_strict_passes_without_the_optional_extras(tmp_path: Path) -> None:
    """``mypy --strict`` gives the same answer whether or not the optional extras
    (``tqdm``, ``zstandard``, ``langchain``, the SQLite and PostgreSQL savers) are
    installed: checked against a Python that sees every package of this environment
    but those."""
    hidden = _extra_distributions()
    assert {"tqdm", "types-tqdm", "zstandard", "langchain", "psycopg"} <= hidden, hidden
    python = _python_without(hidden, tmp_path)
    probe = "import importlib.util as u, langgraph, orjson; print([m for m in %r if u.find_spec(m)])"
    seen = subprocess.run([python, "-c", probe % (["tqdm", "zstandard", "langchain", "psycopg"],)],
                          capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "[]", seen  # the extras are gone, the rest is there
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-executable", python, "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
