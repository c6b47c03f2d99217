"""The flash mapping on the GPU (docs/gpu.md, "Flash attention"): causal attention written as a
region_fold against the interpreter — sequence lengths on and off the tiles (1, 31, 33, 100,
130), head dims below, at and above a column block (1, 20, 64, 128, 200), specialized and
dynamic extents, large scores (exp near overflow), ties, and NaN / inf values; each with the
default plan (two key groups) and with one group, 2 CTAs an SM (the plan before key groups,
one that `bench/gpu_attention.py --sweep` times)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpu_differential import ROOT, on_gpu_and_interp
from gpu_required import requires_gpu
from intentc.codegen.nvptx import flash_attention

pytestmark = requires_gpu()


@pytest.fixture(params=[None, {"groups": 1, "resident": 2}], ids=["key-groups", "one-group"])
def plan(request, monkeypatch):
    """The plan's fields to replace while the test compiles (the plan is data: the same kernel)."""
    chosen = flash_attention.plan_flash
    if request.param:
        monkeypatch.setattr(flash_attention, "plan_flash", lambda kernel, known: dataclasses.replace(
            chosen(kernel, known), **request.param))
    return request.param

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


def _check(values, extents=None, what=""):
    gpu, interp = on_gpu_and_interp(SOURCE, "causal_attention", values, extents=extents)
    _close(gpu["o"], interp["o"], values, what)


@pytest.mark.parametrize("t,d", [(1, 16), (31, 64), (33, 20), (100, 128), (130, 64), (70, 1), (65, 200)])
def test_causal_attention_dynamic(t, d, plan):
    _check(_inputs(t, d, np.random.default_rng(t * 1009 + d)), what=f"T={t} D={d}")


@pytest.mark.parametrize("t,d", [(129, 128), (64, 64), (45, 40)])
def test_causal_attention_specialized(t, d, plan):
    _check(_inputs(t, d, np.random.default_rng(t * 7 + d)), extents={"D": d}, what=f"T={t} D={d} specialized")


def test_large_scores_and_ties(plan):
    values = _inputs(96, 32, np.random.default_rng(5), scale=20.0)
    values["k"][10:20] = values["k"][10]          # tied keys
    values["q"][40] = 0.0                         # a row of equal scores
    _check(values, what="large scores, ties")


@pytest.mark.parametrize("t,row", [(80, 3), (200, 150)])
def test_non_finite_values(t, row, plan):
    # an inf and a NaN in V reach every row through the masked slices (0 · inf = NaN), also
    # where they lie in tiles the mapping skips when V is finite there (row 150: it folds them)
    values = _inputs(t, 16, np.random.default_rng(row))
    values["v"][row, 2] = np.inf
    values["v"][min(row + 40, t - 1), 5] = np.nan
    _check(values, what=f"inf and NaN values at row {row}")


def test_flash_mapping_chosen():
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(SOURCE, "causal_attention")
    assert compiled.launch_config.mapping == "flash"
