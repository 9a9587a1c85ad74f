"""Seeing, without serialising it, that a list still starts with what was stored.

A ``put`` stores a growing list (a conversation) as a delta on its stored base when the
new list is the base plus new items. Comparing serialised bytes (``ListFingerprint``)
proves that, but costs a full encoding of the list at every step. Most of the time the
new list's first items are the very objects the base was stored from (LangGraph's
reducers copy the list, not its items), so it is enough to prove that those objects
were not changed in place since.

A :class:`ListWitness` holds the items of a list and every plain container reachable
from them (a message's ``__dict__`` and extras, dicts and lists nested in them), each
with its length and the identities of its keys and values, all taken when the list was
stored (or revived). Holding the objects keeps them alive, so their identities cannot
be reused. A later list starts with the same, unchanged content exactly when it starts
with the same objects, every item keeps its class, ``__dict__`` and extras, and every
container still has the same length and the same children: any assignment, append,
insertion or deletion anywhere changes one of these. Leaves are compared by identity
and are immutable (exact ``str``, ``int``, ``float``, ``bool``, ``None``), so equal but
different values (``1`` and ``True``, a str and a ``StrEnum``) are never confused.

Only plain JSON-shaped data and LangChain message classes are witnessed; anything else
(tuples, sets, custom objects, subclasses) returns ``None`` and the caller falls back to
comparing encodings. The checks run as a handful of passes in C over flat tuples.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import attrgetter, is_, not_
from typing import Any

from .messages import MESSAGE_CLASSES

_ATOMS = frozenset({str, int, float, bool, type(None)})
_PLAIN = _ATOMS | {dict, list}
_ITEM_TYPES = _PLAIN | MESSAGE_CLASSES
_DEPTH_LIMIT = 64  # deeper (or cyclic) structures are not witnessed

_is_container = frozenset({dict, list}).__contains__
_is_message_class = MESSAGE_CLASSES.__contains__
_dict_of = attrgetter("__dict__")
_extra_of = attrgetter("__pydantic_extra__")
_values = dict.values


class ListWitness:
    """The state of a list's items when it was stored, held by reference.

    Build with :meth:`of`; test a later list with :meth:`prefix_of`; extend with
    :meth:`extended`. The items are held in one tuple; what is reachable from them in
    a few parts (:class:`_Part`), one per run of items witnessed together, so that
    extending a long list witnesses (and copies) only the new items.
    """

    __slots__ = ("items", "parts")

    items: tuple[Any, ...]
    parts: tuple[_Part, ...]

    @classmethod
    def of(cls, value: Any) -> ListWitness | None:
        """Witness a list as it is now; ``None`` if it is not a list or holds anything
        but plain data and LangChain messages."""
        if type(value) is not list:
            return None
        items = tuple(value)
        part = _Part.of(items)
        if part is None:
            return None
        w = cls.__new__(cls)
        w.items = items
        w.parts = (part,)
        return w

    def prefix_of(self, value: Any) -> int | None:
        """How many items ``value`` shares with the witnessed list, if it starts with all
        of them, unchanged; ``None`` otherwise (or if the witnessed list was empty)."""
        n = len(self.items)
        if not n or type(value) is not list or len(value) < n:
            return None
        if not all(map(is_, value, self.items)):
            return None
        for part in self.parts:
            if not part.unchanged():
                return None
        return n

    def extended(self, value: list[Any]) -> ListWitness | None:
        """The witness of ``value``, which :meth:`prefix_of` accepted: this witness plus
        one of the new items (``None`` if those cannot be witnessed).

        The new items get a part of their own; a part is joined with the one before it
        while that one is no more than twice its size, so a list that grows by a few
        items per put keeps a handful of parts (about log2 of its length) and each item
        is copied into a joined part a logarithmic number of times, not at every put.
        """
        tail = tuple(value[len(self.items):])
        if not tail:
            return self
        part = _Part.of(tail)
        if part is None:
            return None
        parts = [*self.parts, part]
        while len(parts) > 1 and parts[-2].size <= 2 * parts[-1].size:
            last = parts.pop()
            parts[-1] = parts[-1].joined(last)
        w = ListWitness.__new__(ListWitness)
        w.items = self.items + tail
        w.parts = tuple(parts)
        return w


class _Part:
    """What is reachable from a run of witnessed items: their messages (class,
    ``__dict__``, extras) and every plain container below them, with lengths, keys and
    children (see the module docstring)."""

    __slots__ = (
        "dict_children", "dict_keys", "dict_lens", "dicts", "empties", "extras", "list_children",
        "list_lens", "lists", "message_dicts", "message_types", "messages", "size",
    )

    messages: tuple[Any, ...]
    message_types: tuple[type, ...]
    message_dicts: tuple[dict[str, Any], ...]
    extras: tuple[Any, ...]
    dicts: tuple[dict[Any, Any], ...]
    dict_lens: tuple[int, ...]
    dict_keys: tuple[Any, ...]
    dict_children: tuple[Any, ...]
    lists: tuple[list[Any], ...]
    empties: tuple[Any, ...]
    list_lens: tuple[int, ...]
    list_children: tuple[Any, ...]
    size: int  # how many things it checks: what joining parts goes by

    @classmethod
    def of(cls, items: tuple[Any, ...]) -> _Part | None:
        """The part of ``items``; ``None`` if they hold anything but plain data and
        LangChain messages."""
        kinds = set(map(type, items))
        if not kinds <= _ITEM_TYPES:
            return None
        p = cls.__new__(cls)
        if kinds & MESSAGE_CLASSES:
            messages = tuple(compress(items, map(_is_message_class, map(type, items))))
        else:
            messages = ()
        p.messages = messages
        p.message_types = tuple(map(type, messages))
        p.message_dicts = tuple(map(_dict_of, messages))
        p.extras = tuple(map(_extra_of, messages))
        top = list(p.message_dicts)
        top += [e for e in p.extras if e is not None]
        if kinds & {dict, list}:
            top += compress(items, map(_is_container, map(type, items)))
        if not _watch(p, top):
            return None
        p.size = len(items) + len(p.empties) + len(p.dict_keys) + len(p.list_children)
        return p

    def unchanged(self) -> bool:
        """Whether everything recorded is as it was (the items themselves are checked
        by the :class:`ListWitness`)."""
        if self.messages and not (
            all(map(is_, map(type, self.messages), self.message_types))
            and all(map(is_, map(_dict_of, self.messages), self.message_dicts))
            and all(map(is_, map(_extra_of, self.messages), self.extras))
        ):
            return False
        if any(self.empties):
            return False
        if tuple(map(len, self.dicts)) != self.dict_lens:
            return False
        if not all(map(is_, chain.from_iterable(self.dicts), self.dict_keys)):
            return False
        if not all(map(is_, chain.from_iterable(map(_values, self.dicts)), self.dict_children)):
            return False
        if tuple(map(len, self.lists)) != self.list_lens:
            return False
        return all(map(is_, chain.from_iterable(self.lists), self.list_children))

    def joined(self, later: _Part) -> _Part:
        """This part and ``later`` (the items after it) as one."""
        p = _Part.__new__(_Part)
        for name in _Part.__slots__:
            setattr(p, name, getattr(self, name) + getattr(later, name))
        return p


def _watch(w: _Part, containers: list[Any]) -> bool:
    """Record ``containers`` (dicts and lists) and every container below them in ``w``.

    Returns:
        Whether everything reachable is plain data (atoms, dicts, lists; atom keys).
    """
    all_dicts: list[dict[Any, Any]] = []
    all_lists: list[list[Any]] = []
    dict_children: list[Any] = []
    list_children: list[Any] = []
    empties: list[Any] = []
    depth = 0
    while containers:
        depth += 1
        if depth > _DEPTH_LIMIT:
            return False
        # Empty containers only need to stay empty: one truth test each.
        empties += compress(containers, map(not_, containers))
        full = list(filter(None, containers))
        is_dict = list(map(is_, map(type, full), repeat(dict)))
        dicts = list(compress(full, is_dict))
        lists = list(compress(full, map(not_, is_dict)))
        all_dicts += dicts
        all_lists += lists
        children = list(chain.from_iterable(map(_values, dicts)))
        dict_children += children
        n = len(children)
        children += chain.from_iterable(lists)
        list_children += children[n:]
        types = list(map(type, children))
        kinds = set(types)
        if not kinds <= _PLAIN:
            return False
        if dict in kinds or list in kinds:
            containers = list(compress(children, map(_is_container, types)))
        else:
            containers = []
    w.empties = tuple(empties)
    w.dicts = tuple(all_dicts)
    w.dict_lens = tuple(map(len, all_dicts))
    w.dict_keys = tuple(chain.from_iterable(all_dicts))
    if not set(map(type, w.dict_keys)) <= _ATOMS:
        return False
    w.dict_children = tuple(dict_children)
    w.lists = tuple(all_lists)
    w.list_lens = tuple(map(len, all_lists))
    w.list_children = tuple(list_children)
    return True
