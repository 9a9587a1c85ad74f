"""The session memory put in front of a model: after the system prompt, before the history.

For ``create_agent``, :func:`session_memory_middleware` (an ``AgentMiddleware`` whose
``wrap_model_call`` adds the memory to the messages the model is given; ``create_agent``
puts its system prompt before them). For a custom graph, :func:`with_session_memory` in
the node that calls the model::

    def agent(state, config):
        messages = with_session_memory(saver, state["messages"], config)
        return {"messages": [model.invoke(messages)]}

Only the model's input changes: the memory message never enters the graph's state or
the log. By default it is given when the current turn was disturbed and resumed (a
crash the replay journal saw, an error, a person deciding an uncertain call:
:attr:`SessionMemory.resumed`); ``always=True`` gives it on every model call (a crash
in a graph without the replay adapter leaves no sign in the log that tells it from a
run going on). A
``summariser`` (an LLM call, say) may write the text instead of the rule-based default.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..errors import ConfigError
from .model import DEFAULT_BUDGET, SessionMemory, Summariser

#: The ``name`` of the system message holding the memory (an earlier one is replaced).
MEMORY_MESSAGE_NAME = "session_memory"


class MemorySource(Protocol):
    """What gives a thread's memory (``JsonlSaver`` does)."""

    def session_memory(self, thread_id: str, *, budget: int | None = DEFAULT_BUDGET) -> SessionMemory:
        """The thread's memory."""
        ...

    async def asession_memory(self, thread_id: str, *, budget: int | None = DEFAULT_BUDGET) -> SessionMemory:
        """The async form."""
        ...


def insert_memory(messages: Sequence[Any], memory_message: Any) -> list[Any]:
    """``messages`` with ``memory_message`` after the leading system message(s) and
    before the rest; an earlier memory message is left out."""
    kept = [m for m in messages if getattr(m, "name", None) != MEMORY_MESSAGE_NAME]
    head = 0
    while head < len(kept) and getattr(kept[head], "type", None) == "system":
        head += 1
    return [*kept[:head], memory_message, *kept[head:]]


def wanted(memory: SessionMemory, *, always: bool) -> bool:
    """Whether the memory is given: ``always``, or the current turn was disturbed and
    resumed (never when there is nothing to tell). Open items alone do not count: while
    a run is going, the step it is running is one."""
    if memory.is_empty:
        return False
    return always or memory.resumed


def _for_node(memory: SessionMemory, config: Any) -> SessionMemory:
    """The memory as the node calling the model is told it: without its own step as an
    open item (the head checkpoint schedules the node that is running)."""
    metadata = config.get("metadata") if isinstance(config, dict) else None
    node = metadata.get("langgraph_node") if isinstance(metadata, dict) else None
    return memory.without_step(node) if isinstance(node, str) else memory


def _checked(source: Any) -> MemorySource:
    """``source``, if it gives memories (another checkpointer, ``InMemorySaver``, does not).

    Raises:
        ConfigError: It does not.
    """
    if not hasattr(source, "session_memory"):
        raise ConfigError(
            f"the session memory is derived from a JsonlSaver's thread logs; {type(source).__name__} "
            "keeps none: pass the JsonlSaver the graph is compiled with"
        )
    return source  # type: ignore[no-any-return]


def _thread_of(config: Any) -> str:
    try:
        return str(config["configurable"]["thread_id"])
    except (KeyError, TypeError) as exc:
        raise ConfigError(
            "the session memory needs the run's thread: pass the node's config (with "
            "configurable.thread_id) to with_session_memory"
        ) from exc


def with_session_memory(
    source: MemorySource,
    messages: Sequence[Any],
    config: Any,
    *,
    always: bool = False,
    budget: int = DEFAULT_BUDGET,
    summariser: Summariser | None = None,
) -> list[Any]:
    """The messages to give a model in a custom graph: ``messages`` with the thread's
    memory inserted after the system prompt (see :func:`insert_memory`) when it is
    :func:`wanted`.

    Args:
        source: The saver.
        messages: The history (a system prompt first, if any).
        config: The node's ``RunnableConfig`` (names the thread).
        always: Give the memory on every call, not only after a disturbed turn.
        budget: Most characters of the memory's text.
        summariser: Writes the text instead of the rule-based default.

    Raises:
        ConfigError: ``source`` is not a ``JsonlSaver``, or ``config`` names no thread.
    """
    memory = _for_node(_checked(source).session_memory(_thread_of(config), budget=budget), config)
    if not wanted(memory, always=always):
        return list(messages)
    return insert_memory(messages, memory.to_system_message(summariser))


async def awith_session_memory(
    source: MemorySource,
    messages: Sequence[Any],
    config: Any,
    *,
    always: bool = False,
    budget: int = DEFAULT_BUDGET,
    summariser: Summariser | None = None,
) -> list[Any]:
    """Async :func:`with_session_memory` (the summariser is called as is)."""
    memory = _for_node(await _checked(source).asession_memory(_thread_of(config), budget=budget), config)
    if not wanted(memory, always=always):
        return list(messages)
    return insert_memory(messages, memory.to_system_message(summariser))


def session_memory_middleware(
    source: MemorySource,
    *,
    always: bool = False,
    budget: int = DEFAULT_BUDGET,
    summariser: Summariser | None = None,
) -> Any:
    """An ``AgentMiddleware`` for ``create_agent`` that gives the model the thread's
    session memory after the system prompt and before the history (see
    :func:`with_session_memory` for the arguments).

    Raises:
        ConfigError: ``source`` is not a ``JsonlSaver``, or ``langchain`` is not installed.
    """
    _checked(source)
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "session_memory_middleware() needs the 'langchain' package: "
            "pip install 'langgraph-jsonl-checkpoint[agents]'"
        ) from exc

    from langgraph.config import get_config

    # AgentMiddleware is Any to mypy, installed or not (pyproject.toml's [tool.mypy]).
    class SessionMemoryMiddleware(AgentMiddleware):  # type: ignore[misc]
        """Gives the model the thread's session memory before the history."""

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            messages = with_session_memory(source, request.messages, get_config(), always=always,
                                           budget=budget, summariser=summariser)
            return handler(request.override(messages=messages))

        async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
            messages = await awith_session_memory(source, request.messages, get_config(), always=always,
                                                  budget=budget, summariser=summariser)
            return await handler(request.override(messages=messages))

    return SessionMemoryMiddleware()
