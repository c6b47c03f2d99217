"""Contractions, outer and histogram (spec §3, §5.3, §7).

Operands are converted to the accumulator dtype by the cast rules, then multiplied and
summed exactly enough: integer accumulators in 64-bit wrapping arithmetic reduced modulo
their width, float accumulators in float64 (products of f32 are exact) and rounded once
into the accumulator — a fused sum, which §5.3 allows; `init` joins the sum before that
one rounding.
"""
from __future__ import annotations

import string

import numpy as np

from ..ir.ops.contraction import contraction_axes
from ..ir import errors
from .conversion import convert
from .errors import InterpError, check
from .pointwise import binary, dtype_of
from .values import float_result, is_float, is_signed, np_dtype
from .machine import IMPLS
from ..ir.optable import ops_where


def _wide(x: np.ndarray, acc: str) -> np.ndarray:
    if is_float(acc):
        return x.astype(np.float64)
    return x.astype(np.int64 if is_signed(acc) else np.uint64)


def finish(total: np.ndarray, acc: str) -> np.ndarray:
    return float_result(total, acc) if is_float(acc) else np.asarray(total).astype(np_dtype(acc))


def contract(lhs, rhs, acc: str, lhs_contract, rhs_contract, lhs_batch=(), rhs_batch=(), init=None):
    lhs = _wide(convert(lhs, dtype_of(lhs), acc), acc)
    rhs = _wide(convert(rhs, dtype_of(rhs), acc), acc)
    letters = iter(string.ascii_letters)
    lhs_sub = [next(letters) for _ in range(lhs.ndim)]
    rhs_sub = [next(letters) for _ in range(rhs.ndim)]
    for l, r in zip(list(lhs_contract) + list(lhs_batch), list(rhs_contract) + list(rhs_batch)):
        if lhs.shape[l] != rhs.shape[r]:
            raise InterpError(errors.SHAPE_MISMATCH,
                              f"paired axes differ: lhs axis {l} is {lhs.shape[l]}, rhs axis {r} is {rhs.shape[r]}")
        rhs_sub[r] = lhs_sub[l]
    batch = [lhs_sub[a] for a in lhs_batch]
    lhs_free = [s for a, s in enumerate(lhs_sub) if a not in lhs_contract and a not in lhs_batch]
    rhs_free = [s for a, s in enumerate(rhs_sub) if a not in rhs_contract and a not in rhs_batch]
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(batch + lhs_free + rhs_free)}"
    with np.errstate(all="ignore"):
        total = np.einsum(spec, lhs, rhs, optimize=True)
        if init is not None:
            total = total + _wide(convert(init, dtype_of(init), acc), acc)
    return finish(total, acc)


@IMPLS.register(*ops_where(lambda op: op.contraction))
def _contract_op(machine, op):
    lhs, rhs = (np.asarray(v) for v in machine.operands(op))
    init = machine.group(op, "init")
    acc = op.attributes["acc"].dtype
    lhs_contract, rhs_contract, batch_l, batch_r = contraction_axes(op)
    return contract(lhs, rhs, acc, lhs_contract, rhs_contract, batch_l, batch_r,
                    np.asarray(init[0]) if init else None)


@IMPLS.register("outer")
def _outer_op(machine, op):
    lhs, rhs = (np.asarray(v) for v in machine.operands(op))
    return binary("mul", lhs[:, None], rhs[None, :])


# ---- histogram (§7) -------------------------------------------------------------------------------
def histogram(values: np.ndarray, valid, bins: int, count_dtype: str) -> np.ndarray:
    values = np.asarray(values)
    active = np.ones(values.shape, dtype=bool) if valid is None else np.broadcast_to(valid, values.shape)
    check(active & ((values < 0) | (values >= bins)), errors.HISTOGRAM_RANGE,
          f"active value outside [0, {bins})")
    counts = np.bincount(values[active].astype(np.int64), minlength=bins)
    return counts.astype(np.uint64).astype(np_dtype(count_dtype))


@IMPLS.register("histogram")
def _histogram_op(machine, op):
    (values,) = machine.operands(op)
    valid = machine.group(op, "valid")
    (bins,) = machine.result_shape(op)
    return histogram(values, np.asarray(valid[0]) if valid else None, bins, machine.result_dtype(op))

