"""The flash mapping on the GPU (docs/gpu.md, "Flash attention"): causal attention written as a
region_fold against the interpreter — sequence lengths on and off the tiles (1, 31, 33, 100,
130), head dims below, at and above a column block (1, 20, 64, 128, 200), specialized and
dynamic extents, large scores (exp near overflow), ties, and NaN / inf values; each with the
default plan and with the key groups (CompileOptions(gpu_paths=("flash-key-groups",)), awaiting GPU
verification)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_differential import ROOT, on_gpu_and_interp
from gpu_required import requires_gpu
from intentc.options import CompileOptions

pytestmark = requires_gpu()


@pytest.fixture(params=[False, True], ids=["one-group", "key-groups"])
def options(request):
    return CompileOptions(gpu_paths=("flash-key-groups",) if request.param else ())

SOURCE = (ROOT / "ir_samples" / "attention_region_fold.kir").read_text()


def _inputs(t, d, rng, scale=None):
    q, k, v = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(3))
    return {"q": q, "k": k, "v": v, "scale": np.float32(scale if scale is not None else 1 / np.sqrt(max(d, 1))),
            "o": np.zeros((t, d), np.float32)}


def _close(got, want, values, what):
    """Within the error an f32 evaluation can make: each score s = scale · q · k is an f32
    sum of D products in some order (|error| <= D · eps · scale · sum |q k|, a priori), which
    exp turns into a relative error of the weights, so an output element may move by about
    twice that times max |v|; plus libdevice's expf (2 ulp) and the sums' own rounding."""
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), what
    q, k, v = (np.abs(values[name].astype(np.float64)) for name in ("q", "k", "v"))   # V may hold inf, NaN
    depth = max(q.shape[1], 1)
    score_error = depth * np.finfo(np.float32).eps * float(values["scale"]) * (q @ k.T).max(axis=1, initial=0)
    bound = 2 * score_error[:, None] * v[np.isfinite(v)].max(initial=0) + 2e-5 * (1 + np.abs(want))
    difference = np.abs(got.astype(np.float64) - want)
    assert np.all(difference[finite] <= bound[finite]), (what, float(np.max(difference[finite] - bound[finite])))


def _check(values, options, extents=None, what=""):
    gpu, interp = on_gpu_and_interp(SOURCE, "causal_attention", values, options=options, extents=extents)
    _close(gpu["o"], interp["o"], values, what)


@pytest.mark.parametrize("t,d", [(1, 16), (31, 64), (33, 20), (100, 128), (130, 64), (70, 1), (65, 200)])
def test_causal_attention_dynamic(t, d, options):
    _check(_inputs(t, d, np.random.default_rng(t * 1009 + d)), options, what=f"T={t} D={d}")


@pytest.mark.parametrize("t,d", [(129, 128), (64, 64), (45, 40)])
def test_causal_attention_specialized(t, d, options):
    _check(_inputs(t, d, np.random.default_rng(t * 7 + d)), options, extents={"D": d}, what=f"T={t} D={d} specialized")


def test_large_scores_and_ties(options):
    values = _inputs(96, 32, np.random.default_rng(5), scale=20.0)
    values["k"][10:20] = values["k"][10]          # tied keys
    values["q"][40] = 0.0                         # a row of equal scores
    _check(values, options, what="large scores, ties")


@pytest.mark.parametrize("t,row", [(80, 3), (200, 150)])
def test_non_finite_values(t, row, options):
    # an inf and a NaN in V reach every row through the masked slices (0 · inf = NaN), also
    # where they lie in tiles the mapping skips when V is finite there (row 150: it folds them)
    values = _inputs(t, 16, np.random.default_rng(row))
    values["v"][row, 2] = np.inf
    values["v"][min(row + 40, t - 1), 5] = np.nan
    _check(values, options, what=f"inf and NaN values at row {row}")


def test_flash_mapping_chosen():
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(SOURCE, "causal_attention")
    assert compiled.launch_config.mapping == "flash"
