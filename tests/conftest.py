"""Fixtures shared by several test files."""

import pytest

from tests.harness.cli_store import BuiltStore, build_store

# The saver under test of the differential tests (tests/test_differential_*.py).
from tests.harness.differential import jsonl_saver_factory  # noqa: F401

# A fresh database on the real PostgreSQL server per test (tests/harness/postgres.py).
from tests.harness.postgres import pg_url  # noqa: F401

#: Long batteries: left out of the fast subset (`python -m pytest -m "not slow"`) that
#: `.ci/run` runs on the other supported Python versions; the full suite runs them.
SLOW_MODULES = frozenset({
    "test_busy_threads",
    "test_crash_kill9",
    "test_crash_model",
    "test_crash_multiprocess",
    "test_crash_powerloss",
    "test_crash_truncation",
    "test_new_versions",
    "test_store_creation",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> BuiltStore:
    """A store made by real graph runs, in every thread status (``tests/harness/cli_store.py``).
    Read-only for the tests that share it: copy it before changing anything."""
    return build_store(tmp_path_factory.mktemp("cli") / "store")
