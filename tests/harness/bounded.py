"""Reads under a time limit: a read that hangs fails its test instead of stalling CI.

``within(seconds)`` raises :class:`ReadHung` in the main thread when the block runs too
long (``SIGALRM``; the loops it guards against are pure Python, which a signal
interrupts between bytecodes). A read that may also grow memory without limit runs
in a child process instead, under ``run_bounded`` (a time limit and an address-space
limit).
"""

from __future__ import annotations

import contextlib
import resource
import signal
import subprocess
import threading
from collections.abc import Iterator


class ReadHung(AssertionError):
    """A guarded block did not finish within its time limit."""


@contextlib.contextmanager
def within(seconds: float, what: str = "read") -> Iterator[None]:
    """Fail with :class:`ReadHung` if the block takes longer than ``seconds``.

    Only in the main thread (where signals are delivered); elsewhere the block runs
    unguarded, so a test that needs the guard must run there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise ReadHung(f"{what} did not finish within {seconds} s (a loop that never ends?)")

    previous = signal.signal(signal.SIGALRM, expired)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


def run_bounded(
    args: list[str], *, seconds: float = 60, memory_mb: int = 2048, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a child process with a time limit and an address-space limit.

    Raises:
        ReadHung: The child did not finish in time (it is killed).
    """

    def limit() -> None:
        cap = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        return subprocess.run(
            args, capture_output=True, text=True, timeout=seconds, preexec_fn=limit, cwd=cwd
        )
    except subprocess.TimeoutExpired as exc:
        raise ReadHung(f"{args} did not finish within {seconds} s") from exc
