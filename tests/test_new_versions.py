"""``put`` with any ``new_versions`` a caller may pass, compared with ``InMemorySaver``.

LangGraph passes exactly the channels a step changed, each with a fresh version. A
migration script, a copy made checkpoint by checkpoint, or a test may pass anything:
every channel's version (repeating versions already stored, with the same value), a
subset, versions of channels the checkpoint does not hold, or an old version with a new
value. ``InMemorySaver`` keys values by ``(namespace, channel, version)`` and the last
write of a key wins; every read here must answer what it answers, in the writing saver
and in a fresh one on the same store, and no read may hang (each runs under a time
limit).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap

import hypothesis.strategies as st
import orjson
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_jsonl_checkpoint import CorruptLogError, JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from langgraph_jsonl_checkpoint.maintenance.repair import repair
from langgraph_jsonl_checkpoint.maintenance.verify import verify
from tests.harness.answers import answers, diff_answers
from tests.harness.bounded import ReadHung, run_bounded, within
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles

READ_SECONDS = 20


def _log_records(store: str, thread_id: str) -> list[dict]:
    with open(ThreadFiles.of(store, thread_id).log, "rb") as f:
        return [orjson.loads(line) for line in f.read().splitlines()]


def _deltas(records: list[dict]) -> list[tuple[str, dict]]:
    return [
        (ch, entry)
        for r in records
        if r["t"] == "checkpoint"
        for ch, entry in r["values"].items()
        if "base" in entry
    ]


# -- the reported case ---------------------------------------------------------------

REPRO = textwrap.dedent(
    """
    import sys
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph_jsonl_checkpoint import JsonlSaver
    s = JsonlSaver(sys.argv[2]); cfg = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    def put(parent, value, ver):
        cp = empty_checkpoint(); cp["channel_values"] = {"m": value}; cp["channel_versions"] = {"m": ver}
        return s.put(parent, cp, {}, {"m": ver})
    if sys.argv[1] == "write":
        c = put(cfg, ["a"], "1"); c = put(c, ["a", "b"], "2"); put(c, ["a", "b"], "2"); s.close()
    else:
        t = s.get_tuple(cfg)
        print(t.checkpoint["channel_values"])
        print(len(list(s.list(cfg))))
    """
)


def test_a_put_repeating_an_unchanged_version_reads_back_in_a_fresh_process(tmp_path) -> None:
    script = tmp_path / "repro.py"
    script.write_text(REPRO)
    store = str(tmp_path / "selfloop")
    done = run_bounded([sys.executable, str(script), "write", store], seconds=30)
    assert done.returncode == 0, done.stderr
    read = run_bounded([sys.executable, str(script), "read", store], seconds=30)
    assert read.returncode == 0, read.stderr
    assert read.stdout.split("\n")[:2] == ["{'m': ['a', 'b']}", "3"]
    for ch, entry in _deltas(_log_records(store, "t")):
        assert entry["base"] != entry["ver"], f"channel {ch}: a delta on its own version"


def _put(saver, parent, value, ver, step):
    """A put of checkpoint number ``step`` (the same id in every saver) holding ``m``."""
    values = {} if value is None else {"m": value}
    cp = make_checkpoint(cp_id(step), values, {"m": ver})
    return saver.put(parent, cp, {}, {"m": ver})


def test_repeating_every_version_stores_nothing_twice(tmp_path) -> None:
    """A migration that passes all channel versions at every put: unchanged values are
    not stored again (the log does not grow with the whole state per put)."""
    saver = JsonlSaver(tmp_path / "s")
    cfg = config("t")
    messages = [HumanMessage(content="x" * 2000, id="h0")]
    cfg = _put(saver, cfg, list(messages), "1", 1)
    size_one = os.path.getsize(ThreadFiles.of(tmp_path / "s", "t").log)
    for step in range(2, 22):
        cfg = _put(saver, cfg, [HumanMessage(content="x" * 2000, id="h0")], "1", step)
    size = os.path.getsize(ThreadFiles.of(tmp_path / "s", "t").log)
    assert size - size_one < 20 * 1000, "each repeated put stored the 2 KB value again"
    with within(READ_SECONDS):
        fresh = JsonlSaver(tmp_path / "s")
        assert fresh.get_tuple(config("t")).checkpoint["channel_values"]["m"] == messages


@pytest.mark.parametrize("mode", ["same value", "other value", "other length", "empty"])
def test_an_old_version_written_again_wins_like_in_memory(tmp_path, mode) -> None:
    """Writing a stored version again replaces its value for every checkpoint that
    names it (InMemorySaver's blobs are keyed by version), while a delta built on its
    old value keeps the value it had."""
    new = {
        "same value": ["a", "b"],
        "other value": ["x", "y"],
        "other length": ["z"],
        "empty": None,
    }[mode]
    savers = [JsonlSaver(tmp_path / "s", snapshot_every=2), InMemorySaver()]
    for saver in savers:
        c1 = _put(saver, config("t"), ["a"], "01", 1)
        c2 = _put(saver, c1, ["a", "b"], "02", 2)
        c3 = _put(saver, c2, ["a", "b", "c"], "03", 3)  # a delta on "02"
        _put(saver, c3, None if new is None else list(new), "02", 4)  # "02" again
        _put(saver, c3, ["a", "b", "c", "d"], "04", 5)  # a delta on "03"
    want = answers(savers[1], "t")
    with within(READ_SECONDS):
        assert not diff_answers(answers(savers[0], "t"), want)
        assert not diff_answers(answers(JsonlSaver(tmp_path / "s"), "t"), want)
    for _, entry in _deltas(_log_records(str(tmp_path / "s"), "t")):
        assert entry["base"] != entry["ver"]


@pytest.mark.parametrize(
    "which",
    ["subset", "all versions", "a channel not in the checkpoint", "a version not in channel_versions"],
)
def test_any_new_versions_reads_like_in_memory(tmp_path, which) -> None:
    savers = [JsonlSaver(tmp_path / "s", snapshot_every=2), InMemorySaver()]
    for saver in savers:
        cfg = config("t")
        versions: dict = {}
        values: dict = {}
        for i in range(1, 9):
            values = {"m": values.get("m", []) + [i], "n": {"i": i}}
            changed = {"m": f"{i:04}.m", "n": f"{i:04}.n"}
            versions = {**versions, **changed}
            if which == "subset":
                new_versions = {"m": changed["m"]} if i % 2 else {"n": changed["n"]}
            elif which == "all versions":
                new_versions = dict(versions)
            elif which == "a channel not in the checkpoint":
                new_versions = {**changed, "ghost": f"{i:04}.g"}
            else:
                new_versions = {**changed, "m": f"{i:04}.other"}
            cfg = saver.put(cfg, make_checkpoint(cp_id(i), values, versions), {"i": i}, new_versions)
    want = answers(savers[1], "t")
    with within(READ_SECONDS):
        assert not diff_answers(answers(savers[0], "t"), want)
        assert not diff_answers(answers(JsonlSaver(tmp_path / "s"), "t"), want)


def test_a_version_named_in_another_namespace_is_not_read_from_the_first(tmp_path) -> None:
    """Values are keyed by namespace too: a checkpoint of namespace "sub" naming a
    version stored only in namespace "" has no value for it (found by the model below:
    an index loaded in bulk from one namespace answered for every namespace)."""
    savers = [JsonlSaver(tmp_path / "s"), InMemorySaver()]
    for saver in savers:
        saver.put(config("t"), make_checkpoint(cp_id(1), {"m": [1]}, {"m": "1"}), {}, {"m": "1"})
        if isinstance(saver, JsonlSaver):
            saver.compact("t")  # reloaded in bulk, as from a sidecar
        saver.put(config("t", "sub"), make_checkpoint(cp_id(2), {"m": [1]}, {"m": "1"}), {}, {})
    want = answers(savers[1], "t")
    assert want["latest"]["sub"].checkpoint["channel_values"] == {}
    with within(READ_SECONDS):
        assert not diff_answers(answers(savers[0], "t"), want)
        assert not diff_answers(answers(JsonlSaver(tmp_path / "s"), "t"), want)


# -- logs this package never writes: no read may loop ---------------------------------


def _hand_made_log(store, thread_id: str, values_by_record: list[dict]) -> str:
    """A log (with valid checksums) whose checkpoint records hold the given values."""
    JsonlSaver(store).close()
    files = ThreadFiles.of(store, thread_id)
    lines = [framing.frame({"t": "header", "seq": 0, "format": 1, "thread": thread_id, "gen": 1,
                            "created": "2026-01-01T00:00:00+00:00"})]
    parent = None
    for i, values in enumerate(values_by_record, start=1):
        cid = cp_id(i)
        cv = {ch: e["ver"] for ch, e in values.items()}
        lines.append(framing.frame({
            "t": "checkpoint", "ns": "", "id": cid, "parent": parent, "cv": cv,
            "md": {"json": {}}, "cp": {"json": {"v": 4, "ts": "2026-01-01T00:00:00+00:00",
                                                "versions_seen": {}}},
            "values": values, "seq": i,
        }))
        parent = cid
    with open(files.log, "wb") as f:
        f.write(b"".join(lines))
    os.chmod(files.log, 0o600)
    return files.log


CYCLES = {
    "a delta on itself": [
        {"m": {"ver": "1", "base": "1", "keep": 1, "tail": {"json": ["a"]}}},
    ],
    "two deltas on each other": [
        {"m": {"ver": "1", "base": "2", "keep": 1, "tail": {"json": ["a"]}}},
        {"m": {"ver": "2", "base": "1", "keep": 1, "tail": {"json": ["b"]}}},
    ],
    "a delta on a version never stored": [
        {"m": {"ver": "1", "val": {"json": ["a"]}}},
        {"m": {"ver": "2", "base": "9", "keep": 1, "tail": {"json": ["b"]}}},
    ],
    "a delta whose base is shorter than it says": [
        {"m": {"ver": "1", "val": {"json": ["a"]}}},
        {"m": {"ver": "2", "base": "1", "keep": 5, "tail": {"json": ["b"]}}},
    ],
}


@pytest.mark.parametrize("case", sorted(CYCLES))
def test_a_hand_made_delta_cycle_is_reported_not_followed(tmp_path, case) -> None:
    store = str(tmp_path / "s")
    log = _hand_made_log(store, "t", CYCLES[case])
    saver = JsonlSaver(store)
    with within(READ_SECONDS):
        with pytest.raises(CorruptLogError) as err:
            list(saver.list(config("t")))
        for call in (lambda: saver.get_tuple(config("t")), lambda: saver.compact("t")):
            with pytest.raises(CorruptLogError):
                call()
    message = str(err.value)
    assert "'t'" in message and log in message and "langgraph-jsonl repair" in message
    assert err.value.path == log and err.value.offset > 0
    assert "byte offset" in message

    with within(READ_SECONDS):
        report = verify(JsonlSaver(store, read_only=True), ["t"])
    assert not report.ok
    assert any(f.offset == err.value.offset for f in report.findings), report.findings

    with within(READ_SECONDS):
        result = repair(JsonlSaver(store), "t")
        assert result.archived_to is not None and os.path.exists(result.archived_to)
        fixed = JsonlSaver(store)
        listed = list(fixed.list(config("t")))
        assert verify(JsonlSaver(store, read_only=True), ["t"]).ok
    # what could be rebuilt stays; what could not is gone
    readable = {"a delta on a version never stored": 1, "a delta whose base is shorter than it says": 1}
    assert len(listed) == readable.get(case, 0)


# -- the model: the raw saver API against InMemorySaver --------------------------------

THREADS = ["t0", "t1"]
NAMESPACES = ["", "sub"]


class NewVersionsMachine(RuleBasedStateMachine):
    """Puts from arbitrary parents with arbitrary ``new_versions``; compared with
    ``InMemorySaver`` after every step, in the writing saver and in a fresh one."""

    @initialize()
    def start(self) -> None:
        self.base = tempfile.mkdtemp(prefix="new-versions-")
        self.path = os.path.join(self.base, "store")
        self.saver = JsonlSaver(self.path, snapshot_every=2, snapshot_ratio=0.5, concurrent_runs="unchecked")
        self.mem = InMemorySaver()
        self.counter = 0
        self.used: dict[str, list[str]] = {"m": [], "b": [], "c": []}

    def teardown(self) -> None:
        if hasattr(self, "base"):
            self.saver.close()
            shutil.rmtree(self.base, ignore_errors=True)

    def _ids(self, thread: str, ns: str) -> list[str]:
        return sorted(self.mem.storage.get(thread, {}).get(ns, {}))

    @rule(
        thread=st.sampled_from(THREADS),
        ns=st.sampled_from(NAMESPACES),
        parent_pick=st.integers(0, 9),
        m_edit=st.sampled_from(["keep", "grow", "grow", "grow", "replace", "shrink", "message"]),
        b_edit=st.sampled_from(["keep", "set", "drop"]),
        c_edit=st.sampled_from(["keep", "set"]),
        version_rule=st.sampled_from(["fresh", "fresh", "same", "reuse"]),
        mode=st.sampled_from(["changed", "changed", "all", "subset", "superset", "repeat-all"]),
        pick=st.integers(0, 50),
    )
    def put(self, thread, ns, parent_pick, m_edit, b_edit, c_edit, version_rule, mode, pick) -> None:
        self.counter += 1
        n = self.counter
        ids = self._ids(thread, ns)
        parent = None
        if ids and parent_pick > 0:
            parent = ids[-1] if parent_pick < 6 else ids[parent_pick % len(ids)]
        if parent:
            tup = self.mem.get_tuple(config(thread, ns, parent))
            versions = dict(tup.checkpoint["channel_versions"])
            values = dict(tup.checkpoint["channel_values"])
        else:
            versions, values = {}, {}
        changed: dict = {}
        m = list(values.get("m", []))
        if m_edit == "grow":
            changed["m"] = m + [n, f"s{n}"]
        elif m_edit == "replace":
            changed["m"] = [f"r{n}"]
        elif m_edit == "shrink":
            changed["m"] = m[:-1]
        elif m_edit == "message":
            changed["m"] = m + [
                HumanMessage(content=f"h{n}", id=f"h{n}"),
                AIMessage(content=f"a{n}", id=f"a{n}"),
            ]
        if b_edit == "set":
            changed["b"] = {"n": n}
        if c_edit == "set":
            changed["c"] = n
        new_versions: dict = {}
        for ch in changed:
            if version_rule == "same" and ch in versions:
                ver = versions[ch]  # the same version, now with another value
            elif version_rule == "reuse" and self.used[ch]:
                ver = self.used[ch][pick % len(self.used[ch])]  # an old version
            else:
                ver = f"{n:06}.{ch}"
            new_versions[ch] = ver
            if ver not in self.used[ch]:
                self.used[ch].append(ver)
        values.update(changed)
        versions.update(new_versions)
        if b_edit == "drop" and "b" in values:
            del values["b"]
            new_versions["b"] = versions["b"] = f"{n:06}.b"
        if mode == "all" or mode == "repeat-all":
            new_versions = dict(versions) if mode == "repeat-all" else {**versions, **new_versions}
        elif mode == "subset" and new_versions:
            keys = sorted(new_versions)
            new_versions = {k: new_versions[k] for k in keys[: pick % (len(keys) + 1)]}
        elif mode == "superset":
            new_versions = {**new_versions, "ghost": f"{n:06}.g"}
        cfg = config(thread, ns, parent)
        md = {"step": n}
        cp = make_checkpoint(cp_id(n), values, versions)
        self.saver.put(cfg, cp, md, new_versions)
        self.mem.put(cfg, make_checkpoint(cp_id(n), values, versions), md, new_versions)

    @rule(thread=st.sampled_from(THREADS), ns=st.sampled_from(NAMESPACES), pick=st.integers(0, 9),
          task=st.sampled_from(["ta", "tb"]), special=st.booleans())
    def put_writes(self, thread, ns, pick, task, special) -> None:
        ids = self._ids(thread, ns)
        if not ids:
            return
        cfg = config(thread, ns, ids[pick % len(ids)])
        writes = [("m", [f"w{self.counter}"])] + ([("__interrupt__", {"i": self.counter})] if special else [])
        self.saver.put_writes(cfg, writes, task, "")
        self.mem.put_writes(cfg, writes, task, "")

    @precondition(lambda self: hasattr(self, "saver"))
    @rule(close=st.booleans())
    def reopen(self, close) -> None:
        if close:
            self.saver.close()
        self.saver = JsonlSaver(self.path, snapshot_every=2, snapshot_ratio=0.5, concurrent_runs="unchecked")

    @rule(thread=st.sampled_from(THREADS))
    def compact(self, thread) -> None:
        with within(READ_SECONDS, "compact"):
            self.saver.compact(thread)

    @invariant()
    def same_answers(self) -> None:
        if not hasattr(self, "saver"):
            return
        with within(READ_SECONDS, "reads"):
            fresh = JsonlSaver(self.path, read_only=True)
            for thread in THREADS:
                want = answers(self.mem, thread)
                for name, saver in (("writer", self.saver), ("fresh", fresh)):
                    d = diff_answers(answers(saver, thread), want)
                    assert not d, f"{name} saver, thread {thread}: {d}"
            fresh.close()
        for thread in THREADS:
            if os.path.exists(ThreadFiles.of(self.path, thread).log):
                for ch, entry in _deltas(_log_records(self.path, thread)):
                    assert entry["base"] != entry["ver"], f"{thread}/{ch}: a delta on its own version"


NewVersionsMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("NEW_VERSIONS_EXAMPLES", "60")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestNewVersionsMachine = NewVersionsMachine.TestCase


def test_the_time_limit_itself_fails_a_hang() -> None:
    """The guard these tests rely on: a loop that never ends fails, it does not stall."""
    with pytest.raises(ReadHung):
        with within(0.2):
            while True:
                pass
