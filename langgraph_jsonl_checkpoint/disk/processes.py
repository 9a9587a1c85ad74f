"""Whether a process is alive: a temp file or a tool call of a dead one is left over.

Not a file operation, so not behind :mod:`.files`' door: the crash batteries may give
this process another pid there (to make its temp files look like a dead process's),
and this check must see the real one.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (ours counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
