"""Shared helpers for the benchmark scripts (not a benchmark itself).

- saver factories for the three savers compared everywhere (``jsonl``, ``sqlite``,
  ``memory``) and the bytes they keep on disk;
- a deterministic fake tool-calling chat model and the agent graph built on it;
- a realistic checkpoint generator for direct ``put``/``put_writes`` calls;
- statistics (median, p90, max), ratios to SqliteSaver, and the JSON / Markdown writers.

Scripts import it as ``_common`` (they are run as ``python benchmarks/<name>.py``, which
puts ``benchmarks/`` first on ``sys.path``).
"""

from __future__ import annotations

import collections
import gc
import json
import math
import os
import platform
import random
import resource
import sqlite3
import subprocess
import sys
import time
import types
import uuid
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

try:  # the package is installed editable in the venv; fall back to the checkout
    import langgraph_jsonl_checkpoint  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT))

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import InjectedToolCallId, tool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402

SAVERS = ("jsonl", "sqlite", "memory")
LABELS = {"jsonl": "JsonlSaver", "sqlite": "SqliteSaver", "memory": "InMemorySaver",
          "jsonl_async": "AsyncJsonlSaver", "sqlite_async": "AsyncSqliteSaver",
          "floor": "LangGraph alone (reference)"}

# --------------------------------------------------------------------------------------
# text, messages
# --------------------------------------------------------------------------------------

_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "so no will what can more about out up them some could into only other time new then "
    "weather forecast pressure humidity wind storm valley river station report model agent"
).split()


def text(seed: int, chars: int) -> str:
    """Deterministic pseudo-English text of exactly ``chars`` characters."""
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < chars:
        w = rng.choice(_WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:chars]


# --------------------------------------------------------------------------------------
# fake tool-calling agent
# --------------------------------------------------------------------------------------


@tool
def search(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Search the knowledge base."""
    # An explicit id: a ToolMessage with id=None gets a random id from add_messages.
    return ToolMessage(
        content=text(zlib.crc32(query.encode()), 200),
        name="search",
        tool_call_id=tool_call_id,
        id=f"tool-{tool_call_id}",
    )


TOOLS = [search]


class FakeToolModel(BaseChatModel):
    """Deterministic chat model: after a user message it calls ``search``; after the tool
    result it answers with ``answer_chars`` characters of text. Ids derive from the
    conversation length, so every saver sees the same data."""

    answer_chars: int = 500

    @property
    def _llm_type(self) -> str:
        return "fake-tool-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        n = len(messages)
        if isinstance(messages[-1], ToolMessage):
            msg = AIMessage(content=text(n, self.answer_chars), id=f"ai-{n}")
        else:
            msg = AIMessage(
                content="",
                id=f"ai-{n}",
                tool_calls=[
                    {"name": "search", "args": {"query": f"query {n}"}, "id": f"call-{n}",
                     "type": "tool_call"}
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])


def build_agent_graph(checkpointer: Any, answer_chars: int = 500):
    """``MessagesState`` agent: agent -> (tools -> agent)* -> END, with ``ToolNode``."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    model = FakeToolModel(answer_chars=answer_chars).bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def user_message(thread_seed: int, turn: int) -> HumanMessage:
    return HumanMessage(content=text(thread_seed * 100_003 + turn, 100), id=f"user-{thread_seed}-{turn}")


def agent_round(graph: Any, thread_ids: Sequence[str], turn: int) -> None:
    """Turn ``turn`` of every thread, in order (durability "sync"): one round of a
    round-robin fill; thread ``i`` gets ``user_message(i, turn)``."""
    for i, tid in enumerate(thread_ids):
        graph.invoke({"messages": [user_message(i, turn)]}, {"configurable": {"thread_id": tid}},
                     durability="sync")


# --------------------------------------------------------------------------------------
# savers
# --------------------------------------------------------------------------------------


class SaverHandle:
    """A saver plus what is needed to measure and close it."""

    def __init__(self, kind: str, saver: Any, paths: list[Path], closer: Any = None) -> None:
        self.kind = kind
        self.saver = saver
        self.paths = paths  # files/dirs whose bytes count as "on disk"
        self._closer = closer

    def bytes_on_disk(self) -> int | None:
        if self.kind in ("memory", "floor"):
            return None
        return sum(path_bytes(p) for p in self.paths)

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
            self._closer = None


def tracked_reachable(
    root: object, *, stop: Iterable[object] = (), shared: bool = True
) -> collections.Counter[str]:
    """Tracked objects reachable from ``root`` (itself not counted), by type name: what
    the cyclic collector walks because of it. The walk does not pass through ``stop``
    objects nor, with ``shared=False``, through types, modules and functions."""
    skip = {id(o) for o in stop}
    seen, stack, kinds = {id(root)}, [root], collections.Counter[str]()
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) in seen or id(ref) in skip or not gc.is_tracked(ref):
                continue
            if not shared and isinstance(ref, (type, types.ModuleType, types.FunctionType)):
                continue
            seen.add(id(ref))
            stack.append(ref)
            kinds[type(ref).__name__] += 1
    return kinds


