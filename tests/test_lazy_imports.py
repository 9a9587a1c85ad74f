"""Importing the package, and the ``langgraph-jsonl`` command, does not import LangGraph
or LangChain (about a second of a fresh process): the public names are imported on
first use (issue 28)."""

from __future__ import annotations

import subprocess
import sys

import langgraph_jsonl_checkpoint as package

HEAVY = ("langgraph.", "langchain_core", "langchain.", "langsmith")


def _imported_after(statement: str) -> list[str]:
    """Modules of LangGraph and LangChain a fresh interpreter holds after ``statement``."""
    code = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [m for m in out.split() if m.startswith(HEAVY) or m == "langgraph"]


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in package.__all__:
        assert getattr(package, name) is not None, name
        assert name in dir(package), name
    assert package.JsonlSaver.__module__ == "langgraph_jsonl_checkpoint.saver.jsonl_saver"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        package.NoSuchName  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_imports_no_langgraph() -> None:
    assert _imported_after("import langgraph_jsonl_checkpoint") == []
    assert _imported_after("from langgraph_jsonl_checkpoint import JsonlCheckpointError") == []


def test_a_public_name_imports_what_it_needs() -> None:
    assert "langgraph.checkpoint.base" in _imported_after("from langgraph_jsonl_checkpoint import JsonlSaver")


def test_the_command_line_imports_no_langgraph() -> None:
    """``langgraph-jsonl`` imports every command module; none of them imports LangGraph,
    LangChain or the saver until a command reads a log (a listing served from its cache
    never does)."""
    assert _imported_after("import langgraph_jsonl_checkpoint.cli") == []
    assert _imported_after("import langgraph_jsonl_checkpoint.inspection.listing") == []


def test_the_lazy_subpackages_resolve_their_names() -> None:
    from langgraph_jsonl_checkpoint import migrate, tracing

    for module in (migrate, tracing):
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)
            assert name in dir(module)
    assert tracing.JsonlTracer.__module__ == "langgraph_jsonl_checkpoint.tracing.tracer"
    try:
        migrate.nothing_here  # noqa: B018
    except AttributeError:
        pass
    else:
        raise AssertionError("an unknown name resolved")
