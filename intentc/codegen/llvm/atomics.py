"""Atomics (spec §11): each active lane is one LLVM atomic operation with the op's memory
order; CAS compares bit patterns (failure order derived as §11 says). The instructions that
differ between targets (scopes, float max/min) come from `hooks.atomic_rmw`."""
from __future__ import annotations

from llvmlite import ir

from .conversion import bits_of, from_bits
from .memory import access
from .types import I1, register_type
from .values import Lazy, RecordVal, Scalar
from .lowering import LOWERINGS

ORDERS = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
FAILURE = {"relaxed": "monotonic", "acquire": "acquire", "release": "monotonic", "acq_rel": "acquire"}


def _order(op):
    return op.attributes.get("order").name if op.attributes.get("order") is not None else "relaxed"


def _per_lane(em, op, shape, dtypes, lane):
    """Run lane(idx) -> tuple of register values for each coordinate; collect results."""
    if not shape:          # one access an iteration, whatever threads the target runs it on
        return [Scalar(d, (), v) for d, v in zip(dtypes, em.hooks.once(em, lambda: lane([])))]
    if not any(em.uses.get(name) for name in op.results):     # only the effect: no temporary
        em.for_each(shape, lane)
        return [Lazy(d, tuple(shape), _unused) for d in dtypes]
    outs = [em.alloc(d, shape) for d in dtypes]

    def each(idx):
        for out, value in zip(outs, lane(idx)):
            em.b.store(value, out.address(em, idx))
    em.for_each(shape, each)
    return outs


def _unused(em, idx):
    raise AssertionError("the result of an atomic nobody uses was read")


def _int_pointer(em, pointer, dtype):
    width = register_type(dtype)
    bits = width.width if isinstance(width, ir.IntType) else (32 if dtype == "f32" else 64)
    return em.b.bitcast(pointer, ir.IntType(bits).as_pointer()), ir.IntType(bits)


@LOWERINGS.register("atomic_load")
def _atomic_load_op(em, op):
    acc = access(em, op)
    type_ = op.result_types[0]
    order = em.hooks.scoped(ORDERS[_order(op)])
    b = em.b

    def lane(idx):
        target = acc.lane(idx)
        pointer, live = target.pointer, target.live
        acc.check_written(target)
        int_pointer, int_type = _int_pointer(em, pointer, type_.dtype)
        before = b.block
        with b.if_then(live):
            loaded = b.load_atomic(int_pointer, order, int_type.width // 8)
            loaded_block = b.block
        merged = b.phi(int_type)
        merged.add_incoming(loaded, loaded_block)
        merged.add_incoming(ir.Constant(int_type, 0), before)
        return (from_bits(em, merged, type_.dtype),)
    return _per_lane(em, op, em.shape_of(type_), [type_.dtype], lane)[0]


@LOWERINGS.register("atomic_store")
def _atomic_store_op(em, op):
    acc = access(em, op)
    value = em.env[op.operands[1]]
    order = em.hooks.scoped(ORDERS[_order(op)])
    b = em.b
    dtype = acc.resource.dtype

    def lane(idx):
        target = acc.lane(idx)
        int_pointer, int_type = _int_pointer(em, target.pointer, dtype)
        bits = bits_of(em, value.at(em, idx), dtype)
        with b.if_then(target.live):
            b.store_atomic(bits, int_pointer, order, int_type.width // 8)
        acc.mark_written(target)
        return ()
    _per_lane(em, op, value.shape, [], lane)


@LOWERINGS.register("atomic_rmw")
def _atomic_rmw_op(em, op):
    acc = access(em, op)
    value = em.env[op.operands[1]]
    type_ = op.result_types[0]
    order = ORDERS[_order(op)]
    kind = op.attributes["kind"].name
    b = em.b

    def lane(idx):
        target = acc.lane(idx)
        pointer, live = target.pointer, target.live
        acc.check_written(target)
        new = value.at(em, idx)
        before = b.block
        with b.if_then(live):
            old = em.hooks.atomic_rmw(em, op, kind, pointer, new, type_.dtype, order)
            done = b.block
        merged = b.phi(old.type)
        merged.add_incoming(old, done)
        merged.add_incoming(ir.Constant(old.type, None), before)
        return (merged,)
    return _per_lane(em, op, em.shape_of(type_), [type_.dtype], lane)[0]


@LOWERINGS.register("atomic_cas")
def _atomic_cas_op(em, op):
    acc = access(em, op)
    expected, desired = (em.env[n] for n in op.operands[1:])
    record_type = op.result_types[0]
    value_type = record_type.field_type("old_value")
    dtype = value_type.dtype
    order = _order(op)
    b = em.b

    def lane(idx):
        target = acc.lane(idx)
        pointer, live = target.pointer, target.live
        acc.check_written(target)
        int_pointer, int_type = _int_pointer(em, pointer, dtype)
        want, new = bits_of(em, expected.at(em, idx), dtype), bits_of(em, desired.at(em, idx), dtype)
        before = b.block
        with b.if_then(live):
            pair = b.cmpxchg(int_pointer, want, new, em.hooks.scoped(ORDERS[order]), FAILURE[order])
            old, hit = b.extract_value(pair, 0), b.extract_value(pair, 1)
            done = b.block
        old_merged, hit_merged = b.phi(int_type), b.phi(I1)
        old_merged.add_incoming(old, done)
        old_merged.add_incoming(ir.Constant(int_type, 0), before)
        hit_merged.add_incoming(hit, done)
        hit_merged.add_incoming(ir.Constant(I1, 0), before)
        return from_bits(em, old_merged, dtype), hit_merged
    old_value, success = _per_lane(em, op, em.shape_of(value_type), [dtype, "bool"], lane)
    return RecordVal({"old_value": old_value, "success": success})
