"""contract and its named forms, outer, histogram (spec §3, §5.3, §7).

Operands convert to the accumulator dtype by the cast rules. Float accumulators sum in f64
(products of f32 and narrower are exact there) and round once into the accumulator, the
fused form §5.3 allows and the interpreter computes; `init` joins before that rounding.
Integer accumulators wrap in their own width.
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from ...ir.ops.contraction import contraction_axes
from .conversion import convert
from .emitter import CheckSite, Emitter
from .lowfloat import round_f64
from .pointwise import binary
from .types import F32, F64, I64, is_float, is_low, is_signed, register_type
from .values import Lazy, Scalar, Tensor
from .lowering import LOWERINGS
from ...ir.optable import ops_where

def _settled(em, value):
    return em.materialize(value) if isinstance(value, Lazy) and value.costly else value


def _widen(em, op, value, dtype, acc):
    converted = convert(em, op, value, dtype, acc)
    if not is_float(acc):
        return converted
    return em.b.fpext(converted, F64) if acc == "f32" else converted


def _finish(em, total, acc):
    if acc == "f32":
        return em.b.fptrunc(total, F32)
    if is_low(acc):
        return round_f64(em, total, acc)[0]
    return total


def contract(em: Emitter, op: Op, lhs: Tensor, rhs: Tensor, acc: str, lhs_contract: Sequence[int],
             rhs_contract: Sequence[int], lhs_batch: Sequence[int] = (), rhs_batch: Sequence[int] = (),
             init: Tensor | None = None, widened: bool = False) -> Tensor:
    """The contraction; `widened` operands already yield the wide (f64 or acc) summands."""
    lhs, rhs = _settled(em, lhs), _settled(em, rhs)
    lhs_free = [a for a in range(lhs.rank) if a not in lhs_contract and a not in lhs_batch]
    rhs_free = [a for a in range(rhs.rank) if a not in rhs_contract and a not in rhs_batch]
    k_shape = [lhs.shape[a] for a in lhs_contract]
    floating = is_float(acc)
    wide_type = F64 if floating else register_type(acc)
    slot = em.entry_alloca(wide_type)
    b = em.b
    nb, nl = len(lhs_batch), len(lhs_free)

    def compute(res):
        b.store(ir.Constant(wide_type, 0.0 if floating else 0), slot)

        def step(k):
            li, ri = [None] * lhs.rank, [None] * rhs.rank
            for axes, coords in ((lhs_batch, res[:nb]), (lhs_free, res[nb:nb + nl]), (lhs_contract, k)):
                for a, c in zip(axes, coords):
                    li[a] = c
            for axes, coords in ((rhs_batch, res[:nb]), (rhs_free, res[nb + nl:]), (rhs_contract, k)):
                for a, c in zip(axes, coords):
                    ri[a] = c
            x, y = lhs.at(em, li), rhs.at(em, ri)
            if not widened:
                x, y = _widen(em, op, x, lhs.dtype, acc), _widen(em, op, y, rhs.dtype, acc)
            total = b.load(slot)
            if floating:
                b.store(b.fadd(total, b.fmul(x, y), flags=("reassoc",)), slot)
            else:
                b.store(b.add(total, b.mul(x, y)), slot)
        em.for_each(k_shape, step)
        wide = "f64" if floating else acc
        total = em.hooks.combine_partials(em, op, "sum", b.load(slot), wide,
                                          lambda p, q: b.fadd(p, q, flags=("reassoc",)) if floating else b.add(p, q))
        if init is not None:
            extra = _widen(em, op, init.at(em, res), init.dtype, acc)
            total = b.fadd(total, extra) if floating else b.add(total, extra)
        return _finish(em, total, acc)
    shape = em.shape_of(op.result_types[0])
    if not shape:
        return Scalar(acc, (), compute([]))
    memory = em.alloc(acc, shape)
    em.for_each(shape, lambda idx: b.store(compute(idx), memory.address(em, idx)))
    return memory


@LOWERINGS.register(*ops_where(lambda op: op.contraction))
def _contract_op(em, op):
    lhs, rhs = (em.env[n] for n in op.operands)
    init = op.group("init")
    lhs_contract, rhs_contract, batch_l, batch_r = contraction_axes(op)
    return contract(em, op, lhs, rhs, op.attributes["acc"].dtype, lhs_contract, rhs_contract,
                    batch_l, batch_r, em.env[init[0]] if init else None)


@LOWERINGS.register("outer")
def _outer_op(em, op):
    lhs, rhs = (_settled(em, em.env[n]) for n in op.operands)
    shape = em.shape_of(op.result_types[0])
    return Lazy(lhs.dtype, shape,
                lambda e, idx: binary(e, op, "mul", lhs.at(e, [idx[0]]), rhs.at(e, [idx[1]]), lhs.dtype))


@LOWERINGS.register("histogram")
def _histogram_op(em, op):
    (values,) = (em.env[n] for n in op.operands)
    valid_names = op.group("valid")
    valid = em.env[valid_names[0]] if valid_names else None
    type_ = op.result_types[0]
    (bins,) = em.shape_of(type_)
    counts, increment, finish = em.hooks.histogram_counts(em, type_.dtype, bins)
    site = CheckSite(op, errors.HISTOGRAM_RANGE, "active value outside [0, bins)")
    b = em.b
    from .memory import as_index, element_at

    def count(idx):
        active = element_at(em, valid, idx) if valid is not None else ir.Constant(ir.IntType(1), 1)
        value = values.at(em, idx)
        position = as_index(em, value, values.dtype)
        inside = b.icmp_unsigned("<", position, bins)
        if is_signed(values.dtype):
            inside = b.and_(inside, b.icmp_signed(">=", position, ir.Constant(I64, 0)))
        em.check(site, b.and_(active, b.not_(inside)))
        with b.if_then(b.and_(active, inside)):
            increment(counts.address(em, [position]))
    em.for_each(values.shape, count)
    finish()
    return counts

