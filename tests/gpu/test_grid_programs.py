"""Top-level tensor programs (no `parallel`) run on the whole grid (docs/gpu.md, "grid
mapping"): which kernels get it (no GPU needed), and on the GPU the interpreter's bits for
extents 0, 1, odd, and larger than the grid's threads."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text

GRID_KERNELS = [("float_sign_bitcast", "sign_ops"), ("stochastic_rounding_bf16", "stochastic_round_bf16"),
                ("integer_hash_u32", "murmur3_bucket"), ("special_math", "special_math"),
                ("fast_activations_approx", "fast_silu_gelu")]
# larger than 132 SMs x 8 CTAs x 256 threads, so threads take several coordinates
EXTENTS = [0, 1, 33, 1000, 600_001]


@pytest.mark.parametrize("sample,kernel", GRID_KERNELS)
def test_top_level_tensor_programs_get_the_grid_mapping(sample, kernel):
    from intentc.driver import compile_kernel
    artifacts = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90").artifacts
    launch = json.loads(artifacts["launch.json"])
    assert launch["mapping"] == "grid" and launch["block"][0] == 256
    assert "nctaid" in artifacts["kernel.ptx"]                     # the stride spans the grid
    assert "CTAs = [grid]" in launch["layouts"]["encodings"]["#layout0"]


def test_a_top_level_reduction_is_not_a_grid_program():
    from intentc.driver import compile_kernel
    text = ("kernel @total(%x: view<f32, [%N], in>, %y: view<f32, [], out>) {\n"
            "  %i = iota : tensor<index, [%N]>\n  %v = read %x index(%i) : tensor<f32, [%N]>\n"
            "  %s = reduce %v {kind = sum, axes = [0]} : f32\n  write %y, %s\n}\n")
    launch = json.loads(compile_kernel(text, "total", "ptx", "sm_90").artifacts["launch.json"])
    assert launch["mapping"] != "grid"


def _inputs(kernel: str, n: int, rng) -> dict:
    floats = lambda: rng.standard_normal(n).astype(np.float32) * 3
    return {"sign_ops": lambda: {"mag": floats(), "sgn": floats()},
            "stochastic_round_bf16": lambda: {"x": floats(), "seed": np.uint64(rng.integers(0, 2 ** 63))},
            "murmur3_bucket": lambda: {"keys": rng.integers(0, 2 ** 32, n).astype(np.uint32),
                                       "nbuckets": np.uint32(13)},
            "special_math": lambda: {"x": floats(), "k": rng.integers(0, 20, n).astype(np.float32),
                                     "lambda": rng.uniform(0.5, 9, n).astype(np.float32),
                                     "h": rng.uniform(0, 1, n).astype(np.float32)},
            "fast_silu_gelu": lambda: {"x": floats()}}[kernel]()


@requires_gpu()
@pytest.mark.parametrize("n", EXTENTS)
@pytest.mark.parametrize("sample,kernel", GRID_KERNELS)
def test_grid_programs_match_the_interpreter(sample, kernel, n):
    rng = np.random.default_rng(n)
    got, expected = on_gpu_and_interp(sample_text(sample), kernel, _inputs(kernel, n, rng))
    for name in expected:
        if kernel in ("special_math", "fast_silu_gelu"):     # libdevice f32 bounds, approximate modes
            assert_close(got[name], expected[name], 1e-3 if kernel == "fast_silu_gelu" else 1e-5, name)
        else:
            assert_same_bits(got[name], expected[name], name)
