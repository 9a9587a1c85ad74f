"""``python -m langgraph_jsonl_checkpoint`` and the ``langgraph-jsonl`` command."""

import sys

#: What a Ctrl-C says while the command is still being loaded.
NOT_STARTED = "interrupted: langgraph-jsonl stopped before it started; nothing was changed."


def main() -> int:
    """Run ``langgraph-jsonl``; a Ctrl-C while its modules load (most of its first tenth
    of a second) is one line and exit status 130 too, as one later is; one after the
    command's work is done leaves its exit status as it was."""
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        print(NOT_STARTED, file=sys.stderr)
        return 130
    return run(exiting=True)


if __name__ == "__main__":
    sys.exit(main())
