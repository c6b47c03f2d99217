"""Every f16 and bf16 bit pattern read on the GPU, where the numbers widen in the GPU's own
conversions (`nvptx/widen.py`) and NaNs in the shared decoding: the f64 image equals the
interpreter's, and a read then write gives back the very bits, NaN payloads included (§5.2)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu

ROW = 1024
KERNEL = """
kernel @widen(%x: view<{t}, [%M, {n}], in>, %y: view<f64, [%M, {n}], out>, %z: view<{t}, [%M, {n}], out>) {{
  parallel %M {{
  ^row(%r: index):
    %lane = iota : tensor<index, [{n}]>
    %rb = broadcast %r : tensor<index, [{n}]>
    %v = read %x index(%rb, %lane) : tensor<{t}, [{n}]>
    %w = cast %v : tensor<f64, [{n}]>
    write %y, %w index(%rb, %lane)
    write %z, %v index(%rb, %lane)
  }}
}}
"""
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def every_pattern(dtype: str) -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint16).view(NUMPY[dtype]).reshape(-1, ROW)


@requires_gpu()
@pytest.mark.parametrize("dtype", sorted(NUMPY))
@pytest.mark.parametrize("row", ["1024", "%N"], ids=["register-form", "dynamic-form"])
def test_every_pattern_widens_exactly(dtype, row):
    x = every_pattern(dtype)
    inputs = {"x": x, "y": np.zeros(x.shape), "z": np.zeros_like(x)}
    got, expected = on_gpu_and_interp(KERNEL.format(t=dtype, n=row), "widen", inputs)
    assert_same_bits(got["y"], expected["y"], "f64 image")
    assert np.array_equal(got["z"].view(np.uint16), x.view(np.uint16)), "read then write changed bits"
