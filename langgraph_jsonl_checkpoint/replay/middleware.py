"""The replay adapter as ``create_agent`` middleware (needs the optional ``langchain``).

Install with ``pip install 'langgraph-jsonl-checkpoint[agents]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..errors import ConfigError


class ToolCallHooks(Protocol):
    """``ToolNode``'s tool-call hooks (the replay adapter has them)."""

    def wrap_tool_call(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        """Run one tool call through ``execute``, or answer it without running it."""
        ...

    async def awrap_tool_call(self, request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        """The async form."""
        ...

    def answer_pending_calls(self, state: Any, config: Any) -> dict[str, Any]:
        """A state update answering tool calls left pending (``{}``: none)."""
        ...

    async def aanswer_pending_calls(self, state: Any, config: Any) -> dict[str, Any]:
        """The async form."""
        ...


def replay_middleware(adapter: ToolCallHooks) -> Any:
    """An ``AgentMiddleware`` whose tool-call hooks are the adapter's, and whose
    ``before_model`` hook answers tool calls left pending when new input arrived.

    Raises:
        ConfigError: ``langchain`` is not installed.
    """
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "ReplayAdapter.middleware() needs the 'langchain' package: "
            "pip install 'langgraph-jsonl-checkpoint[agents]'"
        ) from exc

    from langgraph.config import get_config

    # AgentMiddleware is Any to mypy, installed or not (pyproject.toml's [tool.mypy]).
    class ReplayMiddleware(AgentMiddleware):  # type: ignore[misc]
        """Journals every tool call of the agent and replays it safely after a crash;
        answers calls left pending by new input before the model sees the history."""

        def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return adapter.answer_pending_calls(state, get_config()) or None

        async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return await adapter.aanswer_pending_calls(state, get_config()) or None

        def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return adapter.wrap_tool_call(request, handler)

        async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
            return await adapter.awrap_tool_call(request, handler)

    return ReplayMiddleware()
