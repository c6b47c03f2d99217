"""Pointwise arithmetic, bitwise, shifts, comparisons and selection (spec §3, §4, §5).

Integers wrap (numpy's fixed-width arithmetic); signed `floordiv`/`mod` are numpy's floor
relation, unsigned ones Euclidean (the same thing for non-negative values). f32/f64 use
numpy's IEEE operations (round-to-nearest-even); f16, bf16 and the f8 formats compute in
float64 — exact for +, -, *, and innocuous double rounding for / (53 >= 2p+2) — and round
once into their format.
"""
from __future__ import annotations

import numpy as np

from ..ir.types import BIT_WIDTH
from ..ir import errors
from .errors import InterpError, check
from .values import (KIR_DTYPE, EnumValue, LOW_PRECISION, UNSIGNED_OF, float_result, is_float, is_signed,
                     np_dtype)
from .machine import IMPLS
from ..ir.optable import op_def, ops_where


def dtype_of(x: np.ndarray) -> str:
    return KIR_DTYPE[np.asarray(x).dtype]


def _as_array(x, like_dtype) -> np.ndarray:
    return np.asarray(x, dtype=like_dtype)


# ---- floats -----------------------------------------------------------------------------
def float_binary(fn, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """Apply an IEEE float64/float32 ufunc with one rounding into `dtype`."""
    if dtype in LOW_PRECISION:
        return float_result(fn(a.astype(np.float64), b.astype(np.float64)), dtype)
    return _as_array(fn(a, b), np_dtype(dtype))


def _signed_zero_pick(result, a, b, want_positive: bool):
    """IEEE 754-2019 maximum/minimum order -0 below +0."""
    both_zero = (a == 0) & (b == 0)
    if not np.any(both_zero):
        return result
    negative = np.signbit(a) & np.signbit(b) if want_positive else np.signbit(a) | np.signbit(b)
    zero = np.where(negative, -0.0, 0.0).astype(result.dtype)
    return np.where(both_zero, zero, result)


def _maximum(a, b):
    return _signed_zero_pick(np.maximum(a, b), a, b, want_positive=True)


def _minimum(a, b):
    return _signed_zero_pick(np.minimum(a, b), a, b, want_positive=False)


def _maximum_num(a, b):
    return _signed_zero_pick(_one_sided_nan(np.maximum(a, b), a, b), a, b, want_positive=True)


def _minimum_num(a, b):
    return _signed_zero_pick(_one_sided_nan(np.minimum(a, b), a, b), a, b, want_positive=False)


def _one_sided_nan(result, a, b):
    """The number where only one side is NaN. Spelled out rather than numpy's fmax/fmin: their
    vector loops return NaN for a signaling NaN operand (an f16 sNaN widened to f32 stays
    signaling), and whether a NaN signals is no observable fact (§5.2)."""
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, result))


# ---- integers ---------------------------------------------------------------------------
def _check_divisor(b: np.ndarray) -> None:
    check(b == 0, errors.DIVISION_BY_ZERO, "integer division by zero",
          "guard the divisor, e.g. with `select`")


def int_floordiv(a, b, dtype):
    _check_divisor(b)
    if is_signed(dtype):
        low = np.iinfo(np_dtype(dtype)).min
        check((a == low) & (b == -1), errors.DIVISION_OVERFLOW,
              f"{dtype} minimum // -1 overflows (spec §4)")
    return np.floor_divide(a, b)


def int_mod(a, b, dtype):
    """§4 makes only `signed_min // -1` illegal: `signed_min % -1` is 0, as every `x % -1`."""
    _check_divisor(b)
    if is_signed(dtype):    # x % -1 == x % 1 == 0, without numpy's overflowing signed_min / -1
        b = np.where(b == -1, np.ones_like(b), b)
    return np.remainder(a, b)


def _check_shift(amount: np.ndarray, dtype: str) -> None:
    check((amount < 0) | (amount >= BIT_WIDTH[dtype]), errors.SHIFT_OUT_OF_RANGE,
          f"shift amount outside [0, {BIT_WIDTH[dtype]}) for {dtype}")


def shift_left(a, b, dtype):
    _check_shift(b, dtype)
    unsigned = np_dtype(UNSIGNED_OF.get(dtype, dtype))
    shifted = np.left_shift(a.view(unsigned), b.astype(unsigned))
    return np.asarray(shifted, dtype=unsigned).view(a.dtype)


