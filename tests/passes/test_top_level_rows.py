"""top-level-rows (passes/top_level_rows.py): a top-level program over rows of one leading
axis computes the same outputs as its `parallel` form (the interpreter runs both, same
inputs), and the GPU targets run that form on the row mappings, not on one thread."""
from __future__ import annotations

import json

import numpy as np
import pytest

from intentc.parse import parse
from pass_equivalence import assert_bit_identical, optimized, outputs
from row_programs import ROW_PROGRAMS, row_inputs


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 130)])
@pytest.mark.parametrize("kernel", sorted(ROW_PROGRAMS))
def test_the_parallel_form_computes_the_same_outputs(kernel, shape):
    module = parse(ROW_PROGRAMS[kernel])
    rows, statistics = optimized(module, "top-level-rows")
    assert statistics.get("top-level-rows.kernels") == 1
    assert [op.name for op in rows.items[0].body][-1] == "parallel"
    inputs = row_inputs(kernel, shape, np.random.default_rng(shape[1]))
    assert_bit_identical(outputs(module, kernel, inputs, {}, 0), outputs(rows, kernel, inputs, {}, 0))


@pytest.mark.parametrize("kernel", sorted(ROW_PROGRAMS))
def test_the_gpu_targets_map_the_rows_and_the_others_keep_the_program(kernel):
    from intentc.driver import compile_kernel
    launch = json.loads(compile_kernel(ROW_PROGRAMS[kernel], kernel, "ptx", "sm_90").artifacts["launch.json"])
    assert launch["mapping"] == "cta" and launch["block"][0] > 1
    kir = compile_kernel(ROW_PROGRAMS[kernel], kernel, "kir").artifacts
    assert "parallel" not in next(iter(kir.values()))
