"""``ReplayAdapter``: tool calls that survive a crash without running twice by accident.

LangGraph re-runs a whole node when a run resumes, so a tool node interrupted by a crash
calls every tool of its batch again. The adapter wraps each tool call
(``ToolNode(wrap_tool_call=...)`` or agent middleware) and journals it:
``requested`` when the node starts, ``started`` (durable) just before the tool body,
``finished`` with the result or ``failed`` with the error after it. When the node runs
again for the same checkpoint, each call is planned from its record
(:func:`plan_call`):

=====================  =====================================================
record                 what happens
=====================  =====================================================
finished               the recorded result is returned; the tool is not called
failed, idempotent     the tool runs again
failed, side effects   held with the started ones (on a ``RetryPolicy`` retry of
                       the node: the tool runs)
requested, never run   the tool runs
started, idempotent    the tool runs again
started, side effects  held: one ``interrupt()`` asks a person
=====================  =====================================================

The interrupt's value is ``{"type": "uncertain_tool_calls", "calls": [{"id", "name",
"args", "started_at"}, ...]}`` (a failed call's entry adds ``"failed": {"error_type",
"error_message"}``); resume with ``Command(resume={call_id: "retry" | "skip" |
{"result": ...}})``. ``"skip"`` answers the model with a ToolMessage saying the outcome
is unknown (or, for a failed call, that it failed with that error), so the transcript
never keeps a tool call without a result.

How questions and answers keep their ``interrupt()`` slots across re-executions is in
:mod:`.asking`. Within one ``ToolNode`` task the whole batch shares one interrupt. ``create_agent`` runs
each tool call as its own task, so there each uncertain call is its own interrupt;
:meth:`ReplayAdapter.resume_command` answers them all at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, Interrupt

from ..disk.forks import renew_in_child
from ..errors import CheckpointNotSavedError, ConfigError
from .asking import deliberate
from .calls import (
    Batch,
    CallContext,
    call_id_of,
    context_of,
    messages_of,
    task_position,
    thread_of,
)
from .journal import SaverJournal, StoreJournal, ToolEventLog, ToolJournal
from .lifecycle import (
    ASKS_CALL_ID,
    FAILED,
    FINISHED,
    RELEASED,
    REQUESTED,
    STARTED,
    ToolCallRecord,
    process_stamp,
)
from .lost import closing_event, split_lost, taken_event
from .middleware import replay_middleware
from .pending import replacing_update, settle
from .plan import (
    INTERRUPT_TYPE,
    REPLAY_RESULT,
    RUN,
    answer_message,
    answered_action,
    for_call,
    plan_call,
)
from .steps import Steps, arun, run
from .steps import call as step

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.store.base import BaseStore

#: Task executions whose batch state is kept at once (least recently used go first).
_MAX_LIVE_BATCHES = 256
#: Longest wait for the checkpoint a side-effecting call runs from, in seconds.
DEFAULT_DURABLE_TIMEOUT = 60.0


class _Effects:
    """What a tool call's steps ask for: the journal's calls and the tool itself."""

    def __init__(self, journal: ToolJournal, execute: Callable[[Any], Any]) -> None:
        self.journal = journal
        self._execute = execute

    def load(self, thread_id: str, keys: Any) -> Any:
        return self.journal.load(thread_id, keys)

    def record(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        self.journal.record(thread_id, events)

    def execute(self, request: Any) -> Any:
        return self._execute(request)

    async def aload(self, thread_id: str, keys: Any) -> Any:
        return await self.journal.aload(thread_id, keys)

    async def arecord(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        await self.journal.arecord(thread_id, events)

    async def aexecute(self, request: Any) -> Any:
        return await self._execute(request)

    def orphans(self, thread_id: str, checkpointer: Any) -> Any:
        return self.journal.orphans(thread_id, checkpointer, carrying=True)

    async def aorphans(self, thread_id: str, checkpointer: Any) -> Any:
        return await self.journal.aorphans(thread_id, checkpointer, carrying=True)

    def wait_stored(self, *args: Any) -> bool:
        return self.journal.wait_stored(*args)

    async def await_stored(self, *args: Any) -> bool:
        return await self.journal.await_stored(*args)


class ReplayAdapter:
    """Journals tool calls and replays them safely after a crash.

    Each call is recorded ``requested``, ``started`` (durable before the tool body runs),
    then ``finished`` or ``failed``. When LangGraph runs the tool node again for the same
    checkpoint (a resume after a crash), a finished call returns its recorded result, and
    a side-effecting call that started but never finished, or failed (it may have taken
    effect before it raised), is held behind one ``interrupt()`` of type
    ``"uncertain_tool_calls"`` until a person answers ``"retry"``, ``"skip"`` or
    ``{"result": ...}``. Idempotent tools run again. When LangGraph retries the node
    under its ``RetryPolicy``, a call that failed runs again (finished ones are still
    replayed, uncertain ones still held).

    In a graph::

        saver = JsonlSaver("./checkpoints")
        adapter = ReplayAdapter(saver, idempotent=["lookup_order"])
        builder.add_node("tools", adapter.tool_node([lookup_order, send_email]))
        graph = builder.compile(checkpointer=saver)

    Args:
        saver: A ``JsonlSaver``: events go into each thread's log.
        store: Any LangGraph ``BaseStore``, for graphs that use another checkpointer.
        idempotent: Names of tools that may run twice (reads, searches; one name may be
            given as a string). A tool is also
            idempotent if ``tool.metadata["idempotent"]`` is true. Every other tool is
            treated as side-effecting.
        durable_timeout: Longest wait, in seconds, for the checkpoint a side-effecting
            call runs from to be saved before the tool starts (LangGraph saves it in the
            background under ``durability="async"``); then
            :class:`~..errors.CheckpointNotSavedError` and the tool is not started.

    Raises:
        ConfigError: Neither or both of ``saver`` and ``store`` were given, ``saver`` is
            another checkpointer (give it ``store=``), or ``durable_timeout`` is not a
            positive number.
    """

    def __init__(
        self,
        saver: ToolEventLog | None = None,
        *,
        store: BaseStore | None = None,
        idempotent: Iterable[str] = (),
        durable_timeout: float = DEFAULT_DURABLE_TIMEOUT,
    ) -> None:
        if (saver is None) == (store is None):
            raise ConfigError(
                "ReplayAdapter needs exactly one of saver= (a JsonlSaver) or store= (a BaseStore)"
            )
        if saver is not None and not hasattr(saver, "record_tool_events"):
            raise ConfigError(
                f"ReplayAdapter's saver= keeps the journal in a JsonlSaver's thread logs; "
                f"{type(saver).__name__} has none. With another checkpointer, pass store= (a "
                "BaseStore: InMemoryStore, PostgresStore) for the journal: ReplayAdapter(store=...)"
            )
        self.journal: ToolJournal = SaverJournal(saver) if saver is not None else StoreJournal(store)  # type: ignore[arg-type]
        # One name as a string is that name (not the set of its letters).
        self.idempotent = frozenset([idempotent] if isinstance(idempotent, str) else idempotent)
        if not durable_timeout > 0:
            raise ConfigError("durable_timeout must be a number of seconds, more than 0")
        self.durable_timeout = durable_timeout
        # Per task execution (keyed by its scratchpad, which is neither hashable nor
        # weak-referenceable): a small LRU holding the token, so ids are never confused.
        self._batches: OrderedDict[int, tuple[Any, Batch]] = OrderedDict()
        self._batches_lock = threading.Lock()
        renew_in_child(self)

    def _after_fork(self) -> None:
        """In a forked child: the lock's holder (a thread of the parent) is not here."""
        self._batches_lock = threading.Lock()

    # -- plugging in -------------------------------------------------------------

    def tool_node(self, tools: Sequence[Any], **kwargs: Any) -> ToolNode:
        """A ``langgraph.prebuilt.ToolNode`` whose calls go through this adapter.

        Args:
            tools: The tools, as ``ToolNode`` takes them.
            **kwargs: Passed to ``ToolNode`` (``handle_tool_errors``, ``name``, ...).

        Returns:
            The node; a call it runs raises ``ConfigError`` when the graph runs without
            a thread id or the model's tool call has no id (the journal is keyed by both).
        """
        from langgraph.prebuilt import ToolNode

        return ToolNode(
            tools, wrap_tool_call=self.wrap_tool_call, awrap_tool_call=self.awrap_tool_call, **kwargs
        )

    def middleware(self) -> Any:
        """An ``AgentMiddleware`` for ``langchain.agents.create_agent(middleware=[...])``:
        journals tool calls, and answers calls left pending before each model call."""
        return replay_middleware(self)

    def pending_calls_node(self, messages_key: str = "messages") -> Any:
        """A node that answers tool calls left pending when new input arrived (see
        :meth:`answer_pending_calls`); put it between ``START`` and the model node.

        Args:
            messages_key: The state key of the message list (an ``add_messages`` list).
        """
        from langchain_core.runnables import RunnableLambda

        def answer(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return self.answer_pending_calls(state, config, messages_key=messages_key)

        async def aanswer(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return await self.aanswer_pending_calls(state, config, messages_key=messages_key)

        return RunnableLambda(answer, afunc=aanswer, name="answer_pending_calls")

    def answer_pending_calls(
        self, state: Any, config: RunnableConfig, *, messages_key: str = "messages"
    ) -> dict[str, Any]:
        """Answer every tool call in the history that no ToolMessage answers, from the
        journal: a finished call with its recorded result, a failed one with its error,
        an uncertain one as interrupted with its outcome unknown, one that never ran as
        not run (see :mod:`.pending`); calls not settled are journaled as superseded.

        Returns:
            A state update that puts each answer right after the AI message that asked
            for it (the whole list, replaced), or ``{}`` when nothing is pending.
        """
        history = run(self._settle(state, config, messages_key), self.journal)
        return {} if history is None else replacing_update(messages_key, history)

    async def aanswer_pending_calls(
        self, state: Any, config: RunnableConfig, *, messages_key: str = "messages"
    ) -> dict[str, Any]:
        """Async :meth:`answer_pending_calls`."""
        history = await arun(self._settle(state, config, messages_key), self.journal)
        return {} if history is None else replacing_update(messages_key, history)

    def _settle(self, state: Any, config: RunnableConfig, messages_key: str) -> Steps[list[Any] | None]:
        messages = state.get(messages_key, []) if isinstance(state, dict) else messages_of(state)
        return settle(
            thread_of(config),
            list(messages or []),
            position=task_position(config),
            encode=self.journal.encode,
        )

    @staticmethod
    def resume_command(interrupts: Iterable[Interrupt], answers: dict[str, Any]) -> Command[Any]:
        """A ``Command`` answering every pending uncertain-tool-call interrupt at once.

        With no interrupt pending at all (a crashed thread whose resumed run has not asked
        yet), the answer is given early, as ``Command(resume=answers)``: it is taken when it
        answers every call that would be asked about, else the question says why not; if a
        key is not one of those calls (a mistyped id), it is not taken for an answer at all
        and the question comes with no ``"error"`` (see ``docs/tool-calls.md``).

        Args:
            interrupts: Pending interrupts (``graph.get_state(config).interrupts``).
            answers: Tool call id to ``"retry"``, ``"skip"`` or ``{"result": ...}``.
        """
        pending = list(interrupts)
        if not pending:
            return Command(resume=answers)
        ids = [
            i.id for i in pending if isinstance(i.value, dict) and i.value.get("type") == INTERRUPT_TYPE
        ]
        return Command(resume={i: answers for i in ids})

    def tool_calls(self, thread_id: str) -> list[ToolCallRecord]:
        """Every journaled tool call of a thread with its lifecycle.

        Args:
            thread_id: The thread.

        Returns:
            One :class:`ToolCallRecord` per call, in the order calls were first seen
            (``effective_state`` tells the ``uncertain`` ones).
        """
        return self.journal.all(str(thread_id))

    async def atool_calls(self, thread_id: str) -> list[ToolCallRecord]:
        """Async :meth:`tool_calls`."""
        return await self.journal.aall(str(thread_id))

    def is_idempotent(self, request: ToolCallRequest) -> bool:
        """Whether the requested tool may run twice."""
        return self._tool_is_idempotent(request.tool_call.get("name"), request.tool)

    def _tool_is_idempotent(self, name: str | None, tool: Any) -> bool:
        if name in self.idempotent:
            return True
        metadata = getattr(tool, "metadata", None) or {}
        return bool(metadata.get("idempotent"))

    # -- the batch: records and the person's answers ---------------------------------

    def _batch_for(self, request: ToolCallRequest) -> Batch:
        conf = request.runtime.config.get("configurable", {}) if request.runtime else {}
        token = conf.get("__pregel_scratchpad")
        if token is None:
            return Batch()
        with self._batches_lock:
            entry = self._batches.get(id(token))
            if entry is not None and entry[0] is token:
                self._batches.move_to_end(id(token))
                return entry[1]
            batch = Batch()
            self._batches[id(token)] = (token, batch)
            while len(self._batches) > _MAX_LIVE_BATCHES:
                self._batches.popitem(last=False)
            return batch

    def _requested_events(self, ctx: CallContext, batch: Batch) -> list[dict[str, Any]]:
        return [
            ctx.event(
                call["id"], REQUESTED, name=call.get("name"), args=self.journal.encode(call.get("args"))
            )
            for call in ctx.batch
            if ctx.key(call["id"]) not in batch.records
        ]

    def _prepare(self, ctx: CallContext, batch: Batch, request: ToolCallRequest) -> Steps[None]:
        """Load the batch's records, journal what is new, settle its uncertain calls
        (once per task execution; run with the batch's lock held)."""
        if batch.error is not None:
            raise batch.error
        if batch.ready:
            return
        try:
            keys = [ctx.key(c["id"]) for c in ctx.batch] + [ctx.key(ASKS_CALL_ID)]
            batch.records = yield step("load", ctx.thread_id, keys)
            if ctx.checkpointer is not None:
                orphans = yield step("orphans", ctx.thread_id, ctx.checkpointer)
                harmless, batch.linked, batch.unmatched = split_lost(
                    orphans, ctx, batch.records, lambda name: self._tool_is_idempotent(name, None)
                )
                if harmless:  # running an idempotent tool again is harmless: closed, not asked
                    closed = [closing_event(o, "retry", self.journal.encode) for o in harmless]
                    yield step("record", ctx.thread_id, closed)
            yield step("record", ctx.thread_id, self._requested_events(ctx, batch))
            for events in deliberate(
                ctx, batch, request, encode=self.journal.encode, is_idempotent=self._tool_is_idempotent
            ):
                yield step("record", ctx.thread_id, events)
            batch.ready = True
        except BaseException as exc:
            batch.error = exc
            raise

    # -- one call ------------------------------------------------------------------

    def _settled(
        self,
        ctx: CallContext,
        request: ToolCallRequest,
        action: str,
        record: ToolCallRecord | None,
        answer: Any,
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Result (or exception) for actions that do not run the tool, plus events to record."""
        call = request.tool_call
        call_id = call_id_of(call, ctx.thread_id)
        if action == REPLAY_RESULT:
            assert record is not None
            return for_call(record.result, call_id), []
        msg, resolution = answer_message(call_id, call.get("name"), answer, record)  # SKIP, SUPPLY
        event = ctx.event(call_id, FINISHED, result=self.journal.encode(msg), resolution=resolution)
        return msg, [event]

    def _call(self, ctx: CallContext, batch: Batch, request: ToolCallRequest) -> Steps[Any]:
        """One call of a prepared batch: replayed from its record, or run and journaled."""
        call_id = call_id_of(request.tool_call, ctx.thread_id)
        record = batch.records.get(ctx.key(call_id))
        answer = batch.answers.get(call_id)
        idempotent = self.is_idempotent(request)
        action = plan_call(record, idempotent=idempotent, answer=answer, retrying=ctx.attempt > 1)
        lost = batch.linked.get(call_id) if action == RUN else None
        if lost is not None and lost.carries_answer:  # a person answered it already
            msg = for_call(lost.result, call_id)
            taken = ctx.event(call_id, FINISHED, result=self.journal.encode(msg), resolution=lost.resolution)
            yield step("record", ctx.thread_id, [taken, taken_event(lost, call_id)])
            return msg
        if lost is not None:  # asked for again after its run was lost: as a person said
            action = answered_action(answer)
        # the lost call this one stands for is settled with it, in the same batch
        closing = [closing_event(lost, answer, self.journal.encode, by=call_id)] if lost is not None else []
        if action != RUN:
            outcome, events = self._settled(ctx, request, action, record, answer)
            if events or closing:
                yield step("record", ctx.thread_id, events + closing)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        if not idempotent:
            yield from self._until_saved(ctx, call_id)
        started = ctx.event(call_id, STARTED, proc=process_stamp())
        yield step("record", ctx.thread_id, [started, *closing])
        try:
            result = yield step("execute", request)
        except GraphBubbleUp:
            yield step("record", ctx.thread_id, [ctx.event(call_id, RELEASED)])
            raise
        except Exception as exc:
            yield step("record", ctx.thread_id, [self._failed(ctx, call_id, exc)])
            raise
        yield step(
            "record", ctx.thread_id, [ctx.event(call_id, FINISHED, result=self.journal.encode(result))]
        )
        return result

    def _until_saved(self, ctx: CallContext, call_id: str) -> Steps[None]:
        """Hold a side-effecting call until the checkpoint its node runs from is saved.

        LangGraph saves that checkpoint in the background (``durability="async"``)
        while the node already runs; a crash after the tool's effect, before the save,
        would resume from the checkpoint before, where this call's journal is not found,
        and run the tool again. Under ``"exit"`` nothing is saved until the run ends:
        the call goes ahead, and if the run dies it is asked about as a lost run.

        Raises:
            CheckpointNotSavedError: Not saved within ``durable_timeout``; not started.
        """
        if ctx.checkpointer is None or ctx.durability == "exit" or not ctx.checkpoint_id:
            return
        args = (ctx.thread_id, ctx.graph_ns, ctx.checkpoint_id, ctx.checkpointer, self.durable_timeout)
        if not (yield step("wait_stored", *args)):
            raise CheckpointNotSavedError(
                f"thread {ctx.thread_id!r}: the checkpoint {ctx.checkpoint_id} that tool call "
                f"{call_id} runs from was not saved within {self.durable_timeout:g} s, so the "
                "side-effecting tool was not started (a crash after its effect would run it "
                "again). The checkpointer may be slow or failing: check it, then resume the "
                "run with graph.invoke(None, config); or raise ReplayAdapter(durable_timeout=...).",
                thread_id=ctx.thread_id, checkpoint_id=ctx.checkpoint_id, call_id=call_id,
            )

    def wrap_tool_call(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        """``ToolNode`` ``wrap_tool_call`` hook: journal the call, replay it if recorded."""
        ctx, batch = context_of(request), self._batch_for(request)
        effects = _Effects(self.journal, execute)
        with batch.lock:
            run(self._prepare(ctx, batch, request), effects)
        return run(self._call(ctx, batch, request), effects)

    async def awrap_tool_call(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """``ToolNode`` ``awrap_tool_call`` hook: :meth:`wrap_tool_call` for async tools."""
        ctx, batch = context_of(request), self._batch_for(request)
        effects = _Effects(self.journal, execute)
        async with batch.async_lock():
            await arun(self._prepare(ctx, batch, request), effects)
        return await arun(self._call(ctx, batch, request), effects)

    def _failed(self, ctx: CallContext, call_id: str, exc: BaseException) -> dict[str, Any]:
        # Only the type and message: a traceback may hold secrets and is not needed.
        return ctx.event(
            call_id, FAILED, error={"type": type(exc).__name__, "message": str(exc)[:2000]}
        )
