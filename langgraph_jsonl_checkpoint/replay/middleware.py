"""The replay adapter as ``create_agent`` middleware (needs the optional ``langchain``).

Install with ``pip install 'langgraph-jsonl-checkpoint[agents]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .adapter import ReplayAdapter


def replay_middleware(adapter: ReplayAdapter) -> Any:
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
