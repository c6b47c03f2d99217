"""Every 8-bit float code through the sm_90a widening (docs/gpu.md, "8-bit operands";
`nvptx/f8_widening.py`) on the GPU, against the interpreter: A's column 0 and B's row 1
hold all 256 codes and B's row 0 and A's column 1 are ones, so C[i, j] = a_i + b_j — exact
in the f32 accumulator, NaN where either is NaN (or e5m2's inf - inf) — shows each code
widened exactly on either operand's path; under each widening (`cvt`, `bits`, `mixed`), chunk size,
ring depth and load order (`loads_first`)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_required import requires_gpu
from mma_cases import assert_within, error_bound, tma_plan_under, variant

pytestmark = requires_gpu()

WIDENINGS = [{"widening": "cvt"}, {"decoupled_rings": True}, {"widening": "bits"}, {"widening": "bits", "widen_bytes": 16, "widen_unroll": 2},
             {"widening": "cvt", "widen_bytes": 16, "widen_unroll": 2}, {"stages": 2, "raw_stages": 4},
             {"inline_copies": True}, {"inline_copies": True, "widening": "bits", "stages": 2, "raw_stages": 4},
             {"registers_a": True}, {"registers_a": True, "inline_copies": True, "widening": "bits"},
             {"registers_a": True, "widening": "mixed", "warp_arrivals": True},
             # a trip's loads issued first (`loads_first`, the default), with each ring and chunk form;
             # and the form before it (one chunk at a time)
             {"loads_first": True, "widen_bytes": 8}, {"loads_first": False, "widen_bytes": 8},
             {"loads_first": True, "widen_unroll": 8, "widen_bytes": 8, "decoupled_rings": True},
             {"loads_first": True, "widen_bytes": 16, "widen_unroll": 4, "widening": "mixed"},
             {"loads_first": True, "registers_a": True, "widen_unroll": 8, "widen_bytes": 8, "widening": "bits"},
             {"loads_first": True, "inline_copies": True, "widen_unroll": 8, "widen_bytes": 8}]


def _compiled_under(text: str, plan: dict):
    from intentc.runtime.cuda import compile_cuda
    with tma_plan_under(plan):
        return compile_cuda(text, "matmul_tiled", arch="sm_90a")


def _every_code(dtype: str, k: int) -> dict:
    import ml_dtypes
    numpy_dtype = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[dtype]
    codes = np.arange(256, dtype=np.uint8).view(numpy_dtype)
    a = np.zeros((256, k), numpy_dtype)
    b = np.zeros((k, 256), numpy_dtype)
    a[:, 0], b[0, :] = codes, 1.0
    a[:, 1], b[1, :] = 1.0, codes
    return {"a": a, "b": b}


@pytest.mark.parametrize("plan", WIDENINGS, ids=lambda plan: "-".join(f"{k}={v}" for k, v in plan.items()))
@pytest.mark.parametrize("dtype", ["f8e4m3fn", "f8e5m2"])
def test_every_code_widens_exactly(dtype, plan):
    from intentc.api import run
    text = variant(dtype, "f32", "f32")
    values = _every_code(dtype, 64)
    kernel = _compiled_under(text, plan)
    assert kernel.launch_config.mapping == "mma" and kernel.launch_config.mma["block"] == [128, 256, 64]
    got = kernel(values)["c"]
    expected = run(text, "matmul_tiled", values)["c"]
    assert np.isnan(expected).sum() > 0, "the codes include NaN"
    assert_within(got, expected, error_bound(values["a"], values["b"], "f32", "f32"), f"{dtype} {plan}")
    if dtype == "f8e4m3fn":     # every sum of two e4m3 values is an f32 (e5m2's span 32 bits)
        finite = np.isfinite(expected)
        assert (got[finite] == expected[finite]).all(), "a + b of two widened codes is exact in f32"


@pytest.mark.parametrize("plan", WIDENINGS[1:], ids=lambda plan: "-".join(f"{k}={v}" for k, v in plan.items()))
@pytest.mark.parametrize("m,n,k", [(300, 528, 208), (129, 16, 1008), (64, 64, 0)])
def test_plans_agree_with_the_interpreter(plan, m, n, k):
    """Random e4m3 operands, tails in M, N and K, several K tiles (the raw ring wraps), K = 0."""
    from intentc.api import run
    from mma_cases import inputs
    text = variant("f8e4m3fn", "f32", "f16")
    values = inputs("f8e4m3fn", m, n, k)
    got = _compiled_under(text, plan)(values)["c"]
    expected = run(text, "matmul_tiled", values)["c"]
    assert_within(got, expected, error_bound(values["a"], values["b"], "f32", "f16"), f"{plan} {m}x{n}x{k}")
