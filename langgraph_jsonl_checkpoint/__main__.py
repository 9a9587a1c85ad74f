"""``python -m langgraph_jsonl_checkpoint`` and the ``langgraph-jsonl`` command."""

import sys

from ._ctrl_c import NOT_STARTED, while_loading

__all__ = ["NOT_STARTED", "main"]


def main() -> int:
    """Run ``langgraph-jsonl``; a Ctrl-C while its modules load (most of its first tenth
    of a second) is one line and exit status 130 too, as one later is; one after the
    command's work is done leaves its exit status as it was."""
    while_loading()  # the package's __init__ did already, run as the command (see _ctrl_c)
    try:
        from .cli import main as run
    except KeyboardInterrupt:  # a caller's own Ctrl-C handler raised it
        print(NOT_STARTED, file=sys.stderr)
        return 130
    return run(exiting=True)


if __name__ == "__main__":
    sys.exit(main())