def path_bytes(p: Path) -> int:
    """Sum of st_size of a file, or of every file under a directory (0 if missing)."""
    if not os.path.lexists(p):
        return 0
    if os.path.isfile(p):
        return os.path.getsize(p)
    total = 0
    for dirpath, _, files in os.walk(p):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except FileNotFoundError:
                pass
    return total


def sqlite_paths(db: Path) -> list[Path]:
    """The database file and its WAL (the -shm index is not counted)."""
    return [db, Path(str(db) + "-wal")]


def open_saver(kind: str, workdir: Path, *, create: bool = True, **jsonl_options: Any) -> SaverHandle:
    """Open one of ``jsonl`` / ``sqlite`` / ``memory`` with its defaults under ``workdir``
    (``jsonl_options``: JsonlSaver's keyword arguments, such as ``max_open_threads``)."""
    if kind == "jsonl":
        from langgraph_jsonl_checkpoint import JsonlSaver

        store = workdir / "jsonl-store"
        saver = JsonlSaver(store, **jsonl_options)
        return SaverHandle(kind, saver, [store], saver.close)
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        db = workdir / "checkpoints.sqlite"
        conn = sqlite3.connect(str(db), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        return SaverHandle(kind, saver, sqlite_paths(db), conn.close)
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return SaverHandle(kind, InMemorySaver(), [])
    if kind == "floor":
        from langgraph.checkpoint.memory import InMemorySaver

        return SaverHandle(kind, InMemorySaver(serde=PassThroughSerde()), [])
    raise ValueError(kind)


class PassThroughSerde:
    """A "serializer" that keeps the objects themselves: ``InMemorySaver`` with it costs
    LangGraph's own per-step work and next to nothing else. A measuring reference only
    (stored state is shared with the graph, so it is not a checkpointer anyone can use)."""

    def dumps_typed(self, obj: Any) -> tuple[str, Any]:
        return ("object", obj)

    def loads_typed(self, data: tuple[str, Any]) -> Any:
        return data[1]


def sqlite_pragmas(conn: sqlite3.Connection) -> dict[str, Any]:
    return {
        "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
        "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0],
        "sqlite_version": sqlite3.sqlite_version,
    }


# --------------------------------------------------------------------------------------
# direct-API checkpoints (micro benchmarks, cold open)
# --------------------------------------------------------------------------------------


class CheckpointStream:
    """Successive checkpoints of one thread, shaped like a chat graph's.

    Channel ``messages`` grows by one ~``msg_chars`` message per checkpoint; every
    ``compact_every`` checkpoints (if set) it is replaced by a one-message summary, like a
    summarising agent would. Channel ``step`` changes every time. Metadata is LangGraph's
    shape (``source``, ``step``, ``parents``). Versions come from the saver, so every
    saver gets its own kind of version strings.
    """

    def __init__(self, saver: Any, thread_id: str, *, msg_chars: int = 200,
                 compact_every: int | None = None) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.saver = saver
        self.thread_id = thread_id
        self.msg_chars = msg_chars
        self.compact_every = compact_every
        self.messages: list[BaseMessage] = []
        self.step = -1
        self.parent_id: str | None = None
        self.checkpoint = empty_checkpoint()
        self.versions: dict[str, Any] = {}

    def _next_message(self) -> BaseMessage:
        i = len(self.messages)
        content = text(self.step * 7 + 1, self.msg_chars)
        if i % 2 == 0:
            return HumanMessage(content=content, id=f"m-{self.step}")
        return AIMessage(content=content, id=f"m-{self.step}")

    def next(self) -> tuple[dict, dict, dict, dict, BaseMessage]:
        """Arguments for the next ``put`` and the message written (for ``put_writes``)."""
        from langgraph.checkpoint.base import create_checkpoint

        self.step += 1
        if self.compact_every and self.step and self.step % self.compact_every == 0:
            msg: BaseMessage = AIMessage(content="summary: " + text(self.step, self.msg_chars),
                                         id=f"summary-{self.step}")
            self.messages = [msg]
        else:
            msg = self._next_message()
            self.messages = self.messages + [msg]  # a new list, as add_messages makes
        new_versions = {}
        for ch in ("messages", "step"):
            new_versions[ch] = self.saver.get_next_version(self.versions.get(ch), None)
        self.versions.update(new_versions)
        cp = create_checkpoint(self.checkpoint, None, self.step)
        cp["channel_values"] = {"messages": self.messages, "step": self.step}
        cp["channel_versions"] = dict(self.versions)
        cp["versions_seen"] = {"node": {"messages": self.versions["messages"]}}
        self.checkpoint = cp
        config: dict[str, Any] = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ""}}
        if self.parent_id:
            config["configurable"]["checkpoint_id"] = self.parent_id
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        return config, cp, metadata, new_versions, msg

    def put(self) -> tuple[dict, BaseMessage]:
        config, cp, md, nv, msg = self.next()
        out = self.saver.put(config, cp, md, nv)
        self.parent_id = cp["id"]
        return out, msg


