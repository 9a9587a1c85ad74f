"""How many idle logs the store keeps open: ``max_open_threads``, or one while none is
used again.

An idle log (one no live run holds) is kept open so that its thread's next run finds it
indexed. That pays when threads come back while their logs are still open; on a server
whose threads take turns over more threads than the bound, none ever does: each log is
let go unused, after holding its index for ``max_open_threads`` turns, long enough for
the cyclic collector to move it into its oldest generation, whose full passes it then
sets off (issue 28: 46 full passes over a 1,000 × 10 fill, each the slowest turn).

So the store keeps the full bound only while keeping it is seen to pay:

- a *reuse* is a thread found open and idle other than the one used last (its next
  run, or a read: one idle log is kept either way), or one opened again soon after it
  was let go, among the last ``max_open_threads`` logs let go (a bound that large would
  have kept it open);
- after ``2 × max_open_threads`` idle logs let go in a row with no reuse, the store
  keeps one idle log (each let go as the next run ends) until the next reuse, which
  restores the full bound at once. Opening logs alone is no evidence: a burst of new
  threads running at once lets no idle log go.

Pure: the store tells it what happens, under its lock.
"""

from __future__ import annotations

from collections import OrderedDict


class IdleBound:
    """The number of idle logs to keep open, from what the store saw of their reuse.

    Args:
        bound: ``max_open_threads`` (at least 1).
    """

    __slots__ = ("bound", "keep", "_cold", "_recent")

    def __init__(self, bound: int) -> None:
        self.bound = max(1, bound)
        #: Idle logs to keep open now: ``bound``, or 1 while no log is reused.
        self.keep = self.bound
        self._cold = 0  # idle logs let go since the last reuse
        self._recent: OrderedDict[str, None] = OrderedDict()  # the last `bound` let go

    @property
    def lean(self) -> bool:
        """Whether the store keeps one idle log instead of the bound."""
        return self.keep < self.bound

    def reused(self) -> None:
        """A thread was found open and idle (not the one used last): keeping idle logs
        pays."""
        self._cold = 0
        self.keep = self.bound

    def opened(self, thread_id: str) -> None:
        """A thread's log was opened (it was not open)."""
        if thread_id in self._recent:
            del self._recent[thread_id]
            self.reused()  # let go lately: the full bound would have kept it open

    def let_go(self, thread_id: str) -> None:
        """A thread's idle log was let go to keep within :attr:`keep`."""
        self._cold += 1
        if self._cold >= 2 * self.bound:
            self.keep = 1
        recent = self._recent
        recent[thread_id] = None  # (new: opened() took it out as its log was opened)
        if len(recent) > self.bound:
            recent.popitem(last=False)
