"""Ctrl-C while ``langgraph-jsonl`` starts: one line and exit status 130, at once.

Loading the command line is most of a command's first tenth of a second, and Python
runs the package's ``__init__`` before any of it (the console script imports
``langgraph_jsonl_checkpoint.__main__``, ``python -m`` the package first). A
``KeyboardInterrupt`` raised meanwhile was a traceback, or a crash when it came as an
extension module (``orjson``) loaded. So while the command loads, Ctrl-C raises
nothing: :func:`_stop` prints :data:`NOT_STARTED` and ends the process, which has done
nothing yet. The package's ``__init__`` imports this module first of all, which then
does so when the process is ``langgraph-jsonl`` (:func:`if_the_command`); ``__main__``
calls :func:`while_loading` too (for a caller that imports it itself); the CLI hands
Ctrl-C over to the command once it runs (:func:`hand_back`). Imports nothing of the package,
and nothing Python's start-up has not loaded but ``signal``.
"""

from __future__ import annotations

import os
import sys

#: What a Ctrl-C says while the command is still being loaded.
NOT_STARTED = "interrupted: langgraph-jsonl stopped before it started; nothing was changed."

#: The console script's name (``pip`` adds ``.exe`` or ``-script.pyw`` on Windows).
_SCRIPT = "langgraph-jsonl"


def _end(line: str) -> None:
    os.write(2, f"{line}\n".encode())
    os._exit(130)


def _stop(signum: int, frame: object) -> None:
    """The SIGINT handler while the command loads: it has changed nothing, so it ends at
    once (no exception unwinding through half-imported modules)."""
    _end(NOT_STARTED)


def while_loading() -> None:
    """Until :func:`hand_back` hands it back, Ctrl-C is :func:`_stop`. Only in the main
    thread, and only when Ctrl-C would raise ``KeyboardInterrupt`` (Python's own
    handler): one ignored (a job started in the background) stays ignored, and a
    caller's own handler stays."""
    try:
        import signal  # loads enum too, for `python -m`

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _stop)
    except ValueError:  # not the main thread: signals are not ours to set
        pass
    except KeyboardInterrupt:  # Ctrl-C before the handler was in place
        _stop(0, None)


#: Whether :func:`on_ctrl_c` has raised ``KeyboardInterrupt``: an error after it is the
#: Ctrl-C's doing (a library may turn the ``KeyboardInterrupt`` into an error of its own:
#: ``pydantic_core`` does, building a model's schema as LangSmith loads).
pressed = False

#: The line a Ctrl-C pressed again ends the command with (the CLI sets it once it knows
#: the command).
saying = NOT_STARTED


def on_ctrl_c(signum: int, frame: object) -> None:
    """The SIGINT handler once the command runs: Python's own (``KeyboardInterrupt``, for
    the command to say how far it got), remembered in :data:`pressed`. Pressed again
    before the command has said it stopped (and put its own handler in place), it ends
    the process at once with :data:`saying` and 130: raised again as the first unwound
    the command, it printed "Exception ignored in ..." and a traceback where Python was
    running a callback or a destructor, and one swallowed there left the command going."""
    global pressed
    if pressed:
        _end(saying)
    pressed = True
    raise KeyboardInterrupt


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """``sys.unraisablehook`` once the command runs: the ``KeyboardInterrupt`` of a
    Ctrl-C that landed in a destructor or a callback, where Python cannot raise it, was
    printed there ("Exception ignored in ...", a traceback) and swallowed, and the
    command went on as if Ctrl-C had not been pressed. It ends the command instead, with
    :data:`saying` and 130, as a second Ctrl-C does. Anything else: Python's own hook."""
    if pressed and isinstance(unraisable.exc_value, KeyboardInterrupt):
        _end(saying)
    sys.__unraisablehook__(unraisable)


def hand_back() -> bool:
    """Whether Ctrl-C is still :func:`_stop`'s; if so it becomes :func:`on_ctrl_c` (and
    one Python swallows, :func:`_unraisable`'s)."""
    import signal

    if signal.getsignal(signal.SIGINT) is not _stop:
        return False
    if sys.unraisablehook is sys.__unraisablehook__:  # (not a hook the program set)
        sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, on_ctrl_c)
    return True


def if_the_command(package: str) -> None:
    """:func:`while_loading` when this process is ``langgraph-jsonl``: the console
    script, or ``python -m`` with ``package``. Any other program importing the package
    keeps its Ctrl-C as it was."""
    argv = getattr(sys, "argv", None) or [""]
    script = os.path.basename(argv[0])
    for suffix in ("-script.pyw", ".exe"):
        script = script.removesuffix(suffix)
    if script == _SCRIPT:
        while_loading()
    elif argv[0] == "-m" and len(sys.orig_argv) > len(argv):  # runpy imports the package first
        named = sys.orig_argv[-len(argv)]  # `-m NAME` or `-mNAME`, just before the arguments
        if named == package or (named.startswith("-") and named.endswith("m" + package)):
            while_loading()


if_the_command(__name__.rpartition(".")[0])
