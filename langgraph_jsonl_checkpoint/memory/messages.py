"""Messages as the session memory reads them (pure): stored dumps or LangChain message
objects as dicts, their text, a tool call in short, and what a conversation (the head
checkpoint's messages) counts."""

from __future__ import annotations

import json
from typing import Any

from .model import GOAL_CHARS, ITEM_CHARS, clip


def text(content: Any) -> str:
    """A message's content as text (content blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, (str, dict))
        ]
        return " ".join(p for p in parts if p)
    return str(content)


def args_text(args: Any) -> str:
    """Key arguments, short: ``to=bob@example.com, subject=Hi``."""
    if isinstance(args, dict):
        return ", ".join(f"{k}={v if isinstance(v, (str, int, float, bool)) else json.dumps(v, default=str)}"
                         for k, v in args.items())
    return "" if args is None else str(args)


def call_text(name: str, args: Any) -> str:
    return clip(f"{name or '?'}({args_text(args)})", ITEM_CHARS // 2)


def as_dict(message: Any) -> dict[str, Any] | None:
    """A stored message dump, or a LangChain message object, as a dict."""
    if isinstance(message, dict):
        return message
    if hasattr(message, "type") and hasattr(message, "content"):
        return {
            "type": message.type,
            "content": message.content,
            "id": getattr(message, "id", None),
            "tool_calls": getattr(message, "tool_calls", None) or [],
            "name": getattr(message, "name", None),
            "tool_call_id": getattr(message, "tool_call_id", None),
            "status": getattr(message, "status", "success"),
        }
    return None


def tool_message(result: Any) -> dict[str, Any] | None:
    """The ToolMessage a journaled tool result gives the model (a ``Command``'s first
    one), as a dict; ``None`` if there is none."""
    update = getattr(result, "update", None)
    if isinstance(update, dict):
        candidates = update.get("messages") or []
        result = next((m for m in candidates if getattr(m, "type", None) == "tool"), None)
    message = as_dict(result)
    return message if message is not None and message.get("type") == "tool" else None


def conversation(messages: list[dict[str, Any]]) -> tuple[int, int, str, set[Any]]:
    """``(turns, tool calls, goal, ids of the calls asked)`` of a list of messages: its
    human messages, the tool calls its AI messages ask for, and the latest human
    message's text (``""`` if there is none)."""
    turns = calls = 0
    goal: Any = None
    asked: set[Any] = set()
    for m in messages:
        kind = m.get("type")
        if kind == "human":
            turns += 1
            goal = m.get("content", "")
        elif kind == "ai":
            for call in m.get("tool_calls") or []:
                calls += 1
                asked.add(call.get("id"))
    return turns, calls, "" if goal is None else clip(text(goal), GOAL_CHARS), asked


def interrupt_text(interrupt: Any) -> str:
    """What an ``interrupt()`` asked, short (the replay adapter's question in words)."""
    value = getattr(interrupt, "value", interrupt)
    if isinstance(value, dict) and value.get("type") == "uncertain_tool_calls":
        calls = ", ".join(call_text(c.get("name", ""), c.get("args")) for c in value.get("calls", []))
        return f"decide retry / skip / result for uncertain calls {calls}"
    return json.dumps(value, default=str, sort_keys=True)
