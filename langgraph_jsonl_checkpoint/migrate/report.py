"""What a copy did: per thread and in total (the CLI prints it, or its JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ThreadCopy:
    """One thread's copy.

    Attributes:
        thread_id: The thread.
        checkpoints: Checkpoints put on the target (with ``dry_run``: that would be).
        present: Checkpoints the target already had (left as they were).
        writes: Pending writes put.
        journal_records: Tool-call journal events added.
        problem: Why the thread was not copied (whole or in part), if it was not.
        mismatches: Where the target's history differs from the source's after the copy
            (or, when ``refused``, before it: why nothing was put).
        refused: Nothing was put into the target's thread: it holds another history under
            the same id (the reason is in ``mismatches``). Not counted as copied.
        ahead_checkpoints: Checkpoints only the target holds, going on from the
            source's (the app went on there since an earlier copy; left as they are).
        ahead_writes: Pending writes of such a run at the source's newest checkpoints.
        ahead_journal_records: Tool-call journal events only the target holds.
    """

    thread_id: str
    checkpoints: int = 0
    present: int = 0
    writes: int = 0
    journal_records: int = 0
    problem: str | None = None
    mismatches: list[str] = field(default_factory=list)
    refused: bool = False
    ahead_checkpoints: int = 0
    ahead_writes: int = 0
    ahead_journal_records: int = 0

    @property
    def up_to_date(self) -> bool:
        """The target held all of the thread already: nothing was put (with ``dry_run``:
        would be), and it was neither refused nor stopped by a problem."""
        return not self.refused and not self.problem and not (
            self.checkpoints or self.writes or self.journal_records
        )

    @property
    def ahead(self) -> bool:
        """The target holds the source's history and goes on from it (no difference)."""
        return not self.mismatches and not self.problem and bool(
            self.ahead_checkpoints or self.ahead_writes or self.ahead_journal_records
        )

    def ahead_text(self) -> str:
        """What only the target holds, for people."""
        parts = [f"{n} {what}" for n, what in ((self.ahead_checkpoints, "checkpoint(s)"),
                                                (self.ahead_writes, "pending write(s)"),
                                                (self.ahead_journal_records, "journal record(s)")) if n]
        return ", ".join(parts) + " on the target only: it goes on from the source's history"


