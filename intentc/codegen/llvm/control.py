"""parallel, loop, if and call (spec §10; domains and `parallel` from docs/kir.md).

`parallel` iterations are unordered; the lowering hands the domain to the target
(`hooks.parallel`), whose host version runs a loop nest. Loop-carried values and `if`
results live in slots (stack scalars that LLVM promotes to registers, temporaries for
tensors); yielded values are evaluated completely before any slot is overwritten.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Helper, Region
from ...ir.types import EnumType, RecordType, TensorType, TupleType, Type
from .coordinate_region import per_coordinate_if, per_coordinate_loop
from .emitter import CheckSite, Emitter
from .fixed_point import loop_to_fixed_point, stops_at_fixed_point
from .lowering import NotLowered, lower_ops
from .types import I64, register_type
from .values import Memory, RecordVal, Scalar, Tensor, scalar
from .lowering import LOWERINGS


# ---- slots ----------------------------------------------------------------------------------
# Where a value carried across iterations or branches lives: ("scalar", dtype, pointer),
# ("memory", Memory), ("tuple", [slots]) or ("record", {field: slot}).
Slot = tuple[Any, ...]


def make_slot(em: Emitter, type_: Type) -> Slot:
    if isinstance(type_, EnumType):
        return ("scalar", "enum", em.entry_alloca(I64))
    if isinstance(type_, TensorType):
        if not type_.shape:
            return ("scalar", type_.dtype, em.entry_alloca(register_type(type_.dtype)))
        return ("memory", em.alloc(type_.dtype, em.shape_of(type_)))
    if isinstance(type_, TupleType):
        return ("tuple", [make_slot(em, t) for t in type_.elements])
    if isinstance(type_, RecordType):
        return ("record", {f.name: make_slot(em, f.type) for f in type_.fields})
    raise TypeError(f"no slot for {type_}")


def read_slot(em: Emitter, slot: Slot) -> Tensor | tuple | RecordVal:
    kind = slot[0]
    if kind == "scalar":
        return Scalar(slot[1], (), em.b.load(slot[2]))
    if kind == "memory":
        return slot[1]
    if kind == "tuple":
        return tuple(read_slot(em, s) for s in slot[1])
    return RecordVal({k: read_slot(em, s) for k, s in slot[1].items()})


def _slot_memories(slot, out: list) -> list:
    if slot[0] == "memory":
        out.append(slot[1])
    elif slot[0] in ("tuple", "record"):    # slot kinds (not op names)
        for s in (slot[1] if slot[0] == "tuple" else slot[1].values()):
            _slot_memories(s, out)
    return out


def _settle(em, slot, value, memories):
    """Phase 1: a value that no later slot write can change."""
    if slot[0] == "scalar":
        return value.value if isinstance(value, Scalar) else value.at(em, [])
    if slot[0] == "memory":
        if isinstance(value, Memory) and not any(value.ptr is m.ptr for m in memories):
            return value
        fresh = em.alloc(value.dtype, value.shape)
        em.store_into(fresh, value)
        return fresh
    items = zip(slot[1], value) if slot[0] == "tuple" else ((slot[1][k], value.fields[k]) for k in slot[1])
    return [_settle(em, s, v, memories) for s, v in items]


def _store(em, slot, settled):
    if slot[0] == "scalar":
        em.b.store(settled, slot[2])
    elif slot[0] == "memory":
        if settled.ptr is not slot[1].ptr:
            em.store_into(slot[1], settled)
    else:
        for s, v in zip(slot[1] if slot[0] == "tuple" else slot[1].values(), settled):
            _store(em, s, v)


def write_slots(em: Emitter, slots: Sequence[Slot], values: Sequence[object]) -> None:
    memories = [m for s in slots for m in _slot_memories(s, [])]
    settled = [_settle(em, s, v, memories) for s, v in zip(slots, values)]
    for s, v in zip(slots, settled):
        _store(em, s, v)


# ---- regions ----------------------------------------------------------------------------------
def run_region(em: Emitter, region: Region, args: Sequence[object]) -> list:
    for param, value in zip(region.args, args):
        em.env[param.name] = value
    return lower_ops(em, region.ops) or []


@LOWERINGS.register("parallel")
def _parallel_op(em, op):
    extents = _checked_domain(em, op, [em.env[n].value for n in op.operands])
    region = op.regions[0]

    def iteration(idx):
        with em.scope():
            run_region(em, region, [Scalar("index", (), i) for i in idx])
    em.hooks.parallel(em, op, extents, iteration)


def _checked_domain(em, op, extents):
    """A negative extent is an illegal input (R0206): report it and run no iteration, on
    every target, before the target maps the domain."""
    b = em.b
    zero = ir.Constant(I64, 0)
    negative = [b.icmp_signed("<", e, zero) for e in extents]
    if negative:
        bad = negative[0]
        for n in negative[1:]:
            bad = b.or_(bad, n)
        em.check(CheckSite(op, errors.NEGATIVE_EXTENT, "parallel domain has a negative extent"), bad)
    return [b.select(n, zero, e) for n, e in zip(negative, extents)]


@LOWERINGS.register("loop")
def _loop_op(em, op):
    lower, upper, step = (em.env[n].value for n in op.operands)
    b = em.b
    bad_step = b.icmp_signed("<=", step, ir.Constant(I64, 0))
    em.check(CheckSite(op, errors.LOOP_STEP, "loop step is not positive"), bad_step)
    upper = b.select(bad_step, lower, upper)
    step = b.select(bad_step, ir.Constant(I64, 1), step)
    if em.hooks.per_coordinate(em, op):
        return per_coordinate_loop(em, op, lower, upper, step)
    slots = [make_slot(em, t) for t in op.result_types]
    write_slots(em, slots, [em.env[n] for n in (op.group("iter") or ())])
    region = op.regions[0]

    def body(k):
        with em.scope():
            yielded = run_region(em, region, [Scalar("index", (), k)] + [read_slot(em, s) for s in slots])
            write_slots(em, slots, yielded)
    if stops_at_fixed_point(op, slots):
        loop_to_fixed_point(em, lower, upper, step, slots, body)
    else:
        em.loop(lower, upper, body, step, name="k")
    return [read_slot(em, s) for s in slots]


@LOWERINGS.register("if")
def _if_op(em, op):
    (cond,) = (em.env[n] for n in op.operands)
    if em.hooks.per_coordinate(em, op):
        return per_coordinate_if(em, op, cond.value)
    slots = [make_slot(em, t) for t in op.result_types]

    def branch(region):
        def run():
            with em.scope():
                write_slots(em, slots, run_region(em, region, []))
        return run
    otherwise = branch(op.regions[1]) if len(op.regions) > 1 else None
    em.if_then(cond.value, branch(op.regions[0]), otherwise)
    return [read_slot(em, s) for s in slots]


@LOWERINGS.register("call")
def _call_op(em, op):
    helper = em.kir_module.find(op.attributes["callee"].name)
    if not isinstance(helper, Helper):
        raise NotLowered(op, "the callee is not a helper")
    args = [em.env[n] for n in op.operands]
    saved = em.env
    em.env = {p.name: a for p, a in zip(helper.params, args)} | _helper_extents(helper, args)
    try:
        return lower_ops(em, helper.body) or []
    finally:
        em.env = saved


def _helper_extents(helper: Helper, args) -> dict:
    """The extent names of the helper's parameter types, bound by this call's arguments (as
    the verifier binds them, verify/rules/control.py `_bind`; counted from the right)."""
    bound: dict = {}
    params = {p.name for p in helper.params}
    for param, arg in zip(helper.params, args):
        shape = getattr(param.type, "shape", ())
        extents = getattr(arg, "shape", ())
        for axis, extent in enumerate(shape):
            if isinstance(extent, str) and extent not in params and extent not in bound and \
                    len(extents) >= len(shape):
                bound[extent] = scalar("index", extents[axis - len(shape)])
    return bound
