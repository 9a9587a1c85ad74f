"""A reference log, built through the real saver, with what each call acknowledged.

``build_reference_log`` writes ~50 records (a copy_thread batch, deltas, snapshots, a
second namespace, put_writes with regular and special channels) while mirroring every
call into an ``InMemorySaver``. The truncation, tail, bit-flip, mid-log and index
batteries cut or damage copies of it: a copy cut at byte ``c`` must serve exactly the
answers ``ReferenceLog.expected_at(c)`` gives.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_jsonl_checkpoint import JsonlSaver
from tests.harness.answers import answers, mem_copy_thread
from tests.harness.checkpoints import Mirror, cp_id
from tests.harness.raw_log import ThreadFiles

REF_THREAD = "ref-thread"


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
