"""Facts about scalar dtypes that every stage shares: classes, widths, ranges, float
formats, the §3 accumulator widening table and how a literal is instantiated in a dtype.

Pure Python (no numpy): the code generators use these facts without loading the
interpreter's array machinery."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .types import BIT_WIDTH, FLOATS, INTEGERS, SIGNED_INTS

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


@dataclass(frozen=True)
class FloatFormat:
    precision: int      # significand bits including the implicit one
    min_exponent: int   # exponent of the smallest normal number
    max_finite: float
    has_inf: bool = True


FORMATS = {
    "f16": FloatFormat(11, -14, FLOAT_MAX["f16"]),
    "bf16": FloatFormat(8, -126, FLOAT_MAX["bf16"]),
    "f32": FloatFormat(24, -126, FLOAT_MAX["f32"]),
    "f64": FloatFormat(53, -1022, FLOAT_MAX["f64"]),
    "f8e4m3fn": FloatFormat(4, -6, FLOAT_MAX["f8e4m3fn"], has_inf=False),
    "f8e5m2": FloatFormat(3, -14, FLOAT_MAX["f8e5m2"]),
}


def is_int(dtype: str) -> bool:
    return dtype in INTEGERS


def is_signed(dtype: str) -> bool:
    return dtype in SIGNED_INTS


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def in_class(dtype: str, dtype_class: str) -> bool:
    """Whether `dtype` belongs to an op table `DtypeClass`."""
    if dtype_class == "numeric":
        return dtype != "bool"
    if dtype_class == "float":
        return is_float(dtype)
    if dtype_class == "int":
        return is_int(dtype)
    if dtype_class == "int_or_bool":
        return is_int(dtype) or dtype == "bool"
    return True


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
    A value that is no number (a symbol, a string, a list) is representable nowhere.
    """
    if not isinstance(value, bool | int | float):
        return False
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
        try:
            value = float(value)
        except OverflowError:   # rounds past f64: a finite value no float format holds
            return False
    if math.isnan(value):
        return True
    if math.isinf(value):
        return dtype not in FLOATS_WITHOUT_INF
    return math.isfinite(round_to_format(value, dtype))


def round_to_format(value: int | float, dtype: str) -> float:
    """`value`, taken exactly, rounded to nearest even on the grid of float format `dtype` in
    one step (no double rounding through f64 for wide integers); ±inf past the largest
    finite value, whatever the format (callers decide what a format without inf does)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value) or value == 0):
        return value
    exact = Fraction(value)
    if exact == 0:
        return 0.0
    fmt = FORMATS[dtype]
    magnitude = abs(exact)
    lead = max(magnitude.numerator.bit_length() - magnitude.denominator.bit_length(), fmt.min_exponent)
    if Fraction(2) ** lead > magnitude:     # bit lengths overestimate the exponent by at most one
        lead = max(lead - 1, fmt.min_exponent)
    quantum = Fraction(2) ** (lead - fmt.precision + 1)
    rounded = round(magnitude / quantum) * quantum      # Fraction rounds half to even
    result = math.inf if rounded > fmt.max_finite else float(rounded)
    return result if exact > 0 else -result


def instantiate(value: bool | int | float, dtype: str) -> bool | int | float:
    """A source literal instantiated in `dtype` (§3): bool, an in-range int, or a float on
    the format's grid. ValueError when the verifier's representability rule would reject it."""
    if dtype == "bool":
        return bool(value)
    if is_int(dtype):
        low, high = int_range(dtype)
        if (isinstance(value, float) and not value.is_integer()) or not low <= int(value) <= high:
            raise ValueError(f"literal {value!r} is not representable in {dtype}")
        return int(value)
    rounded = round_to_format(int(value) if isinstance(value, bool) else value, dtype)
    if math.isinf(rounded) and not FORMATS[dtype].has_inf:
        raise ValueError(f"literal {value!r} overflows {dtype}, which has no infinity")
    return rounded
