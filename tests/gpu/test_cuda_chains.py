"""Long element-wise chains on the GPU against the interpreter: the register form with its
slot loops unrolled (a short chain) and rolled (a 1,000-op chain, slots in local memory)."""
from __future__ import annotations

import numpy as np
import pytest

from differential import UNFUSED, assert_same_bits
from gpu_differential import load_test_module, on_gpu_and_interp
from gpu_required import requires_gpu

chains = load_test_module("tests/codegen/test_lowering_scale.py", "lowering_scale_cases")


@requires_gpu()
@pytest.mark.parametrize("length,reuse_both", [(40, True), (1000, False)])
@pytest.mark.parametrize("rows", [0, 1, 37])
def test_chains_on_the_gpu(length, reuse_both, rows):
    x = np.random.default_rng().uniform(0.5, 1.0, size=(rows, chains.ROW)).astype(np.float32)
    got, expected = on_gpu_and_interp(chains.chain_kernel(length, reuse_both), "chain", {"x": x}, options=UNFUSED)
    assert_same_bits(got["y"], expected["y"], "y")
