"""Logical buffers (§9) and other temporaries an iteration's threads share, in CTA-mapped
iterations.

An iteration's `buffer` (with `init`: no written-mask to keep) lives in memory the CTA's
threads share instead of each thread's stack: shared memory when its size is static and fits
(`BUFFER_BYTES` together), else the CTA's **scratch** in device memory (below). The CTA
writes the init together (each thread its own coordinates), a rank-0 write is made by thread 0
(like a view's), a tensor access visits each coordinate on its owning thread, and every access
is preceded by a barrier (`NvptxHooks.before_buffer_access`), so each one sees all the earlier
ones of every thread and no later write overtakes an earlier read (bar.sync orders shared and
global accesses alike). The iteration's scalar code, ordered loops included, runs on every
thread (uniform trips), so every thread meets every barrier. A buffer's accesses thus follow
program order exactly as on one thread (§9, §10: the buffer is the iteration's own), while
the rest of the iteration is spread over the CTA. `ema_rows`' recurrence (a scalar loop
writing one element a step) ran as one thread per row (grid-stride, its buffer on the stack).

A CTA's scratch serves temporaries whose size is known only at launch (a buffer of `T`
elements, `quantize`'s records of `NB` blocks): thread 0 of each CTA allocates it from the
device heap once, before the iteration loop (its extents are the kernel's, bound at launch),
publishes the address through shared memory, and frees it at exit after a barrier; every
iteration the CTA runs reuses it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ...ir.types import BufferType, ViewType
from ..llvm.types import I8, I64, register_type
from ..llvm.values import Memory, Shape
from .cta_tiles import every_op

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from .cta import CtaPlan

# Shared memory the buffers of one iteration may take (of the 48 KiB static a CTA has; the
# rest goes to staged reads, histogram counts and quantized records: cta_staging.py).
BUFFER_BYTES = 16 * 1024


def launch_extents(kernel: Kernel) -> frozenset[str]:
    """The extent names a launch binds: the views' dynamic extents and `index` parameters."""
    names = {p.name for p in kernel.params if getattr(p.type, "dtype", None) == "index"}
    for param in kernel.params:
        if isinstance(param.type, ViewType):
            names |= {e for e in param.type.shape if isinstance(e, str)}
    return frozenset(names)


def sized_at_launch(type_: object, launch: frozenset[str]) -> bool:
    """Whether every extent of a tensor or buffer type is static or bound at launch."""
    shape = getattr(type_, "shape", None)
    return shape is not None and all(isinstance(e, int) or e in launch for e in shape)


def _register_bytes(dtype: str) -> int:
    element = register_type(dtype)
    width = element.width if isinstance(element, ir.IntType) else {"float": 32, "double": 64}[str(element)]
    return max(1, width // 8)


def buffer_bytes(type_: BufferType, known: dict[str, int]) -> int | None:
    """The bytes of a buffer of static extents in registers, else None."""
    extents = [e if isinstance(e, int) else known.get(e) for e in type_.shape]
    if None in extents:
        return None
    return math.prod(e for e in extents if e is not None) * _register_bytes(type_.dtype)


def cta_buffers(ops: Iterable[Op], known: dict[str, int], launch: frozenset[str]) -> dict[str, str]:
    """The buffers (with an init) of an iteration that the CTA shares: {name: "shared" or
    "scratch"}, shared memory for the static ones within BUFFER_BYTES together."""
    found, left = {}, BUFFER_BYTES
    for op in every_op(ops):
        type_ = op.result_types[0] if op.name == "buffer" else None
        if not isinstance(type_, BufferType) or not op.group("init") or not sized_at_launch(type_, launch):
            continue
        size = buffer_bytes(type_, known)
        if size is not None and size <= left:
            found[op.results[0]], left = "shared", left - size
        else:
            found[op.results[0]] = "scratch"
    return found


def shared_buffer_bytes(ops: list[Op]) -> int:
    """The shared memory staging leaves the iteration's buffers: all they may take."""
    return BUFFER_BYTES if any(op.name == "buffer" for op in every_op(ops)) else 0


def buffer_storage(em: Emitter, plan: CtaPlan, place: str, dtype: str, shape: Shape) -> Memory:
    """A buffer's storage (after a barrier: the previous iteration's accesses are done)."""
    from .cta import barrier
    if place == "shared":
        memory, _ = em.hooks.shared_temporary(em, dtype, shape)
        return memory
    barrier(em)
    return cta_scratch(em, plan, dtype, shape)


def cta_scratch(em: Emitter, plan: CtaPlan, dtype: str, shape: Shape) -> Memory:
    """`shape` (extents bound at launch) of `dtype` registers in device memory, one block a
    CTA: allocated by thread 0 in the prologue and published through shared memory, freed
    by thread 0 at exit once every thread is done."""
    from .cta import barrier, on_thread_zero, shared_array
    element = register_type(dtype)
    body, em.b = em.b, em.prologue
    try:
        count: ir.Value = ir.Constant(I64, _register_bytes(dtype))
        for extent in shape:
            count = em.b.mul(count, extent)
        # never malloc(0): it may answer NULL, which the checked malloc takes for an exhausted heap
        count = em.b.select(em.b.icmp_unsigned("<", count, ir.Constant(I64, 16)), ir.Constant(I64, 16), count)
        slot = shared_array(em, "u64", 1)

        def allocate():
            raw = em.hooks.heap_alloc(em, em.b, count)
            em.b.store(em.b.ptrtoint(raw, I64), slot.ptr)
        on_thread_zero(em, plan, allocate)
        barrier(em)
        raw = em.b.inttoptr(em.b.load(slot.ptr), I8.as_pointer())
        pointer = em.b.bitcast(raw, element.as_pointer())
    finally:
        em.b = body

    def release():
        barrier(em)
        on_thread_zero(em, plan, lambda: em.hooks.heap_free(em, em.b, raw))
    em.exit_actions.append(release)
    return Memory(dtype, tuple(shape), pointer, em.row_major_strides(shape))
