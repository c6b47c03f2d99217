"""The bound on an access's offset `Σ c_i · stride_i` (in elements, relative to the view's
base and element offset, which the backend folds into one 64-bit pointer per launch).

Strides are known for kernel-local buffers (the compiler lays them out dense row-major),
for views the specialization proves dense row-major (`Specialization.contiguous`), and for
the single axis of a rank-1 view with a proven unit stride (`Specialization.unit_stride`).
Everything else has unknown strides, and so needs 64-bit offsets.
"""
from __future__ import annotations

from ...ir.types import BufferType, ViewType
from ...options import Specialization
from .ranges import Range, Ranges

INT32 = (-(1 << 31), (1 << 31) - 1)


def strides(resource_name: str, type_, ranges: Ranges, spec: Specialization) -> list[int] | None:
    """Element strides of a view or buffer, when proven."""
    if isinstance(type_, ViewType):
        if resource_name in spec.contiguous:
            return _row_major(type_.shape, ranges)
        if type_.shape and len(type_.shape) == 1 and resource_name in spec.unit_stride:
            return [1]
        return None
    if isinstance(type_, BufferType):
        return _row_major(type_.shape, ranges)
    return None


def _row_major(shape, ranges: Ranges) -> list[int] | None:
    result, running = [], 1
    for extent in reversed(shape):
        result.append(running)
        bound = ranges.extent_bound(extent)
        if bound is None:
            return None
        running *= bound
    return list(reversed(result))


def offset_range(coordinates: list[Range | None], stride_list: list[int]) -> Range | None:
    low = high = 0
    for coordinate, stride in zip(coordinates, stride_list):
        if coordinate is None:
            return None
        corners = (coordinate[0] * stride, coordinate[1] * stride)
        low, high = low + min(corners), high + max(corners)
    return low, high


def fits_int32(offsets: Range | None) -> bool:
    return offsets is not None and INT32[0] <= offsets[0] and offsets[1] <= INT32[1]
