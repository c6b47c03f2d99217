"""Reductions in CTA-mapped iterations beyond a full reduction of one value (docs/gpu.md):
arg_reduce's (value, position) pairs, generic_reduce's author-given combines, and partial
reductions (along some axes) staged in shared memory.

Each thread folds its coordinates into one partial (a tuple of registers); the CTA then
combines the threads' partials as `cta.block_combine` does one value (a butterfly within
each warp, the warps' results through shared memory, a butterfly over them), except that
every butterfly step puts the lower lane's operand first. A generic combine is associative
and commutative only by the author's assertion (§6), not bit for bit (Welford's merge
rounds differently with its operands swapped), so this order is what gives every thread
the same bits.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I32
from ..llvm.values import ElementAt, Memory, Shape
from .cta import CtaPlan, _shuffle, _warp_totals, barrier, on_thread_zero, shared_array, sreg
from .lane_steps import rolled_steps

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

TupleCombine = Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]


def _ordered_butterfly(em: Emitter, values: list[ir.Value], combine: TupleCombine, width: int = 32,
                       rolled: bool = False) -> list[ir.Value]:
    """The combination of `values` over aligned groups of `width` lanes (the warp by
    default), lower lane first at every step, so lanes i and i^k compute combine(lower,
    upper) from the same two operands: the same bits in every lane, for any combine
    (`rolled`: the steps in a loop, `lane_steps.py`)."""
    b = em.b
    lane = b.and_(sreg(em, "tid.x"), ir.Constant(I32, 31))

    def step(lanes, values: list[ir.Value]) -> list[ir.Value]:
        others = [_shuffle(em, "bfly", value, lanes, 31) for value in values]
        bit = ir.Constant(I32, lanes) if isinstance(lanes, int) else lanes
        upper = b.icmp_unsigned("!=", b.and_(lane, bit), ir.Constant(I32, 0))
        first = [b.select(upper, other, value) for value, other in zip(values, others)]
        second = [b.select(upper, value, other) for value, other in zip(values, others)]
        return combine(first, second)
    steps = width.bit_length() - 1
    if rolled and steps > 1:
        return rolled_steps(em, values, steps, lambda index, current: step(
            b.lshr(ir.Constant(I32, width // 2), index), current))
    lanes = width
    while lanes := lanes // 2:
        values = step(lanes, values)
    return values


def block_combine_tuple(em: Emitter, plan: CtaPlan, values: list[ir.Value], identities: list[ir.Value],
                        combine: TupleCombine, rolled: bool = False) -> list[ir.Value]:
    """The CTA-wide combination of every thread's partial `values` (each thread gets it):
    ordered butterflies within each warp, then over the warps' results in every warp (lane
    l holding warp l's, the identities past the last warp; with a power-of-two count of
    warps, only that many lanes' butterfly over lane l holding warp l mod W's). `rolled`:
    the butterflies' steps in loops, for a combine that runs the author's region."""
    warp_results = _ordered_butterfly(em, values, combine, rolled=rolled)
    warps = -(-plan.width // 32)
    if warps & (warps - 1) == 0:
        return _ordered_butterfly(em, _warp_totals(em, plan, warp_results, 0, identities, cyclic=True), combine,
                                  warps, rolled)
    return _ordered_butterfly(em, _warp_totals(em, plan, warp_results, 0, identities), combine, rolled=rolled)


def stage_in_shared(em: Emitter, hooks, dtype: str, shape: Shape, element: ElementAt, count: int,
                    by_block: bool) -> Memory:
    """A partial reduction's results (element(idx) reduces the line at result coordinate
    idx) in shared memory, readable by every thread after a barrier. by_block: every thread
    walks every result and the reduction inside spreads over the CTA (thread 0 stores it);
    otherwise each thread reduces the results it owns (`hooks.for_each`) on its own."""
    b = em.b
    staged = shared_rows(em, dtype, shape, count)
    barrier(em)                              # the previous iteration's readers are done
    if by_block:
        def reduce_line(idx):
            value = element(idx)
            on_thread_zero(em, hooks.plan, lambda: b.store(value, staged.address(em, idx)))
        em.serial_for_each(shape, reduce_line)
    else:
        hooks.for_each(em, shape, lambda idx: b.store(element(idx), staged.address(em, idx)))
    barrier(em)
    staged.frozen = True                     # written above, only read from here on
    return staged


def shared_rows(em: Emitter, dtype: str, shape: Shape, count: int) -> Memory:
    """A fresh row-major tensor of `shape` (`count` elements) in the CTA's shared memory."""
    words = shared_array(em, dtype, count)
    return Memory(dtype, tuple(shape), words.ptr, em.row_major_strides(shape))
