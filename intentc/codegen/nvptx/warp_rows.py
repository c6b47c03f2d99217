"""The warp-rows mapping's frame (docs/gpu.md, "Quantized rows and dot rows"): a `parallel`
over rows whose iteration reduces a row to scalars runs one row a warp, 8 warps a CTA;
warp w of CTA c takes rows 8c + w, 8c + w + 8·nctaid, ... (every lane of a warp the same
rows, so its shuffles are collective). The row kinds: `quantized_rows.py`, `dot_rows.py`.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..llvm.types import I32, I64
from .cta import sreg
from .register_staging import i32

WARPS = 8                 # rows a CTA runs at once
CTAS_PER_SM = 8           # the grid: 2048 threads an SM (more than reside: rows are dealt round-robin)


class RowsPlanData:
    """What every warp-rows plan tells the mapping (kernel_plans.py): its kind, CTA size and grid."""
    kind = "warp-rows"
    ctas_per_sm = CTAS_PER_SM
    shared_bytes = 0

    @property
    def threads(self) -> int:
        return 32 * WARPS


class RowWalk:
    def __init__(self, em):
        self.em = em
        self.lane = em.b.urem(sreg(em, "tid.x"), i32(32))

    def walk(self, rows: ir.Value, body: Callable[[ir.Value], None]) -> None:
        em = self.em
        b = em.b
        warp = b.add(b.mul(sreg(em, "ctaid.x"), i32(WARPS)), b.udiv(sreg(em, "tid.x"), i32(32)))
        warps = b.mul(sreg(em, "nctaid.x"), i32(WARPS))
        em.loop(b.zext(warp, I64), rows, body, b.zext(warps, I64), name="row")

    def butterfly_sum(self, value: ir.Value, deltas: tuple, add) -> ir.Value:
        """value combined (`add`) with the lanes XOR each delta, in turn: every lane of a
        group ends with the same bits (each step adds the same two operands in both lanes)."""
        b = self.em.b
        shfl = self.em.declare("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
        for delta in deltas:
            other = b.call(shfl, [i32(-1), b.bitcast(value, I32), i32(delta), i32(31)])
            value = add(value, b.bitcast(other, value.type))
        return value

    def from_next_lane(self, value: ir.Value) -> ir.Value:
        """`value` of lane + 1 (shfl.sync.down by one)."""
        b = self.em.b
        shfl = self.em.declare("llvm.nvvm.shfl.sync.down.i32", I32, [I32, I32, I32, I32])
        return b.bitcast(b.call(shfl, [i32(-1), b.bitcast(value, I32), i32(1), i32(31)]), value.type)
