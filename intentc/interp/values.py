"""How KIR values live in the interpreter, and exact rounding to every float format.

A tensor is a numpy array (a scalar is a 0-d array) of the dtype's numpy type; `index` is
int64. Tuples are Python tuples, records `RecordValue`s, enum values `EnumValue`s. Views and
buffers are in `memory.py`.

`round_to_format` rounds exact float64 values to any narrower float format with
round-to-nearest-even in one step (ml_dtypes converts float64 to bfloat16 through float32,
which rounds twice); `exact_f64` gives a float64 that rounds to the same result as the
exact source value, for integer sources wider than 53 bits (round-to-odd).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..ir.dtypes import FORMATS, is_float, is_int, is_signed  # noqa: F401  (re-exported)
from ..ir.errors import F8E4M3_OVERFLOW
from .errors import check

NUMPY_DTYPE: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_), "index": np.dtype(np.int64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64), "f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
# Numpy dtype → KIR dtype name (int64 maps to i64; `index` is chosen by the declared type).
KIR_DTYPE = {v: k for k, v in NUMPY_DTYPE.items() if k != "index"}

UNSIGNED_OF = {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64", "index": "u64"}


LOW_PRECISION = ("f16", "bf16", "f8e4m3fn", "f8e5m2")


@dataclass(frozen=True)
class RecordValue:
    fields: tuple[tuple[str, object], ...]

    def get(self, name: str):
        return next(value for key, value in self.fields if key == name)


@dataclass(frozen=True)
class EnumValue:
    enum: str
    member: str


def np_dtype(dtype: str) -> np.dtype:
    return NUMPY_DTYPE[dtype]


def as_array(value, dtype: str) -> np.ndarray:
    return np.asarray(value, dtype=NUMPY_DTYPE[dtype])


def to_f64(x: np.ndarray) -> np.ndarray:
    """Exact float64 image of a float array of any format (every format widens exactly)."""
    return np.asarray(x).astype(np.float64)


def round_to_format(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round exact float64 values to `dtype`'s grid with RNE; overflow gives ±inf (float64)."""
    x = np.asarray(x, dtype=np.float64)
    fmt = FORMATS[dtype]
    if dtype == "f64":
        return x.copy()
    with np.errstate(all="ignore"):
        finite = np.isfinite(x) & (x != 0)
        _, exponent = np.frexp(np.where(finite, x, 1.0))
        lead = np.maximum(exponent - 1, fmt.min_exponent)
        quantum = np.ldexp(1.0, lead - (fmt.precision - 1))
        rounded = np.rint(x / quantum) * quantum
        rounded = np.where(finite, rounded, x)
        overflow = np.abs(rounded) > fmt.max_finite
        return np.where(overflow & finite, np.copysign(np.inf, x), rounded)


def store_rounded(rounded_f64: np.ndarray, dtype: str, overflow: str = "inf") -> np.ndarray:
    """Turn float64 values already on `dtype`'s grid (or ±inf) into a `dtype` array.

    `overflow` decides what ±inf becomes in a format without infinities: "nan" (arithmetic)
    or "max" (saturation). Casts that must reject overflow check before calling this.
    """
    values = np.asarray(rounded_f64, dtype=np.float64)
    fmt = FORMATS[dtype]
    if not fmt.has_inf:
        infinite = np.isinf(values)
        if infinite.any():
            replacement = np.copysign(fmt.max_finite, values) if overflow == "max" else np.nan
            values = np.where(infinite, replacement, values)
    return values.astype(NUMPY_DTYPE[dtype])


def float_result(exact_or_f64: np.ndarray, dtype: str) -> np.ndarray:
    """A float64 result of an op on `dtype` operands, rounded once into `dtype`.

    In a format without infinities (f8e4m3fn) a result that rounds past the largest finite
    value, or is infinite (x / 0), has no encoding: an illegal input, the rule §5.2 gives
    the cast (docs/kir.md §4), never a NaN made up for it."""
    if dtype == "f64":
        return np.asarray(exact_or_f64, dtype=np.float64)
    rounded = round_to_format(exact_or_f64, dtype)
    if not FORMATS[dtype].has_inf:
        check(np.isinf(rounded), F8E4M3_OVERFLOW, f"the {dtype} result overflows its largest finite value "
              f"{FORMATS[dtype].max_finite:g} (spec §5.2)", "compute in a wider dtype and `saturating_cast` back")
    return store_rounded(rounded, dtype, overflow="nan")


def exact_f64_of_int(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(RNE float64, round-to-odd float64) of an int64/uint64 array.

    Round-to-odd to 53 bits followed by RNE to p <= 51 bits equals RNE of the exact value,
    so narrower formats round the second array.
    """
    x = np.asarray(x)
    if x.dtype.itemsize < 8:
        exact = x.astype(np.float64)
        return exact, exact
    unsigned = x.dtype.kind == "u"
    high = (x >> np.uint64(32) if unsigned else x >> 32).astype(np.float64) * 4294967296.0
    low = (x & (np.uint64(0xFFFFFFFF) if unsigned else 0xFFFFFFFF)).astype(np.float64)
    total = high + low
    back = total - high
    error = (high - (total - back)) + (low - back)
    mantissa_even = (total.view(np.uint64) & np.uint64(1)) == 0
    needs_odd = (error != 0) & mantissa_even
    toward = np.where(error > 0, np.inf, -np.inf)
    odd = np.where(needs_odd, np.nextafter(total, toward), total)
    return total, odd


def is_subnormal(x: np.ndarray, dtype: str) -> np.ndarray:
    tiny = 2.0 ** FORMATS[dtype].min_exponent
    ax = np.abs(to_f64(x))
    return (ax > 0) & (ax < tiny)
