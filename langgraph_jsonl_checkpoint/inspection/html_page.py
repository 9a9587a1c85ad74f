"""A transcript as one self-contained HTML page, and an index page of many. Pure.

The page is a file a person can open anywhere or attach to a ticket: styles inline,
no script, no font, no image, nothing fetched (a ``Content-Security-Policy`` of
``default-src 'none'`` forbids the browser to fetch anything, should a message hold a
URL). Messages are grouped by the checkpoint that first held them, each group anchored
by its checkpoint id (``#cp-<id>``) and stamped with its time; a tool call and a tool
result are ``<details>`` a reader folds open or closed (no script needed). The
trade-off: no syntax colouring and no live search, which would need script.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import orjson

from .conversation import Utterance, compact_json
from .times import shown_time
from .transcript import Transcript, TranscriptEntry
from .values import jsonable

CSP = "default-src 'none'; style-src 'unsafe-inline'"

STYLE = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5c667a; --line: #d9dee8; --human: #e8f0fe;
  --ai: #f4f6f9; --tool: #fdf6e3; --error: #fdecea; --accent: #3157d5; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: #fff; }
header, main, footer { max-width: 860px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 24px; border-bottom: 1px solid var(--line); }
h1 { font-size: 20px; margin: 0 0 6px; }
.meta { color: var(--muted); margin: 0 0 14px; font-size: 13px; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; background: #e7f5ec; color: #1e6b3a;
  font-weight: 600; }
.status.waiting, .status.interrupted { background: #fff4d6; color: #7a5300; }
.status.damaged { background: var(--error); color: #9b1c1c; }
.status.past { background: var(--line); color: var(--muted); }
section.checkpoint { border-left: 3px solid var(--line); margin: 18px 0; padding: 2px 0 2px 14px; }
section.checkpoint:target { border-left-color: var(--accent); }
a.anchor { display: block; color: var(--muted); font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace;
  text-decoration: none; margin-bottom: 6px; }
a.anchor:hover { color: var(--accent); }
article.msg { border-radius: 8px; padding: 8px 12px; margin: 8px 0; background: var(--ai); }
article.msg.human { background: var(--human); }
article.msg.tool { background: var(--tool); }
article.msg.error { background: var(--error); }
.role { font-weight: 700; font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
  color: var(--muted); }
.role .name { text-transform: none; font-weight: 600; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin-top: 2px; }
details { margin: 6px 0 2px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
summary { cursor: pointer; padding: 4px 10px; font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; }
details pre { margin: 0; padding: 8px 10px; border-top: 1px solid var(--line); white-space: pre-wrap;
  overflow-wrap: anywhere; font: 12.5px/1.45 ui-monospace, Menlo, Consolas, monospace; }
.waiting { border: 2px dashed #e0a800; border-radius: 8px; padding: 8px 12px; margin: 18px 0;
  background: #fffbeb; }
table { border-collapse: collapse; width: 100%; margin: 16px 0; font-size: 14px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); }
footer { color: var(--muted); font-size: 12px; padding-top: 10px; padding-bottom: 30px; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _pretty(value: Any) -> str:
    return orjson.dumps(jsonable(value), option=orjson.OPT_INDENT_2).decode()


def anchor(checkpoint_id: str) -> str:
    """The element id of a checkpoint's group (``cp-<id>``)."""
    return "cp-" + checkpoint_id


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def message_html(u: Utterance, message_id: str | None) -> str:
    """One message as an ``<article>``: role, text, tool calls and results foldable."""
    classes = ["msg", _e(u.role)] + (["error"] if u.status == "error" else [])
    ident = f' id="msg-{_e(message_id)}"' if message_id else ""
    name = f' <span class="name">{_e(u.name)}</span>' if u.name and u.role != "tool" else ""
    parts = [f'<article class="{" ".join(classes)}"{ident} data-role="{_e(u.role)}">',
             f'<div class="role">{_e(u.role)}{name}</div>']
    if u.role == "tool":
        first = (u.text or "").strip().split("\n", 1)[0]
        short = first if len(first) <= 90 else first[:87] + "..."
        error = " (error)" if u.status == "error" else ""
        parts.append(
            f"<details class=\"tool-result\"><summary>{_e(u.name or 'tool')} [{_e(u.tool_call_id)}]{error}"
            f" &rarr; {_e(short)}</summary><pre>{_e(u.text)}</pre></details>"
        )
    else:
        if u.text:
            parts.append(f'<div class="text">{_e(u.text)}</div>')
        for call in u.tool_calls:
            args = compact_json(call.args)
            short = args if len(args) <= 70 else args[:67] + "..."
            parts.append(
                f'<details class="tool-call"><summary>calls {_e(call.name)}({_e(short)}) '
                f"[{_e(call.call_id)}]</summary><pre>{_e(_pretty(call.args))}</pre></details>"
            )
    parts.append("</article>")
    return "".join(parts)


