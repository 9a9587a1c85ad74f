"""``AsyncJsonlSaver``: ``JsonlSaver`` with an async ``from_conn_string``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .jsonl_saver import JsonlSaver


class AsyncJsonlSaver(JsonlSaver):
    """:class:`JsonlSaver` with an async ``from_conn_string``, for ``AsyncSqliteSaver`` users.

    ``JsonlSaver`` itself already serves ``ainvoke``/``astream``; this class only makes
    ``async with AsyncJsonlSaver.from_conn_string(path) as saver:`` work unchanged.
    """

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, path: str, **kwargs: Any) -> AsyncIterator[AsyncJsonlSaver]:  # type: ignore[override]
        """Open a saver on ``path`` for an ``async with`` block.

        Args:
            path: Store directory (``":memory:"``: a temporary one, removed at the end).
            **kwargs: Passed to :class:`JsonlSaver`.

        Yields:
            The saver; it is closed when the block ends.
        """
        saver = await asyncio.to_thread(lambda: cls(path, **kwargs))
        try:
            yield saver
        finally:
            await asyncio.to_thread(saver.close)
