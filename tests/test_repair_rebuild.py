"""``repair`` after one damaged line in a real tool-calling agent thread keeps every
checkpoint that can still be rebuilt, and only those.

The oracle is the undamaged thread: every checkpoint the repaired thread serves must
equal (state and pending writes) what the undamaged copy served for it, and the
checkpoints it no longer serves must be exactly those the damage forces out. Which
those are is computed here independently of ``repair``, from the undamaged records:

- a stored value survives when its record is not the damaged one and it is a full
  value, "empty", or a delta whose base version has a surviving value stored before it;
- a checkpoint survives when its record is not the damaged one and every version it
  names (``cv``) has a surviving value somewhere in the log (a later snapshot record
  holds the full value of a version whose delta chain ran through the damage).

So the damage forces out the damaged checkpoint and the checkpoints whose list values
extend it by deltas, up to the next snapshot of each such list; every other channel
(``branch:to:*``, ``__start__``) is stored in full and survives wherever it was.

Damage positions: a checkpoint record in a delta chain, the checkpoint record a snapshot
follows, the snapshot record itself, the first checkpoint after a snapshot, a writes
record. Each is checked through ``repair --dry-run --json`` and the real ``repair``
(figures equal), then ``verify``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.cli import main
from langgraph_jsonl_checkpoint.disk.summary import version_key
from tests.harness.answers import answers, normalize
from tests.harness.flow_graphs import build_agent_graph
from tests.harness.raw_log import ThreadFiles

THREAD = "agent"


@pytest.fixture(scope="module")
def undamaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Any, Any]]:
    """A store with one tool-calling agent thread (several snapshot records), and what
    it serves: every checkpoint with its pending writes, as plain data."""
    store = tmp_path_factory.mktemp("undamaged") / "s"
    with JsonlSaver(store, snapshot_every=6) as saver:
        graph = build_agent_graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": THREAD}}
        for i in range(40):
            text = f"add {i} 2" if i % 3 == 0 else f"both {i} 3" if i % 3 == 1 else f"hi {i}"
            graph.invoke({"messages": [HumanMessage(text, id=f"h-{i}")]}, cfg)
    with JsonlSaver(store, read_only=True) as saver:
        served = {key: normalize(t) for key, t in answers(saver, THREAD)["list"].items()}
    return store, served


def _records(log: Path) -> list[tuple[dict[str, Any], int, int]]:
    """Each line of the log parsed, with its byte offset and length (header included)."""
    out, pos = [], 0
    for line in log.read_bytes().splitlines(keepends=True):
        out.append((orjson.loads(line), pos, len(line)))
        pos += len(line)
    return out


def _forced_out(records: list[tuple[dict[str, Any], int, int]], damaged: int) -> set[tuple[str, str]]:
    """The checkpoints (ns, id) that damage to line ``damaged`` forces out (module docstring)."""
    survives: set[tuple[str, str, Any]] = set()
    for i, (rec, _, _) in enumerate(records):
        if i == damaged or rec.get("t") not in ("checkpoint", "snapshot"):
            continue
        for ch, entry in rec["values"].items():
            if "base" not in entry or (rec["ns"], ch, version_key(entry["base"])) in survives:
                survives.add((rec["ns"], ch, version_key(entry["ver"])))
    return {
        (rec["ns"], rec["id"])
        for i, (rec, _, _) in enumerate(records)
        if rec.get("t") == "checkpoint"
        and (i == damaged or any((rec["ns"], c, version_key(v)) not in survives
                                 for c, v in rec["cv"].items()))
    }


def _pick(records: list[tuple[dict[str, Any], int, int]], where: str) -> int:
    """The line to damage: ``where`` names its position (see the module docstring)."""
    kinds = [rec.get("t") for rec, _, _ in records]
    snaps = [i for i, k in enumerate(kinds) if k == "snapshot"]
    assert len(snaps) >= 4, "the thread should hold several snapshot records"
    middle = snaps[len(snaps) // 2]
    if where == "before snapshot":
        return middle - 1
    if where == "snapshot":
        return middle
    if where == "after snapshot":
        return next(i for i in range(middle + 1, len(kinds)) if kinds[i] == "checkpoint")
    if where == "delta chain":
        return next(
            i for i in range(middle + 3, len(kinds))
            if kinds[i] == "checkpoint" and kinds[i + 1] != "snapshot"
            and "base" in records[i][0]["values"].get("messages", {})
        )
    assert where == "writes"
    return next(i for i in range(middle, len(kinds)) if kinds[i] == "writes")


def _repair_json(store: Path, *, dry_run: bool, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    args = ["repair", str(store), "--thread", THREAD, "--json"] + (["--dry-run"] if dry_run else [])
    main(args)
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize("where", ["delta chain", "before snapshot", "snapshot", "after snapshot", "writes"])
def test_repair_keeps_every_checkpoint_one_damaged_line_does_not_force_out(
    undamaged: tuple[Path, dict[Any, Any]], tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source, served = undamaged
    store = tmp_path / "s"
    shutil.copytree(source, store)
    log = Path(ThreadFiles.of(store, THREAD).log)
    records = _records(log)
    target = _pick(records, where)
    damaged_rec, offset, length = records[target]
    data = bytearray(log.read_bytes())
    data[offset + length // 2] ^= 0x01
    log.write_bytes(bytes(data))
    forced = _forced_out(records, target)
    lost_writes = (
        {(damaged_rec["task"], w[1]) for w in damaged_rec["w"]} if damaged_rec["t"] == "writes" else set()
    )

    dry = _repair_json(store, dry_run=True, capsys=capsys)
    real = _repair_json(store, dry_run=False, capsys=capsys)
    assert dry["dropped"] == real["dropped"] and dry["kept_records"] == real["kept_records"]
    assert abs(dry["kept_bytes"] - real["kept_bytes"]) <= 8 and real["archived_to"]

    with JsonlSaver(store, read_only=True) as saver:
        repaired = {key: normalize(t) for key, t in answers(saver, THREAD)["list"].items()}
    assert set(served) - set(repaired) == forced, "dropped checkpoints are not the ones the damage forces out"
    for key, tup in repaired.items():
        want = served[key]
        if lost_writes and key == (damaged_rec["ns"], damaged_rec["cp"]):  # that line's writes are gone
            want = {**want, "pending_writes": [w for w in want["pending_writes"] if w[:2] not in lost_writes]}
        assert tup == want, f"checkpoint {key} is served differently after the repair"
    dropped_checkpoints = [line for line in real["dropped"] if line.startswith("checkpoint ")]
    assert len(dropped_checkpoints) == len(forced - {(damaged_rec.get("ns"), damaged_rec.get("id"))})
    cause = f"bytes {offset}-{offset + length}"
    for line in dropped_checkpoints:
        assert cause in line, f"the reason does not name the damaged line ({cause}): {line}"
    assert main(["verify", str(store)]) == 0, capsys.readouterr().out
