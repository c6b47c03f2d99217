"""Facts about scalar dtypes that every stage shares: classes, widths, ranges, the §3
accumulator widening table and the §6 identities of builtin reductions."""
from __future__ import annotations

import math

from .types import BIT_WIDTH, FLOATS, INTEGERS, SIGNED_INTS, UNSIGNED_INTS

# §3: reduce.sum / cumsum accumulator when none is given.
SUM_WIDENING = {
    "i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32",
    "f8e4m3fn": "f32", "f8e5m2": "f32", "f16": "f32", "bf16": "f32",
}

# Largest finite magnitude of each float format.
FLOAT_MAX = {
    "f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
    "f64": 1.7976931348623157e308, "f8e4m3fn": 448.0, "f8e5m2": 57344.0,
}
# Element dtypes of atomic objects (§11 leaves the set open; every target has 32- and
# 64-bit atomic instructions, narrower ones would need masked CAS loops): docs/kir.md §8.
ATOMIC_DTYPES = ("i32", "i64", "u32", "u64", "f32", "f64")

# Formats without an infinity (§5.2): f8e4m3fn.
FLOATS_WITHOUT_INF = ("f8e4m3fn",)


def is_int(dtype: str) -> bool:
    return dtype in INTEGERS


def is_signed(dtype: str) -> bool:
    return dtype in SIGNED_INTS


def is_unsigned(dtype: str) -> bool:
    return dtype in UNSIGNED_INTS


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def width(dtype: str) -> int:
    return BIT_WIDTH[dtype]


def int_range(dtype: str) -> tuple[int, int]:
    bits = BIT_WIDTH[dtype]
    if dtype in SIGNED_INTS:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def sum_accumulator(dtype: str) -> str:
    return SUM_WIDENING.get(dtype, dtype)


def representable(value, dtype: str) -> bool:
    """Whether a literal can be instantiated in `dtype` (§3): in range, integral for ints.

    A finite float literal is representable in a float format when rounding it does not
    overflow; inf and nan only where the format has them (f8e4m3fn has NaN, no inf).
    """
    if dtype == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if is_int(dtype):
        if isinstance(value, float):
            if not value.is_integer():
                return False
            value = int(value)
        low, high = int_range(dtype)
        return low <= value <= high
    if isinstance(value, int):
        value = float(value) if abs(value) < 2 ** 1024 else math.inf
    if math.isnan(value):
        return True
    if math.isinf(value):
        return dtype not in FLOATS_WITHOUT_INF
    return abs(value) <= FLOAT_MAX[dtype] or _rounds_to_max(abs(value), dtype)


def _rounds_to_max(magnitude: float, dtype: str) -> bool:
    import ml_dtypes
    import numpy as np

    numpy_type = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
                  "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[dtype]
    with np.errstate(over="ignore"):
        rounded = float(np.array(magnitude, dtype=np.float64).astype(numpy_type))
    return math.isfinite(rounded)