def shift_right(a, b, dtype):
    _check_shift(b, dtype)
    return np.right_shift(a, b.astype(a.dtype))


# ---- the table --------------------------------------------------------------------------
# name -> (integer implementation, float implementation); None where the op is undefined.
def _int(fn):
    return lambda a, b, dtype: fn(a, b)


def _float(fn):
    return lambda a, b, dtype: float_binary(fn, a, b, dtype)


BINARY = {
    "add": (_int(np.add), _float(np.add)),
    "sub": (_int(np.subtract), _float(np.subtract)),
    "mul": (_int(np.multiply), _float(np.multiply)),
    "div": (None, _float(np.divide)),
    "floordiv": (int_floordiv, None),
    "mod": (int_mod, None),
    "fmod": (None, _float(np.fmod)),
    "and": (_int(np.bitwise_and), None),
    "or": (_int(np.bitwise_or), None),
    "xor": (_int(np.bitwise_xor), None),
    "shl": (shift_left, None),
    "shr": (shift_right, None),
    "maximum": (_int(np.maximum), _float(_maximum)),
    "minimum": (_int(np.minimum), _float(_minimum)),
    "maximum_num": (_int(np.maximum), _float(_maximum_num)),
    "minimum_num": (_int(np.minimum), _float(_minimum_num)),
}
BOOL_BINARY = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
               "eq": np.equal, "ne": np.not_equal, "maximum": np.logical_or, "minimum": np.logical_and}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}


def binary(name: str, a, b) -> np.ndarray:
    """Evaluate a binary pointwise op on two same-dtype arrays (shapes broadcast)."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = dtype_of(a)
    with np.errstate(all="ignore"):
        if name in COMPARE:
            if is_float(dtype) and dtype in LOW_PRECISION:
                a, b = a.astype(np.float64), b.astype(np.float64)
            if dtype == "bool":     # as 0/1, so that false < true
                a, b = a.astype(np.uint8), b.astype(np.uint8)
            return np.asarray(COMPARE[name](a, b))
        if dtype == "bool":
            fn = BOOL_BINARY.get(name)
            if fn is None:
                raise InterpError(errors.UNSUPPORTED, f"`{name}` is not defined on bool")
            return np.asarray(fn(a, b))
        int_impl, float_impl = BINARY[name]
        impl = float_impl if is_float(dtype) else int_impl
        if impl is None:
            kind = "floats" if is_float(dtype) else "integers"
            raise InterpError(errors.UNSUPPORTED, f"`{name}` is not defined on {kind} ({dtype})")
        return _as_array(impl(a, b, dtype), a.dtype)


def negate(x: np.ndarray) -> np.ndarray:
    dtype = dtype_of(x)
    if dtype in LOW_PRECISION:
        return float_result(-x.astype(np.float64), dtype)
    return np.asarray(np.negative(x))


def absolute(x: np.ndarray) -> np.ndarray:
    dtype = dtype_of(x)
    if dtype in LOW_PRECISION:
        return float_result(np.abs(x.astype(np.float64)), dtype)
    return np.asarray(np.abs(x))


def logical_not(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return np.asarray(np.logical_not(x))
    if is_float(dtype_of(x)):
        raise InterpError(errors.UNSUPPORTED, "`not` is not defined on floats")
    return np.asarray(np.invert(x))


UNARY = {"neg": negate, "abs": absolute, "not": logical_not}


def select(cond, on_true, on_false) -> np.ndarray:
    return np.asarray(np.where(cond, on_true, on_false), dtype=np.asarray(on_true).dtype)


def _binary_op(machine, op):
    a, b = machine.operands(op)
    if isinstance(a, EnumValue) or isinstance(b, EnumValue):
        if not op_def(op.name).enum_operands:
            raise InterpError(errors.UNSUPPORTED, f"`{op.name}` is not defined on enums")
        return np.asarray((a == b) == (op.name == "eq"))
    return binary(op.name, a, b)


def _unary_op(machine, op):
    (x,) = machine.operands(op)
    with np.errstate(all="ignore"):
        return UNARY[op.name](np.asarray(x))


@IMPLS.register("select")
def _select_op(machine, op):
    return select(*machine.operands(op))


IMPLS.add(ops_where(lambda op: op.family == "pointwise" and len(op.operands) == 2), _binary_op)
IMPLS.add(ops_where(lambda op: op.family == "pointwise" and len(op.operands) == 1), _unary_op)
