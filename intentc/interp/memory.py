"""External views, logical buffers, indexed access and collision semantics (§8, §9, §10, §13).

A view is a flat base allocation plus an element offset and element strides (negative and
zero strides allowed): coordinate c lives at base[offset + Σ c_i·stride_i]. A buffer keeps
its elements and a written-mask; reading an element never written is an illegal input.
Every active lane is checked against the logical extents (and, for views, the allocation);
masked-off lanes make no access.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import errors
from ..ir.ops.memory import UPDATE_COMBINE
from .errors import InterpError, first_coordinate
from .pointwise import binary
from .values import np_dtype
from .machine import IMPLS


@dataclass
class ViewValue:
    base: np.ndarray            # flat allocation, shared by aliasing views
    offset: int
    strides: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    direction: str
    name: str = ""

    def addresses(self, coords: list[np.ndarray]) -> np.ndarray:
        address = np.full(coords[0].shape if coords else (), self.offset, dtype=np.int64)
        for c, stride in zip(coords, self.strides):
            address = address + c * stride
        return address

    def logical(self) -> np.ndarray:
        """The view's elements as a fresh array of its logical shape."""
        grids = np.indices(self.shape, dtype=np.int64) if self.shape else []
        return self.base[self.addresses(list(grids))].copy() if self.shape else self.base[self.offset].copy()


@dataclass
class BufferValue:
    data: np.ndarray
    written: np.ndarray
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape


@dataclass
class Location:
    """Where the active lanes of one access land."""
    storage: np.ndarray          # flat storage array
    positions: np.ndarray        # flat position of each active lane
    active: np.ndarray           # bool, access shape
    written: np.ndarray | None   # flat written-mask of a buffer


def _describe(lane: tuple[int, ...], coords: list[np.ndarray]) -> str:
    index = [int(c[lane]) for c in coords]
    return f"index {index}" + (f" (lane {list(lane)})" if lane else "")


def locate(resource, index_values, access_shape, mask) -> Location:
    rank = len(resource.shape)
    if len(index_values) != rank:
        raise InterpError(errors.SHAPE_MISMATCH, f"{len(index_values)} indices for a rank-{rank} resource")
    try:
        coords = [np.broadcast_to(np.asarray(i).astype(np.int64), access_shape) for i in index_values]
        active = np.ones(access_shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask), access_shape)
    except ValueError:
        raise InterpError(errors.SHAPE_MISMATCH, f"indices or mask do not broadcast to {list(access_shape)}") from None
    for axis, (c, extent) in enumerate(zip(coords, resource.shape)):
        bad = active & ((c < 0) | (c >= extent))
        if bad.any():
            lane = first_coordinate(bad)
            raise InterpError(errors.OUT_OF_BOUNDS,
                              f"active access at {_describe(lane, coords)} is outside axis {axis} of extent {extent} "
                              f"(shape {list(resource.shape)})", "mask the lane off or clamp the index")
    if isinstance(resource, BufferValue):
        if rank:
            flat = np.ravel_multi_index([c[active] for c in coords], resource.shape) if active.any() else \
                np.zeros(0, dtype=np.int64)
        else:
            flat = np.zeros(int(active.sum()), dtype=np.int64)
        return Location(resource.data.reshape(-1), np.asarray(flat, dtype=np.int64), active,
                        resource.written.reshape(-1))
    address = resource.addresses(coords) if rank else np.full(access_shape, resource.offset, dtype=np.int64)
    bad = active & ((address < 0) | (address >= resource.base.size))
    if bad.any():
        lane = first_coordinate(bad)
        raise InterpError(errors.OUT_OF_BOUNDS,
                          f"active access at {_describe(lane, coords)} maps to element {int(address[lane])}, outside "
                          f"the allocation of {resource.base.size} elements")
    return Location(resource.base, address[active], active, None)


def _check_written(location: Location, shape: tuple[int, ...]) -> None:
    if location.written is None:
        return
    unwritten = ~location.written[location.positions]
    if unwritten.any():
        position = int(location.positions[int(np.argmax(unwritten))])
        element = [int(c) for c in np.unravel_index(position, shape)] if shape else []
        raise InterpError(errors.UNWRITTEN_READ, f"reads buffer element {element}, which was never written",
                          "write every element before reading it, or give the buffer an init value")


def _check_direction(resource, allowed: tuple[str, ...], what: str) -> None:
    if isinstance(resource, ViewValue) and resource.direction not in allowed:
        raise InterpError(errors.WRONG_DIRECTION, f"cannot {what} view %{resource.name} declared `{resource.direction}`")


def _index_and_mask(machine, op):
    mask = machine.group(op, "mask")
    return machine.group(op, "index") or [], (np.asarray(mask[0]) if mask else None)


