"""ListWitness: a list still starts with the very objects it was stored from, unchanged.

The witness replaces encoding the whole list at every ``put``; a change it misses would
store a stale prefix. Each case below changes a witnessed list in one way and checks that
the witness notices, with emphasis on changes that keep values *equal* (``1`` → ``True``,
a str → a ``StrEnum`` member): comparing with ``==`` would miss those. The last tests run
such mutations through a graph and compare every stored state with ``InMemorySaver``.
"""

from __future__ import annotations

import enum
import operator
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_jsonl_checkpoint import JsonlSaver
from langgraph_jsonl_checkpoint.values.witness import ListWitness


class Color(str, enum.Enum):  # noqa: UP042 - a str mixin Enum on purpose, as users write them
    RED = "red"


def conversation() -> list[Any]:
    return [
        HumanMessage("hi", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "search", "args": {"q": "x", "n": 1, "opts": [1, 2]}, "id": "c1"}],
            response_metadata={"finish_reason": "tool_calls", "color": "red", "usage": {"in": 3}},
        ),
        ToolMessage("result", tool_call_id="c1", id="t1", artifact={"rows": [[1, "a"]]}),
        AIMessage("done", id="a2", additional_kwargs={"count": 1, "ratio": 1.0, "flag": True}),
    ]


def test_unchanged_list_and_its_extensions_are_recognised() -> None:
    msgs = conversation()
    w = ListWitness.of(msgs)
    assert w is not None
    assert w.prefix_of(msgs) == 4
    longer = [*msgs, HumanMessage("more", id="h2")]
    assert w.prefix_of(longer) == 4
    w2 = w.extended(longer)
    assert w2 is not None and w2.prefix_of(longer) == 5
    longer[-1].content = "changed"
    assert w2.prefix_of(longer) is None
    assert w.prefix_of(longer) == 4  # the older witness covers only the first four


MUTATIONS = {
    "content": lambda m: setattr(m[0], "content", "hello"),
    "content same text, new object": lambda m: setattr(m[0], "content", "".join(["h", "i"])),
    "id": lambda m: setattr(m[1], "id", "other"),
    "tool call appended": lambda m: m[1].tool_calls.append({"name": "x", "args": {}, "id": "c2"}),
    "tool call arg changed": lambda m: m[1].tool_calls[0]["args"].__setitem__("q", "y"),
    "nested list item": lambda m: m[1].tool_calls[0]["args"]["opts"].__setitem__(0, 5),
    "int became bool": lambda m: m[3].additional_kwargs.__setitem__("count", True),
    "int became float": lambda m: m[3].additional_kwargs.__setitem__("count", 1.0),
    "float became int": lambda m: m[3].additional_kwargs.__setitem__("ratio", 1),
    "bool became int": lambda m: m[3].additional_kwargs.__setitem__("flag", 1),
    "str became equal str enum": lambda m: m[1].response_metadata.__setitem__("color", Color.RED),
    "str became equal str subclass": lambda m: m[1].response_metadata.__setitem__("color", _StrSub("red")),
    "list became tuple": lambda m: m[1].tool_calls[0]["args"].__setitem__("opts", (1, 2)),
    "dict replaced by equal dict": lambda m: setattr(m[1], "response_metadata", dict(m[1].response_metadata)),
    "key removed and another added": lambda m: (
        m[1].response_metadata.pop("usage"), m[1].response_metadata.__setitem__("other", {"in": 3})
    ),
    "empty dict filled": lambda m: m[0].additional_kwargs.__setitem__("k", "v"),
    "artifact changed": lambda m: m[2].artifact["rows"][0].append("b"),
    "extra field set": lambda m: setattr(m[0], "custom_extra", 1),
    "message replaced by an equal copy": lambda m: m.__setitem__(0, m[0].model_copy()),
    "class changed": lambda m: setattr(m[0], "__class__", _HumanSub),
    "__dict__ replaced": lambda m: object.__setattr__(m[0], "__dict__", dict(m[0].__dict__)),
    "item removed": lambda m: m.pop(1),
}


class _StrSub(str):
    pass


class _HumanSub(HumanMessage):
    pass


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_change_is_seen(name: str) -> None:
    msgs = conversation()
    w = ListWitness.of(msgs)
    assert w is not None and w.prefix_of(msgs) == 4
    MUTATIONS[name](msgs)
    assert w.prefix_of(msgs) is None


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_change_is_seen_after_the_witness_was_extended_item_by_item(name: str) -> None:
    # A witness extended one item at a time holds its items in several parts, some
    # joined; a change under any of them must be seen, as with a witness made at once.
    msgs = conversation()
    w = ListWitness.of(msgs[:1])
    for n in range(2, len(msgs) + 1):
        assert w is not None and w.prefix_of(msgs[:n]) == n - 1
        w = w.extended(msgs[:n])
    assert w is not None and w.prefix_of(msgs) == 4
    MUTATIONS[name](msgs)
    assert w.prefix_of(msgs) is None


