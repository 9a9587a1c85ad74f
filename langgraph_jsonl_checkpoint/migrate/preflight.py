"""What a copy checks of its target before copying anything, and ``--setup``.

A target database may lack tables only ``--setup`` creates (the saver's own ``setup()``,
its journal store's), the migrations of its saver an older version's tables did not run,
or the columns the journal store writes that an older release's table lacks (when there
is a journal to write). A copy stops on any of them before copying anything, naming what
to run (``MigrationError``, exit status 2), and so does its dry run, except that it reports
missing tables (``needs_setup``), so that it still says what the copy would put.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import MigrationError

if TYPE_CHECKING:
    from .endpoints import Endpoint


def prepare_target(
    src: Endpoint, dst: Endpoint, ids: Sequence[str], *, journal: bool, setup: bool, dry_run: bool
) -> list[str]:
    """Run ``--setup`` on ``dst`` (not in a dry run) and check it for a copy of the threads
    ``ids`` from ``src``; returns the tables it lacks (a dry run's; a real copy without
    ``setup`` stops on them)."""
    missing = dst.missing_tables(journal=journal)  # without the journal, not its store's
    if setup and not dry_run:  # even with every table there: a setup cut short left migrations to run
        dst.setup(journal=journal)
    elif missing and not dry_run:
        raise MigrationError(
            f"{dst.name}: the target has no {', '.join(missing)} table(s) yet. Run again with "
            "--setup (copy_threads(..., setup=True)) to create them with the saver's and the "
            "store's own setup()."
        )
    # An older version's tables: a dry run stops as the copy would (--setup would run them).
    stale = dst.unmigrated()  # raises for a newer version's tables, which no --setup would change
    if not (setup or missing) and stale:
        raise MigrationError(f"{dst.name}: the target's checkpoint tables lack {stale}. Run again with "
                             "--setup: the saver's own setup() runs them.")
    if (journal and src.journal is not None and not (setup and dry_run)
            and (unwritable := dst.unmigrated_journal())  # an older release's store
            and any(src.journal.events(thread_id) for thread_id in ids)):  # and a journal to write
        raise MigrationError(f"{dst.name}: {unwritable}")
    return missing
