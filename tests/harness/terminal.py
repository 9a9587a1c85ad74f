"""Children run as from a terminal: ended with SIGINT (Ctrl-C) as ones started from a
terminal are, and read as a pipe to ``head`` reads them (the first lines, then closed)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence

from tests.harness.bounded import within


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for such a child: a test run in the background (a CI job started
    with ``&``) has SIGINT ignored, its children inherit that, and Python then never
    raises ``KeyboardInterrupt`` (the child waits out its timeout instead)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_head_reads(argv: Sequence[str], lines: int, *, end_within: float = 60) -> tuple[list[bytes], int, str]:
    """Run ``argv`` with its output read as ``| head -N`` reads it: its first ``lines``
    lines, then the pipe closed. Returns those lines, its exit status and its stderr,
    each step under a time limit (the child is killed if one is missed)."""
    child = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stderr is not None
        with within(60, "the child's first lines"):
            head = [child.stdout.readline() for _ in range(lines)]
        child.stdout.close()
        with within(end_within, "the child's end after its output was closed"):
            err = child.stderr.read().decode()
            code = child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stderr is not None
        child.stderr.close()
    return head, code, err
