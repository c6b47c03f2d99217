"""Structured contractions on the tensor cores (docs/gpu.md, "Structured contractions")
against the interpreter: the MX sample (`mxfp4_scaled_matmul.kir`) with M, N tails, one
group and none (K = 0), and scales whose products leave the exact fast path (NaN code 255,
codes 0 and 254, sums below 130 and above 371)."""
from __future__ import annotations

import contextlib
from unittest import mock

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
    # sums above 371 with large B codes. Row 10's big group holds one nonzero element, so each output of
    # the row has at most one huge term: whether it overflows does not depend on the summation order
    # (the interpreter sums in BLAS's order, not the kernel's; both are legal, §6)
    values["a_scale"][10, 0] = 250
    values["a"][10, 0, :] = 0
    values["a"][10, 0, 3] = 0x07            # e2m1 code 7: 6.0
    values["b_scale"][10, :] = 200
    values["b_scale"][11, :] = 60           # sums below 130 against typical A codes
    _check(values)


def test_mxfp4_scale_extremes_everywhere():
    """Codes from 0 (subnormal products) to 184, and NaN codes: products stay below f32's
    overflow, so no partial sum overflows in one summation order and not in another."""
    values = _mx_inputs(64, 64, 3, seed=3, low=0, high=185)
    values["a_scale"][::9, 1] = 255
    values["b_scale"][::13, 2] = 255
    _check(values)


# ---- sparse 2:4 and 1:2 ------------------------------------------------------------------------
TWO_OF_FOUR = np.array([p | (q << 2) for p in range(4) for q in range(p + 1, 4)], dtype=np.uint8)


def _sparse_inputs(pattern: str, m: int, kq: int, n: int, seed: int) -> dict:
    """K = 4·KQ (2:4) or 2·KH (1:2) logical positions, values N(0, 1)."""
    rng = np.random.default_rng(seed)
    if pattern == "two_of_four":
        kh, k = 2 * kq, 4 * kq
        return {"a": rng.standard_normal((m, kh)).astype(np.float16),
                "meta": TWO_OF_FOUR[rng.integers(0, 6, (m, kq))],
                "b": rng.standard_normal((k, n)).astype(np.float16)}
    kh, k = kq, 2 * kq
    return {"a": rng.standard_normal((m, kh)).astype(np.float32),
            "meta": rng.integers(0, 2, (m, kh)).astype(np.uint8),
            "b": rng.standard_normal((k, n)).astype(np.float32)}


SPARSE = {"two_of_four": ("sparse_2of4_matmul", "sparse24_matmul"),
          "one_of_two": ("sparse_1of2_matmul", "sparse12_matmul")}
# (pattern, on mma.sp): 2:4 on mma.sp (its default) and on the decoding path (1:2's, and 2:4's
# with 32-position IR steps)
PATHS = [("one_of_two", False), ("two_of_four", False), ("two_of_four", True)]