def _groups(entries: Sequence[TranscriptEntry]) -> list[tuple[str | None, str | None, list[TranscriptEntry]]]:
    groups: list[tuple[str | None, str | None, list[TranscriptEntry]]] = []
    for e in entries:
        if groups and groups[-1][0] == e.checkpoint_id:
            groups[-1][2].append(e)
        else:
            groups.append((e.checkpoint_id, e.at, [e]))
    return groups


def transcript_html(t: Transcript, *, index_href: str | None = None) -> str:
    """A transcript as a self-contained page (see the module docstring).

    Args:
        t: The transcript.
        index_href: A link back to an index page, if the page is one of many.
    """
    f = t.facts
    back = f'<a href="{_e(index_href)}">&larr; all threads</a> · ' if index_href else ""
    meta = (
        f'{back}<span class="status {_e(t.status)}">{_e(t.status)}</span> · '
        f"{len(t.entries)} messages · checkpoint <code>{_e(t.checkpoint_id)}</code> · "
        f"step {_e(f.step)} · {_e(shown_time(f.created_at))} UTC"
    )
    body = [f"<header><h1>Thread <code>{_e(t.thread_id)}</code></h1><p class=\"meta\">{meta}</p></header>",
            "<main>"]
    for cid, at, group in _groups(t.entries):
        if cid is not None:
            body.append(f'<section class="checkpoint" id="{_e(anchor(cid))}">'
                        f'<a class="anchor" href="#{_e(anchor(cid))}">{_e(shown_time(at))} UTC · '
                        f"checkpoint {_e(cid)}</a>")
        else:
            body.append('<section class="checkpoint">')
        body.extend(message_html(e.utterance, e.utterance.message_id) for e in group)
        body.append("</section>")
    for q in t.waiting:
        body.append(f'<div class="waiting"><div class="role">waiting for an answer: {_e(q.type)}</div>'
                    f"<pre>{_e(_pretty(q.value))}</pre></div>")
    others = t.other_channels()
    if others:
        body.append("<details class=\"channels\"><summary>other channels</summary>"
                    f"<pre>{_e(_pretty(others))}</pre></details>")
    body.append("</main>")
    body.append("<footer>Exported by langgraph-jsonl from a JsonlSaver store. "
                f"Next: {_e(', '.join(f.next) or '-')}.</footer>")
    return _page(f"Thread {t.thread_id}", "\n".join(body))


def index_html(rows: Sequence[tuple[str, str, dict[str, Any]]], *, title: str = "Threads") -> str:
    """An index page linking exported threads.

    Args:
        rows: ``(thread id, file name of its page, its summary as JSON data)``, in order.
        title: The page title.
    """
    lines = [f"<header><h1>{_e(title)}</h1><p class=\"meta\">{len(rows)} threads</p></header><main>",
             "<table><thead><tr><th>thread</th><th>status</th><th>checkpoints</th><th>updated (UTC)</th>"
             "</tr></thead><tbody>"]
    for tid, href, s in rows:
        status = s.get("status", "")
        lines.append(
            f'<tr><td><a href="{_e(href)}">{_e(tid)}</a></td>'
            f'<td><span class="status {_e(status)}">{_e(status)}</span></td>'
            f"<td>{_e(s.get('checkpoints', ''))}</td><td>{_e(shown_time(s.get('updated_at')))}</td></tr>"
        )
    lines.append("</tbody></table></main><footer>Exported by langgraph-jsonl.</footer>")
    return _page(title, "\n".join(lines))
