"""The launch check of `noalias` (§8, §13): a view marked `noalias` shares no element with
any other view of the launch. It is a precondition of the caller, so a launch whose
`noalias` view overlaps another in one allocation is an illegal input (R0109), reported
before the kernel runs, on every target (the CPU and GPU bind through the same code).

Overlap is exact, by byte intervals of the elements each view reaches (two views may
interleave in one allocation without sharing an element).
"""
from __future__ import annotations

import numpy as np

from ..ir import errors
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
