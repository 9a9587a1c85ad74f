"""Values compared by their encoding: list fingerprints for deltas, the state hash.

msgpack encodes a list as a header followed by its items' encodings, so a list extends
another exactly when its msgpack body starts with the other's body
(:class:`ListFingerprint`). The encoding is LangGraph's ``JsonPlusSerializer``'s, used
only to compare (never to store), whatever serializer the saver stores with. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

# A serializer used only to fingerprint values (never to store them): deterministic
# msgpack bytes, whatever serializer the saver stores with.
_FINGERPRINT_SERDE = JsonPlusSerializer()


@dataclass(frozen=True)
class ListFingerprint:
    """The msgpack body of a list (its items' encodings, without the array header).

    Attributes:
        body: Concatenated msgpack encodings of the items.
        count: Number of items.
    """

    body: bytes
    count: int

    @classmethod
    def of(cls, value: Any) -> ListFingerprint | None:
        """Fingerprint a list; ``None`` for other values or lists msgpack cannot encode."""
        if type(value) is not list:
            return None
        try:
            type_, data = _FINGERPRINT_SERDE.dumps_typed(value)
        except Exception:
            return None
        if type_ != "msgpack" or not data:
            return None
        head = data[0]
        if 0x90 <= head <= 0x9F:
            skip = 1
        elif head == 0xDC:
            skip = 3
        elif head == 0xDD:
            skip = 5
        else:
            return None
        return cls(data[skip:], len(value))

    def extends(self, older: ListFingerprint) -> bool:
        """Whether this list is ``older`` followed by zero or more items."""
        return (
            self.count >= older.count
            and older.count > 0
            and self.body.startswith(older.body)
        )


def same_encoding(a: Any, b: Any) -> bool:
    """Whether two values have the same deterministic msgpack encoding: what
    LangGraph's own savers store, so they could not tell them apart either. Values
    msgpack cannot encode are never the same."""
    try:
        return _FINGERPRINT_SERDE.dumps_typed(a) == _FINGERPRINT_SERDE.dumps_typed(b)
    except Exception:
        return False


def state_hash(values: Mapping[str, tuple[Any, Any]]) -> str:
    """Hash of a set of channel values, for snapshot records and ``verify``.

    Args:
        values: Channel name to ``(version, value)``.

    Returns:
        ``"sha256:<hex>"`` over each channel's name, version and deterministic msgpack
        encoding, in channel order. Independent of the storage serializer, so a value
        rebuilt from deltas can be checked against it even when records are encrypted.
    """
    h = hashlib.sha256()
    for name in sorted(values):
        version, value = values[name]
        try:
            type_, data = _FINGERPRINT_SERDE.dumps_typed(value)
        except Exception:
            type_, data = "unhashable", b""
        h.update(f"{name}\0{version!r}\0{type_}\0".encode())
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return "sha256:" + h.hexdigest()
