"""MkDocs hook: links from a page to files of the repository outside ``docs/``.

A page links a benchmark's results, a stress run's log or an example the way GitHub
shows them: a relative path out of ``docs/`` (``../benchmarks/results/cli.md``). MkDocs
knows only the files in ``docs/``, so this hook

1. finds those links (and images) in every page, and fails the build when one names a
   file the repository does not have (MkDocs itself checks the links inside ``docs/``);
2. puts each linked file into the site under ``repo/<its path>``: a Markdown file is
   rendered as a page (outside the nav), anything else is copied as it is;
3. points each such link at that copy.

So the same Markdown works on GitHub and in the site, and a benchmark result that moves
or is deleted breaks the build instead of a reader's click.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel

#: ``[text](../path#anchor)`` or ``![alt](../path)``: a relative link that leaves docs/.
LINK = re.compile(r"(?P<head>!?\[[^\]\n]*\]\()(?P<path>\.\./[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")
#: Where the copies go in the site.
PREFIX = "repo"


def _repo_root(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def _outside_links(
    src_uri: str, markdown: str, docs_dir: Path, root: Path
) -> list[tuple[re.Match[str], str]]:
    """Each link of a page that leaves docs/, with the repository path it names."""
    out = []
    for m in LINK.finditer(markdown):
        inside = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), m.group("path")))
        if not inside.startswith("../"):
            continue  # a file of docs/ after all: MkDocs checks it
        target = (docs_dir / posixpath.dirname(src_uri) / m.group("path")).resolve()
        try:
            out.append((m, target.relative_to(root).as_posix()))
        except ValueError:
            raise PluginError(f"{src_uri}: the link {m.group('path')} leaves the repository") from None
    return out


def on_files(files: Files, config: Any) -> Files:
    """Check every link out of docs/ and add the files they name to the site."""
    docs_dir = Path(config["docs_dir"]).resolve()
    root = _repo_root(config)
    wanted: dict[str, Path] = {}
    missing = []
    for file in list(files):
        if not file.src_uri.endswith(".md") or file.abs_src_path is None:
            continue
        text = Path(file.abs_src_path).read_text(encoding="utf-8")
        for m, rel in _outside_links(file.src_uri, text, docs_dir, root):
            if not (root / rel).is_file():
                missing.append(f"{file.src_uri}: {m.group('path')} (no file {rel} in the repository)")
            wanted[rel] = root / rel
    if missing:
        raise PluginError("links to files the repository does not have:\n  " + "\n  ".join(missing))
    for rel, path in sorted(wanted.items()):
        files.append(File.generated(config, f"{PREFIX}/{rel}", abs_src_path=str(path),
                                    inclusion=InclusionLevel.NOT_IN_NAV))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point the page's links out of docs/ at the copies :func:`on_files` added."""
    docs_dir = Path(config["docs_dir"]).resolve()
    root = _repo_root(config)
    src_uri = page.file.src_uri
    if src_uri.startswith(PREFIX + "/"):
        return markdown  # a copied file: its own links are the repository's business
    here = posixpath.dirname(src_uri) or "."
    pieces, last = [], 0
    for m, rel in _outside_links(src_uri, markdown, docs_dir, root):
        new = posixpath.relpath(f"{PREFIX}/{rel}", here)
        pieces += [markdown[last:m.start()], f"{m.group('head')}{new}{m.group('anchor') or ''})"]
        last = m.end()
    return "".join(pieces) + markdown[last:]
