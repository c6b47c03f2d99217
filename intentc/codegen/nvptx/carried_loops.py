"""Loops whose values a trip hands to the next as SSA values (phis in the loop's header), not
through thread-local slots: the flash kernels carry a few hundred registers through their loops
(MMA fragments, the fold's state), and a slot each cost five instructions (its alloca, the
first store, a load and a store a trip, the load after the loop) that SROA only removes again
— a third of flash on tensor cores' LLVM instructions, each built, printed and parsed."""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..llvm.types import I64


def carried_loop(em, start: ir.Value, stop: ir.Value, step: ir.Value, initial: list,
                 body: Callable[[ir.Value, list], list], name: str) -> list:
    """for (i = start; i < stop; i += step) values = body(i, values)   (signed i64), starting
    from `initial`; returns the values after the loop."""
    b = em.b
    before = b.block
    header, inside, after = em.new_block(f"{name}.head"), em.new_block(f"{name}.body"), em.new_block(f"{name}.end")
    b.branch(header)
    b.position_at_end(header)
    index = b.phi(I64, name=name)
    index.add_incoming(start, before)
    carried = [b.phi(value.type) for value in initial]
    for phi, value in zip(carried, initial):
        phi.add_incoming(value, before)
    b.cbranch(b.icmp_signed("<", index, stop), inside, after)
    b.position_at_end(inside)
    em.loop_depth += 1
    try:
        following = body(index, list(carried))
    finally:
        em.loop_depth -= 1
    index.add_incoming(b.add(index, step, flags=["nsw"]), b.block)
    for phi, value in zip(carried, following, strict=True):
        phi.add_incoming(value, b.block)
    b.branch(header)
    b.position_at_end(after)
    return carried


def joined(b: ir.IRBuilder, incoming: list) -> list:
    """Phis at the builder's block (where branches met) of [(values, block)] pairs, a value
    list from each predecessor block."""
    (first, _), *_ = incoming
    phis = [b.phi(value.type) for value in first]
    for values, block in incoming:
        for phi, value in zip(phis, values, strict=True):
            phi.add_incoming(value, block)
    return phis
