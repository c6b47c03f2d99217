"""Logical buffers (§9) in CTA-mapped iterations.

An iteration's `buffer` (with `init`, static size) lives in the CTA's shared memory instead of
each thread's stack: the CTA initializes it together (each thread its own coordinates of the
init), a rank-0 write is made by thread 0 (like a view's), a tensor access visits each
coordinate on its owning thread, and every access is preceded by a barrier
(`NvptxHooks.before_buffer_access`), so each one sees all the earlier ones of every thread
and no later write overtakes an earlier read. The iteration's scalar code, ordered loops included, runs on every thread
(uniform trips), so every thread meets every barrier. A buffer's accesses thus follow program
order exactly as on one thread (§9, §10: a buffer is the iteration's own), while the rest of
the iteration is spread over the CTA. `ema_rows`' recurrence, a scalar loop writing one element
a step, ran as one thread per row (grid-stride, its buffer in local memory).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...ir.nodes import Op
from ...ir.types import BufferType
from ..llvm.types import register_type
from ..llvm.values import Memory, Shape
from .cta_tiles import every_op

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

# Shared memory the buffers of one iteration may take (of the 48 KiB static a CTA has; the
# rest goes to staged reads, histogram counts and quantized records: cta_staging.py).
BUFFER_BYTES = 16 * 1024


def buffer_bytes(type_: BufferType, known: dict[str, int]) -> int | None:
    """The bytes of a buffer of static extents in registers, else None."""
    count = 1
    for extent in type_.shape:
        size = extent if isinstance(extent, int) else known.get(extent)
        if size is None:
            return None
        count *= size
    element = register_type(type_.dtype)
    width = element.width if hasattr(element, "width") else {"float": 32, "double": 64}[str(element)]
    return count * max(1, width // 8)


def shared_buffers(ops: Iterable[Op], known: dict[str, int]) -> dict[str, str]:
    """The buffers of an iteration that live in shared memory, as pseudo-views for the plan's
    access checks ({name: "buffer"}): those with an init (no written-mask to keep) and a
    static size, within BUFFER_BYTES together."""
    found, left = {}, BUFFER_BYTES
    for op in every_op(ops):
        if op.name != "buffer" or not op.group("init"):
            continue
        size = buffer_bytes(op.result_types[0], known)
        if size is not None and size <= left:
            found[op.results[0]] = "buffer"
            left -= size
    return found


def shared_buffer(em: Emitter, dtype: str, shape: Shape) -> Memory:
    """A buffer's storage in the CTA's shared memory (after a barrier: the previous
    iteration's accesses are done)."""
    memory, _ = em.hooks.shared_temporary(em, dtype, shape)
    return memory

