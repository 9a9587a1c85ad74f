"""Transcripts a person can read or share: Markdown, JSON Lines, or a self-contained
HTML page (:mod:`.html_page`); one thread, or every thread of a store with an index.

Markdown keeps the message text as it is (models answer in Markdown) and puts tool
arguments and results in code fences long enough for any backticks inside. JSON Lines
keeps everything: a ``thread`` line, then one ``message`` line per message (its
readable fields, where it first appeared, and the whole message), then one
``question`` line per interrupt waiting for an answer. Files of an export of a whole
store are named as the store names logs (a slug and a hash of the thread id), so any
thread id makes a safe file name.
"""

from __future__ import annotations

import html
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..disk.paths import thread_file_stem
from ..errors import JsonlCheckpointError
from .conversation import compact_json
from .html_page import index_html, transcript_html
from .threads import ThreadSummary, before_first_checkpoint, damage_note, thread_summaries
from .times import shown_time
from .transcript import Transcript, read_transcript
from .values import jsonable

if TYPE_CHECKING:  # annotations only: importing this module imports no LangGraph
    from ..saver.jsonl_saver import JsonlSaver

FORMATS = ("md", "html", "jsonl")


def _fence(text: str) -> str:
    run = max((len(r) for r in text.split("\n") for r in _backtick_runs(r)), default=0)
    ticks = "`" * max(3, run + 1)
    return f"{ticks}\n{text}\n{ticks}"


def _backtick_runs(line: str) -> list[str]:
    runs, current = [], ""
    for ch in line:
        if ch == "`":
            current += ch
        elif current:
            runs.append(current)
            current = ""
    return runs + ([current] if current else [])


def transcript_markdown(t: Transcript) -> str:
    """A transcript as Markdown (see the module docstring)."""
    f = t.facts
    out = [f"# Thread `{t.thread_id}`", "",
           f"{t.status} · {len(t.entries)} messages · checkpoint `{t.checkpoint_id}` · step {f.step} · "
           f"{shown_time(f.created_at)} UTC", ""]
    current: str | None = None
    for e in t.entries:
        if e.checkpoint_id != current and e.checkpoint_id is not None:
            current = e.checkpoint_id
            out += [f'<a id="cp-{current}"></a>', f"### {shown_time(e.at)} UTC · checkpoint `{current}`", ""]
        u = e.utterance
        if u.role == "tool":
            error = " (error)" if u.status else ""
            out += [f"**tool** `{u.name or 'tool'}` `[{u.tool_call_id}]`{error}:", "", _fence(u.text), ""]
            continue
        out += [f"**{u.role}**" + (f" ({u.name})" if u.name else "") + ":", ""]
        if u.text:
            out += [u.text, ""]
        for call in u.tool_calls:
            out += [f"- calls `{call.name}` `[{call.call_id}]`", "", _fence(compact_json(call.args)), ""]
    for q in t.waiting:
        out += [f"**waiting for an answer** ({q.type}):", "", _fence(compact_json(q.value)), ""]
    return "\n".join(out).rstrip() + "\n"


def transcript_jsonl(t: Transcript) -> str:
    """A transcript as JSON Lines: ``thread``, ``message``..., ``question``... lines."""
    f = t.facts
    lines = [{
        "kind": "thread", "thread_id": t.thread_id, "ns": t.ns, "checkpoint_id": t.checkpoint_id,
        "created_at": f.created_at, "status": t.status, "next": list(f.next), "messages_channel": t.channel,
        "values": {ch: jsonable(v) for ch, v in t.other_channels(internal=False).items()},
    }]
    for e in t.entries:
        lines.append({"kind": "message", **e.utterance.as_json(), "checkpoint_id": e.checkpoint_id,
                      "at": e.at, "message": jsonable(e.message)})
    for q in t.waiting:
        lines.append({"kind": "question", "type": q.type, "interrupt_id": q.interrupt_id,
                      "task_id": q.task_id, "value": jsonable(q.value)})
    return "".join(orjson.dumps(jsonable(line)).decode() + "\n" for line in lines)


