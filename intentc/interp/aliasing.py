"""Launch checks of how views lie in memory (§8), made before the kernel runs, on every
target (the CPU and GPU bind through the same code):

- `noalias` (§8, §13): a view marked `noalias` shares no element with any other view of
  the launch; it is the caller's precondition, so an overlap is an illegal input (R0109).
  Overlap is exact, by byte intervals of the elements each view reaches (two views may
  interleave in one allocation without sharing an element).
- repeated addresses (§8): a writable view whose layout sends two coordinates to one
  element (a zero stride, overlapping strides) is legal only where the write semantics
  allow repeats — scatter_reduce and atomics; a view the kernel writes with plain `write`
  or `unique_store` must lay out distinct elements, else the launch is the write
  collision R0303.
"""
from __future__ import annotations

import numpy as np

from ..ir import errors
from ..ir.nodes import Op
from ..ir.types import ViewType
from .memory import ViewValue


def _element_starts(view: ViewValue) -> np.ndarray:
    """Sorted byte addresses of the elements a view reaches."""
    address = np.full((), view.offset, dtype=np.int64)
    for extent, stride in zip(view.shape, view.strides):
        address = np.add.outer(address, np.arange(extent, dtype=np.int64) * stride)
    return np.unique(view.base.ctypes.data + address.ravel() * view.base.itemsize)


def _span(view: ViewValue) -> tuple[int, int]:
    low = view.offset + sum(min(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
    high = view.offset + sum(max(0, (n - 1) * s) for n, s in zip(view.shape, view.strides)) + 1
    size = view.base.itemsize
    return view.base.ctypes.data + low * size, view.base.ctypes.data + high * size


def overlapping(a: ViewValue, b: ViewValue) -> bool:
    """Whether two views reach a common byte."""
    if not a.base.size or not b.base.size or 0 in a.shape or 0 in b.shape:
        return False
    (a_low, a_high), (b_low, b_high) = _span(a), _span(b)
    if a_high <= b_low or b_high <= a_low:
        return False
    starts_a, starts_b = _element_starts(a), _element_starts(b)
    size_a, size_b = a.base.itemsize, b.base.itemsize
    # for each element of b, the first element of a that ends after b's start
    first = np.searchsorted(starts_a, starts_b - size_a, side="right")
    inside = first < starts_a.size
    return bool(np.any(starts_a[np.minimum(first, starts_a.size - 1)][inside] < (starts_b + size_b)[inside]))


def check_noalias(launch, env: dict) -> None:
    """Raise R0109 if a `noalias` view of the launch overlaps another view."""
    views = [p for p in launch.kernel.params if isinstance(p.type, ViewType) and isinstance(env.get(p.name), ViewValue)]
    for i, first in enumerate(views):
        for second in views[i + 1:]:
            if (first.type.noalias or second.type.noalias) and overlapping(env[first.name], env[second.name]):
                marked = first if first.type.noalias else second
                other = second if marked is first else first
                raise launch.fail(errors.LAUNCH_NOALIAS, f"%{marked.name} is `noalias` but shares elements with "
                                  f"%{other.name} (spec §8)", marked,
                                  "pass non-overlapping arrays, or drop `noalias` from the view type")


PLAIN_WRITES = ("write", "unique_store")


def _ops(ops):
    for op in ops:
        yield op
        for region in op.regions:
            yield from _ops(region.ops)


def _repeats_addresses(view: ViewValue) -> bool:
    """Whether two coordinates of the view reach one element: sorted by |stride|, each axis
    stepping past the span of the smaller ones proves distinct; else count the addresses."""
    axes = sorted((abs(s), n) for s, n in zip(view.strides, view.shape) if n > 1)
    spread = 0
    for stride, extent in axes:
        if stride <= spread:
            break
        spread += stride * (extent - 1)
    else:
        return False
    return np.unique(_element_starts(view)).size < int(np.prod(view.shape))


def check_writable_layouts(launch, env: dict) -> None:
    """Raise R0303 if a view the kernel writes with plain writes repeats addresses."""
    written = {op.operands[0] for op in _ops(launch.kernel.body) if isinstance(op, Op) and op.name in PLAIN_WRITES}
    for param in launch.kernel.params:
        view = env.get(param.name)
        if param.name in written and isinstance(view, ViewValue) and _repeats_addresses(view):
            raise launch.fail(errors.WRITE_COLLISION, f"%{param.name} is written with plain writes but its strides "
                              f"{list(view.strides)} send several coordinates to one element (spec §8)", param,
                              "pass a view without repeated addresses, or combine with scatter_reduce or atomics")
