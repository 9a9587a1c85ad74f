"""The differential harness checks itself: its normaliser and comparison must notice
differences (the driver is ``tests/harness/differential.py``).
"""

from __future__ import annotations

import pytest

from tests.harness.differential_normalise import Normaliser, _norm_version, assert_same, normalise

# ---------------------------------------------------------------------------
# self-test of the harness: it must notice differences
# ---------------------------------------------------------------------------


def test_normaliser_detects_differences():
    a = normalise({"t": {"namespaces": {}, "state": {"x": [1, (2,)]}}})
    b = normalise({"t": {"namespaces": {}, "state": {"x": [1, [2]]}}})
    with pytest.raises(pytest.fail.Exception, match="first difference"):
        assert_same(a, b, "tuple vs list")
    n1, n2 = Normaliser(), Normaliser()
    ids = ["1ef4f797-8335-6428-8001-8a1503f9b875", "1ef4f797-8335-6428-8001-8a1503f9b876"]
    assert n1(f"x:{ids[0]}|{ids[1]}") == n2(f"x:{ids[1]}|{ids[0]}")
    assert n1(ids[1]) != n1(ids[0])
    assert _norm_version("00000000000000000000000000000007.0.18437") == 7
    assert _norm_version(7) == 7
