"""The register form's slots as one rolled loop over groups of slots (issue #13: compile time).

An iteration of independent coordinates (reads, element-wise ops, per-coordinate loops and
ifs, calls of such helpers, writes: no reduction, scan or barrier for a thread's slots to
meet at) whose ops are costly (libdevice math, Philox, divisions) unrolled its K slots: K
copies of every inlined erf, exp or Philox block, which LLVM optimized and the NVPTX backend
selected once a copy (gelu_fwd: 16 erff and 16 expf bodies, dropout: 8 Philox blocks a
thread). Here the whole iteration instead runs once per trip of a loop over the thread's
slot groups: each trip lowers the iteration on `CtaPlan.trip_slots` slots (its group's
vector loads, its math, its stores) at the coordinates of trip g, g·T·U further on. Nothing
is carried from one trip to the next, so every trip's slot arrays are U constant-indexed
registers (no local memory), and the costly code is emitted once a trip instead of once a
slot. T and K, so the coordinates a thread owns and each coordinate's operations, are those
of the unrolled form: the same bits.

(Rolling each op's slot loop on its own, as `UNROLL_BUDGET`'s bodies do, keeps values
between the op loops in per-thread arrays indexed by the slot: local memory. That lost
Philox's 32-bit multiplies and ran dropout at 0.67 of Triton instead of 0.75:
bench/results/gpu-bench-20261201-h200-round1.log.)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Helper, Op
from ...ir.optable import ops_where
from ...ir.types import TensorType
from ..layout.assign import elements
from ..llvm.types import I64
from .cta_regions import callee, nested_ops
from .cta_tiles import tensor_types
from .rolled_loops import rolled_loop

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from .cta import CtaPlan

# Whether independent costly iterations roll their slot groups (bench/cta_pipeline_ab.py's
# `unrolled groups` choice sets it False to time the unrolled form beside it).
ROLL_GROUPS = True
# Whether such an iteration drawing Philox words takes groups of 4 consecutive coordinates,
# whose counters share blocks (`draws_philox`), rolled or not (the `unrolled groups` choice
# sets it False too: main's form; `unrolled shared Philox` keeps it).
SHARE_PHILOX = True
# The fewest slots a trip runs (a multiple of V that divides K): more slots a trip put more
# loads in flight a thread, in a longer body (bench/cta_pipeline_ab.py's `N slots a trip`).
MIN_TRIP_SLOTS = 1
PHILOX = ops_where(lambda op: op.family == "rng")


def trip_slots(ops: Sequence[Op], flat: Sequence[Op], plan: CtaPlan, helpers: Mapping[str, Helper],
               known: dict[str, int], per_coordinate: Callable[[Op], bool], rolled: bool | None = None) -> int:
    """The slots a trip of the group loop runs for the register-form `plan` of iteration
    `ops` (`flat`: without its per-coordinate regions), one group of V or MIN_TRIP_SLOTS (the least code a
    trip), or 0 when its slots stay unrolled. It rolls an iteration of one CTA whose every
    group is full (S = T·K, nothing guarded), whose ops are all per coordinate
    (`per_coordinate`, helpers' bodies too) on tensors of S elements, writing S-element
    tensors only (a rank-0 write would repeat each trip), with no costly top-level value for
    it to keep in slots across iterations (kaiser's window: rolled, it would be indexed by the
    trip, in local memory; cheap ones, a bias row, are re-read at each use instead), and
    nothing staged in shared memory or held in CTA buffers. (`rolled`: whether it may roll,
    ROLL_GROUPS unless given.)"""
    if not ((ROLL_GROUPS if rolled is None else rolled) and plan.slots and plan.unrolled and plan.groups > 1 and not plan.masked
            and plan.iterations == 1 and plan.size == plan.threads * plan.slots
            and not (plan.staged or plan.buffers or plan.costly_prologue or plan.shared_results)):
        return 0
    types = {name: type_ for op in nested_ops(ops, helpers) for name, type_ in zip(op.results, op.result_types)}
    for op in nested_ops(flat, helpers):
        if not (per_coordinate(op) or callee(op, helpers) is not None or op.name == "yield"):
            return 0
        for type_ in op.result_types:
            if any(t.shape and elements(t, known) != plan.size for t in tensor_types(type_)):
                return 0
        if op.name == "write":
            written = types.get(op.operands[1])
            if not (isinstance(written, TensorType) and written.shape and elements(written, known) == plan.size):
                return 0
    trip = plan.vector * max(1, MIN_TRIP_SLOTS // plan.vector)
    return trip if plan.slots % trip == 0 and trip < plan.slots else 0


def shares_philox(ops: Iterable[Op]) -> bool:
    """Whether an independent costly iteration of `ops` takes groups of 4 consecutive
    coordinates because it draws Philox words (`random_bits`, `uniform`): their counters share
    Philox blocks (`rng.philox_word`: 2 blocks of 10 rounds for 4 words instead of 4)."""
    return SHARE_PHILOX and any(op.name in PHILOX for op in ops)


def run_trips(em: Emitter, hooks, emit: Callable[[], None]) -> None:
    """emit() (the iteration's lowering) once, inside a loop over the thread's trips: during
    it the hooks' plan holds the trip's U slots and `hooks.trip_start` the linear offset of
    trip g, g·T·U (slot_coordinate adds it)."""
    plan = hooks.plan
    inner = replace(plan, slots=plan.trip_slots, trip_slots=0)
    span = ir.Constant(I64, plan.width * plan.trip_slots)

    def trip(number: ir.Value) -> None:
        hooks.plan, hooks.trip_start = inner, em.b.mul(number, span, flags=["nuw", "nsw"])
        try:
            emit()
        finally:
            hooks.plan, hooks.trip_start = plan, None
    rolled_loop(em, plan.slots // plan.trip_slots, trip, "trip")
