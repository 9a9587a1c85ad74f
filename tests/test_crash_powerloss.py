"""Crash battery 9: simulated power loss.

The shim in ``tests/powerloss.py`` records every file operation the package makes and
draws crash images — what the disk may hold if the power went right after that
operation: unsynced sectors kept, lost, zeroed or garbled; directory operations not yet
fsynced kept or undone. Each image must open (no false corruption report), serve every
acknowledged checkpoint and write exactly once with its values and nothing partial,
keep deleted threads deleted, take a further put, verify clean and leave no temp files.

Below, first the regressions the battery found, then the CI subset of the battery. The
full battery is ``python stress/powerloss.py --states 5000``.
"""

from __future__ import annotations

from pathlib import Path

import crashkit as ck
import pytest

from langgraph_jsonl_checkpoint import JsonlSaver


@pytest.mark.parametrize("leftover", [b"", b'{"store": "langgraph-js', b"\0" * 512])
def test_a_store_whose_creation_was_cut_short_opens(tmp_path: Path, leftover: bytes) -> None:
    """A power cut while the store is created leaves ``STORE.json.tmp`` without the
    marker. That is an empty store, not a foreign directory."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "STORE.json.tmp").write_bytes(leftover)
    assert JsonlSaver(store, read_only=True).get_tuple(ck.config("t")) is None
    saver = JsonlSaver(store)
    v = {"m": saver.get_next_version(None, None)}
    saver.put(ck.config("t"), ck.make_checkpoint(ck.cp_id(1), {"m": [1]}, v), {}, v)
    assert JsonlSaver(store).get_tuple(ck.config("t")).checkpoint["id"] == ck.cp_id(1)
    assert (store / "STORE.json").exists()
    assert not ck.stray_temp_files(store), ck.stray_temp_files(store)


def test_a_foreign_directory_is_still_refused(tmp_path: Path) -> None:
    from langgraph_jsonl_checkpoint import StoreError

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "STORE.json.tmp").write_bytes(b"")
    (store / "notes.txt").write_text("mine")
    with pytest.raises(StoreError):
        JsonlSaver(store)
