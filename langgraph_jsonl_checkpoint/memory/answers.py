"""What a person's answer decided, call by call, as the session memory tells it (pure);
and the keys the memory knows a call execution by."""

from __future__ import annotations

from typing import Any

from .messages import call_text
from .model import clip

#: Joins the parts of a journaled call's key (ids LangGraph and models make never hold it).
KEY_SEP = "\x1f"


def call_key(rec: dict[str, Any]) -> str:
    """The key of the call execution a tool record is about: namespace, checkpoint, call
    id (one call id may run in several executions: a later turn, a lost run)."""
    return KEY_SEP.join((str(rec.get("ns", "")), str(rec.get("cp", "")), str(rec.get("call", ""))))


def key_parts(key: str) -> tuple[str, str, str]:
    """``(namespace, checkpoint, call id)`` of a key from :func:`call_key`."""
    ns, cp, call = key.split(KEY_SEP, 2)
    return ns, cp, call


def decisions(
    rec: dict[str, Any], answer: dict[str, Any], journal: dict[str, list[Any]]
) -> list[tuple[str, str]]:
    """``(text, call id)`` of each decision of an answer record (``answer``: its decoded
    answer; ``journal``: the builder's journaled calls): one per call the question was
    about (``about``), never per key of the answer (which may name other calls, or a
    typo; with ``create_agent`` every task's answer holds the whole mapping)."""
    at = rec.get("at")
    ns, cp = str(rec.get("ns", "")), str(rec.get("cp", ""))
    out = []
    for question_id, started_at in rec.get("about") or []:
        choice = answer.get(question_id)
        call, name, args = _asked(journal, ns, cp, str(question_id), started_at)
        if choice == "skip":
            what = "skip: not run again, outcome unknown"
        elif choice == "retry":
            what = "retry: run again"
        elif isinstance(choice, dict) and "result" in choice:
            what = f"result supplied by a person: {clip(str(choice['result']), 80)}"
        else:
            what = clip(str(choice), 80)
        out.append((f"{call_text(name, args)}: {what}{f' (answered {at})' if at else ''}", call))
    return out


def _asked(journal: dict[str, list[Any]], ns: str, cp: str, question_id: str,
           started_at: Any) -> tuple[str, str, Any]:
    """``(call id, tool, arguments)`` of a call a question was about: one of the
    asking task's own calls, or a lost run's call asked about on its own (its
    question id is its call id, or ``<call id>@<checkpoint>``)."""
    own = journal.get(KEY_SEP.join((ns, cp, question_id)))
    if own is not None:
        return question_id, own[0], own[1]
    for key, entry in journal.items():
        _, key_cp, call = key_parts(key)
        if question_id in (call, f"{call}@{key_cp}") and entry[2] == "started" and entry[3] == started_at:
            return call, entry[0], entry[1]
    call = question_id.split("@", 1)[0]
    return call, call, None
