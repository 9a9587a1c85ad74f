"""What a thread's log keeps of its newest lists, so the next put and read are cheap.

Per namespace and channel, two things, both keyed by the version they belong to:

- the **proof** of the last version stored or handed out: a
  :class:`~.witness.ListWitness` (the very objects) or a
  :class:`~.codec.ListFingerprint` (their encoding); a ``put`` whose list starts with
  that version's items stores a delta without encoding them again (:mod:`.records`);
- the **kept items** of the newest version written or read, in stored form (message
  dumps or plain JSON): the next read of that version decodes from them instead of
  walking a delta chain (:mod:`.reader`). They are never handed out.

The cache hangs on the log (``LogView.derived``), which drops it when the log is
reloaded or a version is stored again; the store bounds the items all logs keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..disk.summary import version_key
from ..disk.view import LogView
from .cells import extend_items, list_items
from .fingerprint import ListFingerprint
from .witness import ListWitness

#: A stored version's value, proven: the objects themselves, or their encoding.
Proof = ListWitness | ListFingerprint


class ValueCache:
    """Proofs and kept items of one log's newest lists (see the module docstring)."""

    def __init__(self) -> None:
        self._proofs: dict[tuple[str, str], tuple[Any, Proof]] = {}
        self._kept: dict[tuple[str, str], tuple[Any, str, list[Any]]] = {}

    @staticmethod
    def of(log: LogView) -> ValueCache:
        """The cache of ``log`` (made on first use)."""
        cache = log.derived
        if cache is None:
            cache = log.derived = ValueCache()
        return cache  # type: ignore[return-value]

    def clear(self) -> None:
        """Forget everything."""
        self._proofs.clear()
        self._kept.clear()

    def run_ended(self) -> None:
        """The run that held the thread ended: its proofs go. A witness holds the very
        objects the run read or stored, which no later run has (each read hands out
        objects of its own, and proves them anew); only the kept items, in stored form,
        serve the next run's first read."""
        self._proofs.clear()

    def held(self) -> int:
        """How many list items the cache holds (a message counts once per form)."""
        n = sum(len(items) for _, _, items in list(self._kept.values()))
        for _, proof in list(self._proofs.values()):
            if type(proof) is ListWitness:
                n += len(proof.items)
        return n

    # -- proofs ------------------------------------------------------------------------

    def proof(self, ns: str, channel: str) -> tuple[Any, Proof] | None:
        """``(version, proof)`` of the channel's newest list, if known."""
        return self._proofs.get((ns, channel))

    def prove(self, ns: str, channel: str, version: Any, proof: Proof) -> None:
        """Note the proof of a version just stored or handed out."""
        self._proofs[(ns, channel)] = (version, proof)

    # -- kept items ---------------------------------------------------------------------

    def kept(self, ns: str, channel: str, version: Any) -> tuple[str, list[Any]] | None:
        """``(kind, items)`` of ``version`` in stored form, if it is the kept one."""
        kept = self._kept.get((ns, channel))
        if kept is None or version_key(kept[0]) != version_key(version):
            return None
        return kept[1], kept[2]

    def keep(self, ns: str, channel: str, version: Any, kind: str, items: list[Any]) -> None:
        """Keep ``items`` (owned by the cache from now on) as ``version``'s value."""
        self._kept[(ns, channel)] = (version, kind, items)

    def forget_kept(self, ns: str, channel: str) -> None:
        """The channel's newest value is not a list kept here."""
        self._kept.pop((ns, channel), None)

    def remember(self, ns: str, values: Mapping[str, Mapping[str, Any]]) -> None:
        """After a put's record is written: keep its list values in stored form for the
        next read (a delta extends the kept base in place; anything else forgets the
        channel)."""
        for channel, entry in values.items():
            found: tuple[str, list[Any]] | None = None
            if "val" in entry:
                found = list_items(entry["val"])
                if found is not None:
                    found = (found[0], list(found[1]))
            elif "base" in entry:
                kept = self.kept(ns, channel, entry["base"])
                if kept is not None and len(kept[1]) == entry["keep"]:
                    # The base's entry is replaced below: its list may grow in place.
                    kind = extend_items(kept[0], kept[1], entry["tail"])
                    found = (kind, kept[1]) if kind is not None else None
            if found is None:
                self.forget_kept(ns, channel)
            else:
                self.keep(ns, channel, entry["ver"], *found)
