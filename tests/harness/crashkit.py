"""Shared helpers for the crash-safety battery (``tests/test_crash_*.py`` and ``stress/``).

Nothing here is a test. It holds:

- hand-made checkpoints and a builder that writes a log through the real saver while
  mirroring every call into LangGraph's ``InMemorySaver`` (the expected answers);
- raw-log helpers: thread file paths, committed batches with their byte offsets;
- ``normalize``: checkpoint tuples as plain, comparable data;
- an ``InMemorySaver`` model of ``copy_thread`` and ``prune`` (it has neither);
- a deterministic tool-calling agent (scripted fake chat model + ``ToolNode``) and an
  ``AckingSaver`` that reports, after ``put``/``put_writes`` returned, what it stored;
- child-process entry points for the kill -9 and multi-process batteries, run through a
  ``forkserver`` context whose server has already imported LangGraph (a fork costs
  milliseconds instead of a second of imports). A forked child shares no saver state
  with its parent: the server never opens a store.

Import it as ``tests.harness.crashkit`` (the repository root is on ``sys.path`` under
pytest, and when the ``stress/`` scripts run as ``python -m stress.<name>`` from there).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import WRITES_IDX_MAP, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.disk.store import THREADS_DIR, thread_file_stem
from tests.harness.graphs import tool_agent_graph

# ---------------------------------------------------------------------------
# hand-made checkpoints
# ---------------------------------------------------------------------------


def cp_id(i: int, prefix: str = "1ef00000-0000-6000-8000") -> str:
    """A checkpoint id; ids sort in the order of ``i`` (as LangGraph's uuid6 ids do)."""
    return f"{prefix}-{i:012d}"


def make_checkpoint(checkpoint_id: str, values: dict[str, Any], versions: dict[str, Any]) -> dict:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": dict(values),
        "channel_versions": dict(versions),
        "versions_seen": {},
        "updated_channels": sorted(values),
    }


def all_namespaces(thread_id: str) -> dict:
    """A config for ``list`` over every namespace of a thread (no ``checkpoint_ns``)."""
    return {"configurable": {"thread_id": thread_id}}


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


class Mirror:
    """Apply the same calls to a saver under test and to an ``InMemorySaver``.

    Channel versions come from the saver under test's ``get_next_version`` and are given
    to both, so stored versions are identical and answers compare directly.
    """

    def __init__(self, saver: JsonlSaver, memory: InMemorySaver | None = None) -> None:
        self.saver = saver
        self.memory = memory if memory is not None else InMemorySaver()
        # (thread, ns) -> (checkpoint id, channel versions, channel values) of the latest put
        self.heads: dict[tuple[str, str], tuple[str, dict, dict]] = {}

    def put(
        self,
        thread_id: str,
        checkpoint_id: str,
        changes: dict[str, Any],
        *,
        ns: str = "",
        parent: str | None | bool = True,
        metadata: dict | None = None,
        removed: Sequence[str] = (),
    ) -> dict:
        """Put a checkpoint that changes ``changes`` (and drops ``removed``) from its parent.

        ``parent=True`` chains onto the last checkpoint put in ``(thread, ns)``.
        """
        head = self.heads.get((thread_id, ns))
        if parent is True:
            parent = head[0] if head else None
        versions = dict(head[1]) if head else {}
        values = dict(head[2]) if head else {}
        new_versions = {}
        for ch, val in changes.items():
            new_versions[ch] = self.saver.get_next_version(versions.get(ch), None)
            versions[ch] = new_versions[ch]
            values[ch] = val
        for ch in removed:
            new_versions[ch] = self.saver.get_next_version(versions.get(ch), None)
            versions[ch] = new_versions[ch]
            values.pop(ch, None)
        cp = make_checkpoint(checkpoint_id, values, versions)
        cfg = config(thread_id, ns, parent or None)
        md = metadata if metadata is not None else {"step": len(values)}
        got = self.saver.put(cfg, cp, md, new_versions)
        self.memory.put(cfg, make_checkpoint(checkpoint_id, values, versions), md, new_versions)
        self.heads[(thread_id, ns)] = (checkpoint_id, versions, values)
        return got

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: list[tuple[str, Any]], task_id: str,
        task_path: str = "", ns: str = "",
    ) -> None:
        cfg = config(thread_id, ns, checkpoint_id)
        self.saver.put_writes(cfg, writes, task_id, task_path)
        self.memory.put_writes(cfg, writes, task_id, task_path)


# ---------------------------------------------------------------------------
# comparable answers
# ---------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if hasattr(value, "model_dump"):
        return (type(value).__name__, _plain(value.model_dump()))
    return value


def normalize(tup: CheckpointTuple | None) -> Any:
    """A checkpoint tuple as plain data, for ``==`` between savers."""
    if tup is None:
        return None
    return {
        "config": _plain(tup.config),
        "checkpoint": _plain(dict(tup.checkpoint)),
        "metadata": _plain(dict(tup.metadata)),
        "parent_config": _plain(tup.parent_config),
        "pending_writes": [_plain(tuple(w)) for w in tup.pending_writes or []],
    }


# ---------------------------------------------------------------------------
# InMemorySaver model of copy_thread / prune (InMemorySaver has neither)
# ---------------------------------------------------------------------------


def mem_copy_thread(mem: InMemorySaver, source: str, target: str) -> None:
    """Copy every checkpoint, write and blob of ``source`` to ``target``."""
    for ns, by_id in list(mem.storage.get(source, {}).items()):
        for cid, saved in by_id.items():
            mem.storage[target][ns][cid] = saved
    for (tid, ns, cid), slots in list(mem.writes.items()):
        if tid == source:
            mem.writes[(target, ns, cid)] = dict(slots)
    for (tid, ns, ch, ver), blob in list(mem.blobs.items()):
        if tid == source:
            mem.blobs[(target, ns, ch, ver)] = blob


def mem_prune_keep_latest(mem: InMemorySaver, thread_id: str) -> None:
    """Keep the latest checkpoint per namespace and its writes; drop everything else."""
    keep = set()
    for ns, by_id in mem.storage.get(thread_id, {}).items():
        if by_id:
            latest = max(by_id)
            keep.add((ns, latest))
            mem.storage[thread_id][ns] = {latest: by_id[latest]}
    for key in list(mem.writes):
        if key[0] == thread_id and (key[1], key[2]) not in keep:
            del mem.writes[key]


