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


def replay_middleware(adapter: ToolCallHooks) -> Any:
    """An ``AgentMiddleware`` whose tool-call hooks are the adapter's.

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

    class ReplayMiddleware(AgentMiddleware):  # type: ignore[misc]
        """Journals every tool call of the agent and replays it safely after a crash."""

        def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return adapter.wrap_tool_call(request, handler)

        async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
            return await adapter.awrap_tool_call(request, handler)

    return ReplayMiddleware()