# ---- ops -------------------------------------------------------------------------------------
@IMPLS.register("read")
def _read_op(machine, op):
    (resource,) = machine.operands(op)
    _check_direction(resource, ("in", "inout"), "read")
    indices, mask = _index_and_mask(machine, op)
    shape = machine.result_shape(op)
    location = locate(resource, indices, shape, mask)
    _check_written(location, resource.shape)
    machine.races.record(location.storage, location.positions, writes=False)
    gathered = location.storage[location.positions]
    if mask is None:
        return gathered.reshape(shape)
    fill = machine.group(op, "fill")
    out = np.empty(shape, dtype=np_dtype(resource.dtype))
    out[...] = np.asarray(fill[0]) if fill else np.zeros((), out.dtype)
    out[location.active] = gathered
    return out


def _store(machine, op, require_distinct: str | None):
    resource, value = machine.operands(op)
    _check_direction(resource, ("out", "inout") if isinstance(resource, ViewValue) else (), "write")
    indices, mask = _index_and_mask(machine, op)
    value = np.asarray(value)
    location = locate(resource, indices, value.shape, mask)
    positions = location.positions
    if require_distinct and positions.size > 1:
        ordered = np.sort(positions)
        if (ordered[1:] == ordered[:-1]).any():
            raise InterpError(require_distinct, "two active lanes store to the same element",
                              "use scatter_reduce or atomics for colliding stores")
    machine.races.record(location.storage, positions, writes=True)
    location.storage[positions] = value[location.active] if value.ndim else value
    if location.written is not None:
        location.written[positions] = True


@IMPLS.register("write")
def _write_op(machine, op):
    _store(machine, op, errors.WRITE_COLLISION)


@IMPLS.register("unique_store")
def _unique_store_op(machine, op):
    _store(machine, op, errors.NOT_INJECTIVE)


def collision_rounds(machine, positions: np.ndarray):
    """Split lanes into rounds with at most one lane per address, in a seeded order."""
    order = machine.rng.permutation(positions.size)
    shuffled = positions[order]
    by_address = np.argsort(shuffled, kind="stable")
    sorted_positions = shuffled[by_address]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_positions)) + 1] if sorted_positions.size else np.zeros(0, int)
    group_start = np.repeat(starts, np.diff(np.r_[starts, sorted_positions.size]))
    rank = np.empty(positions.size, dtype=np.int64)
    rank[by_address] = np.arange(positions.size) - group_start
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        yield order[rank == r]


def _scatter_combine(machine, op):
    if op.regions:
        region = op.regions[0]
        if machine.batchable(region):
            return lambda old, new: np.asarray(machine.run_region_batched(region, [old, new])[0]).astype(old.dtype)
        return lambda old, new: np.array([np.asarray(machine.run_region(region, [o, n])[0])
                                          for o, n in zip(old, new)], dtype=old.dtype).reshape(old.shape)
    name = UPDATE_COMBINE[op.attributes["kind"].name]
    return lambda old, new: binary(name, old, new)


@IMPLS.register("scatter_reduce")
def _scatter_reduce_op(machine, op):
    resource, value = machine.operands(op)
    _check_direction(resource, ("inout",) if isinstance(resource, ViewValue) else (), "combine into")
    indices, mask = _index_and_mask(machine, op)
    value = np.asarray(value)
    location = locate(resource, indices, value.shape, mask)
    _check_written(location, resource.shape)
    lanes = np.broadcast_to(value, location.active.shape)[location.active]
    combine = _scatter_combine(machine, op)
    for chosen in collision_rounds(machine, location.positions):
        where = location.positions[chosen]
        location.storage[where] = combine(location.storage[where], lanes[chosen])


@IMPLS.register("buffer")
def _buffer_op(machine, op):
    type_ = op.result_types[0]
    shape = machine.shape(type_)
    init = machine.group(op, "init")
    if init:
        data = np.array(np.broadcast_to(np.asarray(init[0]), shape), dtype=np_dtype(type_.dtype))
        return BufferValue(data, np.ones(shape, dtype=bool), type_.dtype)
    return BufferValue(np.zeros(shape, dtype=np_dtype(type_.dtype)), np.zeros(shape, dtype=bool), type_.dtype)


@IMPLS.register("assume_in_bounds")
def _assume_in_bounds_op(machine, op):
    index, resource = machine.operands(op)
    axis = op.attributes["axis"]
    extent = resource.shape[axis]
    index = np.asarray(index)
    bad = (index < 0) | (index >= extent)
    if bad.any():
        raise InterpError(errors.ASSUME_VIOLATED,
                          f"index {int(index[first_coordinate(bad)])} is outside axis {axis} of extent {extent}, "
                          f"which the program assumes it is not")