def _dense(values: dict, pattern: str) -> np.ndarray:
    a, meta = values["a"].astype(np.float64), values["meta"]
    m, kh = a.shape
    if pattern == "two_of_four":
        dense = np.zeros((m, kh // 2, 4))
        dense[np.arange(m)[:, None], np.arange(kh // 2)[None, :], meta & 3] = a[:, 0::2]
        dense[np.arange(m)[:, None], np.arange(kh // 2)[None, :], (meta >> 2) & 3] = a[:, 1::2]
        return dense.reshape(m, 2 * kh)
    dense = np.zeros((m, kh, 2))
    dense[np.arange(m)[:, None], np.arange(kh)[None, :], meta] = a
    return dense.reshape(m, 2 * kh)


def _compiled(text: str, kernel: str, sparse_mma: bool):
    """The compiled kernel; without `sparse_mma` a 2:4 kernel is planned on the decoding path
    (the plan is data: the same kernel, another plan; compile_cuda does not cache)."""
    from intentc.codegen.nvptx import tile_sparse
    from intentc.runtime.cuda import compile_cuda
    decoded = mock.patch.object(tile_sparse, "plan_sparse_mma", lambda contraction: None)
    with contextlib.nullcontext() if sparse_mma else decoded:
        compiled = compile_cuda(text, kernel)
    assert compiled.launch_config.mapping == "mma", compiled.launch_config.mapping
    assert (compiled.launch_config.mma["instruction"] == "mma.sp.m16n8k32") == sparse_mma
    return compiled


def _check_sparse(pattern: str, values: dict, text: str | None = None, positions: np.ndarray | None = None,
                  sparse_mma: bool = False) -> None:
    """The compiled kernel against the interpreter (`positions`: the metadata in the
    sample's packing, where `values` packs it otherwise)."""
    from intentc.api import run
    sample, kernel = SPARSE[pattern]
    text = text or sample_text(sample)
    compiled = _compiled(text, kernel, sparse_mma)
    got = np.asarray(compiled(values)["c"]).astype(np.float64)
    expected = np.asarray(run(text, kernel, values)["c"]).astype(np.float64)
    assert (np.isnan(got) == np.isnan(expected)).all(), "NaN positions differ"
    infinite = np.isinf(expected)
    assert (got[infinite] == expected[infinite]).all(), "infinities differ"
    # over the finite B elements: a finite output selects none of the others
    finite_b = np.abs(values["b"].astype(np.float64))
    finite_b[~np.isfinite(finite_b)] = 0
    magnitude = np.abs(_dense({**values, "meta": values["meta"] if positions is None else positions}, pattern)) @ finite_b
    bound = (values["b"].shape[0] * 2.0 ** -22 + 2.0 ** -23) * magnitude
    finite = np.isfinite(expected)
    error = np.abs(got[finite] - expected[finite])
    assert (error <= bound[finite]).all(), float(np.max(error - bound[finite]))


@pytest.mark.parametrize("pattern,sparse_mma", PATHS)
@pytest.mark.parametrize("m,kq,n", [(128, 32, 128), (100, 20, 70), (257, 37, 130), (1, 1, 1), (5, 0, 7)])
def test_sparse_against_the_interpreter(pattern, sparse_mma, m, kq, n):
    _check_sparse(pattern, _sparse_inputs(pattern, m, kq, n, seed=m + kq + n), sparse_mma=sparse_mma)


@pytest.mark.parametrize("sparse_mma", [False, True])
@pytest.mark.parametrize("m,kq,n", [(128, 32, 128), (100, 20, 70), (33, 5, 9)])
def test_sparse24_bf16_against_the_interpreter(m, kq, n, sparse_mma):
    from ml_dtypes import bfloat16
    values = _sparse_inputs("two_of_four", m, kq, n, seed=m + kq + n)
    values.update(a=values["a"].astype(bfloat16), b=values["b"].astype(bfloat16))
    _check_sparse("two_of_four", values, sample_text("sparse_2of4_matmul").replace("f16", "bf16"),
                  sparse_mma=sparse_mma)


@pytest.mark.parametrize("sparse_mma", [False, True])
def test_sparse24_metadata_in_other_bits_is_re_encoded(sparse_mma):
    """Positions at bits 4-5 and 6-7 of the byte, junk in the low nibble, fill 0x40."""
    text = sample_text("sparse_2of4_matmul")
    for old, new in [("%shift2 = full {value = 2}", "%shift2 = full {value = 6}"),
                     ("%first = and %packed, %two_bits", "%low = shr %packed, %shift4 : tensor<u8, [32, 16]>\n"
                                                         "      %first = and %low, %two_bits"),
                     ("%two_bits = full", "%shift4 = full {value = 4} : tensor<u8, [32, 16]>\n  %two_bits = full"),
                     ("%default_meta = constant {value = 4}", "%default_meta = constant {value = 64}")]:
        assert old in text
        text = text.replace(old, new)
    values = _sparse_inputs("two_of_four", 75, 21, 66, seed=4)
    positions = values["meta"]
    values["meta"] = (positions << 4) | np.random.default_rng(4).integers(0, 16, positions.shape, dtype=np.uint8)
    _check_sparse("two_of_four", values, text, positions, sparse_mma)


@pytest.mark.parametrize("pattern,sparse_mma", PATHS)
def test_sparse_unselected_infinities_change_nothing(pattern, sparse_mma):
    """inf and NaN in B rows no kept value selects (a 0 · inf would be NaN on a dense
    operand), and NaN / inf among the kept values themselves."""
    values = _sparse_inputs(pattern, 70, 24, 90, seed=11)
    dense = _dense(values, pattern)
    unselected = np.argwhere(dense[3] == 0)[:, 0]
    values["b"][unselected[:3], :] = np.inf
    values["b"][unselected[3], 5] = np.nan
    values["a"][10, 0] = np.inf
    values["a"][12, 1] = np.nan
    _check_sparse(pattern, values, sparse_mma=sparse_mma)


@pytest.mark.parametrize("pattern,sparse_mma", PATHS)
def test_sparse_invalid_metadata_is_the_interpreters_error(pattern, sparse_mma):
    from intentc.api import run
    from intentc.diagnostics import DiagnosticError
    sample, kernel = SPARSE[pattern]
    text = sample_text(sample)
    values = _sparse_inputs(pattern, 40, 16, 40, seed=5)
    values["meta"][7, 3] = 0b0101 if pattern == "two_of_four" else 2    # first == second / outside {0, 1}
    with pytest.raises(DiagnosticError) as interpreted:
        run(text, kernel, values)
    with pytest.raises(DiagnosticError) as compiled:
        _compiled(text, kernel, sparse_mma)(values)
    assert compiled.value.diagnostics[0].code == interpreted.value.diagnostics[0].code
