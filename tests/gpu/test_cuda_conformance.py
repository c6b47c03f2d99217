"""Issue 15's spec rules on the GPU: the CPU suite's checks (`tests/codegen/conformance.py`)
with `cuda` as the target."""
from __future__ import annotations

import pytest

from conformance import CHECKS
from gpu_required import requires_gpu


@requires_gpu()
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_conformance_on_gpu(name):
    CHECKS[name]("cuda")
