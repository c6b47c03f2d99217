"""Several iterations a CTA (docs/gpu.md, "Short rows"): when an iteration's tensors are
short, spreading one iteration over a whole CTA of at least 64 threads leaves most of them
idle (a particle's 3 coordinates on 64 threads) and pays a CTA's start for a few elements.
Then the CTA runs `iterations` iterations at once, each on its own aligned group of
`width` lanes (a power of two, at most a warp): lane l of group g holds the coordinates a
CTA of `width` threads would give thread l. A group's reductions are butterflies over its
own lanes (shuffles with the group's member mask, no shared memory), so groups never wait
for each other: the form is chosen only for bodies that need no CTA barrier (no scans,
histograms or scalar effects made once an iteration).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ..llvm.types import I64

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from .cta import CtaPlan

GROUP_CTA_THREADS = 256      # the CTA size when iterations share a CTA (8 warps)
WARP = 32
# Ops whose CTA lowering meets at a barrier (shared memory): block scans, shared-memory
# histograms, scalar effects made once an iteration and broadcast (cta_effects.py), buffers
# (cta_buffers.py).
_ATOMICS = ops_where(lambda op: op.family == "atomics")


def _needs_barrier(op: Op) -> bool:
    return (op.name == "scan" or op.name == "histogram" or op.name == "quantize" or op.name == "buffer"
            or op.name in _ATOMICS)


def _every_op(ops: Iterable[Op]) -> Iterable[Op]:
    for op in ops:
        yield op
        for region in op.regions:
            yield from _every_op(region.ops)


def group_width(size: int, ops: list[Op], min_slots: int) -> int | None:
    """The lanes an iteration of `size` coordinates gets when iterations share a CTA: a power
    of two up to a warp giving each lane two coordinates (two loads in flight a thread: with
    one, `periodic_wrap`'s 3 coordinates on 4 lanes were latency-bound at 0.40 of torch on the
    H200), a warp holding up to `min_slots` coordinates a lane (rows of 64-256: a warp's
    butterflies, no barrier); None for longer rows (the row form) or a body that needs a
    barrier."""
    if size > WARP * min_slots or any(_needs_barrier(op) for op in _every_op(ops)):
        return None
    pairs = -(-size // 2)
    return min(WARP, max(min(size, 2), 1 << (pairs - 1).bit_length()))     # never one lane for 2+


def group_iterations(em: Emitter, plan: CtaPlan, cta: ir.Value, ctas: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(first iteration, stride) of this thread's group: iteration it runs on group
    it mod iterations of CTA (it div iterations) mod nctaid."""
    from .cta import sreg
    b = em.b
    per_cta = ir.Constant(I64, plan.iterations)
    group = b.zext(b.udiv(sreg(em, "tid.x"), ir.Constant(ir.IntType(32), plan.width)), I64)
    return b.add(b.mul(cta, per_cta), group), b.mul(ctas, per_cta)
