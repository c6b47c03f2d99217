"""Issue 15's spec rules on the reference interpreter and the host CPU (`conformance.py`)."""
from __future__ import annotations

import pytest

from conformance import CHECKS


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_conformance(name, target):
    CHECKS[name](target)
