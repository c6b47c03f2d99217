"""contract and its named forms, outer, histogram (spec §3, §5.3, §7).

Operands convert to the accumulator dtype by the cast rules and are multiplied and summed
in that dtype: the accumulator dtype is the accumulation dtype (§3, §6), so an overflowing
partial sum shows as ±inf or NaN on every target, as in the interpreter. f32/f64 adds carry
`reassoc` (§6 lets the compiler choose the order); f16/bf16/f8 round every product and
every add once into the format (their f64 register images). `init` joins the sum as one
more member. Integer accumulators wrap in their own width.
"""
from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from ...ir.ops.contraction import contraction_axes
from .conversion import convert
from .emitter import CheckSite, Emitter
from .pointwise import binary
from .reduction import combine_builtin, identity_const
from .types import I64, is_signed
from .values import Lazy, Scalar, Tensor
from .lowering import LOWERINGS
from ...ir.optable import ops_where

def _settled(em, value):
    return em.materialize(value) if isinstance(value, Lazy) and value.costly else value


def contract(em: Emitter, op: Op, lhs: Tensor, rhs: Tensor, acc: str, lhs_contract: Sequence[int],
             rhs_contract: Sequence[int], lhs_batch: Sequence[int] = (), rhs_batch: Sequence[int] = (),
             init: Tensor | None = None) -> Tensor:
    lhs, rhs = _settled(em, lhs), _settled(em, rhs)
    lhs_free = [a for a in range(lhs.rank) if a not in lhs_contract and a not in lhs_batch]
    rhs_free = [a for a in range(rhs.rank) if a not in rhs_contract and a not in rhs_batch]
    k_shape = [lhs.shape[a] for a in lhs_contract]
    slot = em.entry_alloca(identity_const("sum", acc).type)
    b = em.b
    nb, nl = len(lhs_batch), len(lhs_free)

    def add(total, member):
        return combine_builtin(em, op, "sum", total, member, acc)

    def compute(res):
        b.store(identity_const("sum", acc), slot)

        def step(k):
            li, ri = [None] * lhs.rank, [None] * rhs.rank
            for axes, coords in ((lhs_batch, res[:nb]), (lhs_free, res[nb:nb + nl]), (lhs_contract, k)):
                for a, c in zip(axes, coords):
                    li[a] = c
            for axes, coords in ((rhs_batch, res[:nb]), (rhs_free, res[nb + nl:]), (rhs_contract, k)):
                for a, c in zip(axes, coords):
                    ri[a] = c
            x = convert(em, op, lhs.at(em, li), lhs.dtype, acc)
            y = convert(em, op, rhs.at(em, ri), rhs.dtype, acc)
            b.store(add(b.load(slot), binary(em, op, "mul", x, y, acc)), slot)
        em.for_each(k_shape, step)
        total = em.hooks.combine_partials(em, op, "sum", b.load(slot), acc, add)
        if init is not None:
            total = add(total, convert(em, op, init.at(em, res), init.dtype, acc))
        return total
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

