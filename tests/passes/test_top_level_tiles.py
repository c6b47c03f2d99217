"""top-level-tiles (passes/top_level_tiles.py): a top-level product of two whole views
computes the same outputs in the tiled form (the interpreter runs both on the same inputs),
and the GPU targets run that form on the tensor-core mappings, not on one thread."""
from __future__ import annotations

import json

import numpy as np
import pytest

from intentc.parse import parse
from pass_equivalence import assert_bit_identical, optimized, outputs
from tile_programs import TILE_PROGRAMS, tile_inputs


@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 37, 70), (65, 64, 3)])
@pytest.mark.parametrize("kernel", sorted(TILE_PROGRAMS))
def test_the_tiled_form_computes_the_same_outputs(kernel, shape):
    module = parse(TILE_PROGRAMS[kernel])
    tiles, statistics = optimized(module, "top-level-tiles")
    assert statistics.get("top-level-tiles.kernels") == 1
    assert [op.name for op in tiles.items[0].body][-1] == "parallel"
    inputs = tile_inputs(kernel, shape, np.random.default_rng(sum(shape)))
    assert_bit_identical(outputs(module, kernel, inputs, {}, 0), outputs(tiles, kernel, inputs, {}, 0))


@pytest.mark.parametrize("kernel", sorted(TILE_PROGRAMS))
def test_the_gpu_targets_run_the_product_on_the_mma_mapping(kernel):
    from intentc.driver import compile_kernel
    launch = json.loads(compile_kernel(TILE_PROGRAMS[kernel], kernel, "ptx", "sm_90").artifacts["launch.json"])
    assert launch["mapping"] == "mma"


@pytest.mark.parametrize("change", [
    ("%av = read %a index(%ar, %ac)", "%av = read %a index(%ac, %ar)"),      # not the view's own coordinates
    ("  write %c, %cv index(%cr, %cc)", "  %e = exp %cv : tensor<f32, [%M, %N]>\n  write %c, %e index(%cr, %cc)"),
])
def test_other_programs_are_left_as_they_are(change):
    text = TILE_PROGRAMS["hgemm_f32"].replace(*change)
    module = parse(text.replace("view<f16, [%M, %K]", "view<f16, [%K, %M]") if "index(%ac, %ar)" in text else text)
    after, statistics = optimized(module, "top-level-tiles")
    assert after is module and not statistics
