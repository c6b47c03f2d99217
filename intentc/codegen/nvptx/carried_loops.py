"""Phis where branches meet (a loop's carried values: `Emitter.loop(carried=...)`)."""
from __future__ import annotations

from llvmlite import ir


def joined(b: ir.IRBuilder, incoming: list) -> list:
    """Phis at the builder's block (where branches met) of [(values, block)] pairs, a value
    list from each predecessor block."""
    (first, _), *_ = incoming
    phis = [b.phi(value.type) for value in first]
    for values, block in incoming:
        for phi, value in zip(phis, values, strict=True):
            phi.add_incoming(value, block)
    return phis