def test_a_long_list_extended_a_few_items_at_a_time_stays_recognised() -> None:
    msgs = [HumanMessage(f"m{i}", id=f"m{i}", additional_kwargs={"i": i}) for i in range(300)]
    w = ListWitness.of(msgs[:3])
    for n in range(6, 301, 3):
        assert w is not None and w.prefix_of(msgs[:n]) == n - 3
        w = w.extended(msgs[:n])
    assert w is not None and w.prefix_of(msgs) == 300
    msgs[1].additional_kwargs["i"] = True  # equal, another type: in an early part
    assert w.prefix_of(msgs) is None
    msgs[1].additional_kwargs["i"] = 1
    assert w.prefix_of(msgs) == 300  # the very object again (a small int is cached)
    msgs[298].content = "changed"  # in the newest part
    assert w.prefix_of(msgs) is None


def test_an_empty_container_that_is_filled_is_seen() -> None:
    msgs = conversation()
    w = ListWitness.of(msgs)
    assert w is not None
    msgs[1].invalid_tool_calls.append(
        {"name": "x", "args": "{", "id": "i", "error": None, "type": "invalid_tool_call"}
    )
    assert w.prefix_of(msgs) is None


@pytest.mark.parametrize(
    "value",
    [
        [("a", 1)],  # tuple
        [{"a": {1, 2}}],  # set
        [{"a": _StrSub("x")}],  # str subclass leaf
        [HumanMessage("x", additional_kwargs={"when": Color.RED})],  # enum leaf
        [object()],
        [{(1, 2): "tuple key"}],
        "not a list",
        (1, 2),
    ],
    ids=["tuple", "set", "str-subclass", "enum", "object", "tuple-key", "str", "tuple-value"],
)
def test_what_cannot_be_witnessed_is_refused(value: Any) -> None:
    assert ListWitness.of(value) is None


def test_cycles_are_refused_not_followed_forever() -> None:
    d: dict[str, Any] = {}
    d["self"] = d
    assert ListWitness.of([d]) is None


def test_plain_lists_and_shared_containers() -> None:
    shared = {"k": [1, 2]}
    value = ["a", 1, None, shared, [shared, 2.5]]
    w = ListWitness.of(value)
    assert w is not None and w.prefix_of(value) == 5
    shared["k"].append(3)
    assert w.prefix_of(value) is None
    assert ListWitness.of([]) is not None and ListWitness.of([]).prefix_of([1]) is None


# -- through a graph: every stored state equals InMemorySaver's ----------------


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    step: Annotated[int, operator.add]


def _mutating_graph() -> StateGraph:
    """Each step edits earlier messages in place, keeping values equal but changing
    their types, and appends one message (so the list is stored again)."""

    def edit(state: State) -> dict[str, Any]:
        msgs = state.get("messages", [])
        step = state.get("step", 0)
        if msgs:
            first = msgs[0]
            kwargs = first.additional_kwargs
            kwargs["n"] = (True, 1.0, 1)[step % 3]  # equal values, other types
            if step % 2:
                msgs[-1].response_metadata["tag"] = ["x"]
        return {"messages": [AIMessage(f"step {step}", id=f"m{step}", additional_kwargs={"n": 1})], "step": 1}

    g = StateGraph(State)
    g.add_node("edit", edit)
    g.add_edge(START, "edit")
    g.add_edge("edit", END)
    return g


def _history(graph: Any, config: dict[str, Any]) -> list[Any]:
    out = []
    for snap in graph.get_state_history(config):
        msgs = snap.values.get("messages", [])
        out.append(
            [
                (
                    type(m).__name__,
                    m.content,
                    m.additional_kwargs,
                    {k: type(v) for k, v in m.additional_kwargs.items()},
                    m.response_metadata,
                )
                for m in msgs
            ]
        )
    return out


def test_in_place_type_changes_are_stored_as_in_memory(tmp_path: Any) -> None:
    g = _mutating_graph()
    ours = g.compile(checkpointer=JsonlSaver(tmp_path / "store"))
    oracle = g.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    for i in range(9):
        for graph in (ours, oracle):  # each its own input: the nodes edit messages in place
            inp = {"messages": [HumanMessage(f"turn {i}", id=f"h{i}", additional_kwargs={"n": 1})]}
            graph.invoke(inp, cfg, durability="sync")
    assert _history(ours, cfg) == _history(oracle, cfg)
    # and the same after reopening the store (values come from disk only)
    reopened = g.compile(checkpointer=JsonlSaver(tmp_path / "store"))
    assert _history(reopened, cfg) == _history(oracle, cfg)
