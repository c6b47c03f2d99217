"""Atomics (spec §11): every lane is one indivisible operation on its address.

Lanes that hit the same address run one after another in a seeded order (one modification
order per address); lanes on different addresses run together. Memory orders do not change
what a single-threaded interpreter observes; they are checked by the verifier.
"""
from __future__ import annotations

import numpy as np

from ..ir.ops.memory import UPDATE_COMBINE
from .memory import ViewValue, _check_written, _index_and_mask, collision_rounds, locate
from .pointwise import binary
from .values import RecordValue, np_dtype
from .machine import IMPLS

def _location(machine, op, resource, shape, writes: bool):
    """The lanes' elements, noted as atomic accesses (a plain access of another iteration
    to one of them is a data race, races.py)."""
    indices, mask = _index_and_mask(machine, op)
    location = locate(resource, indices, shape, mask)
    machine.races.record(location.storage, location.positions, writes=writes, atomic=True)
    return location


def _lanes(value, location):
    return np.broadcast_to(np.asarray(value), location.active.shape)[location.active]


def _scatter_back(location, per_lane, dtype) -> np.ndarray:
    out = np.zeros(location.active.shape, dtype=dtype)
    out[location.active] = per_lane
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CAS compares bit patterns (as hardware does): -0.0 is not 0.0, a NaN may match itself."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iub":
        return a == b
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return a.view(unsigned) == b.view(unsigned)


@IMPLS.register("atomic_load")
def _atomic_load_op(machine, op):
    (resource,) = machine.operands(op)
    shape = machine.result_shape(op)
    location = _location(machine, op, resource, shape, writes=False)
    _check_written(location, resource.shape)
    return _scatter_back(location, location.storage[location.positions], np_dtype(resource.dtype))


@IMPLS.register("atomic_store")
def _atomic_store_op(machine, op):
    resource, value = machine.operands(op)
    location = _location(machine, op, resource, np.shape(value), writes=True)
    lanes = _lanes(value, location)
    for chosen in collision_rounds(machine, location.positions):
        location.storage[location.positions[chosen]] = lanes[chosen]
    if location.written is not None:
        location.written[location.positions] = True


@IMPLS.register("atomic_rmw")
def _atomic_rmw_op(machine, op):
    resource, value = machine.operands(op)
    shape = machine.result_shape(op)
    location = _location(machine, op, resource, shape, writes=True)
    _check_written(location, resource.shape)
    lanes = _lanes(value, location)
    kind = op.attributes["kind"].name
    old = np.empty(lanes.shape, dtype=np_dtype(resource.dtype))
    for chosen in collision_rounds(machine, location.positions):
        where = location.positions[chosen]
        previous = location.storage[where].copy()
        old[chosen] = previous
        location.storage[where] = lanes[chosen] if kind == "exchange" else binary(UPDATE_COMBINE[kind], previous, lanes[chosen])
    return _scatter_back(location, old, np_dtype(resource.dtype))


@IMPLS.register("atomic_cas")
def _atomic_cas_op(machine, op):
    resource, expected, desired = machine.operands(op)
    record_type = op.result_types[0]
    shape = machine.shape(record_type.field_type("old_value"))
    location = _location(machine, op, resource, shape, writes=True)
    _check_written(location, resource.shape)
    expected_lanes, desired_lanes = _lanes(expected, location), _lanes(desired, location)
    old = np.empty(expected_lanes.shape, dtype=np_dtype(resource.dtype))
    success = np.zeros(expected_lanes.shape, dtype=bool)
    for chosen in collision_rounds(machine, location.positions):
        where = location.positions[chosen]
        previous = location.storage[where].copy()
        hit = _same_bits(previous, expected_lanes[chosen])
        old[chosen], success[chosen] = previous, hit
        location.storage[where] = np.where(hit, desired_lanes[chosen], previous)
    return RecordValue((("old_value", _scatter_back(location, old, np_dtype(resource.dtype))),
                        ("success", _scatter_back(location, success, bool))))


__all__ = ["ViewValue"]
