"""The flash mapping on tensor cores (docs/gpu.md, "Flash attention"): f16 and bf16 causal
attention (`ir_samples/attention_tensor_cores.kir`) against the interpreter — sequence lengths
on and off the 64-row / 64-key tiles (0, 1, 31, 63, 65, 100, 130), head dims below, at and
above a 64-column chunk and the 128-column pass (1, 20, 40, 64, 128, 200), specialized and
dynamic extents, strided views (the element staging), large scores and ties, inf and NaN."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gpu_differential import ROOT, on_gpu_and_interp
from gpu_required import requires_gpu

pytestmark = requires_gpu()

SOURCE = (ROOT / "ir_samples" / "attention_tensor_cores.kir").read_text()
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
# one unit in the last place at 1.0: the weights' and the output's rounding to the operand type
EPS = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def _inputs(t, d, dtype, rng, scale=None):
    q, k, v = (rng.standard_normal((t, d)).astype(DTYPES[dtype]) for _ in range(3))
    return {"q": q, "k": k, "v": v, "scale": np.float32(scale if scale is not None else 1 / np.sqrt(max(d, 1))),
            "o": np.zeros((t, d), DTYPES[dtype])}


def _close(got, want, values, dtype, what):
    """Within what the evaluation order may change: each score is an f32 sum of D exact
    products in some order (|error| <= D · eps32 · scale · sum |q k|), which exp turns into a
    relative error of the weights; a weight's rounding to the operand type may then land one
    unit apart (eps · w), moving an output by eps · max |v|; the output's own rounding one unit."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    infinite = np.isinf(want)
    assert np.array_equal(got[infinite], want[infinite]), what
    q, k, v = (np.abs(values[name].astype(np.float64)) for name in ("q", "k", "v"))
    depth = max(q.shape[1], 1)
    score_error = depth * np.finfo(np.float32).eps * float(values["scale"]) * (q @ k.T).max(axis=1, initial=0)
    top = v[np.isfinite(v)].max(initial=0)
    bound = 2 * score_error[:, None] * top + 2 * EPS[dtype] * top + 2 * EPS[dtype] * np.abs(want) + 1e-6
    finite = np.isfinite(want)
    difference = np.abs(got - want)
    assert np.all(difference[finite] <= bound[finite]), (what, float(np.max(difference[finite] - bound[finite])))


def _check(values, dtype, extents=None, what=""):
    gpu, interp = on_gpu_and_interp(SOURCE, f"causal_attention_{dtype}", values, extents=extents)
    _close(gpu["o"], interp["o"], values, dtype, f"{dtype} {what}")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("t,d", [(1, 16), (31, 64), (33, 20), (100, 128), (130, 64), (70, 1), (65, 200)])
def test_dynamic_extents(dtype, t, d):
    _check(_inputs(t, d, dtype, np.random.default_rng(t * 1009 + d)), dtype, what=f"T={t} D={d}")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("t,d", [(129, 128), (64, 64), (63, 64), (45, 40), (97, 24), (0, 64)])
def test_specialized_depth(dtype, t, d):
    _check(_inputs(t, d, dtype, np.random.default_rng(t * 7 + d)), dtype, extents={"D": d},
           what=f"T={t} D={d} specialized")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_large_scores_and_ties(dtype):
    values = _inputs(96, 64, dtype, np.random.default_rng(5), scale=4.0)
    values["k"][10:20] = values["k"][10]          # tied keys
    values["q"][40] = 0                           # a row of equal scores
    _check(values, dtype, extents={"D": 64}, what="large scores, ties")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("t,row", [(80, 3), (200, 150)])
def test_non_finite_values(dtype, t, row):
    # an inf and a NaN in V reach every row through the masked slices (0 · inf = NaN), also
    # where they lie in tiles the mapping skips when V is finite there (row 150: it folds them)
    values = _inputs(t, 64, dtype, np.random.default_rng(row))
    values["v"][row, 2] = np.inf
    values["v"][min(row + 40, t - 1), 5] = np.nan
    _check(values, dtype, extents={"D": 64}, what=f"inf and NaN values at row {row}")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_strided_views_stage_by_elements(dtype):
    # every other column of wider arrays: no 16-byte rows, the element staging
    values = _inputs(70, 64, dtype, np.random.default_rng(11))
    for name in ("q", "k", "v"):
        wide = np.zeros((70, 128), DTYPES[dtype])
        wide[:, ::2] = values[name]
        values[name] = wide[:, ::2]
    _check(values, dtype, extents={"D": 64}, what="strided views")


def test_tensor_core_mapping_chosen():
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(SOURCE, "causal_attention_f16", {"extents": {"D": 64}})
    assert compiled.launch_config.mapping == "flash"
    assert "mma.sync" in compiled.launch_config.to_json()["plan"]["instruction"]
