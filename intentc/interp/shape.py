"""Shape ops (spec §2; broadcast/reshape/join from docs/kir.md)."""
from __future__ import annotations

import numpy as np

from ..ir import errors
from .conversion import literal
from .errors import InterpError
from .machine import IMPLS
from .values import np_dtype


@IMPLS.register("full")
def _full_op(machine, op):
    dtype = machine.result_dtype(op)
    return np.full(machine.result_shape(op), literal(op.attributes["value"], dtype), dtype=np_dtype(dtype))


@IMPLS.register("iota")
def _iota_op(machine, op):
    shape = machine.result_shape(op)
    axis = op.attributes.get("axis", 0)
    coordinates = np.arange(shape[axis], dtype=np.int64) if shape else np.zeros((), np.int64)
    view_shape = [1] * len(shape)
    if shape:
        view_shape[axis] = shape[axis]
    values = np.broadcast_to(coordinates.reshape(view_shape), shape)
    return values.astype(np_dtype(machine.result_dtype(op)))


@IMPLS.register("dim")
def _dim_op(machine, op):
    (source,) = machine.operands(op)
    shape = source.shape if hasattr(source, "shape") else np.shape(source)
    return np.asarray(shape[op.attributes["axis"]], dtype=np.int64)


def broadcast(x: np.ndarray, shape: tuple[int, ...], dims=None) -> np.ndarray:
    x = np.asarray(x)
    if dims is not None:
        aligned = [1] * len(shape)
        for source_axis, result_axis in enumerate(dims):
            aligned[result_axis] = x.shape[source_axis]
        x = x.reshape(aligned)
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise InterpError(errors.SHAPE_MISMATCH, f"cannot broadcast shape {list(x.shape)} to {list(shape)}") from None


@IMPLS.register("broadcast")
def _broadcast_op(machine, op):
    (x,) = machine.operands(op)
    return broadcast(x, machine.result_shape(op), op.attributes.get("dims"))


@IMPLS.register("reshape")
def _reshape_op(machine, op):
    (x,) = machine.operands(op)
    shape = machine.result_shape(op)
    x = np.asarray(x)
    if x.size != int(np.prod(shape, dtype=np.int64)):
        raise InterpError(errors.SHAPE_MISMATCH, f"cannot reshape {list(x.shape)} to {list(shape)}")
    return x.reshape(shape)


@IMPLS.register("join")
def _join_op(machine, op):
    a, b = machine.operands(op)
    return np.stack([np.asarray(a), np.asarray(b)], axis=-1)
