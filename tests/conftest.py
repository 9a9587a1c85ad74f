"""Fixtures shared by several test files."""

# The saver under test of the differential tests (tests/test_differential_*.py).
from tests.harness.differential import jsonl_saver_factory  # noqa: F401
