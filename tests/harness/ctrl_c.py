"""``langgraph-jsonl`` started as a user starts it, and Ctrl-C (SIGINT) sent to it.

``start(how, argv, ...)`` runs the command in a fresh interpreter, as the console script
pip installs (``how="script"``: its wrapper, written beside the test) or as ``python -m
langgraph_jsonl_checkpoint`` (``how="-m"``), with SIGINT as a terminal leaves it (a test
run in the background inherits it ignored, and Python then never raises
``KeyboardInterrupt``). A ``sitecustomize`` put on its ``PYTHONPATH`` hooks the
interpreter's ``import`` audit event, so a test can pin a moment of the start-up without
timing it: ``at=MODULE`` sends SIGINT as the import of ``MODULE`` starts (Python acts on
it at its next bytecode: inside that import), ``ready=MODULE`` writes a byte to a pipe
then, which ``Started.wait_ready`` waits for; ``swallowed=MODULE`` sends SIGINT there
and turns the ``KeyboardInterrupt`` into another error (as ``pydantic_core`` does, building
a model's schema as LangSmith's modules load); ``twice=MODULE`` sends another as the
first one's ``KeyboardInterrupt`` unwinds, from a destructor; ``in_destructor=MODULE``
sends it from a destructor as the import starts (Python prints and swallows what a
destructor raises); ``at_exit=True`` sends SIGINT as the
interpreter ends (its last ``atexit`` callback).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: What pip writes as the ``langgraph-jsonl`` console script (its wrapper of the entry point).
CONSOLE_SCRIPT = """\
# -*- coding: utf-8 -*-
import re
import sys
from langgraph_jsonl_checkpoint.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""

SITECUSTOMIZE = """\
import os, signal, sys
_AT = os.environ.get("CTRL_C_TEST_AT")
_SWALLOWED = os.environ.get("CTRL_C_TEST_SWALLOWED")
_TWICE = os.environ.get("CTRL_C_TEST_TWICE")
_IN_DESTRUCTOR = os.environ.get("CTRL_C_TEST_IN_DESTRUCTOR")
class _Pressed:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        len(())
class _Again:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        len(())
_READY = os.environ.get("CTRL_C_TEST_READY")
_READY_FD = int(os.environ.get("CTRL_C_TEST_READY_FD", "-1"))
def _hook(event, args):
    if event != "import":
        return
    if args[0] == _AT:
        os.kill(os.getpid(), signal.SIGINT)
    if args[0] == _TWICE:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            len(())
        finally:  # the first KeyboardInterrupt on its way: a destructor runs as it unwinds
            _Again()
    if args[0] == _IN_DESTRUCTOR:  # Python swallows (and prints) what a destructor raises
        _Pressed()
    if args[0] == _SWALLOWED:  # as a library that turns the KeyboardInterrupt into its own error
        try:
            os.kill(os.getpid(), signal.SIGINT)
            len(())
        except KeyboardInterrupt:
            raise RuntimeError("a library's own error, in place of the KeyboardInterrupt") from None
    if args[0] == _READY:
        os.write(_READY_FD, b"r")
        os.close(_READY_FD)
sys.addaudithook(_hook)
if os.environ.get("CTRL_C_TEST_AT_EXIT"):
    import atexit  # the first registered runs last: after the threads are joined, the others run
    atexit.register(os.kill, os.getpid(), signal.SIGINT)
"""

#: The line a Ctrl-C before the command has started ends it with.
NOT_STARTED = "interrupted: langgraph-jsonl stopped before it started; nothing was changed.\n"


def _as_a_terminal_leaves_it() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Started:
    process: subprocess.Popen[str]
    ready_fd: int

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the child began importing the ``ready`` module (or ended without)."""
        readable, _, _ = select.select([self.ready_fd], [], [], timeout)
        assert readable, f"the child did not start within {timeout} s"
        os.read(self.ready_fd, 1)

    def interrupt(self) -> None:
        try:
            self.process.send_signal(signal.SIGINT)
        except ProcessLookupError:  # ended already
            pass

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        """The exit status, stdout and stderr (killed if it outlives ``timeout``)."""
        try:
            out, err = self.process.communicate(timeout=timeout)
        finally:
            self.process.kill()
            os.close(self.ready_fd)
        return self.process.returncode, out, err


def start(
    how: str, argv: list[str], where: Path, *, at: str | None = None, ready: str | None = None,
    at_exit: bool = False, swallowed: str | None = None, twice: str | None = None,
    in_destructor: str | None = None,
) -> Started:
    """Start ``langgraph-jsonl argv`` (``how``: ``"script"`` or ``"-m"``); ``where`` is a
    directory for the wrapper and the ``sitecustomize``."""
    (where / "sitecustomize.py").write_text(SITECUSTOMIZE)
    script = where / "langgraph-jsonl"
    script.write_text(CONSOLE_SCRIPT)
    command = [sys.executable, *([str(script)] if how == "script" else ["-m", "langgraph_jsonl_checkpoint"])]
    read_fd, write_fd = os.pipe()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTRL_C_TEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(where), *filter(None, [env.get("PYTHONPATH")])])
    env["CTRL_C_TEST_READY_FD"] = str(write_fd)
    if at is not None:
        env["CTRL_C_TEST_AT"] = at
    if ready is not None:
        env["CTRL_C_TEST_READY"] = ready
    if at_exit:
        env["CTRL_C_TEST_AT_EXIT"] = "1"
    if swallowed is not None:
        env["CTRL_C_TEST_SWALLOWED"] = swallowed
    if twice is not None:
        env["CTRL_C_TEST_TWICE"] = twice
    if in_destructor is not None:
        env["CTRL_C_TEST_IN_DESTRUCTOR"] = in_destructor
    try:
        process = subprocess.Popen(
            [*command, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            pass_fds=(write_fd,), preexec_fn=_as_a_terminal_leaves_it,
        )
    finally:
        os.close(write_fd)
    return Started(process, read_fd)
