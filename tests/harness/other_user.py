"""Running a command as another user (uid/gid 65534, nobody), as a user meets a store or
a database file another user made."""

from __future__ import annotations

import contextlib
import io
import json
import os
import warnings
from collections.abc import Callable

import pytest


def as_nobody(run: Callable[[], int]) -> tuple[int, str]:
    """``run()`` in a forked child as uid/gid 65534: its exit status and what it printed
    (stdout and stderr). The child has the parent's modules (every command's, imported
    before the fork): the package need not be readable by that user (a checkout under a
    private directory, as CI's clone is). Skips the test unless run as root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run as another user")
    import langgraph_jsonl_checkpoint.migrate.databases  # noqa: F401 - imported before the fork
    from langgraph_jsonl_checkpoint.cli import build_parser

    build_parser()  # every command's module, as main() would import it
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+: fork with threads running; the child only reads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code, text = 3, ""
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                code = run()
            text = buffer.getvalue()
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            text += f"Traceback: {exc!r}"
        finally:
            os.write(write, json.dumps([code, text]).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    code, text = json.loads(data)
    return code, text
