"""Top-level programs over rows (passes/top_level_rows.py) and products of whole views
(passes/top_level_tiles.py) on the GPU against the interpreter: rows of 0, 1, odd, longer than
a CTA's threads and than a register-form variant, few and many rows; products with tails in
every dimension."""
from __future__ import annotations

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from row_programs import ROW_PROGRAMS, row_inputs
from tile_programs import TILE_PROGRAMS, tile_inputs

SHAPES = [(0, 5), (1, 1), (7, 33), (300, 1001), (64, 4096), (3, 20000)]


@requires_gpu()
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kernel", sorted(ROW_PROGRAMS))
def test_row_programs_match_the_interpreter(kernel, shape):
    inputs = row_inputs(kernel, shape, np.random.default_rng(shape[1]))
    got, expected = on_gpu_and_interp(ROW_PROGRAMS[kernel], kernel, inputs)
    for name in expected:
        if kernel == "softmax_rows" and name == "y":      # exp and a reassociated f32 sum (§6)
            assert_close(got[name], expected[name], 1e-5, name)
        elif kernel == "rms_rows":                           # a reassociated f32 sum, then bf16
            assert_close(got[name], expected[name], 2.0 ** -7, name)
        else:                                                # maxima, positions, integer sums
            assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("shape", [(1, 1, 1), (65, 33, 70), (128, 256, 64), (300, 100, 129)])
@pytest.mark.parametrize("kernel", sorted(TILE_PROGRAMS))
def test_products_of_whole_views_match_the_interpreter(kernel, shape):
    inputs = tile_inputs(kernel, shape, np.random.default_rng(sum(shape)))
    got, expected = on_gpu_and_interp(TILE_PROGRAMS[kernel], kernel, inputs)
    assert_same_bits(got["c"], expected["c"], "c")       # small integers: exact in any order
