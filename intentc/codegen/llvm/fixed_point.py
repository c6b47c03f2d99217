"""A `loop` that reaches a fixed point stops early (docs/gpu.md, "Beyond the row form"): a
retry loop (`atomic_max_f32`'s CAS, up to one trip a block) runs its full
trip count, but once a trip leaves every carried value as it found it without touching
memory, each later trip would do exactly the same: its body ignores the trip index, carries
only scalars, and reads nothing a trip could see change. Those trips are skipped; nothing
observable differs (run-time checks a skipped trip would raise, the settled trip raised).
A trip touches memory where one of its ops with effects or accesses runs (`lower_op` sets
the trip's flag there, `Emitter.trip_effects`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from llvmlite import ir

from ...ir.nodes import Op
from .emitter import Emitter
from .types import I1, I8

Slot = tuple[Any, ...]


def _names_used(ops: Iterable[Op]) -> Iterable[str]:
    for op in ops:
        yield from op.operands
        for group in op.groups:
            yield from group.values
        for region in op.regions:
            yield from _names_used(region.ops)


def stops_at_fixed_point(op: Op, slots: Sequence[Slot]) -> bool:
    """Whether the loop `op` may stop at a fixed point: it carries scalars only (its `slots`)
    and its body never reads the trip index."""
    region = op.regions[0]
    index = region.args[0].name
    return bool(slots) and all(slot[0] == "scalar" for slot in slots) and index not in set(_names_used(region.ops))


def _same_bits(em: Emitter, a: ir.Value, b_: ir.Value) -> ir.Value:
    b = em.b
    if isinstance(a.type, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        width = {"half": 16, "float": 32, "double": 64}[str(a.type)]
        a, b_ = b.bitcast(a, ir.IntType(width)), b.bitcast(b_, ir.IntType(width))
    return b.icmp_unsigned("==", a, b_)


def loop_to_fixed_point(em: Emitter, lower: ir.Value, upper: ir.Value, step: ir.Value, slots: Sequence[Slot],
                        body: Callable[[ir.Value], None]) -> None:
    """em.loop(lower, upper, body, step), stopping after the first trip that changes no slot
    and touches no memory."""
    b = em.b
    running, touched = em.entry_alloca(I1), em.entry_alloca(I8)
    b.store(ir.Constant(I1, 1), running)

    def trip(k: ir.Value) -> None:
        b.store(ir.Constant(I8, 0), touched)
        before = [b.load(slot[2]) for slot in slots]
        em.trip_effects.append(touched)
        try:
            body(k)
        finally:
            em.trip_effects.pop()
        settled = b.icmp_unsigned("==", b.load(touched), ir.Constant(I8, 0))
        for slot, old in zip(slots, before):
            settled = b.and_(settled, _same_bits(em, old, b.load(slot[2])))
        b.store(b.not_(settled), running)
    em.loop(lower, upper, trip, step, name="k", running=running)