def render(t: Transcript, fmt: str, *, index_href: str | None = None) -> str:
    """A transcript in one of :data:`FORMATS`.

    Raises:
        ValueError: An unknown format.
    """
    if fmt == "md":
        return transcript_markdown(t)
    if fmt == "jsonl":
        return transcript_jsonl(t)
    if fmt == "html":
        return transcript_html(t, index_href=index_href)
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def export_thread(saver: JsonlSaver, thread_id: str, fmt: str, *, checkpoint_id: str | None = None) -> str:
    """One thread's transcript (at its latest checkpoint, or ``checkpoint_id``).

    Raises:
        NotFoundError: The thread has no checkpoint (or not that one).
        ValueError: An unknown format.
    """
    return render(read_transcript(saver, thread_id, checkpoint_id), fmt)


@dataclass(frozen=True)
class ExportedFile:
    """A file an export wrote.

    Attributes:
        thread_id: Its thread (``None`` for the index page).
        path: The file.
        problem: Why the thread was not exported (unreadable, no checkpoint), or, with a
            ``path``, why only part of it was (its log is damaged: the records before
            the damage were exported); ``None`` if it was exported whole.
        removed: The file is a page an earlier export wrote for a thread no longer in
            the store (deleted or archived), removed by this one.
    """

    thread_id: str | None
    path: str | None
    problem: str | None = None
    removed: bool = False


def export_store(
    saver: JsonlSaver,
    directory: str,
    fmt: str,
    *,
    track: Callable[[Iterable[ThreadSummary]], Iterable[ThreadSummary]] | None = None,
) -> list[ExportedFile]:
    """Every thread's transcript into ``directory`` (created if missing), one file per
    thread plus ``index.<fmt>`` (an HTML or Markdown page linking them; for ``jsonl``
    one summary per line). A thread that cannot be exported is listed with its problem;
    so is one whose log is damaged, with the file of its readable part. A thread a run
    holds before its first checkpoint is stored (``durability="exit"``) has no transcript
    yet and is left out. Pages of this format an earlier export wrote there for threads
    no longer in the store (deleted or archived) are removed and listed with
    ``removed``: a page is one when its name is the file stem of the thread its first
    lines name (:func:`page_thread`); any other file is left alone.

    Args:
        saver: A saver on the store (``read_only=True`` is enough).
        directory: Where to write (never the store itself).
        fmt: One of :data:`FORMATS`.
        track: Wraps the threads as they are exported (a progress bar).

    Raises:
        ValueError: An unknown format, or ``directory`` inside the store.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    target = os.path.abspath(directory)
    root = os.path.realpath(saver.store.path)  # real paths: a link into the store is in it
    if os.path.commonpath([os.path.realpath(target), root]) == root:
        raise ValueError(f"export into a directory outside the store {saver.store.path}, not {target}")
    os.makedirs(target, exist_ok=True)
    summaries = [s for s in thread_summaries(saver) if not before_first_checkpoint(s)]
    written: list[ExportedFile] = []
    rows: list[tuple[str, str, dict[str, Any]]] = []
    index_name = f"index.{fmt}"
    for s in track(summaries) if track is not None else summaries:
        if s.thread_id is None:
            written.append(ExportedFile(None, None, s.problem))
            continue
        name = f"{thread_file_stem(s.thread_id)}.{fmt}"
        try:
            text = render(read_transcript(saver, s.thread_id), fmt, index_href=index_name)
        except JsonlCheckpointError as exc:  # a damaged or empty thread must not stop the others
            written.append(ExportedFile(s.thread_id, None, str(exc).split("\n", 1)[0]))
            continue
        damage = damage_note(saver.store.thread_log(s.thread_id))  # as the transcript was read
        path = os.path.join(target, name)
        _replace(path, text)
        partly = f"only the readable part was exported: {damage}" if damage else None
        written.append(ExportedFile(s.thread_id, path, partly))
        rows.append((s.thread_id, name, s.as_json()))
    present = {thread_file_stem(s.thread_id) for s in summaries if s.thread_id is not None}
    present |= {os.path.splitext(os.path.basename(s.path))[0] for s in summaries}
    written += _remove_stale_pages(target, fmt, present)
    index_path = os.path.join(target, index_name)
    _replace(index_path, _index(rows, fmt))
    written.append(ExportedFile(None, index_path))
    return written


def write_export(path: str, text: str) -> None:
    """Put a transcript at ``path`` (``export -o``) whole or not at all, as
    :func:`export_store` does its pages: an export stopped or failing meanwhile (Ctrl-C,
    a full disk, a file size limit) leaves the file before as it was, and no temp file.
    A symbolic link's target is replaced (the link kept); a path that is not a regular
    file (``/dev/null``, a FIFO) is written as it is, there being nothing to rename over.

    Raises:
        OSError: It could not be written (the file before is as it was).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "w", encoding="utf-8") as out:  # a directory: IsADirectoryError
            out.write(text)
        return
    _replace(os.path.realpath(path), text)


