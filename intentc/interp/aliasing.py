"""The launch check of repeated addresses (§8), made before the kernel runs, on every
target (the CPU and GPU bind through the same code; `noalias` is `Launch.check_noalias`):
a writable view whose layout sends two coordinates to one element (a zero stride,
overlapping strides) is legal only where the write semantics allow repeats —
scatter_reduce and atomics; a view the kernel writes with plain writes must lay out
distinct elements, else the launch is the write collision R0303.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import errors
from ..ir.nodes import Op, Param
from ..ir.optable import ops_where
from ..ir.types import ViewType
from ..passes.ir_walk import walk
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


def _views(launch, env: dict, names: set[str]) -> list[tuple[Param, Layout]]:
    """The bound layouts of the view parameters named in `names`."""
    bound = [(p, _layout(p, env.get(p.name))) for p in launch.kernel.params
             if p.name in names and isinstance(p.type, ViewType)]
    return [(p, layout) for p, layout in bound if layout is not None]


# Plain writes (neither combining nor atomic), as the op table states their effects.
PLAIN_WRITES = frozenset(ops_where(lambda op: op.writes and not op.regions and "atomic" not in op.effects))


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
    written = {op.operands[0] for op in walk(launch.kernel.body) if isinstance(op, Op) and op.name in PLAIN_WRITES}
    for param, layout in _views(launch, env, written):      # only written views are laid out (each launch)
        if _repeats_addresses(layout):
            raise launch.fail(errors.WRITE_COLLISION, f"%{param.name} is written with plain writes but its strides "
                              f"{list(layout.strides)} send several coordinates to one element (spec §8)", param,
                              "pass a view without repeated addresses, or combine with scatter_reduce or atomics")
