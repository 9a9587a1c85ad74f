"""The typed API: ``py.typed`` ships, and the savers' public methods have
``BaseCheckpointSaver``'s signatures (``mypy --strict`` runs in ``.ci/run``)."""

from __future__ import annotations

import inspect
from importlib import resources

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_jsonl_checkpoint import AsyncJsonlSaver, JsonlSaver

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