def _replace(path: str, text: str) -> None:
    """Put ``text`` at ``path`` whole: written beside it and renamed over it, so that an
    export stopped meanwhile (Ctrl-C, a full disk) leaves the page before as it was, and
    nothing else (the temp file is removed). The file keeps its mode (a new one: as the
    umask has it); the temp file is made with a name no one else has (``O_EXCL``)."""
    folder, name = os.path.split(path)
    fd, temp = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, _mode_for(path))
            out = open(fd, "w", encoding="utf-8")  # noqa: SIM115 - it owns fd from here
        except BaseException:
            os.close(fd)
            raise
        with out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _mode_for(path: str) -> int:
    """The mode a file written over ``path`` gets: the one it has, else the umask's."""
    try:
        st = os.stat(path)
    except OSError:
        umask = os.umask(0o077)  # (read by setting: a moment's stricter umask is harmless)
        os.umask(umask)
        return 0o666 & ~umask
    return stat.S_IMODE(st.st_mode)


_PAGE_NAME = re.compile(r"(?P<stem>.*-[0-9a-f]{32})\.(?P<fmt>md|html|jsonl)")
_HTML_TITLE = re.compile(r"<title>Thread (.*?)</title>", re.S)


def page_thread(path: str, fmt: str) -> str | None:
    """The thread a page of an export (``export --all``) is of, or ``None`` if the file
    is not one: its name must be the file stem of the thread id its first lines give
    (``# Thread `id```, the HTML title, the ``thread`` line of JSON Lines)."""
    name = _PAGE_NAME.fullmatch(os.path.basename(path))
    if name is None or name["fmt"] != fmt:
        return None
    try:
        with open(path, encoding="utf-8") as page:
            head = page.read(65536)
    except (OSError, UnicodeDecodeError):
        return None
    first = head.split("\n", 1)[0]
    thread: object = None
    if fmt == "md" and first.startswith("# Thread `") and first.endswith("`") and len(first) > 11:
        thread = first[len("# Thread `"):-1]
    elif fmt == "html" and (title := _HTML_TITLE.search(head)) is not None:
        thread = html.unescape(title.group(1))
    elif fmt == "jsonl":
        try:
            line = orjson.loads(first)
        except orjson.JSONDecodeError:
            return None
        thread = line.get("thread_id") if isinstance(line, dict) and line.get("kind") == "thread" else None
    if not isinstance(thread, str):
        return None
    try:
        return thread if thread_file_stem(thread) == name["stem"] else None
    except UnicodeEncodeError:
        return None


def _remove_stale_pages(target: str, fmt: str, present: set[str]) -> list[ExportedFile]:
    """Remove the pages in ``target`` of threads whose stem is not in ``present``."""
    removed = []
    for entry in sorted(os.listdir(target)):
        path = os.path.join(target, entry)
        name = _PAGE_NAME.fullmatch(entry)
        if name is None or name["stem"] in present or not os.path.isfile(path):
            continue
        thread = page_thread(path, fmt)
        if thread is not None:
            os.unlink(path)
            removed.append(ExportedFile(thread, path, removed=True))
    return removed


def _index(rows: list[tuple[str, str, dict[str, Any]]], fmt: str) -> str:
    if fmt == "html":
        return index_html(rows)
    if fmt == "md":
        lines = ["# Threads", "", "| thread | status | checkpoints | updated (UTC) |", "|---|---|---:|---|"]
        for tid, href, s in rows:
            label = tid.replace("|", "\\|")
            lines.append(f"| [{label}]({href}) | {s['status']} | {s['checkpoints']} | "
                         f"{shown_time(s['updated_at'])} |")
        return "\n".join(lines) + "\n"
    return "".join(orjson.dumps({**s, "file": href}).decode() + "\n" for _, href, s in rows)
