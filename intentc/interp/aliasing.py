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

from dataclasses import dataclass

import numpy as np

from ..ir import errors
from ..ir.nodes import Op
from ..ir.optable import ops_where
from ..ir.types import ViewType
from .memory import ViewValue
from .values import np_dtype


@dataclass(frozen=True)
class Layout:
    """Where a bound view's elements lie: byte address of element 0 of its allocation, the
    element size, and the element offset, strides and shape (§8)."""
    address: int
    itemsize: int
    offset: int
    strides: tuple[int, ...]
    shape: tuple[int, ...]


def _layout(param, value) -> Layout | None:
    """The layout of a bound view: a copied `ViewValue`, or a view bound in place (any object
    with the caller's `address`, as the runtimes bind them); None for an empty allocation."""
    if isinstance(value, ViewValue):
        if not value.base.size:
            return None
        return Layout(value.base.ctypes.data, value.base.itemsize, int(value.offset), tuple(value.strides),
                      tuple(value.shape))
    address = getattr(value, "address", None)
    if address is None or not getattr(value, "size", 0):
        return None
    return Layout(int(address), np_dtype(param.type.dtype).itemsize, int(value.offset), tuple(value.strides),
                  tuple(value.shape))


def _element_starts(view: Layout) -> np.ndarray:
    """Sorted byte addresses of the elements a view reaches."""
    address = np.full((), view.offset, dtype=np.int64)
    for extent, stride in zip(view.shape, view.strides):
        address = np.add.outer(address, np.arange(extent, dtype=np.int64) * stride)
    return np.unique(view.address + address.ravel() * view.itemsize)


def _span(view: Layout) -> tuple[int, int]:
    low = view.offset + sum(min(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
    high = view.offset + sum(max(0, (n - 1) * s) for n, s in zip(view.shape, view.strides)) + 1
    return view.address + low * view.itemsize, view.address + high * view.itemsize


def overlapping(a: Layout, b: Layout) -> bool:
    """Whether two views reach a common byte."""
    if 0 in a.shape or 0 in b.shape:
        return False
    (a_low, a_high), (b_low, b_high) = _span(a), _span(b)
    if a_high <= b_low or b_high <= a_low:
        return False
    starts_a, starts_b = _element_starts(a), _element_starts(b)
    # for each element of b, the first element of a that ends after b's start
    first = np.searchsorted(starts_a, starts_b - a.itemsize, side="right")
    inside = first < starts_a.size
    return bool(np.any(starts_a[np.minimum(first, starts_a.size - 1)][inside] < (starts_b + b.itemsize)[inside]))


def _views(launch, env: dict) -> list[tuple[object, Layout]]:
    bound = [(p, _layout(p, env.get(p.name))) for p in launch.kernel.params if isinstance(p.type, ViewType)]
    return [(p, layout) for p, layout in bound if layout is not None]


def check_noalias(launch, env: dict) -> None:
    """Raise R0109 if a `noalias` view of the launch overlaps another view."""
    views = _views(launch, env)
    for i, (first, first_layout) in enumerate(views):
        for second, second_layout in views[i + 1:]:
            if (first.type.noalias or second.type.noalias) and overlapping(first_layout, second_layout):
                marked = first if first.type.noalias else second
                other = second if marked is first else first
                raise launch.fail(errors.LAUNCH_NOALIAS, f"%{marked.name} is `noalias` but shares elements with "
                                  f"%{other.name} (spec §8)", marked,
                                  "pass non-overlapping arrays, or drop `noalias` from the view type")


# Plain writes (neither combining nor atomic), as the op table states their effects.
PLAIN_WRITES = frozenset(ops_where(lambda op: op.writes and not op.regions and "atomic" not in op.effects))


def _ops(ops):
    for op in ops:
        yield op
        for region in op.regions:
            yield from _ops(region.ops)


def _repeats_addresses(view: Layout) -> bool:
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
    return _element_starts(view).size < int(np.prod(view.shape))


def check_writable_layouts(launch, env: dict) -> None:
    """Raise R0303 if a view the kernel writes with plain writes repeats addresses."""
    written = {op.operands[0] for op in _ops(launch.kernel.body) if isinstance(op, Op) and op.name in PLAIN_WRITES}
    for param, layout in _views(launch, env):
        if param.name in written and _repeats_addresses(layout):
            raise launch.fail(errors.WRITE_COLLISION, f"%{param.name} is written with plain writes but its strides "
                              f"{list(layout.strides)} send several coordinates to one element (spec §8)", param,
                              "pass a view without repeated addresses, or combine with scatter_reduce or atomics")
