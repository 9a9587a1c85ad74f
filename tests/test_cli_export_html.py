"""The HTML export in a real browser (headless Chromium): the page renders, its
messages are in the DOM in the thread's order, tool calls fold, checkpoint ids are
anchors, and the page fetches nothing, even when messages hold markup and URLs
pointing at a server that counts every request."""

from __future__ import annotations

import http.server
import re
import threading
from html.parser import HTMLParser
from pathlib import Path

from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from tests.harness.browser import render, screenshot
from tests.harness.cli_store import BuiltStore, config
from tests.harness.flow_graphs import build_agent_graph


class Articles(HTMLParser):
    """The message articles of an exported page, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.articles: list[dict] = []
        self.elements: list[str] = []
        self.anchors: list[str] = []
        self.details = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.elements.append(tag)
        if tag == "article":
            self.articles.append({"role": a.get("data-role"), "id": (a.get("id") or "")[len("msg-"):]})
        if tag == "section" and a.get("id", "").startswith("cp-"):
            self.anchors.append(a["id"][3:])
        if tag == "details":
            self.details += 1


class Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the handler's name
        Counting.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_exported_page_renders_every_message_in_order_and_fetches_nothing(
    cli_store: BuiltStore, tmp_path: Path
) -> None:
    Counting.hits = []
    server = http.server.HTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bait = f"http://127.0.0.1:{server.server_port}"
    store = tmp_path / "store"
    hostile = (f'<img src="{bait}/img.png"> <script>fetch("{bait}/js")</script> '
               f'<link rel="stylesheet" href="{bait}/css"> [link]({bait}/md) {bait}/plain')
    try:
        with JsonlSaver(store) as saver:
            graph = build_agent_graph().compile(checkpointer=saver)
            graph.invoke({"messages": [HumanMessage("both 2 3", id="h-1")]}, config("t"), durability="sync")
            graph.invoke({"messages": [HumanMessage(hostile, id="h-2")]}, config("t"), durability="sync")
            messages = graph.get_state(config("t")).values["messages"]
            history = list(graph.get_state_history(config("t")))
        page = tmp_path / "t.html"
        assert main(["export", str(store), "t", "--format", "html", "-o", str(page)]) == 0
        rendered = render(page)
        assert Counting.hits == [] and rendered.requests == [], (Counting.hits, rendered.requests)
        # the two checks see a page that does fetch: the same markup, not escaped
        control = tmp_path / "control.html"
        control.write_text(f"<!DOCTYPE html><html><body>{hostile}</body></html>")
        fetched = render(control)
        assert Counting.hits and any(u.startswith(bait) for u in fetched.requests)
    finally:
        server.shutdown()
        server.server_close()
    dom = Articles()
    dom.feed(rendered.dom)
    assert [(a["role"], a["id"]) for a in dom.articles] == [(m.type, m.id) for m in messages]
    assert "img" not in dom.elements and "link" not in dom.elements
    assert dom.elements.count("script") == 0
    # the markup came through as text
    assert "&lt;img src=" in rendered.dom and hostile.split(">")[0][1:] in rendered.dom.replace("&quot;", '"')
    # a tool call and a tool result each fold; every message's first checkpoint is an anchor
    calls = sum(len(getattr(m, "tool_calls", [])) for m in messages)
    results = sum(1 for m in messages if m.type == "tool")
    assert dom.details == calls + results
    ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    assert dom.anchors and set(dom.anchors) <= set(ids) and dom.anchors == sorted(dom.anchors)
    times = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC · checkpoint", rendered.dom)
    assert len(times) == len(dom.anchors)


def test_export_all_writes_an_index_linking_every_thread(cli_store: BuiltStore, tmp_path: Path) -> None:
    out = tmp_path / "site"
    # exit 1: the store's "damaged" thread is exported up to its damage (its page is linked)
    assert main(["export", str(cli_store.path), "--all", str(out), "--format", "html"]) == 1
    rendered = render(out / "index.html")
    links = re.findall(r'<a href="([^"]+\.html)">([^<]+)</a>', rendered.dom)
    assert sorted(name for _, name in links) == sorted(
        t for t in ("agent", "crashed", "damaged", "decided", "fan", "review", "uncertain")
    )
    assert all((out / href).exists() for href, _ in links)
    assert not any(u.startswith(("http:", "https:")) for u in rendered.requests)
    png = tmp_path / "page.png"
    screenshot(out / dict((n, h) for h, n in links)["decided"], png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
