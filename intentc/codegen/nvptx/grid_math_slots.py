"""An element-wise grid program's math-library writes as a rolled loop over the chunk's slots
(issue #13: compile time; `stages.py`, `staged.py`).

The grid form gives a thread K coordinates of each chunk and issues every read of all K
before the first use (kept in K registers, `StagedHooks.tabulate`); each write then
evaluated its element chain once a slot, so every libdevice function the chain calls was
inlined K times (special_math: seven functions, 28 inlined bodies, 1,322 PTX lines). Here a
write of a program that calls the math library (`StagePlan.rolled_writes`) visits the K
slots as one loop, its chain emitted once: the reads stay as they were, all K loads in
flight before the math, and a trip picks its slot's value of each with K - 1 selects on the
trip's slot number (`SelectedRegisters`: the K registers stay registers, where indexing the
slot array by the trip would put it in local memory). Each coordinate runs the same
operations on the same values: the same bits. (Fewer slots a thread, K = 2, halved the code
but ran special_math 8 % slower on the H200: half the loads in flight; stages.py.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ..llvm.types import I64
from ..llvm.values import Registers
from .cta_tiles import every_op
from .rolled_loops import rolled_loop

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

# Whether such programs roll their math writes (bench/cta_pipeline_ab.py's `unrolled math
# writes` choice sets it False to time the unrolled form beside it).
ROLL_MATH_WRITES = True
LIBM = ops_where(lambda op: op.libm)


def rolls_math_writes(ops: list[Op], grid_wide: bool, philox: bool) -> bool:
    """Whether an element-wise program (no grid-wide op) of one coordinate a slot group (no
    Philox words, whose blocks a thread's 4 consecutive slots share) calls the math library
    (libdevice's bodies, inlined: not the `approximate` forms, a hardware instruction or two)."""
    return ROLL_MATH_WRITES and not grid_wide and not philox and any(
        op.name in LIBM and not op.attributes.get("approximate") for op in every_op(ops))


class SelectedRegisters(Registers):
    """A tensor's K slots (an entry-block array, promoted to registers), read in a rolled
    loop over the slots by selecting among the K constant slots on the trip's slot number."""

    def at(self, em: Emitter, idx) -> ir.Value:
        slot = getattr(em.hooks, "current_slot", 0)
        if isinstance(slot, int):
            return super().at(em, idx)
        b = em.b
        count = self.array.type.pointee.count
        value = b.load(self.slot(em, count - 1))
        for number in range(count - 2, -1, -1):
            value = b.select(b.icmp_unsigned("==", slot, ir.Constant(I64, number)), b.load(self.slot(em, number)),
                             value)
        return value


def slot_loop(em: Emitter, hooks, slots: int, visit) -> None:
    """visit(slot) for the K slots as one rolled loop, `hooks.current_slot` the trip's i64 slot."""
    def trip(slot: ir.Value) -> None:
        hooks.current_slot = slot
        visit(slot)
    rolled_loop(em, slots, trip, "slot")
