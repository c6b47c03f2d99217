"""Named math functions and the approximate modes (spec §5, §5.1).

f32 is evaluated in float64 and rounded once (so within 1 ULP, almost always correctly
rounded); f64 uses numpy's float64 functions, Python's `math.erf`/`math.erfc` per element
where numpy has none, `lgamma.py` (within 2.5 ULP outside the negative cancellation
interval, docs/kir.md §4) and Cephes' i0 (numpy's) with an overflow-safe tail.
f16, bf16 and the f8 formats are evaluated in f32 and cast back by the ordinary cast rules
(§5), so a finite overflow into f8e4m3fn is an illegal input.
"""
from __future__ import annotations

import math as pymath

import numpy as np

from ..ir import errors
from .conversion import convert
from .errors import InterpError
from .lgamma import lgamma
from .pointwise import dtype_of
from .values import LOW_PRECISION, is_float, is_subnormal
from .machine import IMPLS
from ..ir.optable import ops_where


def _vectorize(fn):
    ufunc = np.frompyfunc(fn, 1, 1)
    return lambda x: np.asarray(ufunc(x), dtype=np.float64) if np.size(x) else np.asarray(x, np.float64)


_erf = _vectorize(pymath.erf)
_erfc = _vectorize(pymath.erfc)


try:  # numpy's Cephes coefficients for i0 on x > 8
    from numpy.lib._function_base_impl import _chbevl, _i0B
except ImportError:  # pragma: no cover - older numpy layout
    from numpy.lib.function_base import _chbevl, _i0B


def _i0(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    large = ax > 700.0
    result = np.asarray(np.i0(np.where(large, 0.0, ax)), dtype=np.float64)
    if large.any():
        big = np.where(large, ax, 800.0)
        half = np.exp(big / 2.0)   # exp(x) = half * half without overflowing early
        tail = half * (half * _chbevl(32.0 / big - 2.0, _i0B) / np.sqrt(big))
        result = np.where(large, tail, result)
    result = np.where(np.isinf(x), np.inf, result)
    return np.where(np.isnan(x), np.nan, result)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


FUNCTIONS = {
    "exp": np.exp, "log": np.log, "log2": np.log2, "log1p": np.log1p, "expm1": np.expm1,
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "erf": _erf, "erfc": _erfc, "i0": _i0, "lgamma": lgamma,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "exp2": np.exp2,
}


def evaluate(name: str, x: np.ndarray) -> np.ndarray:
    """`name` applied to a float array in the spec's precision for its dtype."""
    x = np.asarray(x)
    dtype = dtype_of(x)
    if not is_float(dtype):
        raise InterpError(errors.UNSUPPORTED, f"`{name}` needs a float operand, not {dtype}")
    fn = FUNCTIONS[name]
    with np.errstate(all="ignore"):
        if dtype == "f64":
            return np.asarray(fn(x), dtype=np.float64)
        in_f32 = np.asarray(fn(x.astype(np.float64))).astype(np.float32)
        if dtype == "f32":
            return in_f32
        return convert(in_f32, "f32", dtype)


def _classify(name):
    def op(machine, op_):
        (x,) = machine.operands(op_)
        x = np.asarray(x)
        if not is_float(dtype_of(x)):
            return np.zeros(x.shape, dtype=bool)
        f = x.astype(np.float64) if dtype_of(x) in LOW_PRECISION else x
        return np.asarray(np.isnan(f) if name == "isnan" else np.isinf(f))
    return op


# ---- approximate modes (§5.1) -------------------------------------------------------------
def _approximate_flags(op) -> tuple[bool, bool]:
    return bool(op.attributes.get("approximate", False)), bool(op.attributes.get("flush_to_zero", False))


def _flush(x: np.ndarray) -> np.ndarray:
    return np.where(is_subnormal(x, "f32"), np.copysign(np.float32(0), x), x).astype(np.float32)


def _require_f32(x: np.ndarray, name: str) -> None:
    if x.dtype != np.float32:
        raise InterpError(errors.UNSUPPORTED, f"approximate `{name}` needs f32 operands, not {dtype_of(x)}")


def approximate_fdiv(lhs: np.ndarray, rhs: np.ndarray, flush: bool) -> np.ndarray:
    """Within 2 ULP (we give the correctly rounded quotient); for 2^126 < |rhs| < 2^128 a
    finite lhs gives a zero of the quotient's sign and an infinite lhs NaN."""
    if flush:
        lhs, rhs = _flush(lhs), _flush(rhs)
    with np.errstate(all="ignore"):
        quotient = np.asarray(np.divide(lhs, rhs), dtype=np.float32)
        huge = (np.abs(rhs) > np.float32(2.0 ** 126)) & np.isfinite(rhs)
        zero = np.copysign(np.float32(0), quotient).astype(np.float32)
        special = np.where(np.isfinite(lhs), zero, np.float32(np.nan))
        quotient = np.where(huge & ~np.isnan(lhs), special, quotient).astype(np.float32)
    return _flush(quotient) if flush else quotient


@IMPLS.register("fdiv")
def _fdiv_op(machine, op):
    lhs, rhs = (np.asarray(v) for v in machine.operands(op))
    approximate, flush = _approximate_flags(op)
    if not approximate:
        from .pointwise import binary
        return binary("div", lhs, rhs)
    _require_f32(lhs, "fdiv")
    return approximate_fdiv(lhs, rhs, flush)


@IMPLS.register("exp2")
def _exp2_op(machine, op):
    (x,) = machine.operands(op)
    x = np.asarray(x)
    approximate, flush = _approximate_flags(op)
    if not approximate:
        return evaluate("exp2", x)
    _require_f32(x, "exp2")
    result = evaluate("exp2", _flush(x) if flush else x)
    return _flush(result) if flush else result


@IMPLS.register("tanh")
def _tanh_op(machine, op):
    (x,) = machine.operands(op)
    x = np.asarray(x)
    if op.attributes.get("approximate", False):
        _require_f32(x, "tanh")
    return evaluate("tanh", x)


def _function_op(machine, op):
    (x,) = machine.operands(op)
    return evaluate(op.name, x)


# Math functions without approximate modes evaluate FUNCTIONS as they are.
IMPLS.add(ops_where(lambda op: op.family == "math" and op.same_type and len(op.operands) == 1
                    and "approximate" not in op.attrs), _function_op)
IMPLS.add(["isnan"], _classify("isnan"))
IMPLS.add(["isinf"], _classify("isinf"))