def mem_delete_for_runs(mem: InMemorySaver, runs: set[str]) -> None:
    """``delete_for_runs`` on an ``InMemorySaver`` (it has none), as ``JsonlSaver`` does
    it: the runs' checkpoints go, with their writes; a thread that lost a checkpoint is
    rewritten, which also drops orphan writes; a thread left without checkpoints is
    deleted."""
    for thread in list(mem.storage):
        removed = False
        for by_id in mem.storage[thread].values():
            for cid, (_, md, _) in list(by_id.items()):
                if mem.serde.loads_typed(md).get("run_id") in runs:
                    del by_id[cid]
                    removed = True
        if not removed:
            continue
        keep = {(ns, cid) for ns, by_id in mem.storage[thread].items() for cid in by_id}
        for key in list(mem.writes):
            if key[0] == thread and (key[1], key[2]) not in keep:
                del mem.writes[key]
        if not keep:
            mem.delete_thread(thread)


# ---------------------------------------------------------------------------
# a reference log, built through the real saver, with what each call acknowledged
# ---------------------------------------------------------------------------

REF_THREAD = "ref-thread"


def answers(saver: Any, thread_id: str) -> dict:
    """Everything a saver serves for a thread: ``list`` (every namespace) keyed by
    (namespace, checkpoint id), plus the latest checkpoint of each namespace.

    Tuples are kept as they come (``CheckpointTuple`` compares with ``==``; messages
    compare by value), so answers of two savers compare directly.
    """
    listed = {}
    for t in saver.list(all_namespaces(thread_id)):
        key = (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
        if key in listed:
            raise AssertionError(f"list() returned {key} twice")
        listed[key] = t
    latest = {ns: saver.get_tuple(config(thread_id, ns)) for ns in sorted({k[0] for k in listed})}
    return {"list": listed, "latest": latest}


def diff_answers(got: dict, want: dict) -> str:
    """A short description of how two ``answers`` differ ('' if equal)."""
    if got == want:
        return ""
    g, w = set(got["list"]), set(want["list"])
    parts = []
    if g - w:
        parts.append(f"served but not acknowledged: {sorted(g - w)}")
    if w - g:
        parts.append(f"acknowledged but not served: {sorted(w - g)}")
    for key in sorted(g & w):
        if got["list"][key] != want["list"][key]:
            parts.append(
                f"{key} differs:\n  got  {normalize(got['list'][key])}\n  want {normalize(want['list'][key])}"
            )
            break
    if got["latest"] != want["latest"]:
        parts.append("latest differs")
    return "; ".join(parts) or "differs"


@dataclass
class ReferenceLog:
    """A log built through the real saver, and what was acknowledged after each call.

    ``acked[j]`` is ``(file size after call j, the answers an InMemorySaver that saw
    calls 0..j gives)``. A copy of the log cut at byte ``c`` must serve exactly the
    answers of the last call whose size is ``<= c``.
    """

    thread_id: str
    data: bytes
    acked: list[tuple[int, dict]]
    header_end: int

    def expected_at(self, cut: int) -> tuple[int, dict]:
        """(committed end, expected answers) for the log cut at ``cut`` bytes."""
        end, exp = self.header_end, {"list": {}, "latest": {}}
        for size, answers_ in self.acked:
            if size <= cut:
                end, exp = size, answers_
            else:
                break
        return end, exp


def build_reference_log(store: str | os.PathLike, *, puts: int = 19, snapshot_every: int = 4,
                        seed: int = 7, thread_id: str = REF_THREAD) -> ReferenceLog:
    """~50 records: a copy_thread batch (7 records), growing lists (deltas), snapshots
    (two-record batches), a second namespace, a removed channel, put_writes with regular
    and special channels."""
    rng = random.Random(seed)
    saver = JsonlSaver(store, snapshot_every=snapshot_every)
    mirror = Mirror(saver)
    files = ThreadFiles.of(store, thread_id)
    acked: list[tuple[int, dict]] = []

    def ack() -> None:
        acked.append((os.path.getsize(files.log), answers(mirror.memory, thread_id)))

    # First batch of the thread: copy_thread of a small thread, one many-record batch.
    src = thread_id + "-src"
    for i in range(3):
        mirror.put(src, cp_id(i, "1ee00000-0000-6000-8000"), {"m": [f"src-{j}" for j in range(i + 1)]})
        mirror.put_writes(src, cp_id(i, "1ee00000-0000-6000-8000"), [("m", [f"src-w-{i}"])], f"src-task-{i}")
    saver.copy_thread(src, thread_id)
    mem_copy_thread(mirror.memory, src, thread_id)
    ack()
    items: list[Any] = []
    for i in range(puts):
        items = items + [f"item-{i}"] + ([{"k": i}] if i % 3 == 0 else [])
        changes: dict[str, Any] = {"m": items}
        if i % 4 == 1:
            changes["n"] = i
        if i == 5:
            changes["msg"] = HumanMessage(content=f"hello {i}", id=f"h-{i}")
        removed = ["msg"] if i == 9 else []
        ns = "child:1" if i in (6, 7, 12) else ""
        mirror.put(thread_id, cp_id(i), changes, ns=ns, removed=removed if ns == "" else ())
        ack()
        if rng.random() < 0.8:
            writes = [("m", [f"w-{i}-{j}"]) for j in range(rng.randint(1, 3))]
            if i % 5 == 2:
                writes.append(("__error__", {"error": f"boom {i}"}))
            mirror.put_writes(thread_id, cp_id(i), writes, f"task-{i}", f"~path, {i}", ns=ns)
            ack()
    saver.close()
    with open(files.log, "rb") as f:
        data = f.read()
    header_end = data.index(b"\n") + 1
    return ReferenceLog(thread_id, data, acked, header_end)


# ---------------------------------------------------------------------------
# raw log helpers
# ---------------------------------------------------------------------------


@dataclass
class ThreadFiles:
    log: str
    idx: str
    lock: str
    quarantine: str
    directory: str

    @classmethod
    def of(cls, store: str | os.PathLike, thread_id: str) -> ThreadFiles:
        d = os.path.join(os.fspath(store), THREADS_DIR)
        stem = os.path.join(d, thread_file_stem(thread_id))
        return cls(stem + ".jsonl", stem + ".idx", stem + ".lock", stem + ".quarantine", d)


@dataclass
class Batch:
    start: int
    end: int
    records: list[framing.ScannedRecord] = field(default_factory=list)


def committed_batches(data: bytes) -> list[Batch]:
    """The committed batches of a log's bytes, header first, with their byte spans."""
    result = framing.scan(data, 0)
    assert result.corrupt_offset is None and result.tail_bytes == 0, "reference log is not clean"
    batches: list[Batch] = []
    current = Batch(0, 0)
    for r in result.records:
        if not current.records:
            current.start = r.offset
        current.records.append(r)
        current.end = r.offset + r.length
        # scan() drops "more" from committed records; re-read the raw line to find ends
        if b'"more":1' not in data[r.offset : r.offset + r.length]:
            batches.append(current)
            current = Batch(0, 0)
    assert not current.records
    return batches


def record_spans(data: bytes) -> list[tuple[int, int, dict]]:
    """(offset, length, record) of every committed record."""
    return [(r.offset, r.length, r.record) for r in framing.scan(data, 0).records]


def read_quarantine(path: str) -> list[tuple[dict, bytes]]:
    """Entries of a quarantine file: (note record, the bytes cut).

    An entry shorter than its note says (a short write) is returned as far as it goes;
    anything unparsable after that is returned as one entry with an empty note.
    """
    out: list[tuple[dict, bytes]] = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        note = framing.parse_line(data[pos:nl]) if nl >= 0 else None
        if note is None or note.get("t") != "quarantine":
            out.append(({}, data[pos:]))
            break
        start = nl + 1
        n = note["bytes"]
        out.append((note, data[start : start + n]))
        pos = start + n + 1
    return out


def checkpoint_record_counts(log_path: str) -> dict[tuple[str, str], int]:
    """How many committed checkpoint records each (ns, id) has in a raw log."""
    with open(log_path, "rb") as f:
        data = f.read()
    counts: dict[tuple[str, str], int] = {}
    for r in framing.scan(data, 0).records:
        if r.record.get("t") == "checkpoint":
            key = (r.record["ns"], r.record["id"])
            counts[key] = counts.get(key, 0) + 1
    return counts


def copy_store(src: str | os.PathLike, dst: str | os.PathLike, *, index: bool) -> None:
    """Copy a store. A sidecar names its log's inode, so a copied one would be ignored:
    with ``index`` the copy gets fresh sidecars for its own logs (checked to be in use),
    without it the copy has none."""
    shutil.copytree(src, dst)
    threads = os.path.join(os.fspath(dst), THREADS_DIR)
    for name in os.listdir(threads):
        if name.endswith(".idx"):
            os.unlink(os.path.join(threads, name))
    if not index:
        return
    saver = JsonlSaver(dst)
    tids = list(saver.store.thread_ids())
    for tid in tids:
        saver.store.thread_log(tid).refresh()
    saver.close()
    for tid in tids:
        assert sidecar_in_use(dst, tid), f"the copy's sidecar for {tid!r} is not used"


def sidecar_in_use(store: str | os.PathLike, thread_id: str) -> bool:
    """Whether a fresh saver loads the thread's sidecar (its header matches the log)."""
    files = ThreadFiles.of(store, thread_id)
    try:
        with open(files.idx, "rb") as f:
            head = framing.parse_line(f.readline().rstrip(b"\n"))
    except FileNotFoundError:
        return False
    return bool(head) and head.get("ino") == os.stat(files.log).st_ino


def sidecar_summaries(data: bytes) -> tuple[bytes, list[dict]]:
    """A sidecar's header line and the per-record summaries its blocks hold."""
    from langgraph_jsonl_checkpoint.disk import sidecar

    lines = data.split(b"\n")
    assert lines[-1] == b""
    out: list[dict] = []
    seq, offset = 1, None
    for line in lines[1:-1]:
        cols = framing.parse_line(line)
        assert cols is not None
        block = sidecar.decode_block(line, seq, offset if offset is not None else cols["o0"])
        assert block is not None
        out += [block.summary(s) for s in range(block.first, block.first + block.count)]
        seq, offset = seq + block.count, block.end
    return lines[0] + b"\n", out


def sidecar_blocks(head: bytes, summaries: list[dict], cuts: tuple[int, ...] = ()) -> bytes:
    """A sidecar of these summaries, a new block starting at each index in ``cuts``
    (a block stores only its first record's offset and seq)."""
    from langgraph_jsonl_checkpoint.disk import sidecar

    bounds = sorted({0, *(c for c in cuts if 0 < c < len(summaries)), len(summaries)})
    return head + b"".join(sidecar.encode(summaries[a:b]) for a, b in zip(bounds, bounds[1:]))


def write_in_place(path: str, data: bytes) -> None:
    """Replace a file's content keeping its inode (as damage on disk would)."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate(len(data))


def stray_temp_files(store: str | os.PathLike) -> list[str]:
    """Temp files left in the store: anything in its tmp/ folder, or named *.tmp*."""
    out = []
    temp_dir = os.path.join(os.fspath(store), "tmp")
    for root, _, files in os.walk(store):
        out += [os.path.join(root, f) for f in files if ".tmp" in f or root == temp_dir]
    return out


# ---------------------------------------------------------------------------
# the agent: scripted fake chat model + ToolNode
# ---------------------------------------------------------------------------

#: Tool rounds the scripted model asks for before answering (odd rounds call two tools).
AGENT_TOOL_ROUNDS = 5
AGENT_QUESTION = "sum the numbers please"


class ScriptedModel(BaseChatModel):
    """A fake chat model whose reply depends only on the conversation so far.

    It asks for ``rounds`` rounds of tool calls (two parallel calls on odd rounds), then
    answers with the tool results. Ids derive from the conversation length, so a resumed
    run in another process produces exactly the messages an uninterrupted run does.
    """

    rounds: int = AGENT_TOOL_ROUNDS

    @property
    def _llm_type(self) -> str:
        return "crashkit-scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        n = len(messages)
        tool_results = [m for m in messages if isinstance(m, ToolMessage)]
        done_rounds = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        if done_rounds < self.rounds:
            calls = [{"name": "add", "args": {"a": n, "b": done_rounds}, "id": f"call-add-{n}"}]
            if done_rounds % 2:
                calls.append({"name": "multiply", "args": {"a": n, "b": 3}, "id": f"call-mul-{n}"})
            msg = AIMessage(content=f"round {done_rounds}", tool_calls=calls, id=f"ai-{n}")
        else:
            total = sum(int(m.content) for m in tool_results)
            msg = AIMessage(content=f"total {total}", id=f"ai-{n}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def build_agent(checkpointer: Any, rounds: int = AGENT_TOOL_ROUNDS):
    return tool_agent_graph(ScriptedModel(rounds=rounds)).compile(checkpointer=checkpointer)


def agent_input() -> dict:
    return {"messages": [HumanMessage(content=AGENT_QUESTION, id="human-0")]}


def message_summary(messages: Sequence[Any]) -> list[tuple]:
    return [
        (type(m).__name__, m.id, str(m.content), tuple(c["id"] for c in getattr(m, "tool_calls", []) or []))
        for m in messages
    ]


class AckingSaver(JsonlSaver):
    """A ``JsonlSaver`` that appends a line to ``ack_fd`` after each call *returned*.

    Lines: ``P <ns> <checkpoint_id>`` after ``put``; ``W <ns> <checkpoint_id> <task_id>
    <idx>`` per write slot after ``put_writes``. ``os.write`` to a regular file survives
    SIGKILL of the writer (it is in the kernel as soon as the call returns).
    """

    ack_fd: int = -1

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[override]
        out = super().put(config, checkpoint, metadata, new_versions)
        c = out["configurable"]
        _ack(self.ack_fd, f"P {c['checkpoint_ns'] or '-'} {c['checkpoint_id']}\n")
        return out

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        super().put_writes(config, writes, task_id, task_path)
        c = config["configurable"]
        lines = "".join(
            f"W {c.get('checkpoint_ns') or '-'} {c['checkpoint_id']} {task_id} "
            f"{WRITES_IDX_MAP.get(ch, i)} {ch}\n"
            for i, (ch, _) in enumerate(writes)
        )
        _ack(self.ack_fd, lines)


def _ack(fd: int, text: str) -> None:
    if fd >= 0 and text:
        os.write(fd, text.encode())


@dataclass
class Acks:
    checkpoints: list[tuple[str, str]] = field(default_factory=list)  # (ns, id)
    writes: list[tuple[str, str, str, int, str]] = field(default_factory=list)  # (ns, cp, task, idx, channel)


def read_acks(path: str) -> Acks:
    acks = Acks()
    if not os.path.exists(path):
        return acks
    with open(path, "rb") as f:
        data = f.read().decode()
    # Only whole lines count: a line is written by one os.write after the call returned.
    for line in data.splitlines(keepends=True):
        if not line.endswith("\n"):
            continue
        parts = line.split()
        ns = "" if parts[1] == "-" else parts[1]
        if parts[0] == "P":
            acks.checkpoints.append((ns, parts[2]))
        elif parts[0] == "W":
            acks.writes.append((ns, parts[2], parts[3], int(parts[4]), parts[5] if len(parts) > 5 else ""))
    return acks


# ---------------------------------------------------------------------------
# the stress scripts' common frame (stress/kill9.py, stress/multiprocess.py)
# ---------------------------------------------------------------------------


def stress_args(parser: Any, name: str) -> tuple[Any, int, str]:
    """Add ``--seed`` and ``--workdir`` to a stress script's parser and parse.

    Returns:
        The arguments, the seed (from the clock when not given) and the work directory
        (a new temp dir unless ``--workdir`` is given).
    """
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--workdir", default=None,
                        help="keep the store and logs here (default: a temp dir, removed)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    work = args.workdir or tempfile.mkdtemp(prefix=f"{name}-")
    os.makedirs(work, exist_ok=True)
    return args, seed, work


def stress_report(violations: list[str], seed: int, t0: float, work: str, keep: bool) -> int:
    """Print the violations, seed and elapsed time; remove ``work`` unless kept or a
    violation needs it; return the exit status (1 on any violation)."""
    print(f"violations: {len(violations)}")
    for v in violations:
        print(f"  {v}")
    print(f"seed: {seed}; elapsed: {time.monotonic() - t0:.0f} s")
    if not keep and not violations:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if violations else 0


# ---------------------------------------------------------------------------
# child processes (forkserver)
# ---------------------------------------------------------------------------

_CTX: Any = None


_CHILD_PREFIX = "crashkit-"


def mp_context() -> Any:
    """A forkserver context whose server has imported LangGraph and this module.

    Two details make the fork cheap. The server is started with the repository root on
    ``PYTHONPATH`` (Python 3.11's forkserver ignores the parent's ``sys.path`` when it
    preloads). And our children skip re-running the parent's ``__main__`` (pytest's
    script, or a stress script): their targets live here and are found by name.
    """
    global _CTX
    if _CTX is None:
        import multiprocessing.forkserver as forkserver
        import multiprocessing.spawn as mp_spawn

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["tests.harness.crashkit"])
        original = mp_spawn.get_preparation_data
        if not getattr(original, "_crashkit", False):

            def get_preparation_data(name: str) -> dict:
                data = original(name)
                if name.startswith(_CHILD_PREFIX):
                    data.pop("init_main_from_path", None)
                    data.pop("init_main_from_name", None)
                return data

            get_preparation_data._crashkit = True  # type: ignore[attr-defined]
            mp_spawn.get_preparation_data = get_preparation_data
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = root + (os.pathsep + old if old else "")
        try:
            forkserver.ensure_running()
        finally:
            if old is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = old
        _CTX = ctx
    return _CTX


def _child_setup(err_path: str | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if err_path:
        fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.dup2(fd, 1)
        os.close(fd)


def _child_fail(err_path: str | None) -> None:
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(70)


def agent_child(
    store: str, thread_id: str, ack_path: str, err_path: str, mode: str, result_path: str
) -> None:
    """Run (``mode="run"``) or resume (``mode="resume"``) the agent on ``thread_id``.

    ``resume`` is what an application does after a crash: if the thread has a checkpoint,
    ``graph.invoke(None, config)``; otherwise start the run again. The final messages
    are written to ``result_path`` (one ``repr`` line) when the run finishes.
    """
    _child_setup(err_path)
    try:
        saver = AckingSaver(store)
        saver.ack_fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        graph = build_agent(saver)
        cfg = {"configurable": {"thread_id": thread_id}}
        if mode == "run":
            graph.invoke(agent_input(), cfg, durability="sync")
        else:
            state = graph.get_state(cfg)
            if state.created_at is None:  # nothing stored: the run never started
                graph.invoke(agent_input(), cfg, durability="sync")
            else:
                graph.invoke(None, cfg, durability="sync")
        final = graph.get_state(cfg)
        text = repr((message_summary(final.values.get("messages", [])), tuple(final.next)))
        fd = os.open(result_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, text.encode())
        os.close(fd)
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def open_store_child(store: str, thread_id: str, start_at: float, err_path: str) -> None:
    """At ``start_at`` (wall clock), open a saver on ``store`` as a new worker of a server
    does, store one checkpoint in ``thread_id`` and close."""
    _child_setup(err_path)
    try:
        time.sleep(max(0.0, start_at - time.time()))
        saver = JsonlSaver(store)
        v = {"m": saver.get_next_version(None, None)}
        saver.put(config(thread_id), make_checkpoint(cp_id(1), {"m": [thread_id]}, v), {}, v)
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def spawn(target: Any, *args: Any) -> Any:
    p = mp_context().Process(
        target=target, args=args, daemon=True, name=f"{_CHILD_PREFIX}{target.__name__}"
    )
    p.start()
    return p


def kill_at(p: Any, delay: float) -> bool:
    """SIGKILL ``p`` after ``delay`` seconds unless it ended first. True if it was killed."""
    p.join(delay)
    if p.exitcode is None:
        p.kill()  # SIGKILL; tolerates the child having just exited (the forkserver reaps it)
        p.join()
        return p.exitcode == -signal.SIGKILL
    return False


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


# ---------------------------------------------------------------------------
# the kill -9 round (used by the CI test and stress/kill9.py)
# ---------------------------------------------------------------------------


@dataclass
class KillRound:
    thread_id: str
    killed: list[bool]
    acked_before_kill: int
    acks: int
    violations: list[str]


def reference_agent_result(workdir: str) -> tuple[str, float]:
    """Final messages of an uninterrupted run, and how long the run took."""
    mp_context()  # start the fork server first: its start-up is not part of a run
    times = []
    results = set()
    for i in range(3):
        store = os.path.join(workdir, f"reference-store-{i}")
        paths = [os.path.join(workdir, f"reference-{i}.{x}") for x in ("ack", "err", "out")]
        t0 = time.perf_counter()
        p = spawn(agent_child, store, "reference", paths[0], paths[1], "run", paths[2])
        p.join()
        times.append(time.perf_counter() - t0)
        if p.exitcode != 0:
            raise RuntimeError(f"reference run failed: {read_text(paths[1])}")
        shutil.rmtree(store)
        results.add(read_text(paths[2]))
    if len(results) != 1:
        raise RuntimeError(f"the agent is not deterministic: {results}")
    return results.pop(), sorted(times)[1]


def check_acked_present(store: str, thread_id: str, acks: Acks, seen_by: str) -> list[str]:
    """Every acknowledged checkpoint is listed exactly once and every acked write is pending."""
    violations = []
    saver = JsonlSaver(store)
    try:
        listed = [
            (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
            for t in saver.list(config(thread_id))
        ]
    except Exception as exc:  # noqa: BLE001 - any failure to open is a violation
        return [f"{seen_by}: store does not open: {type(exc).__name__}: {exc}"]
    if len(listed) != len(set(listed)):
        violations.append(f"{seen_by}: list() returns a checkpoint twice")
    files = ThreadFiles.of(store, thread_id)
    counts = checkpoint_record_counts(files.log) if os.path.exists(files.log) else {}
    for key in acks.checkpoints:
        if key not in listed:
            violations.append(f"{seen_by}: acknowledged checkpoint {key} missing")
        if counts.get(key, 0) != 1:
            violations.append(f"{seen_by}: acknowledged checkpoint {key} has {counts.get(key, 0)} records")
    wanted: dict[tuple[str, str, str], list[str]] = {}
    for ns, cid, task, idx, channel in acks.writes:
        # a regular slot is kept once (a retry adds nothing); special slots are replaced
        slots = wanted.setdefault((ns, cid, task), [])
        if idx >= 0 or channel not in slots:
            slots.append(channel)
    for (ns, cid, task), channels in wanted.items():
        tup = saver.get_tuple(config(thread_id, ns, cid))
        if tup is None:
            violations.append(f"{seen_by}: checkpoint {cid} of acknowledged writes of {task} missing")
            continue
        got = sorted(ch for t, ch, _ in tup.pending_writes if t == task)
        if set(channels) - set(got):
            violations.append(
                f"{seen_by}: acknowledged writes of {task} on {cid}: {sorted(channels)}, pending: {got}"
            )
    saver.close()
    return violations


def kill_round(
    store: str, workdir: str, thread_id: str, rng: random.Random, run_seconds: float,
    reference: str, *, kill_resume: bool,
) -> KillRound:
    """One round: run the agent, SIGKILL it at a random instant, check, resume, check.

    With ``kill_resume`` the first resume is killed at a random instant too (a crash
    during recovery), and a second resume finishes the run.
    """
    ack = os.path.join(workdir, f"{thread_id}.ack")
    err = os.path.join(workdir, f"{thread_id}.err")
    out = os.path.join(workdir, f"{thread_id}.out")
    violations: list[str] = []
    killed = []
    p = spawn(agent_child, store, thread_id, ack, err, "run", out)
    killed.append(kill_at(p, rng.uniform(0, run_seconds)))
    if not killed[-1] and p.exitcode != 0:
        violations.append(f"writer failed on its own (exit {p.exitcode}): {read_text(err)[-2000:]}")
    acked_before_kill = len(read_acks(ack).checkpoints)
    violations += check_acked_present(store, thread_id, read_acks(ack), "after kill")
    attempts = 2 if kill_resume else 1
    for attempt in range(attempts):
        if os.path.exists(out):
            os.unlink(out)
        p = spawn(agent_child, store, thread_id, ack, err, "resume", out)
        if attempt < attempts - 1:
            killed.append(kill_at(p, rng.uniform(0, run_seconds)))
            violations += check_acked_present(store, thread_id, read_acks(ack), "after killed resume")
            continue
        p.join(60)
        if p.exitcode != 0:
            if p.exitcode is None:
                p.kill()
                p.join()
            violations.append(f"resume failed (exit {p.exitcode}): {read_text(err)[-3000:]}")
    result = read_text(out)
    if not violations and result != reference:
        violations.append(f"resumed run ended differently:\n  got {result}\n  want {reference}")
    violations += check_acked_present(store, thread_id, read_acks(ack), "after resume")
    return KillRound(thread_id, killed, acked_before_kill, len(read_acks(ack).checkpoints), violations)


# ---------------------------------------------------------------------------
# the multi-process round (used by the CI test and stress/multiprocess.py)
# ---------------------------------------------------------------------------

SHARED = "shared"
BASE_ID = cp_id(0, "0000-base")


def mp_writer(store: str, k: int, ack_path: str, err_path: str, seed: int, iterations: int) -> None:
    """Writer ``k``: put_writes on the shared base checkpoint (task ids ``w<k>-<j>``),
    puts chaining onto the shared thread's latest checkpoint, and puts + writes on its
    own thread ``own-<k>``. Acks are appended to ``ack_path`` after each call returned."""
    _child_setup(err_path)
    try:
        rng = random.Random(seed)
        saver = AckingSaver(store)
        saver.ack_fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        own = f"own-{k}"
        own_parent: str | None = None
        own_items: list[str] = []
        own_versions: dict[str, Any] = {}
        for j in range(iterations):
            saver.put_writes(config(SHARED, "", BASE_ID), [("ch", f"{k}-{j}")], f"w{k}-{j}")
            # chain onto whatever is latest in the shared thread right now
            latest = saver.get_tuple(config(SHARED))
            assert latest is not None
            lv = latest.checkpoint["channel_versions"]
            items = list(latest.checkpoint["channel_values"].get("m", []))[-20:] + [f"{k}-{j}"]
            nv = {"m": saver.get_next_version(lv.get("m"), None)}
            new_id = f"{time.time_ns():020d}-{k:02d}-{j:06d}"
            saver.put(
                config(SHARED, "", latest.checkpoint["id"]),
                make_checkpoint(new_id, {"m": items}, {**lv, **nv}),
                {"writer": k, "j": j},
                nv,
            )
            own_items = own_items + [j]
            nv = {"m": saver.get_next_version(own_versions.get("m"), None)}
            own_versions = {**own_versions, **nv}
            own_id = f"{time.time_ns():020d}-{k:02d}-{j:06d}"
            saver.put(
                config(own, "", own_parent),
                make_checkpoint(own_id, {"m": own_items}, own_versions),
                {"j": j},
                nv,
            )
            own_parent = own_id
            if rng.random() < 0.5:
                saver.put_writes(config(own, "", own_id), [("a", j), ("b", [j] * 3)], f"ow{k}-{j}")
        saver.close()
    except BaseException:
        _child_fail(err_path)
    os._exit(0)


def mp_reader(store: str, threads: list[str], seen_path: str, err_path: str) -> None:
    """Tail the store: record every checkpoint id and shared write it ever saw."""
    _child_setup(err_path)
    try:
        saver = JsonlSaver(store)
        fd = os.open(seen_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        seen: set[tuple] = set()
        while True:
            lines = []
            for tid in threads:
                for t in saver.list(config(tid)):
                    key = ("R", tid, t.checkpoint["id"])
                    if key not in seen:
                        seen.add(key)
                        lines.append(f"R {tid} {t.checkpoint['id']}\n")
            base = saver.get_tuple(config(SHARED, "", BASE_ID))
            for task, _, _ in base.pending_writes if base else []:
                key = ("RW", task)
                if key not in seen:
                    seen.add(key)
                    lines.append(f"RW {SHARED} {task}\n")
            if lines:
                os.write(fd, "".join(lines).encode())
            time.sleep(0.005)
    except BaseException:
        _child_fail(err_path)


def mp_round(store: str, workdir: str, rng: random.Random, *, writers: int, max_seconds: float,
             iterations: int = 10_000) -> tuple[int, int, list[str]]:
    """One multi-process round. Returns (acknowledged checkpoints, writes, violations)."""
    os.makedirs(workdir, exist_ok=True)
    if not os.path.exists(ThreadFiles.of(store, SHARED).log):
        s = JsonlSaver(store)
        v = {"m": s.get_next_version(None, None)}
        s.put(config(SHARED), make_checkpoint(BASE_ID, {"m": []}, v), {"base": True}, v)
        s.close()
    tag = f"{rng.randrange(1 << 30):08x}"
    procs = []
    for k in range(writers):
        ack = os.path.join(workdir, f"w{k}-{tag}.ack")
        err = os.path.join(workdir, f"w{k}-{tag}.err")
        procs.append(
            ("writer", spawn(mp_writer, store, k, ack, err, rng.randrange(1 << 30), iterations), ack, err)
        )
    threads = [SHARED] + [f"own-{k}" for k in range(writers)]
    seen_path = os.path.join(workdir, f"reader-{tag}.seen")
    rerr = os.path.join(workdir, f"reader-{tag}.err")
    reader = spawn(mp_reader, store, threads, seen_path, rerr)
    violations: list[str] = []
    # Kill each writer at its own random instant; the others keep writing meanwhile.
    deadlines = sorted((rng.uniform(0.05, max_seconds), i) for i in range(writers))
    t0 = time.monotonic()
    for when, i in deadlines:
        _, p, _, err = procs[i]
        killed = kill_at(p, max(0.0, when - (time.monotonic() - t0)))
        if not killed and p.exitcode != 0:
            violations.append(f"writer {i} failed on its own (exit {p.exitcode}): {read_text(err)[-3000:]}")
    killed_reader = kill_at(reader, rng.uniform(0.0, 0.05))
    if not killed_reader:
        violations.append(f"reader failed (exit {reader.exitcode}): {read_text(rerr)[-3000:]}")
    # -- invariants
    all_acks = [read_acks(ack) for _, _, ack, _ in procs]
    cps = sum(len(a.checkpoints) for a in all_acks)
    ws = sum(len(a.writes) for a in all_acks)
    for stage in ("after kill", "after a put and reopen"):
        saver = JsonlSaver(store)
        try:
            counts = {tid: checkpoint_record_counts(ThreadFiles.of(store, tid).log) for tid in threads
                      if os.path.exists(ThreadFiles.of(store, tid).log)}
            listed = {tid: [t.checkpoint["id"] for t in saver.list(config(tid))] for tid in threads}
            base = saver.get_tuple(config(SHARED, "", BASE_ID))
            pending = [task for task, _, _ in base.pending_writes] if base else []
        except Exception as exc:  # noqa: BLE001
            violations.append(f"{stage}: store does not open: {type(exc).__name__}: {exc}")
            return cps, ws, violations
        for tid, ids in listed.items():
            if len(ids) != len(set(ids)):
                violations.append(f"{stage}: thread {tid} lists a checkpoint twice")
        for k, acks in enumerate(all_acks):
            for ns, cid in acks.checkpoints:
                found = [t for t in threads if cid in listed[t]]
                if len(found) != 1:
                    violations.append(
                        f"{stage}: acknowledged checkpoint {cid} of writer {k} found in {found}"
                    )
                elif counts.get(found[0], {}).get((ns, cid), 0) != 1:
                    violations.append(
                        f"{stage}: checkpoint {cid} has {counts[found[0]].get((ns, cid), 0)} records"
                    )
            for ns, cid, task, _idx, _ in acks.writes:
                if cid == BASE_ID:
                    if pending.count(task) != 1:
                        violations.append(
                            f"{stage}: acknowledged write {task} on the shared base appears "
                            f"{pending.count(task)} times"
                        )
                else:
                    tup = saver.get_tuple(config(f"own-{k}", ns, cid))
                    got = [w for w in (tup.pending_writes if tup else []) if w[0] == task]
                    if len(got) != 2:
                        violations.append(f"{stage}: acknowledged writes of {task} on {cid}: {len(got)} of 2")
        for line in read_text(seen_path).splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue
            if parts[0] == "R" and parts[2] not in listed.get(parts[1], []):
                violations.append(
                    f"{stage}: checkpoint {parts[2]} of {parts[1]} seen by the reader disappeared"
                )
            if parts[0] == "RW" and parts[2] not in pending:
                violations.append(f"{stage}: write {parts[2]} seen by the reader disappeared")
        if stage == "after kill":
            # every thread must take a new append (tail repair) and reopen
            for tid in threads:
                latest = saver.get_tuple(config(tid))
                if latest is None:
                    continue
                lv = latest.checkpoint["channel_versions"]
                nv = {"m": saver.get_next_version(lv.get("m"), None)}
                items = list(latest.checkpoint["channel_values"].get("m", [])) + ["parent"]
                new_id = f"{time.time_ns():020d}-zz"
                saver.put(config(tid, "", latest.checkpoint["id"]),
                          make_checkpoint(new_id, {"m": items}, {**lv, **nv}), {}, nv)
        saver.close()
    return cps, ws, violations


# ---------------------------------------------------------------------------
# every-byte truncation (worker run in a forked child)
# ---------------------------------------------------------------------------

AFTER_CUT_ID = cp_id(10**9)


def fast_dir(fallback: str | os.PathLike) -> str:
    """A scratch directory on tmpfs when there is one (fsync is free there), else under
    ``fallback``. The every-byte loops test recovery logic, not the disk."""
    import tempfile

    for base in ("/dev/shm",):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            try:
                return tempfile.mkdtemp(prefix="crashkit-", dir=base)
            except OSError:
                pass
    return tempfile.mkdtemp(prefix="crashkit-", dir=os.fspath(fallback))


def check_cut(store: str, ref: ReferenceLog, cut: int) -> list[str]:
    """Cut the reference log at ``cut`` bytes and check open, read, put, reopen, quarantine."""
    tid = ref.thread_id
    files = ThreadFiles.of(store, tid)
    for p in (files.idx, files.quarantine):
        if os.path.exists(p):
            os.unlink(p)
    with open(files.log, "wb") as f:
        f.write(ref.data[:cut])
    end, want = ref.expected_at(cut)
    problems = []
    try:
        saver = JsonlSaver(store)
        got = answers(saver, tid)
    except Exception as exc:  # noqa: BLE001
        return [f"cut {cut}: opening/reading raised {type(exc).__name__}: {exc}"]
    d = diff_answers(got, want)
    if d:
        problems.append(f"cut {cut} (committed end {end}): {d}")
    latest = want["latest"].get("")
    parent = latest.checkpoint["id"] if latest else None
    versions = dict(latest.checkpoint["channel_versions"]) if latest else {}
    values = dict(latest.checkpoint["channel_values"]) if latest else {}
    values["m"] = list(values.get("m", [])) + ["after-cut"]
    nv = {"m": saver.get_next_version(versions.get("m"), None)}
    try:
        saver.put(config(tid, "", parent), make_checkpoint(AFTER_CUT_ID, values, {**versions, **nv}),
                  {"after": cut}, nv)
        reopened = JsonlSaver(store)
        new = reopened.get_tuple(config(tid))
        old_latest = reopened.get_tuple(config(tid, "", parent)) if parent else None
    except Exception as exc:  # noqa: BLE001
        return problems + [f"cut {cut}: put/reopen raised {type(exc).__name__}: {exc}"]
    if new is None or new.checkpoint["id"] != AFTER_CUT_ID:
        problems.append(f"cut {cut}: the put after the cut is not the latest after reopen")
    else:
        if new.checkpoint["channel_values"] != values:
            problems.append(f"cut {cut}: the put after the cut reads back different values")
        if (new.parent_config or {}).get("configurable", {}).get("checkpoint_id") != parent:
            problems.append(f"cut {cut}: the put after the cut lost its parent")
    if parent and old_latest != want["list"][("", parent)]:
        problems.append(f"cut {cut}: after put + reopen the parent checkpoint reads differently")
    torn = ref.data[end:cut]
    if torn:
        try:
            entries = read_quarantine(files.quarantine)
        except (OSError, AssertionError, ValueError) as exc:
            entries = []
            problems.append(f"cut {cut}: quarantine unreadable: {exc}")
        if len(entries) != 1 or entries[0][1] != torn or entries[0][0].get("offset") != end:
            problems.append(
                f"cut {cut}: the {len(torn)} torn bytes at {end} are not what the quarantine holds"
            )
    elif os.path.exists(files.quarantine):
        problems.append(f"cut {cut}: a clean cut at a batch end wrote a quarantine file")
    # The log must now be exactly the committed prefix plus one new committed batch, so
    # a reopen serves what was checked above plus the new checkpoint.
    with open(files.log, "rb") as f:
        now = f.read()
    if not now.startswith(ref.data[:end]):
        problems.append(f"cut {cut}: committed bytes before {end} were changed")
    else:
        added = framing.scan(now[end:], end)
        kinds = [(r.record.get("t"), r.record.get("id", r.record.get("cp"))) for r in added.records]
        if (
            added.tail_bytes
            or added.corrupt_offset is not None
            or not kinds
            or kinds[0] != ("checkpoint", AFTER_CUT_ID)
            or any(k[1] != AFTER_CUT_ID for k in kinds)
        ):
            problems.append(
                f"cut {cut}: after the put the log past {end} is not one clean new batch: {kinds}"
            )
    return problems


def truncation_worker(ref: ReferenceLog, cuts: list[int], store: str, result_path: str) -> None:
    """Child: check every cut in ``cuts``; write (checked, problems) to ``result_path``."""
    import pickle

    try:
        JsonlSaver(store)  # make the store (STORE.json, threads/)
        problems: list[str] = []
        checked = 0
        for cut in cuts:
            problems += check_cut(store, ref, cut)
            checked += 1
            if len(problems) > 50:
                break
        with open(result_path, "wb") as f:
            pickle.dump((checked, problems), f)
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)


def run_truncation(
    ref: ReferenceLog, cuts: Sequence[int], scratch: str, workers: int = 2
) -> tuple[int, list[str]]:
    """Check ``cuts`` split over ``workers`` forked children; (cuts checked, problems)."""
    import pickle

    procs = []
    for w in range(workers):
        store = os.path.join(scratch, f"store-{w}")
        result = os.path.join(scratch, f"result-{w}.pickle")
        procs.append((spawn(truncation_worker, ref, list(cuts[w::workers]), store, result), result))
    checked, problems = 0, []
    for p, result in procs:
        p.join()
        if p.exitcode != 0:
            problems.append(f"truncation worker failed with exit code {p.exitcode}")
            continue
        with open(result, "rb") as f:
            c, pr = pickle.load(f)
        checked += c
        problems += pr
    return checked, problems


# ---------------------------------------------------------------------------
# short writes through RLIMIT_FSIZE (child process)
# ---------------------------------------------------------------------------


def fsize_child(store: str, thread_id: str, extras: list[int], result_path: str) -> None:
    """For each ``extra``: cap the file size at (log size + extra) and ``put`` (it must
    fail: the batch is longer), lift the cap and ``put`` again (it must succeed).

    Writes a list of (extra, exception class name or None, log size before, log size
    after, failed id, good id) to ``result_path``.
    """
    import pickle
    import resource

    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        saver = JsonlSaver(store)
        files = ThreadFiles.of(store, thread_id)
        out = []
        for n, extra in enumerate(extras):
            latest = saver.get_tuple(config(thread_id))
            versions = dict(latest.checkpoint["channel_versions"])
            values = dict(latest.checkpoint["channel_values"])
            big = ["x" * 64] * 8  # the batch is far longer than any ``extra`` used
            nv = {"m": saver.get_next_version(versions.get("m"), None)}
            before = os.path.getsize(files.log)
            bad_id, good_id = cp_id(2 * n, "2f00-fail"), cp_id(2 * n + 1, "2f00-good")
            resource.setrlimit(resource.RLIMIT_FSIZE, (before + extra, hard))
            error = None
            try:
                saver.put(config(thread_id, "", latest.checkpoint["id"]),
                          make_checkpoint(bad_id, {**values, "m": list(values.get("m", [])) + big},
                                          {**versions, **nv}), {}, nv)
            except BaseException as exc:  # noqa: BLE001
                error = type(exc).__name__
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            after = os.path.getsize(files.log)
            nv = {"m": saver.get_next_version(versions.get("m"), None)}
            saver.put(config(thread_id, "", latest.checkpoint["id"]),
                      make_checkpoint(good_id, {**values, "m": list(values.get("m", [])) + [n]},
                                      {**versions, **nv}), {}, nv)
            out.append((extra, error, before, after, bad_id, good_id))
        with open(result_path, "wb") as f:
            pickle.dump(out, f)
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)


# ---------------------------------------------------------------------------
# SIGKILL at the k-th file operation (child process)
# ---------------------------------------------------------------------------

FILE_OPS = ("open", "write", "fsync", "fdatasync", "ftruncate", "replace", "unlink", "rename")


class _KillAtOp:
    """``os`` for log.py/store.py that SIGKILLs the process at the k-th file operation."""

    def __init__(self, k: int, log_path: str) -> None:
        self._k = k
        self._n = 0
        self._log = log_path

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in FILE_OPS:
            return real

        def op(*args: Any, **kwargs: Any) -> Any:
            self._n += 1
            fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.write(fd, f"{self._n} {name} {args[0] if args else ''}\n".encode())
            os.close(fd)
            if self._n == self._k:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return op


def kill_at_op_child(store: str, action: str, k: int, ops_log: str) -> None:
    """Run ``action`` on thread ``t`` ("prune": prune keep_latest; "compact"; "create": the first
    put of thread ``new``; "copy": copy_thread t -> copy) and SIGKILL at file op ``k``.
    Exit 0 if the action finished before op ``k``."""
    import langgraph_jsonl_checkpoint.disk.files as files_module

    try:
        saver = JsonlSaver(store)
        saver.store.thread_log("t").refresh()
        files_module.os = _KillAtOp(k, ops_log)  # type: ignore[attr-defined]
        if action == "prune":
            saver.prune(["t"])
        elif action == "compact":
            saver.compact("t")
        elif action == "create":
            v = {"m": saver.get_next_version(None, None)}
            saver.put(config("new"), make_checkpoint(cp_id(1), {"m": ["new"]}, v), {}, v)
        elif action == "copy":
            saver.copy_thread("t", "copy")
        saver.close()
    except BaseException:
        traceback.print_exc()
        os._exit(70)
    os._exit(0)
