"""Messages as a conversation a person reads: who spoke, what they said, which tools
were called with which arguments, what each tool returned. Pure.

A LangChain message becomes an :class:`Utterance` (role, text, tool calls, the call a
tool result answers); :func:`utterance_lines` renders one for a terminal::

    human  Order 1042 arrived damaged.
    ai     calls lookup_order({"order_id": "1042"})  [call_lookup_1042]
    tool   lookup_order [call_lookup_1042] -> {"customer": "ada@example.com"}

Content made of blocks keeps its text blocks and names the others (``[image]``). The
trade-off: the text is for reading, not a faithful copy; ``--json`` and the jsonl
export keep every field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .values import is_message, jsonable

#: What a terminal acts on instead of showing: C0 controls but newline and tab (escape
#: sequences, carriage return, bell), DEL, C1 controls (``\x9b`` starts a sequence in
#: some terminals), and the bidirectional overrides and isolates (text shown in another
#: order than stored).
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` for a terminal: each character a terminal would act on (see
    ``_TERMINAL_UNSAFE``) written as an escape (``\x1b``, ``\u202e``), so what a message
    says cannot clear, recolour or retitle the screen, or hide what was printed; newlines
    and tabs stay. Pure."""
    return _TERMINAL_UNSAFE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


#: Aliases a person may use for a role (``--role user``).
ROLE_ALIASES = {"user": "human", "assistant": "ai", "developer": "system"}
#: The roles of LangChain's messages (their ``type``), as :func:`role_of` gives them.
ROLES = ("human", "ai", "tool", "system", "function", "chat")
#: Width of the role column in terminal output.
ROLE_WIDTH = 6


@dataclass(frozen=True)
class ToolCallShown:
    """A tool call an AI message asked for.

    Attributes:
        call_id: The call's id.
        name: The tool.
        args: Its arguments.
    """

    call_id: str | None
    name: str
    args: Any


@dataclass(frozen=True)
class Utterance:
    """One message, for reading.

    Attributes:
        role: The message ``type``: ``human``, ``ai``, ``tool``, ``system``, ...
        text: Its content as text.
        message_id: Its id.
        name: The tool's name (tool results) or the speaker's, if set.
        tool_calls: The tool calls it asks for (AI messages).
        tool_call_id: The call it answers (tool results).
        status: ``error`` for a tool result that reports a failure.
    """

    role: str
    text: str
    message_id: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCallShown, ...] = ()
    tool_call_id: str | None = None
    status: str | None = None

    def as_json(self) -> dict[str, Any]:
        """JSON-ready data: ``{role, text, id, name, tool_calls: [{id, name, args}],
        tool_call_id, status}``."""
        return {
            "role": self.role, "text": self.text, "id": self.message_id, "name": self.name,
            "tool_calls": [
                {"id": c.call_id, "name": c.name, "args": jsonable(c.args)} for c in self.tool_calls
            ],
            "tool_call_id": self.tool_call_id, "status": self.status,
        }

    def searchable(self) -> str:
        """The text a search looks in: the content, and each tool call's name and arguments."""
        calls = " ".join(f"{c.name} {compact_json(c.args)}" for c in self.tool_calls)
        return f"{self.text} {calls}" if calls else self.text


def role_of(text: str) -> str:
    """A role a person named, in LangChain's terms (``user`` -> ``human``).

    Raises:
        ValueError: No message has that role (not one of :data:`ROLES` or an alias).
    """
    role = ROLE_ALIASES.get(text.lower(), text.lower())
    if role not in ROLES:
        raise ValueError(f"no message has the role {text!r}: use human (user), ai (assistant), tool, "
                         "system (developer), function or chat")
    return role


def compact_json(value: Any) -> str:
    """A value as one line of JSON (non-JSON values as :func:`~.values.jsonable` makes them)."""
    return orjson.dumps(jsonable(value)).decode()


def content_text(content: Any) -> str:
    """A message's content as text: a string as is; of a list of blocks, the text blocks
    joined by newlines and the others named (``[image]``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
            else:
                parts.append(compact_json(block))
        return "\n".join(parts)
    return "" if content is None else compact_json(content)


def utterance(message: Any) -> Utterance:
    """A message (a LangChain message, or its stored dump) for reading."""
    if is_message(message):
        data: dict[str, Any] = {"type": message.type, **message.__dict__}
    elif isinstance(message, dict):
        data = message
    else:
        return Utterance(role=type(message).__name__, text=compact_json(message))
    calls = tuple(
        ToolCallShown(c.get("id"), str(c.get("name", "")), c.get("args"))
        for c in data.get("tool_calls") or () if isinstance(c, dict)
    )
    return Utterance(
        role=str(data.get("type", "message")),
        text=content_text(data.get("content")),
        message_id=data.get("id"),
        name=data.get("name"),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        status=data.get("status") if data.get("status") == "error" else None,
    )


def is_message_list(value: Any) -> bool:
    """Whether a channel value is a conversation (a non-empty list of messages)."""
    return isinstance(value, list) and bool(value) and all(is_message(m) for m in value)


def message_channels(values: dict[str, Any]) -> list[str]:
    """The channels holding conversations, ``messages`` first."""
    return sorted((ch for ch, v in values.items() if is_message_list(v)), key=lambda c: (c != "messages", c))


def utterance_lines(u: Utterance, *, width: int = ROLE_WIDTH) -> list[str]:
    """One utterance as terminal lines: the role, then the text; a tool call per line;
    continuation lines indented under the text."""
    pad = " " * (width + 1)
    head = u.role.ljust(width) + " "
    body: list[str] = []
    if u.role == "tool":
        label = f"{u.name or 'tool'} [{u.tool_call_id}]" + (" (error)" if u.status else "")
        text_lines = (u.text or "").split("\n")
        body.append(f"{label} -> {text_lines[0]}")
        body.extend(text_lines[1:])
    else:
        if u.text:
            body.extend(u.text.split("\n"))
        for c in u.tool_calls:
            body.append(f"calls {c.name}({compact_json(c.args)})  [{c.call_id}]")
    if not body:
        body = [""]
    return [terminal_safe(head + body[0])] + [pad + terminal_safe(line) for line in body[1:]]


def conversation_lines(utterances: Iterable[Utterance]) -> list[str]:
    """Utterances as terminal lines, one block each."""
    out: list[str] = []
    for u in utterances:
        out.extend(utterance_lines(u))
    return out


def utterances(messages: Sequence[Any]) -> list[Utterance]:
    """Messages (or stored dumps) for reading, in order."""
    return [utterance(m) for m in messages]
