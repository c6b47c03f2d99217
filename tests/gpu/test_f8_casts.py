"""Casts of f32 to the fp8 formats in the GPU's own conversions (`nvptx/f8_casts.py`:
`cvt.rn.satfinite.{e4m3,e5m2}x2.f32` for `saturating_cast` and for `cast` to f8e5m2, with
infinity beside it for a finite overflow, and the stores' exact narrowing) against the
interpreter on the GPU, bit for bit (NaN = NaN, §5.2): every fp8 value and every halfway
point between neighbours, a few f32 ulps either side of each, overflow (448, 57344, 61440),
subnormals, ±0, ±inf, NaNs and random bit patterns; the casts' values are read back as f32
too (the register image). The PTX checks need no GPU."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu

CASTS = """
kernel @f8_casts(%x: view<f32, [%M, %N], in>, %s4: view<f8e4m3fn, [%M, %N], out>, %s5: view<f8e5m2, [%M, %N], out>,
                 %c5: view<f8e5m2, [%M, %N], out>, %wide: view<f32, [%M, %N], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %v = read %x index(%i, %cols) : tensor<f32, [%N]>
    %a = saturating_cast %v : tensor<f8e4m3fn, [%N]>
    %b = saturating_cast %v : tensor<f8e5m2, [%N]>
    %c = cast %v : tensor<f8e5m2, [%N]>
    write %s4, %a index(%i, %cols)
    write %s5, %b index(%i, %cols)
    write %c5, %c index(%i, %cols)
    %wa = cast %a : tensor<f32, [%N]>
    %wb = cast %b : tensor<f32, [%N]>
    %wc = cast %c : tensor<f32, [%N]>
    %ab = add %wa, %wb : tensor<f32, [%N]>
    %sum = add %ab, %wc : tensor<f32, [%N]>
    write %wide, %sum index(%i, %cols)
  }
}
"""
COLUMNS = 4096


def critical_values() -> np.ndarray:
    """Every positive fp8 value of both formats and the halfway points between neighbours,
    with the f32 values up to 3 ulps either side, both signs; the limits and specials."""
    grid = []
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        values = np.arange(0, 0x80, dtype=np.uint8).view(dtype).astype(np.float64)
        values = values[np.isfinite(values)]
        grid += [values, (values[:-1] + values[1:]) / 2, values * 2 ** -1, values * 1.5]
    centre = np.concatenate(grid).astype(np.float32)
    bits = centre.view(np.uint32).astype(np.int64)
    near = np.concatenate([bits + step for step in range(-3, 4)])
    near = near[(near >= 0) & (near < 0x7F800000)].astype(np.uint32).view(np.float32)
    limits = np.array([448, 464, 480, 57344, 61439.996, 61440, 65536, 1e30, 3.4028235e38, 2 ** -9, 2 ** -10,
                       2 ** -16, 2 ** -17, 1e-40, 0.0, np.inf], dtype=np.float32)
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000], dtype=np.uint32).view(np.float32)
    positive = np.concatenate([near, limits, nans])
    return np.concatenate([positive, -positive])


def inputs(rows_of_random: int) -> np.ndarray:
    rng = np.random.default_rng(8)
    values = np.concatenate([critical_values(),
                             rng.integers(0, 1 << 32, rows_of_random * COLUMNS, dtype=np.uint64).astype(np.uint32)
                             .view(np.float32),
                             (rng.standard_normal(rows_of_random * COLUMNS)
                              * np.exp2(rng.integers(-20, 18, rows_of_random * COLUMNS))).astype(np.float32)])
    rows = -(-len(values) // COLUMNS)
    return np.resize(values, rows * COLUMNS).reshape(rows, COLUMNS)


@requires_gpu()
@pytest.mark.parametrize("extents", [None, {"N": COLUMNS}], ids=["dynamic", "register-form"])
def test_f8_casts_round_like_the_interpreter(extents):
    x = inputs(8)
    shape = x.shape
    outputs = {"s4": np.zeros(shape, ml_dtypes.float8_e4m3fn), "s5": np.zeros(shape, ml_dtypes.float8_e5m2),
               "c5": np.zeros(shape, ml_dtypes.float8_e5m2), "wide": np.zeros(shape, np.float32)}
    got, expected = on_gpu_and_interp(CASTS, "f8_casts", {"x": x, **outputs}, extents=extents)
    for name in outputs:
        assert_same_bits(got[name], expected[name], name)


@pytest.mark.parametrize("arch,hardware", [("sm_90", True), ("sm_80", False)])
def test_the_casts_use_the_conversion_instructions_where_the_arch_has_them(arch, hardware):
    from intentc.driver import compile_kernel
    ptx = compile_kernel(CASTS, "f8_casts", "ptx", arch).artifacts["kernel.ptx"]
    assert ("cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.satfinite.e5m2x2.f32" in ptx) == hardware
    assert ("cvt.rni.f64.f64" in ptx) != hardware        # the shared software rounding
    assert ("cvt.rn.f16x2.e4m3x2" in ptx) == hardware      # the casts are read back: their f16 images


def test_a_cast_that_is_only_stored_is_converted_once():
    """The e4m3 quantizer stores its casts and reads none back: the store takes the code the
    conversion computed, and the widening back to f16, an asm of its own, is deleted."""
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    from sample_paths import sample_text
    ptx = compile_kernel(sample_text("f8_rowwise_quant"), "quantize_e4m3_rowwise", "ptx", "sm_90",
                         specialization=Specialization(extents={"N": 1024})).artifacts["kernel.ptx"]
    assert ptx.count("cvt.rn.satfinite.e4m3x2.f32") == 16 and "cvt.rn.f16x2" not in ptx
