"""The lane-group dot mapping on the GPU (docs/gpu.md, "Lane-group dots"): decode attention's
scores against the interpreter — head dims on and off the vector path (D not a multiple of
8), one key, no keys, no sequences, specialized and dynamic extents, special values."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_differential import ROOT, on_gpu_and_interp
from gpu_required import requires_gpu

pytestmark = requires_gpu()

SOURCE = (ROOT / "ir_samples" / "decode_attention_scores_contract.kir").read_text()


def _bf16(values: np.ndarray) -> np.ndarray:
    import ml_dtypes
    return values.astype(ml_dtypes.bfloat16)


def _inputs(b, s, h, d, rng, special=False):
    q = _bf16(rng.standard_normal((b, h, d)))
    k = _bf16(rng.standard_normal((b, s, h, d)))
    if special and q.size and k.size:
        q[0, 0, 0], k[-1, -1, -1, -1] = np.inf, np.nan
    return {"q": q, "k": k, "scale": np.float32(1 / np.sqrt(max(d, 1))), "scores": np.zeros((b, h, s), np.float32)}


def _check(b, s, h, d, extents=None, special=False):
    rng = np.random.default_rng(b * 1000003 + s * 101 + h * 7 + d)
    values = _inputs(b, s, h, d, rng, special)
    gpu, interp = on_gpu_and_interp(SOURCE, "decode_scores", values, extents=extents)
    got, want = gpu["scores"], interp["scores"]
    assert got.shape == want.shape
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~finite & ~np.isnan(want)],
                                                                             want[~finite & ~np.isnan(want)])
    # f32 sums of exact products in another order: within D ulps of the sum of magnitudes
    magnitude = np.einsum("bhd,bshd->bhs", np.abs(values["q"].astype(np.float64)),
                          np.abs(values["k"].astype(np.float64))) * values["scale"]
    bound = 2 * max(d, 1) * np.finfo(np.float32).eps * magnitude + 1e-30
    assert np.all(np.abs(got[finite] - want[finite]) <= bound[finite]), np.max(np.abs(got - want))


@pytest.mark.parametrize("b,s,h,d", [(2, 37, 4, 128), (3, 64, 2, 64), (1, 5, 3, 20), (2, 9, 2, 300), (1, 1, 1, 8),
                                     (1, 0, 2, 16), (0, 4, 2, 16), (2, 33, 5, 1)])
def test_decode_scores_dynamic(b, s, h, d):
    _check(b, s, h, d)


@pytest.mark.parametrize("b,s,h,d", [(2, 130, 8, 128), (3, 17, 4, 64), (2, 11, 3, 36)])
def test_decode_scores_specialized(b, s, h, d):
    _check(b, s, h, d, extents={"S": s, "H": h, "D": d})


def test_decode_scores_special_values():
    _check(2, 40, 4, 64, special=True)


def test_decode_scores_mapping():
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(SOURCE, "decode_scores")
    assert compiled.launch_config.mapping == "lane-dots"
