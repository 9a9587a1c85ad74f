"""``python -m langgraph_jsonl_checkpoint`` and the ``langgraph-jsonl`` command."""

import atexit
import signal
import sys

from ._ctrl_c import NOT_STARTED, on_ctrl_c, while_loading

__all__ = ["NOT_STARTED", "main"]


def main() -> int:
    """Run ``langgraph-jsonl``; a Ctrl-C while its modules load (most of its first tenth
    of a second) is one line and exit status 130 too, as one later is; one after the
    command's work is done leaves its exit status as it was, however many are pressed.

    Once the status is decided, a Ctrl-C that would raise ``KeyboardInterrupt`` is
    ignored (one as Python joined threads or ran exit callbacks printed a traceback), and
    from the last exit callback on every Ctrl-C is: Python ending puts back SIGINT's
    default action for a handler of its own (the CLI's "again ends at once"), and a
    Ctrl-C after that killed the process (status -2 to a script, not 130)."""
    while_loading()  # the package's __init__ did already, run as the command (see _ctrl_c)
    atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)  # the first registered runs last
    try:
        try:
            from .cli import main as run
        except KeyboardInterrupt:  # a caller's own Ctrl-C handler raised it
            print(NOT_STARTED, file=sys.stderr)
            return 130
        return run(exiting=True)
    except KeyboardInterrupt:  # a Ctrl-C as the command ended, before the status was kept
        return 130
    finally:
        # No call before this one: a Ctrl-C already pending finds SIGINT ignored.
        kept = signal.signal(signal.SIGINT, signal.SIG_IGN)
        if kept is not signal.default_int_handler and kept is not on_ctrl_c:  # ignored already, or "again"
            signal.signal(signal.SIGINT, kept)


if __name__ == "__main__":
    sys.exit(main())