# --------------------------------------------------------------------------------------
# statistics and results
# --------------------------------------------------------------------------------------


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(xs: Sequence[float]) -> dict[str, float]:
    xs = list(xs)
    if not xs:
        return {"n": 0, "median": float("nan"), "p90": float("nan"), "max": float("nan")}
    return {"n": len(xs), "median": quantile(xs, 0.5), "p90": quantile(xs, 0.9), "max": max(xs)}


def peak_rss_mib() -> float:
    """This process's peak RSS so far (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 1024 / 1024


def timed(fn: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def environment() -> dict[str, Any]:
    import langgraph.version as lgv  # type: ignore[import-not-found]

    try:
        from importlib.metadata import version

        versions = {p: version(p) for p in ("langgraph", "langgraph-checkpoint",
                                            "langgraph-checkpoint-sqlite", "langchain-core",
                                            "langgraph-jsonl-checkpoint")}
    except Exception:  # pragma: no cover
        versions = {"langgraph": getattr(lgv, "__version__", "?")}
    # The package actually imported (another checkout's, through PYTHONPATH, in an A/B).
    import langgraph_jsonl_checkpoint

    root = Path(langgraph_jsonl_checkpoint.__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                     "langgraph_jsonl_checkpoint"], capture_output=True,
                                    text=True, timeout=5).stdout.strip())
    except Exception:  # pragma: no cover
        rev, dirty = "?", False
    import hashlib

    h = hashlib.sha256()
    for f in sorted((root / "langgraph_jsonl_checkpoint").rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_sha256": h.hexdigest()[:16],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "git": rev + ("-dirty(package)" if dirty else ""),
        "versions": versions,
        "sqlite": sqlite3.sqlite_version,
    }


def fmt_value(v: float | None, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if unit == "s":
        if v >= 1:
            return f"{v:.2f} s"
        if v >= 1e-3:
            return f"{v * 1e3:.2f} ms"
        return f"{v * 1e6:.0f} µs"
    if unit == "B":
        for u, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if v >= k:
                return f"{v / k:.2f} {u}"
        return f"{v:.0f} B"
    if unit == "MiB":
        return f"{v:.1f} MiB"
    if unit == "MB/s":
        return f"{v:.1f} MB/s"
    if unit == "objects":
        return f"{v:,.0f}"
    if unit == "/s":
        return f"{v:.1f}/s"
    return f"{v:.4g} {unit}".strip()


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or not b or any(isinstance(x, float) and math.isnan(x) for x in (a, b)):
        return "–"
    return f"{a / b:.2f}×"


class Table:
    """Rows of ``(case, metric, saver, stats, unit)`` → a Markdown table with ratios.

    The ratio column is the median of this saver divided by SqliteSaver's median for the
    same case and metric (so < 1 means faster / smaller than SqliteSaver for times and
    bytes, and slower for throughputs).
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, case: str, metric: str, saver: str, stats: dict[str, float] | float | None,
            unit: str, note: str = "") -> None:
        if stats is None or isinstance(stats, (int, float)):
            v = None if stats is None else float(stats)
            stats = {"n": 1 if v is not None else 0, "median": v, "p90": v, "max": v}
        self.rows.append({"case": case, "metric": metric, "saver": saver, "unit": unit,
                          "note": note, **stats})

    def baseline(self, case: str, metric: str) -> float | None:
        for r in self.rows:
            if r["case"] == case and r["metric"] == metric and r["saver"] in ("sqlite", "sqlite_async"):
                return r["median"]
        return None

    def markdown(self) -> str:
        lines = ["| case | metric | saver | n | median | p90 | max | ratio to SqliteSaver (median) |",
                 "|---|---|---|---:|---:|---:|---:|---:|"]
        for r in self.rows:
            base = self.baseline(r["case"], r["metric"])
            note = f" ({r['note']})" if r["note"] else ""
            lines.append(
                f"| {r['case']} | {r['metric']} | {LABELS.get(r['saver'], r['saver'])}{note} | "
                f"{r['n']} | {fmt_value(r['median'], r['unit'])} | {fmt_value(r['p90'], r['unit'])} | "
                f"{fmt_value(r['max'], r['unit'])} | {ratio(r['median'], base)} |"
            )
        return "\n".join(lines)


