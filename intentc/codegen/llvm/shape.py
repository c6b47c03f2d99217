"""iota, full, dim, broadcast, reshape, join, tuples and records (spec §1, §2, docs/kir.md §5)."""
from __future__ import annotations

from llvmlite import ir

from .conversion import constant_value
from .types import I64, register_type
from .values import Derived, Lazy, Memory, RecordVal, Scalar, Tensor


def _is_one(extent) -> bool:
    return isinstance(extent, ir.Constant) and int(extent.constant) == 1


def broadcast_index(source: Tensor, idx: list, dims=None) -> list:
    """The source coordinate of result coordinate `idx` (numpy right-aligned, or `dims`)."""
    if dims is None:
        aligned = idx[len(idx) - source.rank:] if source.rank else []
    else:
        aligned = [idx[d] for d in dims]
    return [ir.Constant(I64, 0) if _is_one(extent) else c for c, extent in zip(aligned, source.shape)]


def broadcast_to(em, source: Tensor, shape, dims=None) -> Tensor:
    if isinstance(source, Scalar):
        return Lazy(source.dtype, tuple(shape), lambda e, idx: source.value) if shape else source
    if getattr(source, "costly", False):
        source = em.materialize(source)
    return Derived(source.dtype, tuple(shape), combine=lambda e, values: values[0], operands=(source,),
                   index_maps=(lambda idx: broadcast_index(source, idx, dims),))


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


def _full_op(em, op):
    type_ = op.result_types[0]
    value = constant_value(em, op.attributes["value"], type_.dtype)
    shape = em.shape_of(type_)
    return Lazy(type_.dtype, shape, lambda e, idx: value) if shape else Scalar(type_.dtype, (), value)


def _dim_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    return Scalar("index", (), source.shape[op.attributes["axis"]])


def _broadcast_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    return broadcast_to(em, source, em.shape_of(op.result_types[0]), op.attributes.get("dims"))


def _reshape_op(em, op):
    (source,) = (em.env[n] for n in op.operands)
    shape = em.shape_of(op.result_types[0])
    if isinstance(source, Scalar):
        return Lazy(source.dtype, shape, lambda e, idx: source.value) if shape else source
    memory = source if isinstance(source, Memory) and source.row_major else em.materialize(source)
    if not shape:
        return Scalar(source.dtype, (), em.b.load(memory.ptr))
    return Memory(source.dtype, shape, memory.ptr, em.row_major_strides(shape))


def _join_op(em, op):
    a, b = (em.env[n] for n in op.operands)
    shape = em.shape_of(op.result_types[0])

    def at(e, idx):
        first = e.b.icmp_signed("==", idx[-1], ir.Constant(I64, 0))
        return e.b.select(first, a.at(e, idx[:-1]), b.at(e, idx[:-1]))
    return Lazy(a.dtype, shape, at, getattr(a, "costly", False) or getattr(b, "costly", False))


def _tuple_op(em, op):
    return tuple(em.env[n] for n in op.operands)


def _tuple_get_op(em, op):
    return em.env[op.operands[0]][op.attributes["index"]]


def _record_op(em, op):
    names = [f.name for f in op.result_types[0].fields]
    return RecordVal(dict(zip(names, (em.env[n] for n in op.operands))))


def _record_get_op(em, op):
    return em.env[op.operands[0]].fields[op.attributes["field"].name]


LOWER = {"iota": _iota_op, "full": _full_op, "dim": _dim_op, "broadcast": _broadcast_op, "reshape": _reshape_op,
         "join": _join_op, "tuple": _tuple_op, "tuple_get": _tuple_get_op, "record": _record_op,
         "record_get": _record_get_op}