@dataclass
class CopyReport:
    """A whole copy.

    Attributes:
        source: What was copied from (a URL without password, a class name).
        target: What was copied to.
        threads: Each thread's copy, in the order done.
        seconds: Wall time.
        bytes: How much the target's storage grew (``None``: not measurable).
        dry_run: Nothing was written.
        verified: Histories were compared after the copy.
        unreadable: Source files that could not even be named a thread (``path: why``).
        unmatched: The ``threads`` patterns (ids or globs) that matched no thread of the
            source: a typo must not pass for a copy of nothing.
        creates: What the copy made on the target besides threads (with ``dry_run``:
            would make): a new store, an SQLite file, tables (``--setup``).
        needs_setup: Tables the target lacks that only ``--setup`` creates, when it was
            not given: a dry run found that the copy would stop before copying anything.
    """

    source: str
    target: str
    threads: list[ThreadCopy] = field(default_factory=list)
    seconds: float = 0.0
    bytes: int | None = None
    dry_run: bool = False
    verified: bool = False
    unreadable: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    creates: list[str] = field(default_factory=list)
    needs_setup: list[str] = field(default_factory=list)

    @property
    def checkpoints(self) -> int:
        """Checkpoints put, over all threads."""
        return sum(t.checkpoints for t in self.threads)

    @property
    def writes(self) -> int:
        """Pending writes put, over all threads."""
        return sum(t.writes for t in self.threads)

    @property
    def journal_records(self) -> int:
        """Journal events added, over all threads."""
        return sum(t.journal_records for t in self.threads)

    @property
    def problems(self) -> list[ThreadCopy]:
        """Threads not copied in full."""
        return [t for t in self.threads if t.problem]

    @property
    def copied(self) -> list[ThreadCopy]:
        """Threads the target holds in full after the copy: neither refused nor with a
        problem (those :attr:`up_to_date` among them: nothing was put into them)."""
        return [t for t in self.threads if not t.refused and not t.problem]

    @property
    def up_to_date(self) -> list[ThreadCopy]:
        """Threads the target held in full already: nothing put into them (a copy run again)."""
        return [t for t in self.threads if t.up_to_date]

    @property
    def changed(self) -> list[ThreadCopy]:
        """Threads copied in full with something put into them (with ``dry_run``: would be)."""
        return [t for t in self.copied if not t.up_to_date]

    @property
    def incomplete(self) -> list[ThreadCopy]:
        """Threads not copied in full (a source that cannot be read, a copy that stopped):
        nothing of them put, or only part; each has its ``problem``."""
        return [t for t in self.threads if t.problem and not t.refused]

    @property
    def refused(self) -> list[ThreadCopy]:
        """Threads left alone: the target holds another history under their id."""
        return [t for t in self.threads if t.refused]

    @property
    def mismatched(self) -> list[ThreadCopy]:
        """Threads whose copy differs from the source."""
        return [t for t in self.threads if t.mismatches]

    @property
    def ahead(self) -> list[ThreadCopy]:
        """Threads the target holds further on than the source (not a difference)."""
        return [t for t in self.threads if t.ahead]

    @property
    def ok(self) -> bool:
        """Every thread copied and (if verified) equal on both ends, and every ``threads``
        pattern matched a thread (a dry run: the copy would go through)."""
        return (not self.problems and not self.mismatched and not self.unreadable and not self.unmatched
                and not self.needs_setup)

    def unmatched_text(self) -> list[str]:
        """One line per ``threads`` pattern that matched no thread of the source."""
        return [f"no thread of the source matches --threads {p!r}" for p in self.unmatched]

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (``--json``)."""
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "verified": self.verified,
            "ok": self.ok,
            "threads": len(self.threads),
            "copied": len(self.changed),
            "up_to_date": [t.thread_id for t in self.up_to_date],
            "refused": [t.thread_id for t in self.refused],
            "incomplete": [t.thread_id for t in self.incomplete],
            "checkpoints": self.checkpoints,
            "present": sum(t.present for t in self.threads),
            "writes": self.writes,
            "journal_records": self.journal_records,
            "bytes": self.bytes,
            "creates": self.creates,
            "needs_setup": self.needs_setup,
            "unmatched": self.unmatched,
            "seconds": round(self.seconds, 3),
            "problems": [{"thread_id": t.thread_id, "problem": t.problem} for t in self.problems]
            + [{"thread_id": None, "problem": u} for u in self.unreadable]
            + [{"thread_id": None, "problem": u} for u in self.unmatched_text()],
            "mismatches": [{"thread_id": t.thread_id, "mismatches": t.mismatches} for t in self.mismatched],
            "ahead": [{"thread_id": t.thread_id, "checkpoints": t.ahead_checkpoints, "writes": t.ahead_writes,
                       "journal_records": t.ahead_journal_records} for t in self.ahead],
            "per_thread": [{**vars(t), "up_to_date": t.up_to_date} for t in self.threads],
        }

    def summary(self) -> str:
        """One paragraph for people."""
        verb = "would copy" if self.dry_run else "copied"
        present = sum(t.present for t in self.threads)
        size = f", {self.bytes:,} bytes" if self.bytes is not None and not self.dry_run else ""
        rate = (f" ({self.checkpoints / self.seconds:,.0f} checkpoints/s)"
                if self.seconds > 0 and self.checkpoints else "")
        changed, up_to_date = self.changed, self.up_to_date
        fresh = f"{len(up_to_date)} thread(s) already up to date there, left as they were"
        if up_to_date and not changed:  # run again: say so, not "copied N thread(s): 0 checkpoint(s)"
            lines = [f"{verb} nothing from {self.source} to {self.target}: {fresh}"]
        else:
            lines = [
                f"{verb} {len(changed)} thread(s) from {self.source} to {self.target}: "
                f"{self.checkpoints} checkpoint(s), {self.writes} write(s), "
                f"{self.journal_records} journal record(s){size} in {self.seconds:.1f} s{rate}",
            ]
            if up_to_date:
                lines.append(fresh)
        if self.creates and self.dry_run:
            lines.append("would create " + "; ".join(self.creates))
        if self.needs_setup:
            lines.append(
                f"the target has no {', '.join(self.needs_setup)} table(s) yet: without --setup "
                "the copy would stop before copying anything"
            )
        if present:
            lines.append(f"{present} checkpoint(s) were already on the target and left as they were")
        refused = self.refused
        if refused:
            names = ", ".join(repr(t.thread_id) for t in refused[:5])
            more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
            lines.append(
                f"{'would refuse' if self.dry_run else 'refused'} {len(refused)} thread(s), nothing put "
                f"into them (the target holds another history under the same id: DIFFERS): {names}{more}"
            )
        failed = len(self.problems)
        if self.incomplete:
            lines.append(self._incomplete_text())
        ahead = len(self.ahead)
        whole = ("the history of every other thread" if failed or refused
                 else "every copied thread's history" if changed else "every thread's history")
        differ = [t for t in self.mismatched if not t.refused]
        if self.verified and differ:
            lines.append(f"verify: {len(differ)} thread(s) differ")
        elif self.verified and failed + len(refused) >= len(self.threads):
            pass  # nothing was copied whole: nothing to say was verified
        elif self.verified and ahead:
            lines.append(
                f"verified: {whole} equals the source's, or goes on from it: {ahead} "
                "thread(s) ahead on the target (the app went on there), left as they are"
            )
        elif self.verified:
            lines.append(f"verified: {whole} equals the source's")
        return "\n".join(lines)


    def _incomplete_text(self) -> str:
        """The threads not copied in full, named with how much of each the target holds."""
        would = " would" if self.dry_run else ""
        incomplete = self.incomplete
        held = [(t.thread_id, t.checkpoints + t.present) for t in incomplete[:5]]
        names = ", ".join(f"{tid!r} ({n or 'none'} of its checkpoints{would} on the target)"
                          for tid, n in held)
        more = f" and {len(incomplete) - 5} more" if len(incomplete) > 5 else ""
        return (f"{len(incomplete)} thread(s){would} not {'be ' if self.dry_run else ''}copied in full "
                f"(see each one's PROBLEM): {names}{more}")


class CopyInterrupted(KeyboardInterrupt):
    """A copy stopped by Ctrl-C (a ``KeyboardInterrupt`` in the caller's thread), after
    the copies under way reached their next step. What was copied is durable and the
    copy is idempotent, so the same copy run again continues where this one stopped.
    A ``KeyboardInterrupt``, so code that lets Ctrl-C end the program still does.

    Attributes:
        report: The threads copied in full (and verified, if asked) before it stopped.
        total: How many threads the copy had to do.
        under_way: The threads stopped part-way, with the checkpoints they had put (kept:
            the copy run again goes on from them).
    """

    def __init__(self, report: CopyReport, total: int, under_way: Sequence[ThreadCopy] = ()) -> None:
        self.report = report
        self.total = total
        self.under_way = list(under_way)
        part = sum(t.checkpoints for t in self.under_way)
        copied = f"{report.checkpoints + part} checkpoint(s) {'counted' if report.dry_run else 'copied'}"
        if self.under_way:
            copied += f", {part} of them by {len(self.under_way)} thread(s) stopped part-way"
        again = ("a dry run: nothing was written, so the same command run again counts from the start"
                 if report.dry_run else "run the same command again to continue")
        super().__init__(f"interrupted after {len(report.threads)} of {total} threads ({copied}); {again}")
