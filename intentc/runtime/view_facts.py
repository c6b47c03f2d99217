"""The layout facts of a bound view (`Specialization.unit_stride`, `aligned16`, `contiguous`).

One predicate a fact, over a view as the binding holds it (`binding.DirectView`: the
allocation's first byte, element offset, allocation size, element strides, shape). The same
predicates decide both which facts a call's views hold (`intentc.load` infers them at each
call and runs the variant compiled for them, as Triton specializes every launch: docs/runtime.md,
"Launch facts") and which facts a compile assumed but a view breaks (R0108, `binding.py`), so
a call never runs code that assumes a fact its views break.
"""
from __future__ import annotations

from typing import Protocol


class BoundView(Protocol):
    address: int
    offset: int
    size: int
    strides: tuple[int, ...]
    shape: tuple[int, ...]


def unit_stride(view: BoundView) -> bool:
    """The innermost axis has stride 1 (or one element at most; an empty view has no element
    to reach, whatever strides its array reports)."""
    return not view.shape or view.shape[-1] <= 1 or 0 in view.shape or view.strides[-1] == 1


def aligned16(view: BoundView, itemsize: int) -> bool:
    """Element 0 lies at a 16-byte aligned address (an empty view has no element to read)."""
    return 0 in view.shape or (view.address + view.offset * itemsize) % 16 == 0


def dense(view: BoundView) -> bool:
    """Row-major without gaps: the strides of the axes of more than one element are those of
    a C-ordered array of those axes alone (the other axes' strides no access uses); an empty
    view has no element to reach."""
    if 0 in view.shape:
        return True
    step = 1
    for n, stride in zip(reversed(view.shape), reversed(view.strides)):
        if n > 1:
            if stride != step:
                return False
            step *= n
    return True


def in_allocation(view: BoundView) -> bool:
    """Every element lies in the allocation (an array bound directly is its own allocation;
    an explicit `View` may reach past its base)."""
    if 0 in view.shape:
        return True
    last = view.offset + sum((n - 1) * s for n, s in zip(view.shape, view.strides))
    return min(view.offset, last) >= 0 and max(view.offset, last) < view.size


def contiguous(view: BoundView) -> bool:
    return dense(view) and in_allocation(view)


def holds(view: BoundView, itemsize: int) -> tuple[str, ...]:
    """The facts `view` holds, in `VIEW_FACTS` order."""
    return tuple(fact for fact, held in (("unit_stride", unit_stride(view)), ("aligned16", aligned16(view, itemsize)),
                                         ("contiguous", contiguous(view))) if held)
