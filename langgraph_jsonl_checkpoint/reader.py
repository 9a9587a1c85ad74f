"""Rebuilding stored values: a full value plus the deltas that extend it.

A channel version's value is stored in full (a checkpoint or snapshot record) or as a
delta ``{"base": b, "keep": n, "tail": cell}`` on another version. :class:`ValueReader`
follows deltas back to a full value and rebuilds forward, reading each record once per
call; with ``shared=True`` it may be reused across results, and then copies plain JSON
out of its cache so results never share objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .codec import ValueCodec
from .errors import CorruptLogError
from .index import DELTA, EMPTY, ThreadIndex
from .log import ThreadLog


class ValueReader:
    """Reads one thread's records for one call (or one listing), each at most once."""

    def __init__(self, log: ThreadLog, codec: ValueCodec, *, shared: bool = False) -> None:
        self.log = log
        self.codec = codec
        #: Reused across several results (list): decoded values must not share objects.
        self.shared = shared
        self.records: dict[int, dict[str, Any]] = {}
        self.gen = log.generation_token()

    def decode(self, cell: Mapping[str, Any]) -> Any:
        return self.codec.decode(cell, fresh=self.shared)

    def record(self, ref: Any) -> dict[str, Any]:
        rec = self.records.get(ref.offset)
        if rec is None:
            rec = self.log.read_record(ref)
            self.records[ref.offset] = rec
        return rec

    def value(self, idx: ThreadIndex, ns: str, channel: str, version: Any) -> Any:
        """The stored value of a channel version (following deltas back to a full value)."""
        entry = idx.blob(ns, channel, version)
        chain = []
        while entry is not None and entry.kind == DELTA:
            stored = self.record(entry.ref)["values"][channel]
            chain.append(stored)
            entry = idx.blob(ns, channel, stored["base"])
        if entry is None or entry.kind == EMPTY:
            self.log.distrust_sidecar()
            raise CorruptLogError(
                f"thread {self.log.thread_id!r}: the value of channel {channel!r} at version "
                f"{version!r} refers to a base version that is not in {self.log.path}.",
                path=self.log.path,
                offset=0,
            )
        value = self.decode(self.record(entry.ref)["values"][channel]["val"])
        if chain and type(value) is list:
            value = list(value)  # extended in place below: never the parsed record's own list
        for stored in reversed(chain):
            keep = stored["keep"]
            if type(value) is not list or len(value) != keep:
                self.log.distrust_sidecar()
                raise CorruptLogError(
                    f"thread {self.log.thread_id!r}: delta for channel {channel!r} at "
                    f"version {stored['ver']!r} expects {keep} items in its base.",
                    path=self.log.path,
                    offset=0,
                )
            value.extend(self.decode(stored["tail"]))  # linear in the result, not quadratic
        return value

    def write_value(self, entry: Any) -> Any:
        return self.decode(self.record(entry.ref)["w"][entry.position][2])
