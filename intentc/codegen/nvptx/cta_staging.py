"""Staging a small tensor beside the tiles in shared memory (docs/gpu.md, "Beyond the row
form"): in the register form the tiles (the iteration's largest size) read a smaller tensor
at coordinates other threads own (a row vector broadcast over a tile, the halves of a
join). Recomputing it at each use repeats its reads and arithmetic once per tile element;
staged, each of its elements is computed once, by the thread its own layout gives it,
stored to shared memory, and after a barrier read by any thread (`ld.shared`). A barrier
before the stores keeps the previous iteration's readers safe. Not in CTAs that run several
iterations at once (no barriers there) nor past the staging budget: then the tensor is
recomputed at each use.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import register_type
from ..llvm.values import Body, ElementAt, Memory, Shape
from .cta import CtaPlan, barrier, shared_array

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

STAGING_BYTES = 16 * 1024      # a kernel's staged tensors (beside histogram counts and records)


@dataclass
class StagingBudget:
    """The shared memory a kernel has left for staged tensors."""
    left: int = STAGING_BYTES

    def take(self, nbytes: int) -> bool:
        if nbytes > self.left:
            return False
        self.left -= nbytes
        return True


def _bytes(type_: ir.Type) -> int:
    width = type_.width if isinstance(type_, ir.IntType) else {"half": 16, "float": 32, "double": 64}[str(type_)]
    return max(1, width // 8)


def stage(em: Emitter, plan: CtaPlan, dtype: str, shape: Shape, element: ElementAt,
          for_each: Callable[[Body], None], budget: StagingBudget) -> Memory | None:
    """The tensor element(idx) of `shape` in shared memory, complete for every thread of the
    iteration, or None where it cannot be staged; `for_each(body)` visits this thread's
    coordinates of `shape`."""
    extents = [int(e.constant) if isinstance(e, ir.Constant) else None for e in shape]
    if plan.iterations > 1 or None in extents:
        return None
    count = math.prod(e for e in extents if e is not None)
    if not budget.take(count * _bytes(register_type(dtype))):
        return None
    barrier(em)                         # the previous iteration's readers are done
    flat = shared_array(em, dtype, count)
    memory = Memory(dtype, tuple(shape), flat.ptr, em.row_major_strides(shape))
    for_each(lambda idx: em.b.store(element(idx), memory.address(em, idx)))
    barrier(em)
    return memory
