"""A delta that cannot be rebuilt (its base missing, or shorter than it says) is refused
with an error that names the thread, the file, the channel, the versions and the byte
offset, and says what to do.

Written for mutants of ``values/reader.py`` that survived the suite (stress/mutation.py):
no test read a log whose deltas were edited with valid checksums.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from langgraph_jsonl_checkpoint import CorruptLogError, JsonlSaver
from langgraph_jsonl_checkpoint.disk import framing
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.raw_log import ThreadFiles


def _store(tmp_path: Path, plain: bool) -> tuple[Path, ThreadFiles]:
    store = tmp_path / "s"
    saver = JsonlSaver(store, snapshot_every=1000)
    parent = config("t")
    items: list = []
    for i in range(1, 5):
        items = items + ([f"item {i}"] if plain else [{"x": i}])
        versions = {"m": f"{i:032}.{0:016}"}
        parent = saver.put(parent, make_checkpoint(cp_id(i), {"m": items}, versions), {}, versions)
    saver.close()
    files = ThreadFiles.of(store, "t")
    os.unlink(files.idx)
    return store, files


def _edit_last_delta(files: ThreadFiles, **changes: object) -> tuple[int, dict]:
    """Change fields of the last checkpoint's delta, framing the line again (valid
    checksum); its byte offset and the delta as it was."""
    data = Path(files.log).read_bytes()
    lines = data.splitlines(keepends=True)
    offset = len(b"".join(lines[:-1]))
    rec = orjson.loads(lines[-1])
    del rec["c"]
    delta = dict(rec["values"]["m"])
    assert "base" in delta, rec
    rec["values"]["m"].update(changes)
    lines[-1] = framing.frame(rec)
    Path(files.log).write_bytes(b"".join(lines))
    return offset, delta


@pytest.mark.parametrize("plain", [True, False], ids=["strings", "objects"])
def test_a_delta_longer_than_its_base_says_is_refused_naming_where(tmp_path: Path, plain: bool) -> None:
    store, files = _store(tmp_path, plain)
    offset, delta = _edit_last_delta(files, keep=7)
    saver = JsonlSaver(store, read_only=True)
    with pytest.raises(CorruptLogError) as err:
        saver.get_tuple(config("t"))
    msg = str(err.value)
    for part in ("'t'", files.log, "'m'", repr(delta["ver"]), f"byte offset {offset}", "extends 7 items",
                 "holds 3: the value cannot be rebuilt. This package never writes such a record (the log"
                 " was edited or damaged).", "repair"):
        assert part in msg, (part, msg)
    assert err.value.path == files.log and err.value.offset == offset


def test_a_delta_whose_base_was_never_stored_is_refused_naming_where(tmp_path: Path) -> None:
    store, files = _store(tmp_path, True)
    missing = f"{99:032}.{0:016}"
    offset, delta = _edit_last_delta(files, base=missing)
    saver = JsonlSaver(store, read_only=True)
    with pytest.raises(CorruptLogError) as err:
        saver.get_tuple(config("t"))
    msg = str(err.value)
    for part in ("'t'", files.log, "'m'", repr(delta["ver"]), repr(missing), f"byte offset {offset}",
                 "was not stored before", "cannot be rebuilt", "edited or damaged", "repair"):
        assert part in msg, (part, msg)
    assert err.value.path == files.log and err.value.offset == offset
    # The checkpoints before it are still served.
    assert saver.get_tuple(config("t", checkpoint_id=cp_id(3))).checkpoint["channel_values"]["m"] == [
        "item 1", "item 2", "item 3"]

