"""Casts to f16 and bf16 in the GPU's own conversions (`nvptx/narrow.py`: cvt.rn.f16.f32,
cvt.rn.f16.f64, cvt.rn.bf16.f32, and bf16 stores from the exact f32) against the
interpreter on the GPU, bit for bit (NaN = NaN, §5.2): random bit patterns over every
exponent, halfway cases, overflow to infinity, subnormals, ±0, ±inf and NaNs. The PTX check
needs no GPU."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu

NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
CAST = """
kernel @narrow(%x: view<{s}, [%N], in>, %y: view<{t}, [%N], out>, %z: view<f32, [%N], out>) {{
  parallel %N {{
  ^i(%i: index):
    %v = read %x index(%i) : {s}
    %n = cast %v : {t}
    write %y, %n index(%i)
    %w = cast %n : f32
    %d = add %w, %w : f32
    write %z, %d index(%i)
  }}
}}
"""


def sources(src: str, count: int) -> np.ndarray:
    """Random patterns, and near each format's halfway points and limits."""
    rng = np.random.default_rng(count)
    if src == "f32":
        x = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
        near = np.array([65504, 65520, 65519.996, 3.3895314e38, 3.4028235e38, 6e-8, 3e-8, 2.98e-8, 1e-40, 1 + 2**-11,
                         1 + 2**-8, 1 + 3 * 2**-8, -0.0, 0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    else:
        x = rng.integers(0, 1 << 64, count, dtype=np.uint64).view(np.float64)
        near = np.array([65504, 65520, 65519.99999999999, 1e300, 6e-8, 2.9802322387695312e-08, 2.98e-8, 1 + 2**-11,
                         1 + 2**-11 + 2**-40, -0.0, 0.0, np.inf, -np.inf, np.nan], dtype=np.float64)
    scaled = (rng.standard_normal(count) * np.exp2(rng.integers(-30, 20, count))).astype(x.dtype)
    return np.concatenate([x, scaled, near, -near])


@requires_gpu()
@pytest.mark.parametrize("src,dst", [("f32", "f16"), ("f32", "bf16"), ("f64", "f16"), ("f64", "bf16")])
def test_casts_round_like_the_interpreter(src, dst):
    x = sources(src, 1 << 12)       # the interpreter casts element by element: 2^16 took minutes
    inputs = {"x": x, "y": np.zeros(len(x), NUMPY[dst]), "z": np.zeros(len(x), np.float32)}
    got, expected = on_gpu_and_interp(CAST.format(s=src, t=dst), "narrow", inputs)
    assert_same_bits(got["y"], expected["y"], "y")
    assert_same_bits(got["z"], expected["z"], "z")


ROWS_CAST = """
kernel @narrow_rows(%x: view<f32, [%M, %N], in>, %y: view<{t}, [%M, %N], out>) {{
  parallel %M {{
  ^r(%i: index):
    %cols = iota : tensor<index, [%N]>
    %v = read %x index(%i, %cols) : tensor<f32, [%N]>
    %n = cast %v : tensor<{t}, [%N]>
    write %y, %n index(%i, %cols)
  }}
}}
"""


@requires_gpu()
@pytest.mark.parametrize("dst", ["f16", "bf16"])
@pytest.mark.parametrize("extents", [None, {"N": 1024}], ids=["dynamic", "register-form"])
def test_a_written_cast_stores_the_conversions_code(dst, extents):
    """A cast whose one use is the write stores the code the conversion computed beside the
    f64 image (`lowfloat.remember_pattern`): the interpreter's bits, NaN payloads included."""
    x = sources("f32", 1 << 12)
    x = np.resize(x, (-(-len(x) // 1024), 1024))
    inputs = {"x": x, "y": np.zeros(x.shape, NUMPY[dst])}
    got, expected = on_gpu_and_interp(ROWS_CAST.format(t=dst), "narrow_rows", inputs, extents=extents)
    assert_same_bits(got["y"], expected["y"], "y")


def test_the_casts_are_single_instructions():
    from intentc.driver import compile_kernel
    for src, dst, instruction in [("f32", "f16", "cvt.rn.f16.f32"), ("f32", "bf16", "cvt.rn.bf16.f32"),
                                  ("f64", "f16", "cvt.rn.f16.f64")]:
        ptx = compile_kernel(CAST.format(s=src, t=dst), "narrow", "ptx", "sm_90").artifacts["kernel.ptx"]
        assert instruction in ptx, (src, dst)
        assert "cvt.rni.f64.f64" not in ptx, (src, dst)       # no software rounding
