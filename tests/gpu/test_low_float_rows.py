"""Rows of f16/bf16 read only by arithmetic (widened without keeping NaN bits,
`codegen/llvm/nan_payloads.py`) and float maximum/minimum in one instruction
(`max.NaN.f32`, the NVPTX `float_extreme` hook), against the interpreter on the GPU: special
values (NaN of every sign and payload, ±inf, ±0, subnormals) in every row, bits compared
wherever the result does not depend on the parenthesization (max, min, the NaN-ness and
signed zeros of everything). The PTX checks need no GPU."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import load_test_module, on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text

NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
COLUMNS = [1, 33, 2048, 3000]

EXTREMES = """
kernel @extremes(%x: view<{t}, [%M, %N], in>, %hi: view<{t}, [%M], out>, %lo: view<{t}, [%M], out>,
                 %pair: view<f32, [%M, %N], out>) {{
  parallel %M {{
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %row = read %x index(%i, %cols) : tensor<{t}, [%N]>
    %hi_v = reduce %row {{axes = [0], kind = max}} : {t}
    %lo_v = reduce %row {{axes = [0], kind = min}} : {t}
    write %hi, %hi_v index(%i)
    write %lo, %lo_v index(%i)
    %wide = cast %row : tensor<f32, [%N]>
    %first = read %x index(%i, %cols) : tensor<{t}, [%N]>
    %first32 = cast %first : tensor<f32, [%N]>
    %lo_b = broadcast %lo_v : tensor<{t}, [%N]>
    %lo32 = cast %lo_b : tensor<f32, [%N]>
    %m = maximum %wide, %lo32 : tensor<f32, [%N]>
    %n = minimum %m, %first32 : tensor<f32, [%N]>
    write %pair, %n index(%i, %cols)
  }}
}}
"""


def special_rows(dtype: str, rows: int, cols: int, seed: int) -> np.ndarray:
    """Random rows in which special patterns sit at random places; some rows hold only
    zeros of both signs, some a NaN."""
    rng = np.random.default_rng(seed)
    numpy = NUMPY[dtype]
    x = rng.standard_normal((rows, cols)).astype(numpy)
    bits = x.view(np.uint16)
    specials = np.array([0x8000, 0x0000, 0x7C00 if dtype == "f16" else 0x7F80, 0xFC00 if dtype == "f16" else 0xFF80,
                         0x0001, 0x8001], dtype=np.uint16)
    nans = np.array([0x7E00, 0xFE01, 0x7D55] if dtype == "f16" else [0x7FC0, 0xFFC1, 0x7F81], dtype=np.uint16)
    place = rng.random((rows, cols)) < 0.02
    bits[place] = rng.choice(specials, place.sum())
    bits[::5] = rng.choice(np.array([0x0000, 0x8000], dtype=np.uint16), (len(bits[::5]), cols))
    nan_rows = rng.random(rows) < 0.2
    bits[nan_rows, rng.integers(0, cols, nan_rows.sum())] = rng.choice(nans, nan_rows.sum())
    return x


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
@pytest.mark.parametrize("form", ["register", "dynamic"])
def test_f16_row_sums_read_for_arithmetic_only(cols, form):
    x = special_rows("f16", 37, cols, cols)
    extents = {"N": cols} if form == "register" else None
    got, expected = on_gpu_and_interp(sample_text("row_sum"), "row_sum_f16", {"x": x, "y": np.zeros(37, np.float32)},
                                      extents=extents)
    assert_same_bits(np.isnan(got["y"]), np.isnan(expected["y"]), "NaN rows")
    assert_close(got["y"], expected["y"], 1e-5, "row sums")


@requires_gpu()
@pytest.mark.parametrize("dtype", sorted(NUMPY))
@pytest.mark.parametrize("cols", COLUMNS)
@pytest.mark.parametrize("form", ["register", "dynamic"])
def test_extremes_keep_nan_and_signed_zeros(dtype, cols, form):
    x = special_rows(dtype, 41, cols, 7 * cols)
    inputs = {"x": x, "hi": np.zeros(41, NUMPY[dtype]), "lo": np.zeros(41, NUMPY[dtype]),
              "pair": np.zeros((41, cols), np.float32)}
    extents = {"N": cols} if form == "register" else None
    got, expected = on_gpu_and_interp(EXTREMES.format(t=dtype), "extremes", inputs, extents=extents)
    for name in ("hi", "lo", "pair"):
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("cols", [2048, 3000])
def test_row_max_sample(cols):
    x = special_rows("bf16", 29, cols, cols + 1)
    inputs = {"x": x, "y": np.zeros(29, ml_dtypes.bfloat16), "y32": np.zeros(29, np.float32)}
    got, expected = on_gpu_and_interp(sample_text("row_max"), "row_max", inputs, extents={"N": cols})
    assert_same_bits(got["y"], expected["y"], "y")
    assert_same_bits(got["y32"], expected["y32"], "y32")


# ---- the generated code (no GPU) ---------------------------------------------------------------------
def _ptx(text: str, kernel: str, extents: dict) -> str:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    result = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents))
    json.loads(result.artifacts["launch.json"])
    return result.artifacts["kernel.ptx"]


def test_f16_summed_in_f32_widens_in_one_conversion():
    ptx = _ptx(sample_text("row_sum"), "row_sum_f16", {"N": 2048})
    assert "cvt.f32.f16" in ptx
    assert "cvt.f64.f16" not in ptx         # no f64 image kept for NaN bits nobody sees


def test_read_then_written_keeps_nan_bits():
    copy = """
kernel @copy(%x: view<f16, [%N], in>, %y: view<f16, [%N], out>, %s: view<f32, [%N], out>) {
  parallel %N {
  ^i(%i: index):
    %v = read %x index(%i) : f16
    write %y, %v index(%i)
    %w = cast %v : f32
    write %s, %w index(%i)
  }
}
"""
    assert "cvt.f64.f16" in _ptx(copy, "copy", {})     # the write must give back the bits


def test_float_maximum_is_one_instruction():
    ptx = _ptx(sample_text("row_max"), "row_max", {"N": 2048})
    assert "max.NaN.f32" in ptx and "setp.eq.f32" not in ptx     # no compare-and-select for -0 < +0


@requires_gpu()
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f8e4m3fn", "f8e5m2"])
@pytest.mark.parametrize("form", ["register", "dynamic"])
def test_a_copied_row_moves_storage_words(dtype, form):
    cases = load_test_module("tests/codegen/test_nan_payloads.py", "nan_payload_cases")
    width = np.dtype(cases.NUMPY[dtype]).itemsize * 8
    bits = f"u{width // 8}"
    x = np.arange(1 << width, dtype=bits).view(cases.NUMPY[dtype]).reshape(-1, 256)
    inputs = {"x": x, "y": np.zeros_like(x), "fill": np.array(-1.5, dtype=cases.NUMPY[dtype]), "limit": np.int64(200)}
    got, expected = on_gpu_and_interp(cases.COPY.format(t=dtype), "copy", inputs,
                                      extents={"N": 256} if form == "register" else None)
    assert np.array_equal(got["y"].view(bits), expected["y"].view(bits))

