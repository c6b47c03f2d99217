"""The register form's scans with all slot groups in one exchange (docs/gpu.md, "Reductions
and scans in CTA iterations").

`scan_slots` (cta_scan.py) block-scans each group of V·T coordinates in turn: a warp scan,
the warps' totals through shared memory (a barrier pair), then the next group after its
carry: 4 barrier pairs a row of 4096 f32 on 256 threads (`row_cumsum`). Here each thread
folds its V coordinates of every group and the warps scan all groups' folds; then the
warps' totals of every group — G·W ≤ 32 of them, in scan order (group, then warp) — pass
through shared memory at once, and one warp scan over them gives every (group, warp) what
precedes it: one barrier pair a scan. Every combine still joins adjacent runs in source
order (§6), as in the per-group form.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I32
from ..llvm.values import Registers
from .cta import SHARED_WORDS, _shared, _shuffle, barrier, from_word, sreg, to_word
from .cta_scan import Scan, Values, _select, _warp_scan, fold_group, slot_arrays, store_group

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def scan_groups_at_once(em: Emitter, hooks, scan: Scan) -> list[Registers] | None:
    """`scan` in the register form with one exchange of the warps' totals, or None where
    the plan has one group, several iterations a CTA, or more than 32 (group, warp) totals."""
    plan = hooks.plan
    warps = -(-plan.threads // 32)
    if plan.iterations != 1 or plan.groups < 2 or plan.groups * warps > SHARED_WORDS:
        return None
    b = em.b
    tid = sreg(em, "tid.x")
    lane, warp = b.and_(tid, ir.Constant(I32, 31)), b.lshr(tid, ir.Constant(I32, 5))
    if scan.reverse:
        lane_rank, warp_rank = b.sub(ir.Constant(I32, 31), lane), b.sub(ir.Constant(I32, warps - 1), warp)
    else:
        lane_rank, warp_rank = lane, warp
    numbers = list(reversed(range(plan.groups))) if scan.reverse else list(range(plan.groups))
    folded = [fold_group(em, hooks, scan, number) for number in numbers]
    inclusive = [_warp_scan(em, running, lane_rank, scan.combine, scan.reverse) for _, _, running in folded]
    before_warp = _totals_before(em, scan, inclusive, lane, warp_rank, warps)
    arrays = slot_arrays(em, plan, scan)
    for (order, prefixes, _), through, earlier in zip(folded, inclusive, before_warp):
        shifted = [_shuffle(em, "down" if scan.reverse else "up", v, 1, 31 if scan.reverse else 0) for v in through]
        first_lane = b.icmp_unsigned("==", lane_rank, ir.Constant(I32, 0))
        before = _select(em, first_lane, earlier, scan.combine(earlier, shifted))
        store_group(em, plan, scan, arrays, order, prefixes, before)
    return arrays


def _totals_before(em: Emitter, scan: Scan, inclusive: list[Values], lane: ir.Value, warp_rank: ir.Value,
                   warps: int) -> list[Values]:
    """For each group (in scan order), what precedes this thread's warp in it: the totals of
    every earlier group and of the group's earlier warps."""
    b = em.b
    count = len(inclusive) * warps
    shared, zero = _shared(em, len(scan.neutral)), ir.Constant(I32, 0)
    last_lane = 0 if scan.reverse else 31
    with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, last_lane))):
        for position, values in enumerate(inclusive):
            index = b.add(ir.Constant(I32, position * warps), warp_rank)
            for row, value in enumerate(values):
                b.store(to_word(em, value), b.gep(shared, [zero, ir.Constant(I32, row), index], inbounds=True))
    barrier(em)
    present = b.icmp_unsigned("<", lane, ir.Constant(I32, count))
    source = b.select(present, lane, zero)
    totals = [b.select(present, from_word(em, b.load(b.gep(shared, [zero, ir.Constant(I32, row), source],
                                                           inbounds=True)), neutral.type), neutral)
              for row, neutral in enumerate(scan.neutral)]
    barrier(em)          # the partials may be overwritten by the next reduction or scan only now
    scanned = _warp_scan(em, totals, lane, scan.combine, False)
    result = []
    for position in range(len(inclusive)):
        index = b.add(ir.Constant(I32, position * warps), warp_rank)
        has_earlier = b.icmp_unsigned(">", index, zero)
        earlier = b.select(has_earlier, b.sub(index, ir.Constant(I32, 1)), zero)
        result.append(_select(em, has_earlier, [_shuffle(em, "idx", t, earlier, 31) for t in scanned], scan.neutral))
    return result