def write_results(name: str, payload: dict[str, Any], table: Table, *, header: str,
                  notes: Iterable[str] = (), quick: bool = False) -> tuple[Path, Path]:
    """``results/<name>.json`` (everything) and ``results/<name>.md`` (the table).

    Quick runs get a ``-quick`` suffix so they never overwrite a full run.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = name + ("-quick" if quick else "")
    payload = {"benchmark": name, "quick": quick, "environment": environment(),
               "table": table.rows, **payload}
    jpath = RESULTS / f"{stem}.json"
    jpath.write_text(json.dumps(payload, indent=1, default=str) + "\n")
    md = [f"# {name}{' (quick)' if quick else ''}", "", header.strip(), ""]
    env = payload["environment"]
    md.append(f"Run {env['when']} on {env['cpus']} CPUs (load avg at end {env['loadavg'][0]:.2f}), "
              f"Python {env['python']}, langgraph {env['versions'].get('langgraph')}, "
              f"SQLite {env['sqlite']}, package git {env['git']} (sources sha256 {env['package_sha256']}).")
    md.append("")
    md.append(table.markdown())
    notes = list(notes)
    if notes:
        md += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    mpath = RESULTS / f"{stem}.md"
    mpath.write_text("\n".join(md) + "\n")
    return jpath, mpath


def time_calls(owner: Any, name: str, record: Any) -> None:
    """Replace ``owner.name`` with a wrapper that passes the seconds each call took
    (returned or raised) to ``record``: how the ``*_parts.py`` scripts split a read or
    a turn into the saver's stages."""
    inner = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            record(time.perf_counter() - t0)

    setattr(owner, name, timed)


def pyplot(path: Path) -> Any:
    """matplotlib's ``pyplot`` (headless), or ``None`` with a word on how to get the plot
    ``path`` drawn: the results are written either way."""
    try:
        import matplotlib
    except ImportError:
        print(f"matplotlib is not installed, so {path.name} was not drawn: "
              "pip install -r benchmarks/requirements.txt", file=sys.stderr)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def drawn(png: Path, plot: Callable[[], None]) -> str:
    """Run ``plot`` (which draws ``png``, or says why not: see :func:`pyplot`); the
    ``", <png>"`` a script's last line lists, or ``""`` if no new file was drawn."""
    before = png.stat().st_mtime_ns if png.exists() else None
    plot()
    after = png.stat().st_mtime_ns if png.exists() else None
    return f", {png}" if after is not None and after != before else ""


def fill_turn_args(doc: str, name: str, kinds: Sequence[str], threads: int) -> Any:
    """The options of a benchmark that measures turn T of a round-robin fill, each saver
    in a fresh process (``--worker``, which gets ``--saver``, ``--threads``, ``--turns``):
    ``--quick`` (20 threads, turn 3), ``--threads`` (default ``threads``), ``--turns``
    (default 10), ``--savers``, ``--name`` (default ``name``)."""
    import argparse

    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test: 20 threads, turn 3")
    p.add_argument("--threads", type=int, default=None, help=f"threads taking turns (default {threads})")
    p.add_argument("--turns", type=int, default=None, help="the turn measured, T (default 10)")
    p.add_argument("--savers", nargs="+", default=list(kinds), choices=kinds)
    p.add_argument("--name", default=name, help=f"results/<name>.* (default {name})")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--saver", choices=kinds, help=argparse.SUPPRESS)
    args = p.parse_args()
    if not args.worker:
        args.threads = args.threads or (20 if args.quick else threads)
        args.turns = args.turns or (3 if args.quick else 10)
    return args


def run_worker(script: Path, args: list[str], timeout: float | None = None) -> dict[str, Any]:
    """Run ``script --worker args...`` in a fresh interpreter; it prints one JSON line last."""
    proc = subprocess.run([sys.executable, str(script), "--worker", *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {args} failed (rc={proc.returncode}):\n{proc.stderr[-4000:]}")
    last = proc.stdout.strip().splitlines()[-1]
    return json.loads(last)


def new_thread_id() -> str:
    return str(uuid.uuid4())
