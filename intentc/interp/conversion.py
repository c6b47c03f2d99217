"""Literals, cast, saturating_cast, bitcast and the microscaling decoders (spec §3, §5.2, §7).

Every conversion goes through exact float64 images: int → float rounds the round-to-odd
float64 of the integer (exact RNE for every narrower format), float → float rounds the
exact float64 of the source once.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import instantiate, int_range
from ..ir.nodes import SymbolRef
from ..ir import errors
from .errors import InterpError, check
from .values import (FORMATS, EnumValue, exact_f64_of_int, is_float, is_int, np_dtype,
                     round_to_format, store_rounded)
from .machine import IMPLS


def _kir(x: np.ndarray) -> str:
    from .pointwise import dtype_of
    return dtype_of(x)


def _to_float(x: np.ndarray, src: str, dst: str, saturate: bool) -> np.ndarray:
    if is_int(src) or src == "bool":
        rne, odd = exact_f64_of_int(x.astype(np.uint8) if src == "bool" else x)
        if dst == "f64":
            return rne
        rounded = round_to_format(odd, dst)
        finite_source = np.ones(x.shape, dtype=bool)
    else:
        exact = x.astype(np.float64)
        rounded = round_to_format(exact, dst)
        finite_source = np.isfinite(exact)
    if saturate:
        return store_rounded(rounded, dst, overflow="max") if not FORMATS[dst].has_inf else \
            np.where(np.isinf(rounded), np.copysign(FORMATS[dst].max_finite, rounded), rounded).astype(np_dtype(dst))
    if not FORMATS[dst].has_inf:
        check(np.isinf(rounded) & finite_source, errors.F8E4M3_OVERFLOW,
              f"finite value overflows {dst} (max 448)", "use saturating_cast to clamp")
        check(np.isinf(rounded), errors.F8E4M3_OVERFLOW, f"infinity has no {dst} encoding",
              "use saturating_cast to clamp")
    return store_rounded(rounded, dst)


def _float_to_int(x: np.ndarray, dst: str, saturate: bool) -> np.ndarray:
    exact = x.astype(np.float64)
    truncated = np.trunc(exact)
    low, high = int_range(dst)
    too_high = truncated >= float(high + 1)   # powers of two: exact
    too_low = truncated < float(low)
    nan = np.isnan(exact)
    if saturate:
        check(nan, errors.FLOAT_TO_INT, f"NaN has no {dst} value")
    else:
        check(nan | np.isinf(exact), errors.FLOAT_TO_INT, f"cannot convert NaN or infinity to {dst}")
        check(too_high | too_low, errors.FLOAT_TO_INT, f"value out of the range of {dst}")
    safe = np.where(too_high | too_low | nan, 0.0, truncated).astype(np_dtype(dst))
    high_value, low_value = np.array(high, np_dtype(dst)), np.array(low, np_dtype(dst))
    return np.where(too_high, high_value, np.where(too_low, low_value, safe)).astype(np_dtype(dst))


def _int_to_int(x: np.ndarray, src: str, dst: str, saturate: bool) -> np.ndarray:
    if saturate:
        src_low, src_high = int_range(src)
        dst_low, dst_high = int_range(dst)
        x = np.clip(x, max(src_low, dst_low), min(src_high, dst_high))
    return x.astype(np_dtype(dst))


def convert(x, src: str, dst: str, saturate: bool = False) -> np.ndarray:
    """`cast` (or `saturating_cast`) of array `x` of dtype `src` to `dst`."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if src == dst or (src in ("index", "i64") and dst in ("index", "i64")):
            return x.astype(np_dtype(dst), copy=False)
        if dst == "bool":
            return np.asarray(x.astype(np.float64) != 0 if is_float(src) else x != 0)
        if is_float(dst):
            return np.asarray(_to_float(x, src, dst, saturate))
        if src == "bool":
            return x.astype(np_dtype(dst))
        if is_float(src):
            return np.asarray(_float_to_int(x, dst, saturate))
        return np.asarray(_int_to_int(x, src, dst, saturate))


def literal(value, dtype: str) -> np.ndarray:
    """Instantiate a source literal in `dtype` (§3); the verifier checks representability."""
    if isinstance(value, SymbolRef):
        enum, _, member = value.name.partition(".")
        return EnumValue(enum, member)
    try:
        number = instantiate(value, dtype)
    except ValueError as problem:
        raise InterpError(errors.UNSUPPORTED, str(problem)) from None
    return np.asarray(number, dtype=np_dtype(dtype))


# ---- microscaling decoders (§7) ---------------------------------------------------------------
E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6],
                       dtype=np.float32)


def decode_e2m1(codes: np.ndarray) -> np.ndarray:
    return E2M1_VALUES[np.asarray(codes) & 0xF]


def decode_e8m0(codes: np.ndarray) -> np.ndarray:
    codes = np.asarray(codes).astype(np.int32)
    return np.where(codes == 255, np.float32(np.nan),
                    np.ldexp(np.float32(1), codes - 127).astype(np.float32)).astype(np.float32)


# ---- ops ----------------------------------------------------------------------------------------
@IMPLS.register("constant")
def _constant_op(machine, op):
    return literal(op.attributes["value"], getattr(op.result_types[0], "dtype", "enum"))


@IMPLS.register("cast", "saturating_cast")
def _cast_op(machine, op):
    (x,) = machine.operands(op)
    x = np.asarray(x)
    return convert(x, _kir(x), machine.result_dtype(op), saturate=op.name == "saturating_cast")


@IMPLS.register("bitcast")
def _bitcast_op(machine, op):
    (x,) = machine.operands(op)
    x = np.asarray(x)
    target = np_dtype(machine.result_dtype(op))
    if target.itemsize != x.dtype.itemsize or x.dtype == np.bool_:
        raise InterpError(errors.UNSUPPORTED, f"bitcast needs equal bit widths ({x.dtype} → {target})")
    return x.copy(order="C").view(target)


def _decode_op(decoder):
    def op(machine, op_):
        (x,) = machine.operands(op_)
        return decoder(x)
    return op


IMPLS.add(["decode_e2m1"], _decode_op(decode_e2m1))
IMPLS.add(["decode_e8m0"], _decode_op(decode_e8m0))
