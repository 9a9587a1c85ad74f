"""Normalisation and comparison for the differential tests.

``Normaliser`` turns run-specific values into stable, comparable plain data (checkpoint
ids by their position, other uuids and 32-hex hashes by tokens in order of first
appearance, channel versions by their counter; ``ts`` / ``created_at`` / ``run_id``
dropped: see ``differential``'s docstring). ``assert_same`` fails with the first
differing path and a unified diff of the enclosing snapshot, tuple or transcript entry.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import pprint
import re
from collections.abc import Iterable
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Interrupt, PregelTask, Send, StateSnapshot
from pydantic import BaseModel

# ---------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------


_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX32_RE = re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-zA-Z])")
_VERSION_RE = re.compile(r"^(\d+)(?:\.|$)")
_DROP_META = {"run_id"}


def _norm_version(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and (m := _VERSION_RE.match(v)):
        return int(m.group(1))
    return v


class Normaliser:
    """Turns run-specific values into stable, comparable plain data."""

    def __init__(
        self,
        *,
        drop_values: Iterable[str] = (),
        mask_values: Iterable[str] = (),
        mask_writes: Iterable[str] = (),
    ) -> None:
        self.ids: dict[str, str] = {}
        self.drop_values = set(drop_values)
        self.mask_values = set(mask_values)
        self.mask_writes = set(mask_writes)

    def seed(self, raw: str, label: str) -> None:
        self.ids.setdefault(raw, label)

    def seed_dump(self, dump: dict) -> None:
        for _ti, (tid, tdump) in enumerate(dump.items()):
            for nsi, tups in enumerate(e["list"] for e in tdump["namespaces"].values()):
                for pos, t in enumerate(reversed(tups)):
                    self.seed(
                        t.config["configurable"]["checkpoint_id"],
                        f"<{tid}/ns{nsi}/ckpt{pos}>",
                    )

    def _token(self, m: re.Match) -> str:
        raw = m.group(0)
        if raw not in self.ids:
            self.ids[raw] = f"<id{len(self.ids)}>"
        return self.ids[raw]

    def s(self, text: str) -> str:
        if len(text) < 32:  # too short to hold a uuid or a 32-hex hash
            return text
        return _HEX32_RE.sub(self._token, _UUID_RE.sub(self._token, text))

    def checkpoint(self, cp: dict) -> dict:
        out = {}
        for k, v in cp.items():
            if k == "ts":
                continue
            if k == "channel_versions":
                out[k] = {self.s(c): _norm_version(x) for c, x in v.items()}
            elif k == "versions_seen":
                out[k] = {
                    self.s(n): {self.s(c): _norm_version(x) for c, x in seen.items()}
                    for n, seen in v.items()
                }
            elif k == "channel_values":
                out[k] = {
                    self.s(c): "<masked>" if c in self.mask_values else self(x)
                    for c, x in v.items()
                    if c not in self.drop_values
                }
            else:
                out[k] = self(v)
        return out

    def metadata(self, md: Any) -> Any:
        if not isinstance(md, dict):
            return self(md)
        return {self.s(k): self(v) for k, v in md.items() if k not in _DROP_META}

    def __call__(self, obj: Any) -> Any:  # noqa: C901 - a type switch
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, str):
            return self.s(obj)
        if isinstance(obj, bytes):
            return ("<bytes>", obj)
        if isinstance(obj, enum.Enum):
            return (type(obj).__name__, self(obj.value))
        if isinstance(obj, StateSnapshot):
            return {
                "__type__": "StateSnapshot",
                "values": self(obj.values),
                "next": self(obj.next),
                "config": self(obj.config),
                "metadata": self.metadata(obj.metadata),
                "parent_config": self(obj.parent_config),
                "tasks": self(obj.tasks),
                "interrupts": self(by_value(obj.interrupts)),
                # created_at dropped: timestamps differ between runs
            }
        if isinstance(obj, CheckpointTuple):
            return {
                "__type__": "CheckpointTuple",
                "config": self(obj.config),
                "checkpoint": self.checkpoint(obj.checkpoint),
                "metadata": self.metadata(obj.metadata),
                "parent_config": self(obj.parent_config),
                "pending_writes": [
                    (self(t), self(c), "<masked>" if c in self.mask_writes else self(v))
                    for t, c, v in obj.pending_writes
                ],
            }
        if isinstance(obj, PregelTask):
            out = {"__type__": "PregelTask", **{f: self(getattr(obj, f)) for f in obj._fields}}
            if isinstance(obj.result, dict):  # a task's result is its writes
                out["result"] = {
                    self(k): "<masked>" if k in self.mask_writes else self(v) for k, v in obj.result.items()
                }
            return out
        if isinstance(obj, Interrupt):
            return {
                "__type__": "Interrupt",
                "value": self(obj.value),
                "id": self(obj.id),
                "response_schema": self(getattr(obj, "response_schema", None)),
            }
        if isinstance(obj, Send):
            return {"__type__": "Send", "node": obj.node, "arg": self(obj.arg)}
        if isinstance(obj, BaseException):
            return {"__exc__": type(obj).__name__, "args": self(obj.args)}
        if isinstance(obj, type):
            return f"<class {obj.__module__}.{obj.__qualname__}>"
        if isinstance(obj, BaseModel):
            return {
                "__type__": type(obj).__qualname__,
                **{k: self(v) for k, v in vars(obj).items()},
            }
        if dataclasses.is_dataclass(obj):
            return {
                "__type__": type(obj).__qualname__,
                **{f.name: self(getattr(obj, f.name)) for f in dataclasses.fields(obj)},
            }
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return {
                "__type__": type(obj).__qualname__,
                **{f: self(getattr(obj, f)) for f in obj._fields},
            }
        if isinstance(obj, dict):
            # a subgraph snapshot's config carries the saver object itself
            return {
                self(k): self(by_value(v) if k == "__interrupt__" else v)
                for k, v in obj.items()
                if k != "__pregel_checkpointer"
            }
        if isinstance(obj, list):
            return [self(x) for x in obj]
        if isinstance(obj, tuple):
            return tuple(self(x) for x in obj)
        if isinstance(obj, (set, frozenset)):
            return {"__set__": sorted(repr(self(x)) for x in obj)}
        if hasattr(obj, "__dict__"):
            return {"__type__": type(obj).__qualname__, **self(vars(obj))}
        slots = getattr(type(obj), "__slots__", None)
        if slots:
            return {
                "__type__": type(obj).__qualname__,
                **{k: self(getattr(obj, k, None)) for k in slots},
            }
        return ("<repr>", self.s(repr(obj)))


def by_value(interrupts: Any) -> Any:
    """Parallel tasks' interrupts in a stable order (by value): LangGraph reports them in
    the order the tasks finished, which it does not fix. Sorted before ids are mapped to
    tokens, so the tokens do not depend on that order either."""
    if not isinstance(interrupts, (list, tuple)):
        return interrupts
    ordered = sorted(interrupts, key=lambda i: repr(getattr(i, "value", i)))
    return type(interrupts)(ordered) if isinstance(interrupts, tuple) else ordered


def normalise(dump: dict, transcript: list | None = None, **masks: Any) -> dict:
    n = Normaliser(**masks)
    n.seed_dump(dump)
    out: dict[str, Any] = {}
    out["dump"] = {
        tid: {
            "namespaces": [
                {
                    "ns": n(ns),
                    "list": n(e["list"]),
                    "latest_tuple": n(e["latest_tuple"]),
                    "history": n(e["history"]),
                    **({"delta_history": n(e["delta_history"])} if "delta_history" in e else {}),
                }
                for ns, e in d["namespaces"].items()
            ],
            "state": n(d["state"]),
            # after the rest: its ids are mapped to the tokens they already have
            **({"first_read": n(d["first_read"])} if "first_read" in d else {}),
        }
        for tid, d in dump.items()
    }
    if transcript is not None:
        out["transcript"] = [(name, n(res)) for name, res in transcript]
    return out


# ---------------------------------------------------------------------------
# comparison with readable failures
# ---------------------------------------------------------------------------


def _first_diff(a: Any, b: Any, path: tuple = ()) -> tuple | None:
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return (*path, k)
            if (p := _first_diff(a[k], b[k], (*path, k))) is not None:
                return p
        return None
    if isinstance(a, (list, tuple)):
        for i, (x, y) in enumerate(zip(a, b)):
            if (p := _first_diff(x, y, (*path, i))) is not None:
                return p
        if len(a) != len(b):
            return (*path, f"len {len(a)} != {len(b)}")
        return None
    return None if a == b else path


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return "<missing>"
    return obj


def assert_same(expected: Any, actual: Any, what: str) -> None:
    if expected == actual:
        return
    path = _first_diff(expected, actual) or ()
    # show the enclosing record (a snapshot / tuple / transcript entry)
    ctx = path
    for i in range(len(path), -1, -1):
        node = _get(expected, path[:i])
        if isinstance(node, dict) and node.get("__type__") in (
            "StateSnapshot",
            "CheckpointTuple",
        ):
            ctx = path[:i]
            break
        if i == 2 and path and path[0] == "transcript":
            ctx = path[:2]
            break
    else:
        ctx = path[: max(len(path) - 1, 0)]
    e_txt = pprint.pformat(_get(expected, ctx), width=100, sort_dicts=True)
    a_txt = pprint.pformat(_get(actual, ctx), width=100, sort_dicts=True)
    diff = list(
        difflib.unified_diff(
            e_txt.splitlines(), a_txt.splitlines(), "InMemorySaver", "saver under test", lineterm="", n=4
        )
    )
    if len(diff) > 150:
        diff = diff[:150] + [f"... ({len(diff) - 150} more diff lines)"]
    pytest.fail(
        f"{what}: first difference at {'/'.join(map(str, path))}\n"
        f"  expected: {pprint.pformat(_get(expected, path))[:600]}\n"
        f"  actual:   {pprint.pformat(_get(actual, path))[:600]}\n"
        f"record {'/'.join(map(str, ctx))}:\n" + "\n".join(diff),
        pytrace=False,
    )
