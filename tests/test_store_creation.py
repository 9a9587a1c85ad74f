"""Several processes and threads opening one new store at the same moment.

A server's workers start together, each calling ``JsonlSaver(path)`` on the same path:
a path that does not exist yet, or an existing empty directory. Every one must succeed,
and every write of every one must be there.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.checkpoints import config, cp_id, make_checkpoint
from tests.harness.children import open_store_child, read_text, spawn

PROCESSES = 8
ROUNDS = int(os.environ.get("STORE_CREATION_ROUNDS", "50"))


def test_processes_creating_one_store_at_once_all_succeed(tmp_path) -> None:
    failures = []
    for r in range(ROUNDS):
        store = tmp_path / f"store-{r}"
        if r % 2:
            store.mkdir()  # an existing empty directory (as a volume mount is)
        start_at = time.time() + 0.25
        errs = [tmp_path / f"err-{r}-{k}.txt" for k in range(PROCESSES)]
        children = [
            spawn(open_store_child, str(store), f"worker-{k}", start_at, str(errs[k]))
            for k in range(PROCESSES)
        ]
        for k, p in enumerate(children):
            p.join(60)
            if p.exitcode != 0:
                failures.append(
                    f"round {r}, worker {k}: exit {p.exitcode}: {read_text(str(errs[k]))[-600:]}"
                )
        if not failures:
            saver = JsonlSaver(store, read_only=True)
            assert sorted(saver.store.thread_ids()) == sorted(f"worker-{k}" for k in range(PROCESSES)), r
            for k in range(PROCESSES):
                tup = saver.get_tuple(config(f"worker-{k}"))
                assert tup.checkpoint["channel_values"] == {"m": [f"worker-{k}"]}
            assert [e for e in os.listdir(store) if e.startswith("STORE.json.")] == []
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("existing", [False, True])
def test_threads_creating_one_store_at_once_all_succeed(tmp_path, existing) -> None:
    for r in range(20):
        store = tmp_path / f"store-{r}"
        if existing:
            store.mkdir()
        barrier = threading.Barrier(PROCESSES)
        errors: list[BaseException] = []

        def worker(k: int, barrier=barrier, store=store, errors=errors) -> None:
            try:
                barrier.wait()
                saver = JsonlSaver(store)
                v = {"m": saver.get_next_version(None, None)}
                saver.put(config(f"w{k}"), make_checkpoint(cp_id(1), {"m": [k]}, v), {}, v)
                saver.close()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(PROCESSES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:3]
        assert sorted(JsonlSaver(store, read_only=True).store.thread_ids()) == sorted(
            f"w{k}" for k in range(PROCESSES)
        )
