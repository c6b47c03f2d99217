"""Staging a tensor in shared memory (docs/gpu.md, "Beyond the row form"): in the register
form the tiles (the iteration's largest size) read a smaller tensor at coordinates other
threads own (a row vector broadcast over a tile, the halves of a join). Recomputing it at
each use repeats its reads and arithmetic once per tile element; staged, each of its
elements is read once, by the thread its own layout gives it (or, for a transposed read,
cta_transpose.py's visiting order), stored to shared memory, and after a barrier read by
any thread (`ld.shared`). A barrier before the stores keeps the previous iteration's readers
safe. The plan chooses the staged reads (`staged_reads`: within the shared memory histogram
counts and records leave; none in CTAs that run several iterations at once, which have no
barriers) and `launch.json` records them (`mark_staged`); every other smaller tensor is
recomputed at each use.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.types import TensorType
from ..layout.assign import Assignment, Conversion
from ..layout.encodings import Shared
from ..llvm.types import I64, register_type
from ..llvm.values import Body, ElementAt, Memory, Shape
from .cta_buffers import shared_buffer_bytes
from .cta_tiles import every_op

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

# Static shared memory a CTA may use (48 KiB) less the reductions' partials and scalar
# effects' words: staged tensors share it with histogram counts and quantized records.
SHARED_LIMIT = 47 * 1024


def _bytes(type_: ir.Type) -> int:
    width = type_.width if isinstance(type_, ir.IntType) else {"half": 16, "float": 32, "double": 64}[str(type_)]
    return max(1, width // 8)


def _static_bytes(type_: TensorType, known: dict[str, int]) -> tuple[int, int] | None:
    """(elements, bytes in registers) of a tensor type with static extents, else None."""
    extents = [e if isinstance(e, int) else known.get(e) for e in type_.shape]
    static = [e for e in extents if e is not None]
    if len(static) != len(extents):
        return None
    count = math.prod(static)
    return count, count * _bytes(register_type(type_.dtype))


def staged_reads(ops: list[Op], size: int, known: dict[str, int], transposed: Iterable[str] = ()) -> frozenset[str]:
    """The reads of the iteration `ops` (register form, tiles of `size` elements) staged in
    shared memory: the `transposed` ones and those of a smaller static size, in program
    order, in the shared memory that histogram counts and quantized records leave."""
    transposed = set(transposed)
    typed = [(op, op.result_types[0]) for op in every_op(ops) if op.result_types
             and isinstance(op.result_types[0], TensorType) and op.result_types[0].shape]
    left = SHARED_LIMIT - sum(sized[1] for op, type_ in typed if op.name == "histogram" or op.name == "quantize"
                              for sized in [_static_bytes(type_, known)] if sized is not None)
    left -= shared_buffer_bytes(ops)
    staged = []
    for op, type_ in typed:
        sized = _static_bytes(type_, known) if op.name == "read" else None
        wanted = op.results[0] in transposed or (sized is not None and sized[0] != size)
        if sized is not None and sized[0] > 0 and wanted and sized[1] <= left:
            staged.append(op.results[0])
            left -= sized[1]
    return frozenset(staged)


def mark_staged(layouts: Assignment, staged: frozenset[str]) -> None:
    """Record the staged values in the layout assignment: shared memory, written by the
    threads of their own layout."""
    for name in sorted(staged):
        written = layouts.values.get(name)
        layouts.values[name] = Shared((0,))
        layouts.conversions.append(Conversion(name, str(written), str(Shared((0,))), "shared"))


def stage(em: Emitter, dtype: str, shape: Shape, element: ElementAt, for_each: Callable[[Body], None],
          padded: bool = False) -> Memory:
    """The tensor element(idx) of `shape` (static) in shared memory, complete for every thread
    of the iteration; `for_each(body)` visits this thread's coordinates of `shape`. `padded`
    rows get one element more (a transposed visit: a warp's stores down a column then fall
    in different banks)."""
    from .cta import barrier, shared_array     # cta.py plans with staged_reads
    extents = [int(e.constant) for e in shape]
    if padded:
        extents[-1] += 1
    barrier(em)                         # the previous iteration's readers are done
    flat = shared_array(em, dtype, math.prod(extents))
    strides = em.row_major_strides([ir.Constant(I64, e) for e in extents])
    memory = Memory(dtype, tuple(shape), flat.ptr, strides, row_major=not padded, frozen=True)
    for_each(lambda idx: em.b.store(element(idx), memory.address(em, idx)))
    barrier(em)
    return memory
