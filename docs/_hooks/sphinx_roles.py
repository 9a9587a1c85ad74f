"""Griffe extension: the reST of the package's docstrings, as Markdown for the reference.

The docstrings are Google style with two reST habits that Markdown would print as they
are: roles naming other objects (``:class:`~.errors.ConfigError```, ``:meth:`close```),
shown here as a code span of the name a reader knows (``ConfigError``, ``close``), and
literal blocks (a line ending in ``::``, then an indented block), shown as fenced code
(JSON when it starts with ``{``, text when it draws a tree, else Python).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")


def _plain(m: re.Match[str]) -> str:
    target = m.group("target").lstrip(".")
    if m.group("tilde"):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def literal_blocks(text: str) -> str:
    """Each ``...::`` paragraph's indented block as a fenced code block."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            head = line.rstrip()[:-1]
            if head.strip() != ":":
                out.append(head)
            base = _indent(line)
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                j += 1
            block = lines[i + 1:j]
            while block and not block[-1].strip():
                block.pop()
            body = [b for b in block if b.strip()]
            if body:
                cut = min(_indent(b) for b in body)
                lang = "json" if body[0].strip().startswith("{") else "python"
                if any(ch in b for b in body for ch in "├└│"):
                    lang = "text"  # a drawn tree
                pad = " " * base
                out += ["", pad + "```" + lang, *(pad + b[cut:] if b.strip() else "" for b in block[1:]),
                        pad + "```", ""]
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


class SphinxRoles(griffe.Extension):
    """Rewrites roles and literal blocks as each object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = literal_blocks(ROLE.sub(_plain, obj.docstring.value))
