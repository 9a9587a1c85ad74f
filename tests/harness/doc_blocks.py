"""The code blocks of README.md and every page of the documentation site (docs/**/*.md),
for the test that runs them.

A block is fenced with its language (```python, ```bash, ```json). Its first line may
say why it is not run as a whole program:

- ``# fragment: <reason>`` (Python): a piece of a larger program; it is compiled only.
- ``# shown, run elsewhere: tests/<file>.py ...`` (bash): a command another test runs
  for real (the LangGraph server, which needs a free port and minutes); the test checks
  that file exists and runs that program.
- ``# synopsis: <reason>`` (bash): ``langgraph-jsonl`` usage lines with placeholders
  (``THREAD``, ``[--option value]``, ``a|b``); each line is parsed by the CLI's own
  parser with the placeholders filled in (:func:`synopsis_argv`), so every command and
  option shown exists.

A ``console`` block is a transcript of ``langgraph-jsonl`` commands and what they printed
(docs/cli.md); ``tests/test_cli_transcripts.py`` runs those again.

Shell steps that need the network (creating a venv and ``pip install``) or that would
run this test suite inside itself are left out of a block by name (:data:`SKIPPED_STEPS`),
and the rest of the block runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
FRAGMENT = re.compile(r"^# fragment: (\S.*)$")
ELSEWHERE = re.compile(r"^# shown, run elsewhere: (tests/\S+\.py)\b")
SYNOPSIS = re.compile(r"^# synopsis: (\S.*)$")

#: Steps of a ``&&`` chain that are not run, with why.
SKIPPED_STEPS = {
    "python3 -m venv .venv": "creates the venv the tests already run in",
    ". .venv/bin/activate": "activates that venv",
    "pip install": "needs the network (PyPI)",
    "python -m pytest": "runs this test suite, inside itself",
}


@dataclass(frozen=True)
class DocBlock:
    """One fenced block.

    Attributes:
        path: The Markdown file, relative to the repository.
        line: The line of its opening fence.
        lang: Its language tag.
        text: Its content.
    """

    path: str
    line: int
    lang: str
    text: str

    @property
    def name(self) -> str:
        """``README.md:25`` (a test id)."""
        return f"{self.path}:{self.line}"

    @property
    def first_line(self) -> str:
        """The block's first line."""
        return self.text.split("\n", 1)[0]


def doc_files() -> list[Path]:
    """README.md and every Markdown file in docs/ and its folders (the site's pages)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(lang: str) -> list[DocBlock]:
    """Every block of one language in the docs."""
    out = []
    for path in doc_files():
        text = path.read_text()
        for m in _FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start()) + 1
                out.append(DocBlock(str(path.relative_to(ROOT)), line, lang, m.group(2)))
    return out


def runnable_shell(text: str) -> tuple[str, list[str]]:
    """The block as a script to run, and the steps left out.

    Each line that is a ``&&`` chain loses its :data:`SKIPPED_STEPS`; optional parts
    written ``[--option value]`` are run with the option.
    """
    skipped: list[str] = []
    lines = []
    for line in text.splitlines():
        if " && " in line:
            steps = [s.strip() for s in line.split(" && ")]
            kept = [s for s in steps if not any(s.startswith(k) for k in SKIPPED_STEPS)]
            skipped += [s for s in steps if s not in kept]
            line = " && ".join(kept)
        lines.append(re.sub(r"\[(--[^\]]*)\]", r"\1", line))
    return "\n".join(lines) + "\n", skipped


def synopsis_argv(line: str) -> list[str] | None:
    """A usage line as the arguments it stands for (``None`` for a comment or blank):
    the program name and comments dropped, ``[...]`` kept as its content, ``a|b`` as
    ``a``, capitalised placeholders as a value."""
    line = line.split("  #", 1)[0].strip()
    if not line or line.startswith("#"):
        return None
    words = shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", line))
    assert words[0] == "langgraph-jsonl", line
    out = []
    for w in words[1:]:
        w = w.split("|", 1)[0]
        out.append("placeholder" if re.fullmatch(r"[A-Z][A-Z_]*", w) else w)
    return out
