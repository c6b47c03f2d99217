"""Small KIR programs for differential tests, and inputs full of special values."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from intentc.interp.values import np_dtype
from intentc.ir.dtypes import int_range

FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.1, -2.5, 3.5, 0.5, 1.5, 448.0, 449.0, 57344.0,
                  65504.0, 65520.0, 1e-8, -1e-30, 1e-45, 1e-310, 3.4e38, -1.7e308, 2.0 ** -24, 2.0 ** -14, 1e5]


def unary_kernel(op: str, src: str, dst: str) -> str:
    return f"""kernel @k(%x: view<{src}, [%N], in>, %y: view<{dst}, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<{src}, [%N]>
  %r = {op} %v : tensor<{dst}, [%N]>
  write %y, %r index(%i)
}}"""


def binary_kernel(op: str, dtype: str, result: str | None = None) -> str:
    result = result or dtype
    return f"""kernel @k(%a: view<{dtype}, [%N], in>, %b: view<{dtype}, [%N], in>, %y: view<{result}, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %u = read %a index(%i) : tensor<{dtype}, [%N]>
  %v = read %b index(%i) : tensor<{dtype}, [%N]>
  %r = {op} %u, %v : tensor<{result}, [%N]>
  write %y, %r index(%i)
}}"""


def special_values(dtype: str, rng: np.random.Generator, count: int = 64) -> np.ndarray:
    """Special values of `dtype` (those representable) followed by random ones."""
    target = np_dtype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, count).astype(bool)
    if target.kind in "iu":
        low, high = int_range(dtype)
        fixed = [0, 1, low, high, low + 1, high - 1, 7, 2, 3] + ([-1, -7, -2] if low < 0 else [])
        random = rng.integers(low, high, count, dtype=target, endpoint=True)
        return np.concatenate([np.array(fixed, dtype=target), random])
    with np.errstate(all="ignore"):
        fixed = np.array(FLOAT_SPECIALS, dtype=np.float64)
        if dtype == "f8e4m3fn":
            fixed = fixed[~np.isinf(fixed) & (np.abs(np.nan_to_num(fixed)) <= 448)]
        random = rng.standard_normal(count) * np.exp2(rng.integers(-20, 20, count))
        values = np.concatenate([fixed, random]).astype(target)
    if dtype in ("f16", "bf16", "f8e5m2", "f8e4m3fn"):
        bits = rng.integers(0, 1 << (8 * target.itemsize), count).astype(f"u{target.itemsize}").view(target)
        values = np.concatenate([values, bits])
    return values


LOW = {"bf16": ml_dtypes.bfloat16}
