"""``langgraph-jsonl`` commands that read one thread: history, show, diff, tools, tail.

Examples::

    langgraph-jsonl history ./checkpoints t-1 --limit 10
    langgraph-jsonl show ./checkpoints t-1
    langgraph-jsonl diff ./checkpoints t-1 1f0a... 1f0b...
    langgraph-jsonl tools ./checkpoints t-1
    langgraph-jsonl tail ./checkpoints t-1 -f
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from ..disk.paths import thread_option
from ..inspection.checkpoints import Question
from ..inspection.conversation import compact_json, terminal_safe, utterance_lines
from ..inspection.diff import ADDED, REMOVED, ChannelDiff
from ..inspection.follow import MESSAGE, FollowEvent, ThreadFollower
from ..inspection.history import checkpoint_history, require_namespace
from ..inspection.status import WAITING
from ..inspection.times import shown_time
from ..inspection.tool_table import tool_calls
from ..inspection.transcript import Transcript, diff_checkpoints, read_transcript
from ..replay.plan import INTERRUPT_TYPE
from .columns import clip
from .common import (
    EXIT_OK,
    add_operands,
    archived_note,
    count_argument,
    describe,
    is_store,
    known_thread,
    open_saver,
    print_json,
    print_json_line,
    print_table,
    served_status,
    shown,
    shown_id,
    store_path,
    unreadable_status,
)
from .stdout import waited_watching
from .threads import since_argument

#: ``--ns``: what it takes, and where a person finds the names.
NS_HELP = ("the graph's namespace: a subgraph's (default: the root graph); a name the thread "
           "lacks is an error listing those it has")

# -- history --------------------------------------------------------------------------

if TYPE_CHECKING:  # annotations only
    from ..saver.jsonl_saver import JsonlSaver


def _history(args: argparse.Namespace) -> int:
    since = since_argument(args.since)
    with open_saver(args) as saver:
        require_namespace(saver, known_thread(saver, args.thread), args.ns)
        rows = checkpoint_history(saver, args.thread, ns=args.ns, limit=args.limit, since=since)
        exit_status = served_status(saver, args.thread)
    if args.json:
        print_json([r.as_json() for r in rows])
        return exit_status
    if not rows:  # say why, not a header line alone
        ns = f" in namespace {args.ns!r}" if args.ns else ""
        if args.limit == 0:
            print("--limit 0 lists no checkpoint")
        elif args.since is not None:
            print(f"no checkpoint of thread {shown(args.thread)}{ns} since {args.since}; "
                  "without --since it lists them all")
        else:
            print(f"thread {shown(args.thread)} has no checkpoint{ns}")
        return exit_status
    print_table(
        ["CHECKPOINT", "STEP", "SOURCE", "WROTE", "TIME", "NEXT"],
        [
            [r.checkpoint_id, "-" if r.step is None else str(r.step), r.source or "-",
             ", ".join(r.writers) or "-", shown_time(r.created_at),
             (", ".join(r.next) or "-") + _waiting(r.waiting_for)]
            for r in rows
        ],
    )
    return exit_status


def _waiting(kinds: tuple[str, ...]) -> str:
    return f" (waiting: {', '.join(kinds)})" if kinds else ""


# -- show -----------------------------------------------------------------------------


def transcript_json(t: Transcript) -> dict[str, Any]:
    """The ``show --json`` shape."""
    f = t.facts
    return {
        "thread_id": t.thread_id, "ns": t.ns, "checkpoint_id": t.checkpoint_id, "parent_id": f.parent_id,
        "created_at": f.created_at, "metadata": f.metadata, "status": t.status,
        "latest_checkpoint_id": t.latest_id, "next": list(f.next),
        "messages_channel": t.channel,
        "messages": [
            {**e.utterance.as_json(), "checkpoint_id": e.checkpoint_id, "at": e.at} for e in t.entries
        ],
        "values": t.values,
        "waiting": [{"task_id": q.task_id, "interrupt_id": q.interrupt_id, "type": q.type, "value": q.value}
                    for q in t.waiting],
        "errors": list(f.errors),
    }


def _show(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        t = read_transcript(saver, known_thread(saver, args.thread), args.checkpoint, ns=args.ns)
        exit_status = served_status(saver, args.thread)
    if args.json:
        print_json(transcript_json(t))
        return exit_status
    f = t.facts
    where = f"  namespace {t.ns}" if t.ns else ""
    print(f"thread {shown(t.thread_id)}  checkpoint {t.checkpoint_id}{where}")
    print(f"step {f.step}, {f.source}, {shown_time(f.created_at)} UTC")
    nexts = ", ".join(f.next) or "-"
    if t.is_latest:
        status = t.status + (f" ({', '.join(q.type for q in t.waiting)})" if t.status == WAITING else "")
        print(f"status: {status}; next: {nexts}")
    else:  # what it scheduled then, not the thread's status now
        print(f"status: past checkpoint (the thread's latest is {t.latest_id}); next from it: {nexts}")
    for error in f.errors:
        print(f"failed: {error}")
    if t.channel:
        print(f"\n{t.channel} ({len(t.entries)}):")
        for e in t.entries:
            print("\n".join("  " + line for line in utterance_lines(e.utterance)))
    others = t.other_channels(internal=args.internal)
    if others:
        print("\nchannels:")
        for channel, value in others.items():
            print(f"  {channel}: {terminal_safe(compact_json(value))}")
    if t.waiting:
        print("\nwaiting for an answer:" if t.is_latest else "\nasked at this checkpoint:")
        for q in t.waiting:
            print(terminal_safe(f"  {q.type} (interrupt {q.interrupt_id}): {compact_json(q.value)}"))
        if t.is_latest:
            hint = _how_to_answer(t.waiting)
            if hint:
                print(terminal_safe(f"  answer: {hint}  (docs/tool-calls.md)"))
    return exit_status


def _how_to_answer(waiting: tuple[Question, ...]) -> str | None:
    """The call that answers the replay adapter's questions about uncertain tool calls:
    ``Command(resume={...})`` while it is the one interrupt waiting; with several (one per
    call under ``create_agent``, where LangGraph refuses a resume that names no interrupt),
    ``ReplayAdapter.resume_command``, which answers each by its id. ``None``: no such
    question."""
    ids = [c.get("id") for q in waiting if q.type == INTERRUPT_TYPE and isinstance(q.value, dict)
           for c in q.value.get("calls", ()) if isinstance(c, dict)]
    if not ids:
        return None
    shape = "{" + ", ".join(f'"{i}": "retry" | "skip" | {{"result": ...}}' for i in ids) + "}"
    if len(waiting) == 1:
        return f"graph.invoke(Command(resume={shape}), config)"
    return f"graph.invoke(ReplayAdapter.resume_command(graph.get_state(config).interrupts, {shape}), config)"


# -- diff -----------------------------------------------------------------------------


def diff_lines(d: ChannelDiff) -> list[str]:
    """One channel's changes for a terminal."""
    mark = {ADDED: "+", REMOVED: "-"}
    if d.messages or (not d.changes and d.kind != "changed"):
        counts = {k: sum(1 for m in d.messages if m.kind == k) for k in (ADDED, REMOVED, "changed")}
        summary = ", ".join(f"{n} {k if k != 'changed' else 'edited'}" for k, n in counts.items() if n)
        out = [f"{d.channel}: {summary or d.kind}"]
        for m in d.messages:
            shown_as = m.new if m.new is not None else m.old
            lines = utterance_lines(shown_as) if shown_as is not None else []
            sign = mark.get(m.kind, "~")
            out.extend(f"  {sign} {line}" for line in lines)
        return out
    out = [f"{d.channel}: {d.kind}"]
    for c in d.changes:
        where = c.path or "(value)"
        if c.kind == ADDED:
            out.append(f"  + {where}: {compact_json(c.new)}")
        elif c.kind == REMOVED:
            out.append(f"  - {where}: {compact_json(c.old)}")
        else:
            out.append(f"  ~ {where}: {compact_json(c.old)} -> {compact_json(c.new)}")
    return [terminal_safe(line) for line in out]


