"""Contractions, outer and histogram (spec §3, §5.3, §7).

Operands are converted to the accumulator dtype by the cast rules, then multiplied and
summed in that dtype — the accumulator dtype is the accumulation dtype (§3, §6), so a
partial sum that overflows shows as ±inf or NaN. Integer accumulators sum in 64-bit
wrapping arithmetic reduced modulo their width (the same residues). f32/f64 accumulators
sum with numpy's einsum in their own dtype (BLAS: blocked, FMA — an order §5.3/§6 allow);
f16/bf16/f8 accumulators round each product once and sum as the builtin `reduce` does (a
balanced tree of rounded adds). `init` joins the sum as one more member.
"""
from __future__ import annotations

import string

import numpy as np

from ..ir.ops.contraction import contraction_axes
from ..ir import errors
from .conversion import convert
from .errors import InterpError, check
from .pointwise import binary, dtype_of
from .reduction import reduce_builtin
from .values import float_result, is_float, is_signed, np_dtype
from .machine import IMPLS
from ..ir.optable import ops_where


def _subscripts(lhs_rank, rhs_rank, lhs_contract, rhs_contract, lhs_batch, rhs_batch):
    """(lhs letters, rhs letters, result letters, contracted letters) of an einsum."""
    letters = iter(string.ascii_letters)
    lhs_sub = [next(letters) for _ in range(lhs_rank)]
    rhs_sub = [next(letters) for _ in range(rhs_rank)]
    for lhs_axis, rhs_axis in zip(list(lhs_contract) + list(lhs_batch), list(rhs_contract) + list(rhs_batch)):
        rhs_sub[rhs_axis] = lhs_sub[lhs_axis]
    batch = [lhs_sub[a] for a in lhs_batch]
    lhs_free = [s for a, s in enumerate(lhs_sub) if a not in lhs_contract and a not in lhs_batch]
    rhs_free = [s for a, s in enumerate(rhs_sub) if a not in rhs_contract and a not in rhs_batch]
    return "".join(lhs_sub), "".join(rhs_sub), "".join(batch + lhs_free + rhs_free), \
        "".join(lhs_sub[a] for a in lhs_contract)


def _sum_in_acc(lhs, rhs, acc, subscripts) -> np.ndarray:
    """Σ lhs·rhs over the contracted letters, every partial sum in `acc` (operands are in acc)."""
    lhs_sub, rhs_sub, out_sub, summed = subscripts
    if not is_float(acc):
        wide = np.int64 if is_signed(acc) else np.uint64
        total = np.einsum(f"{lhs_sub},{rhs_sub}->{out_sub}", lhs.astype(wide), rhs.astype(wide), optimize=True)
        return np.asarray(total).astype(np_dtype(acc))
    if acc in ("f32", "f64"):
        return np.asarray(np.einsum(f"{lhs_sub},{rhs_sub}->{out_sub}", lhs, rhs, optimize=True), dtype=np_dtype(acc))
    # f64 products of narrow floats are exact: round each once into acc, then sum in acc
    products = np.einsum(f"{lhs_sub},{rhs_sub}->{summed}{out_sub}", lhs.astype(np.float64), rhs.astype(np.float64))
    products = float_result(products, acc)
    return reduce_builtin(products, "sum", list(range(len(summed))), acc)


def contract(lhs, rhs, acc: str, lhs_contract, rhs_contract, lhs_batch=(), rhs_batch=(), init=None):
    lhs = convert(lhs, dtype_of(lhs), acc)
    rhs = convert(rhs, dtype_of(rhs), acc)
    for lhs_axis, rhs_axis in zip(list(lhs_contract) + list(lhs_batch), list(rhs_contract) + list(rhs_batch)):
        if lhs.shape[lhs_axis] != rhs.shape[rhs_axis]:
            raise InterpError(errors.SHAPE_MISMATCH,
                              f"paired axes differ: lhs axis {lhs_axis} is {lhs.shape[lhs_axis]}, "
                              f"rhs axis {rhs_axis} is {rhs.shape[rhs_axis]}")
    subscripts = _subscripts(lhs.ndim, rhs.ndim, lhs_contract, rhs_contract, lhs_batch, rhs_batch)
    with np.errstate(all="ignore"):
        total = _sum_in_acc(lhs, rhs, acc, subscripts)
        if init is not None:
            total = binary("add", total, convert(init, dtype_of(init), acc))
    return np.asarray(total)


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

