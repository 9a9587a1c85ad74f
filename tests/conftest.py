"""Fixtures shared by several test files."""

# The saver under test of the differential tests (tests/test_differential_*.py).
import pytest  # noqa: E402

from tests.harness.differential import jsonl_saver_factory  # noqa: F401

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
