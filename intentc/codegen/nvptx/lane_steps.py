"""The shuffle steps of a warp's scan or butterfly as one rolled loop, for combines that run
the author's region (generic_reduce, generic_scan, region_scan, their presence flags): such
a combine can be dozens of instructions (two exponentials in a log-sum-exp merge), and five
unrolled steps emitted it five times (issue #13: `prefix_logsumexp` 1694 -> 1251 PTX lines).
Builtin combines (an add, a max) stay unrolled: there the loop's counter would cost more
than the combine."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I32, I64
from .ptx_asm import opaque

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

Values = list[ir.Value]


def rolled_steps(em: Emitter, values: Values, count: int | ir.Value, step: Callable[[ir.Value, Values], Values]) -> Values:
    """values after step(i, values) for i = 0..count-1 (i an i32), in a loop whose trip count
    LLVM cannot see (so it does not unroll it back; `count` an int, or an i64 value that
    differs between threads); the values are carried in entry slots (registers after SROA)."""
    b = em.b
    slots = [em.entry_alloca(value.type) for value in values]
    for slot, value in zip(slots, values):
        b.store(value, slot)

    def trip(index: ir.Value) -> None:
        for slot, value in zip(slots, step(b.trunc(index, I32), [b.load(slot) for slot in slots])):
            b.store(value, slot)
    em.loop(ir.Constant(I64, 0), opaque(b, ir.Constant(I64, count)) if isinstance(count, int) else count, trip,
            name="lanestep")
    return [b.load(slot) for slot in slots]
