"""Children a test ends with SIGINT (Ctrl-C) take it as ones started from a terminal do."""

from __future__ import annotations

import signal


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for such a child: a test run in the background (a CI job started
    with ``&``) has SIGINT ignored, its children inherit that, and Python then never
    raises ``KeyboardInterrupt`` (the child waits out its timeout instead)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
