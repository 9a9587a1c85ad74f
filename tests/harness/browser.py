"""Headless Chromium (the Debian package, ``/usr/bin/chromium``) for tests of pages a
person opens: the DOM after rendering, every network request the page started, and a
screenshot.

Each run gets a new empty profile and Chromium's own background traffic switched off
as far as flags go. What remains of it (component updates, network time, sign-in
checks) is started by the browser itself, with no page as initiator (``not an
origin`` in the net log), so :func:`page_requests` leaves it out and keeps what a page
asked for. ``.ci/run`` installs the package when it is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def chromium() -> str:
    """The Chromium binary.

    Raises:
        AssertionError: It is not installed (``apt-get install -y chromium``; CI does it).
    """
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is needed: apt-get install -y chromium (.ci/run installs it)"
    return path


@dataclass
class Rendered:
    """What Chromium made of a page.

    Attributes:
        dom: The serialised DOM after load.
        requests: URL requests the page started (not the browser's own), by URL.
    """

    dom: str
    requests: list[str]


def render(page: Path, *, timeout: float = 90) -> Rendered:
    """Load a local page in headless Chromium; its DOM and the requests it started."""
    with tempfile.TemporaryDirectory() as tmp:
        netlog = Path(tmp) / "net.json"
        run = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={tmp}/profile", f"--log-net-log={netlog}",
             "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return Rendered(run.stdout, page_requests(json.loads(netlog.read_text())))


def page_requests(netlog: dict) -> list[str]:
    """URLs of the requests a page started, from a Chromium net log (requests whose
    initiator is an origin, or the null origin of a ``file://`` page)."""
    types = {v: k for k, v in netlog["constants"]["logEventTypes"].items()}
    begin = netlog["constants"]["logEventPhase"]["PHASE_BEGIN"]
    out = []
    for event in netlog["events"]:
        params = event.get("params") or {}
        if (types.get(event["type"]) == "URL_REQUEST_START_JOB" and event.get("phase") == begin
                and params.get("initiator") != "not an origin"):
            out.append(params.get("url", ""))
    return out


def screenshot(page: Path, png: Path, *, width: int = 900, height: int = 1000, timeout: float = 90) -> None:
    """A PNG of a local page as a person sees it."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={tmp}/profile", f"--window-size={width},{height}",
             "--hide-scrollbars", f"--screenshot={png}", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )
        assert run.returncode == 0 and png.exists(), run.stderr[-2000:]
