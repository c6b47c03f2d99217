"""Structured contractions on the tensor cores (docs/gpu.md, "Structured contractions")
against the interpreter: the MX sample (`mxfp4_scaled_matmul.kir`) with M, N tails, one
group and none (K = 0), and scales whose products leave the exact fast path (NaN code 255,
codes 0 and 254, sums below 130 and above 371)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_required import requires_gpu
from sample_paths import sample_text

pytestmark = requires_gpu()

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def _mx_inputs(m: int, n: int, g: int, seed: int, low: int = 120, high: int = 134) -> dict:
    rng = np.random.default_rng(seed)
    return {"a": rng.integers(0, 256, (m, g, 16), dtype=np.uint8),
            "a_scale": rng.integers(low, high, (m, g), dtype=np.uint8),
            "b": rng.integers(0, 256, (g, 16, n), dtype=np.uint8),
            "b_scale": rng.integers(low, high, (n, g), dtype=np.uint8)}


def _decoded(values: dict) -> tuple:
    """The dense f64 operands |A| [M, K] and |B| [K, N] the error bound is taken over."""
    a, b = values["a"], values["b"]
    m, g, _ = a.shape
    n = b.shape[2]
    with np.errstate(over="ignore"):
        pa = np.stack([E2M1[a & 15], E2M1[a >> 4]], 3).reshape(m, g, 32) * \
            np.exp2(values["a_scale"].astype(np.float64) - 127)[:, :, None]
        pb = np.stack([E2M1[b & 15], E2M1[b >> 4]], 2).reshape(g, 32, n) * \
            np.exp2(values["b_scale"].T.astype(np.float64) - 127)[:, None, :]
    return np.abs(pa.reshape(m, 32 * g)), np.abs(pb.reshape(32 * g, n))


def _check(values: dict) -> None:
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    text = sample_text("mxfp4_scaled_matmul")
    compiled = compile_cuda(text, "mxfp4_matmul")
    assert compiled.launch_config.mapping == "mma", compiled.launch_config.mapping
    got = np.asarray(compiled(values)["c"]).astype(np.float64)
    expected = np.asarray(run(text, "mxfp4_matmul", values)["c"]).astype(np.float64)
    assert got.shape == expected.shape
    assert (np.isnan(got) == np.isnan(expected)).all(), "NaN positions differ"
    infinite = np.isinf(expected)
    assert (got[infinite] == expected[infinite]).all(), "infinities differ"
    a, b = _decoded(values)
    with np.errstate(invalid="ignore", over="ignore"):
        magnitude = a @ b
    k = a.shape[1]
    bound = (k * 2.0 ** -22 + 2.0 ** -23) * magnitude + 2.0 ** -149 * k
    finite = np.isfinite(expected)
    error = np.abs(got[finite] - expected[finite])
    assert (error <= bound[finite]).all(), float(np.max(error - bound[finite]))


@pytest.mark.parametrize("m,n,g", [(128, 128, 4), (100, 70, 3), (257, 130, 5), (1, 1, 1), (5, 7, 0), (33, 300, 2)])
def test_mxfp4_against_the_interpreter(m, n, g):
    _check(_mx_inputs(m, n, g, seed=m + n + g))


def test_mxfp4_scales_off_the_fast_path():
    values = _mx_inputs(70, 90, 6, seed=7)
    values["a_scale"][0, 0] = 255           # NaN: its row's group is NaN
    values["b_scale"][3, 1] = 255
    values["a_scale"][5, :] = 0             # 2^-127: products underflow into subnormals
    values["b_scale"][5, :] = 1
    values["a_scale"][9, 2] = 254           # elements overflow to inf in f32
    values["a_scale"][10, :] = 250          # sums above 371 with large B codes
    values["b_scale"][10, :] = 200
    values["b_scale"][11, :] = 60           # sums below 130 against typical A codes
    _check(values)


def test_mxfp4_scale_extremes_everywhere():
    _check(_mx_inputs(64, 64, 3, seed=3, low=0, high=256))
