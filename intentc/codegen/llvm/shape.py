"""iota, full, dim, broadcast, reshape, join (spec §2, docs/kir.md §5)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from llvmlite import ir

from .conversion import constant_value
from .types import I64, register_type
from .lowering import LOWERINGS
from .values import Coordinate, Derived, Lazy, Memory, Registers, Scalar, Shape, Tensor

if TYPE_CHECKING:
    from .emitter import Emitter


def _is_one(extent) -> bool:
    return isinstance(extent, ir.Constant) and int(extent.constant) == 1


def broadcast_index(source: Tensor, idx: Coordinate, dims: Sequence[int] | None = None) -> Coordinate:
    """The source coordinate of result coordinate `idx` (numpy right-aligned, or `dims`)."""
    if dims is None:
        aligned = idx[len(idx) - source.rank:] if source.rank else []
    else:
        aligned = [idx[d] for d in dims]
    return [ir.Constant(I64, 0) if _is_one(extent) else c for c, extent in zip(aligned, source.shape)]


def broadcast_to(em: Emitter, source: Tensor, shape: Shape, dims: Sequence[int] | None = None) -> Tensor:
    if isinstance(source, Scalar):
        return Lazy(source.dtype, tuple(shape), lambda e, idx: source.value) if shape else source
    if getattr(source, "costly", False):
        source = em.materialize(source)
    return Derived(source.dtype, tuple(shape), combine=lambda e, values: values[0], operands=(source,),
                   index_maps=(lambda idx: broadcast_index(source, idx, dims),))


@LOWERINGS.register("iota")
def _iota_op(em, op):
    type_ = op.result_types[0]
    shape = em.shape_of(type_)
    axis = op.attributes.get("axis", 0)
    element = register_type(type_.dtype)

    def at(e, idx):
        coordinate = idx[axis] if idx else ir.Constant(I64, 0)
        return coordinate if element.width == 64 else e.b.trunc(coordinate, element)
    if not shape:
        return Scalar(type_.dtype, (), ir.Constant(element, 0))
    return Lazy(type_.dtype, shape, at)


@LOWERINGS.register("full")
def _full_op(em, op):
    type_ = op.result_types[0]
    value = constant_value(em, op.attributes["value"], type_.dtype)
    shape = em.shape_of(type_)
    return Lazy(type_.dtype, shape, lambda e, idx: value) if shape else Scalar(type_.dtype, (), value)


@LOWERINGS.register("dim")
def _dim_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    return Scalar("index", (), source.shape[op.attributes["axis"]])


@LOWERINGS.register("broadcast")
def _broadcast_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    return broadcast_to(em, source, em.shape_of(op.result_types[0]), op.attributes.get("dims"))


@LOWERINGS.register("reshape")
def _reshape_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    shape = em.shape_of(op.result_types[0])
    if isinstance(source, Scalar):
        return Lazy(source.dtype, shape, lambda e, idx: source.value) if shape else source
    memory = source if isinstance(source, Memory) and source.row_major else em.materialize(source)
    if isinstance(memory, Registers):        # a thread's slots follow the row-major order
        return Registers(source.dtype, tuple(shape), memory.array)
    if not (isinstance(memory, Memory) and memory.row_major):    # kept lazy by the target
        if not shape:
            return Scalar(source.dtype, (), memory.at(em, [ir.Constant(I64, 0)] * memory.rank))
        return Derived(source.dtype, tuple(shape), combine=lambda e, values: values[0], operands=(memory,),
                       index_maps=(lambda idx: _reshaped_index(em, idx, shape, memory.shape),))
    if not shape:
        return Scalar(source.dtype, (), em.b.load(memory.ptr))
    return Memory(source.dtype, shape, memory.ptr, em.row_major_strides(shape))


def _reshaped_index(em: Emitter, idx: Coordinate, shape: Shape, source_shape: Shape) -> Coordinate:
    """The source coordinate of reshape result coordinate `idx`: the same row-major position."""
    b = em.b
    linear = ir.Constant(I64, 0)
    for c, extent in zip(idx, shape):
        linear = b.add(b.mul(linear, extent), c)
    source_idx = []
    for extent in reversed(source_shape[1:]):
        source_idx.append(b.urem(linear, extent))
        linear = b.udiv(linear, extent)
    return [linear, *reversed(source_idx)] if source_shape else []


@LOWERINGS.register("join")
def _join_op(em, op):
    a, b = (em.env[n] for n in op.operands)
    shape = em.shape_of(op.result_types[0])

    def at(e, idx):
        first = e.b.icmp_signed("==", idx[-1], ir.Constant(I64, 0))
        return e.b.select(first, a.at(e, idx[:-1]), b.at(e, idx[:-1]))
    return Lazy(a.dtype, shape, at, getattr(a, "costly", False) or getattr(b, "costly", False))
