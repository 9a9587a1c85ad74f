"""Logic written once, run by a sync driver and an async one.

A piece of logic that does I/O is written once, as a generator that yields
:class:`Call`\\ s (a method name and its arguments) and receives each call's result, or
has the call's exception raised at the ``yield``. Two thin drivers run it against a
target object: :func:`run` calls ``target.<method>(...)``; :func:`arun` awaits
``target.a<method>(...)``, LangGraph's naming for async twins (``get``/``aget``,
``put``/``aput``, ``search``/``asearch``). So the replay adapter's tool-call handling
and the store journal exist once, not as near-copies for sync and async code.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One I/O step: call ``method`` (or its ``a``-prefixed twin) of the target."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def call(method: str, *args: Any, **kwargs: Any) -> Call:
    """A :class:`Call` step."""
    return Call(method, args, kwargs)


Steps = Generator[Call, Any, T]


def run(steps: Steps[T], target: Any) -> T:
    """Run ``steps`` with the target's sync methods; return what the generator returns."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = getattr(target, step.method)(*step.args, **step.kwargs), None
        except BaseException as exc:  # noqa: BLE001 - raised at the generator's yield
            value, error = None, exc


async def arun(steps: Steps[T], target: Any) -> T:
    """Run ``steps`` with the target's async twins (``a<method>``)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = await getattr(target, "a" + step.method)(*step.args, **step.kwargs), None
        except BaseException as exc:  # noqa: BLE001 - raised at the generator's yield
            value, error = None, exc