def _diff(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        diffs = diff_checkpoints(saver, known_thread(saver, args.thread), args.a, args.b, ns=args.ns)
        exit_status = served_status(saver, args.thread)
    if args.json:
        print_json({"thread_id": args.thread, "from": args.a, "to": args.b,
                    "channels": [d.as_json() for d in diffs]})
        return exit_status
    if not diffs:
        print("no channel changed")
    for d in diffs:
        print("\n".join(diff_lines(d)))
    return exit_status


# -- tools ----------------------------------------------------------------------------


def _tools(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        table = tool_calls(saver, known_thread(saver, args.thread))
        exit_status = served_status(saver, args.thread)
    rows = table.rows
    if args.json:
        print_json([r.as_json() for r in rows])
        return exit_status
    if not table.journal:
        note = f"thread {shown(args.thread)}: no tool journal (the thread did not run with ReplayAdapter)"
        if not rows:
            print(f"{note}, and its messages hold no tool call")
            return exit_status
        print(f"{note}; the tool calls its messages hold:")
        print_table(
            ["CALL", "TOOL", "STATE", "ASKED", "ARGS -> ANSWER"],
            [[shown_id(r.call_id), terminal_safe(r.name), r.state, shown_time(r.requested_at),
              clip(shown(_args_and_outcome(r.args, r.outcome)), 100)] for r in rows],
        )
        return exit_status
    print_table(
        ["CALL", "TOOL", "STATE", "STARTED", "SECONDS", "TRIES", "DECIDED", "ARGS -> OUTCOME"],
        [
            [shown_id(r.call_id), terminal_safe(r.name), r.state, shown_time(r.started_at),
             "-" if r.seconds is None else f"{r.seconds:.3f}", str(r.attempts),
             f"{r.decision} ({r.decided_by})" if r.decided_by else (r.decision or "-"),
             clip(shown(_args_and_outcome(r.args, r.outcome)), 100)]
            for r in rows
        ],
    )
    return exit_status


def _args_and_outcome(args: object, outcome: str) -> str:
    first = outcome.strip().split("\n", 1)[0]
    return f"{compact_json(args)} -> {first}" if first else compact_json(args)


# -- tail -----------------------------------------------------------------------------


def event_lines(e: FollowEvent) -> list[str]:
    """One followed event for a terminal, its time first."""
    when = shown_time(e.at)[11:] if e.at else "        "
    if e.kind == MESSAGE and e.utterance is not None:
        lines = utterance_lines(e.utterance)
    else:
        t = e.tool
        assert t is not None
        if t.name:
            lines = [terminal_safe(f"{'call':6} {t.name} [{t.call_id}] {t.event}"
                                   + (f": {t.detail}" if t.detail else ""))]
        else:
            lines = [terminal_safe(f"{'call':6} {t.detail}")]
    return [f"{when}  {lines[0]}"] + [f"{'':8}  {line}" for line in lines[1:]]


def _emit(events: list[FollowEvent], as_json: bool) -> None:
    for e in events:
        if as_json:
            print_json_line({
                "kind": e.kind, "seq": e.seq, "checkpoint_id": e.checkpoint_id, "at": e.at,
                "message": e.utterance.as_json() if e.utterance else None,
                "tool": vars(e.tool) if e.tool else None,
            })
        else:
            print("\n".join(event_lines(e)), flush=True)


def _tail(args: argparse.Namespace) -> int:
    if args.follow and not is_store(store_path(args)):
        # As `tail -F` waits for a file: a run may be about to create the store.
        print(f"waiting for the store {store_path(args)} to appear (Ctrl-C ends)",
              file=sys.stderr, flush=True)
        try:
            while not is_store(store_path(args)):
                _pause(args.poll)
        except KeyboardInterrupt:  # Ctrl-C is how a person ends `tail -f`
            return EXIT_OK
    # A Ctrl-C before the first lines are shown is the usual stop (130), not an end of
    # following: taken for one, it ended the command with 0 and nothing shown.
    return _follow(args)


def _follow(args: argparse.Namespace) -> int:
    with open_saver(args) as saver:
        if args.follow and not saver.store.has_thread(args.thread):
            # As `tail -F` waits for a file: a run may be about to start this thread.
            archived = archived_note(saver, args.thread, then=FOLLOWING_GOES_ON)
            print((f"{archived}\n" if archived else "")
                  + f"waiting for thread {shown(args.thread)} to appear in {saver.store.path} "
                  "(Ctrl-C ends)", file=sys.stderr, flush=True)
        else:
            known_thread(saver, args.thread)
            if not args.follow:  # (a subgraph followed may not have run yet)
                require_namespace(saver, args.thread, args.ns)
        follower = ThreadFollower(saver, args.thread, ns=args.ns)
        backlog = follower.read_new()
        _emit(backlog[-args.lines:] if args.lines else [], args.json)
        if not backlog and not args.follow and args.lines and not args.json:
            ns = f" --ns {shlex.quote(args.ns)}" if args.ns else ""
            print(f"thread {shown(args.thread)} has no message or tool-call event to show (its "
                  f"state holds no messages); `langgraph-jsonl show {shlex.quote(store_path(args))} "
                  f"{thread_option(args.thread)}{ns}` shows its state", file=sys.stderr)
        try:
            present = saver.store.has_thread(args.thread)
            while args.follow:
                sys.stdout.flush()
                _pause(args.poll)
                if saver.store.has_thread(args.thread) != present:
                    present = not present
                    _say_presence(saver, args.thread, present)
                _emit(follower.read_new(), args.json)
        except KeyboardInterrupt:  # how a person ends `tail -f`: the exit status still tells of damage
            pass
        return max(served_status(saver, args.thread), unreadable_status(args.thread, follower.unreadable))


def _pause(seconds: float) -> None:
    """A follower's wait between two looks: it ends when its reader does (``| head -1``)."""
    if not waited_watching(seconds):
        time.sleep(seconds)


#: How a follower ends the note on an archived thread: it waits, nothing is to be run again.
FOLLOWING_GOES_ON = "and the following goes on once it is back"


def _say_presence(saver: JsonlSaver, thread_id: str, present: bool) -> None:
    """Tell a follower's reader that the thread went (deleted, archived) or came back."""
    if present:
        note = f"thread {shown(thread_id)} is back (restored, or started by a new run); following it"
    else:
        archived = archived_note(saver, thread_id, then=FOLLOWING_GOES_ON)
        gone = "was archived" if archived else "was deleted"
        note = (f"thread {shown(thread_id)} {gone}; waiting for it to appear again "
                "(Ctrl-C ends)" + (f"\n{archived}" if archived else ""))
    print(note, file=sys.stderr, flush=True)


# -- registration ---------------------------------------------------------------------


def define_history(p: argparse.ArgumentParser) -> None:
    """``history``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="List a thread's checkpoints newest first: id, step, source (input, loop, "
        "update, fork), the node(s) whose writes made it, its time (UTC) and the tasks it "
        "schedules next (with the questions waiting there).",
        examples=["langgraph-jsonl history ./checkpoints t-1 --limit 10",
                  "langgraph-jsonl history ./checkpoints t-1 --since 1h --json"],
        json_shape="a list of {checkpoint_id, ns, parent_id, step, source, writers, created_at, next, "
        "waiting_for}",
    )
    add_operands(p, ["thread"])
    p.add_argument("--limit", type=count_argument, help="at most this many checkpoints")
    p.add_argument("--ns", default="", help=NS_HELP)
    p.add_argument("--since", help="only checkpoints made since then: 30m, 2h, 7d, or a date/time")
    p.set_defaults(run=_history)


def define_show(p: argparse.ArgumentParser) -> None:
    """``show``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Show a thread's state at a checkpoint (default: the latest): its messages "
        "as a conversation (role, text, tool calls with arguments, tool results), the other "
        "channels as JSON, and the interrupts waiting for an answer. --json gives every "
        "channel's value.",
        examples=["langgraph-jsonl show ./checkpoints t-1",
                  "langgraph-jsonl show ./checkpoints t-1 1f0c3b9e-0f1a-6b4e-8002-5d1f2a3b4c5d --json"],
        json_shape="{thread_id, ns, checkpoint_id, parent_id, created_at, metadata, status (the "
        "thread's; past for a checkpoint before the latest), latest_checkpoint_id, next, "
        "messages_channel, messages: [{role, text, id, name, tool_calls, tool_call_id, status, "
        "checkpoint_id, at}], values: {channel: value}, waiting: [{task_id, interrupt_id, type, "
        "value}], errors}",
    )
    add_operands(p, ["thread", "checkpoint"], optional=1)
    p.add_argument("--ns", default="", help=NS_HELP)
    p.add_argument("--internal", action="store_true",
                   help="also show LangGraph's bookkeeping channels (branch:to:*, join:*, __*)")
    p.set_defaults(run=_show)


def define_diff(p: argparse.ArgumentParser) -> None:
    """``diff``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Compare two checkpoints of a thread channel by channel: messages added, "
        "removed or edited (by id), other values as a JSON diff (path: old -> new).",
        examples=["langgraph-jsonl diff ./checkpoints t-1 1f0c3b9e-...-0001 1f0c3b9e-...-0004"],
        json_shape="{thread_id, from, to, channels: [{channel, kind, messages: [{kind, id, old, new}], "
        "changes: [{kind, path, old, new}]}]}",
    )
    add_operands(p, ["thread", "a", "b"])
    p.add_argument("--ns", default="", help=NS_HELP)
    p.set_defaults(run=_diff)


def define_tools(p: argparse.ArgumentParser) -> None:
    """``tools``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="List every tool call the ReplayAdapter journaled in a thread: its state "
        "(requested, started, finished, failed, uncertain: started by a process that is gone, "
        "decided: settled by a person), when it started, how long it ran, how many times its "
        "body ran, and who decided what after a crash (a person: retry, skip, result; the "
        "policy: re-run of an idempotent call; new input: superseded, the model told what the journal "
        "knew; asked: waiting for an answer; unanswered (thread went on): asked, but the thread went "
        "on without an answer; lost run: started in "
        "a run whose state was lost, asked about at the next tool node). A thread that did not run "
        "with ReplayAdapter has no journal: it says so, and lists the tool calls the messages of its "
        "latest state hold, each answered (by a tool message), failed (answered with an error) or "
        "unanswered.",
        examples=["langgraph-jsonl tools ./checkpoints support-ticket-1042"],
        json_shape="a list of {call_id, name, args, state, ns, checkpoint_id, requested_at, started_at, "
        "finished_at, seconds, attempts, decision, decided_by, outcome, lost_run, source: journal|"
        "messages, answered: bool | null}",
    )
    add_operands(p, ["thread"])
    p.set_defaults(run=_tools)


def define_tail(p: argparse.ArgumentParser) -> None:
    """``tail``: its help and arguments (its name, group and purpose: :mod:`.commands`)."""
    describe(
        p,
        description="Print a thread's last messages and tool-call events in log order; with -f, "
        "keep printing each new one as another process appends it, until Ctrl-C (a store or "
        "thread that does not exist yet is waited for). Takes no lock: the writer is never "
        "slowed or blocked.",
        examples=["langgraph-jsonl tail ./checkpoints t-1", "langgraph-jsonl tail ./checkpoints t-1 -f"],
        json_shape="one JSON object per line: {kind: message|tool, seq, checkpoint_id, at, "
        "message: {role, text, ...} | null, tool: {event, call_id, name, detail} | null}",
    )
    add_operands(p, ["thread"])
    p.add_argument("-f", "--follow", action="store_true", help="keep following new records (Ctrl-C ends)")
    p.add_argument("-n", "--lines", type=count_argument, default=10,
                   help="how many past events to print first (10)")
    p.add_argument("--poll", type=float, default=0.25, help="seconds between looks at the log (0.25)")
    p.add_argument("--ns", default="", help=NS_HELP)
    p.set_defaults(run=_tail)
