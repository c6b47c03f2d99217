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
from .mapping import RESIDENT_THREADS
from .rolled_loops import rolled_loop

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from .stages import StagePlan

# Whether such programs roll their math writes (bench/cta_pipeline_ab.py's `unrolled math
# writes` choice sets it False to time the unrolled form beside it).
ROLL_MATH_WRITES = True
# The slots a trip of such a loop visits (a divisor of K; `grid N slots a trip` choices):
# more interleave more slots' math in the code.
TRIP_SLOTS = 1
# Whether such programs ask for full residency (`resident_ctas`; the `uncapped math writes` choice)
CAP_REGISTERS = True
LIBM = ops_where(lambda op: op.libm)


def rolls_math_writes(ops: list[Op], grid_wide: bool, philox: bool) -> bool:
    """Whether an element-wise program (no grid-wide op) of one coordinate a slot group (no
    Philox words, whose blocks a thread's 4 consecutive slots share) calls the math library
    (libdevice's bodies, inlined: not the `approximate` forms, a hardware instruction or two)."""
    return ROLL_MATH_WRITES and not grid_wide and not philox and any(
        op.name in LIBM and not op.attributes.get("approximate") for op in every_op(ops))


def resident_ctas(plan: StagePlan, threads: int) -> int:
    """The CTAs of `threads` an SM keeps resident that a program with rolled math writes asks
    ptxas to fit (`.minnctapersm`; 0: no ask): all of them (RESIDENT_THREADS / T), as the unrolled form
    fitted in 32 registers. Rolled, ptxas took 37 for special_math (six CTAs of 256 an SM
    instead of eight); asked, it fits 32 without spilling."""
    return RESIDENT_THREADS // threads if plan.rolled_writes and CAP_REGISTERS else 0


class SelectedRegisters(Registers):
    """A tensor's K slots (an entry-block array, promoted to registers), read in a rolled
    loop over the slots by selecting on the trip's slot number among the constant slots it
    may be (`hooks.slot_candidates`: those of the trip's lane)."""

    def at(self, em: Emitter, idx) -> ir.Value:
        slot = getattr(em.hooks, "current_slot", 0)
        if isinstance(slot, int):
            return super().at(em, idx)
        b = em.b
        *others, last = getattr(em.hooks, "slot_candidates", None) or range(self.array.type.pointee.count)
        value = b.load(self.slot(em, last))
        for number in reversed(others):
            value = b.select(b.icmp_unsigned("==", slot, ir.Constant(I64, number)), b.load(self.slot(em, number)),
                             value)
        return value


def slot_loop(em: Emitter, hooks, slots: int, visit) -> None:
    """visit(slot) for the K slots as one rolled loop of TRIP_SLOTS slots a trip (trip t's
    lane u: slot t·U + u), `hooks.current_slot` the visited i64 slot."""
    lanes = TRIP_SLOTS if slots % TRIP_SLOTS == 0 else 1

    def trip(number: ir.Value) -> None:
        for lane in range(lanes):
            slot = em.b.add(em.b.mul(number, ir.Constant(I64, lanes)), ir.Constant(I64, lane))
            hooks.current_slot, hooks.slot_candidates = slot, range(lane, slots, lanes)
            visit(slot)
        hooks.slot_candidates = None
    rolled_loop(em, slots // lanes, trip, "slot")
