"""The op dispatcher: the registry of lowerings, filled by the family modules (named like
those of `intentc.ir.ops`) with `@LOWERINGS.register(name, ...)`.

A lowering returns the op's value (or a list for multi-result ops). A costly lazy result
with more than one use is materialized once, so no expensive element is computed twice.
An op without a lowering raises `NotLowered`, which the kernel driver turns into a
diagnostic naming the op and its location.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.registry import Registry
from .values import Lazy

if TYPE_CHECKING:
    from .emitter import Emitter

MULTI = ops_where(lambda op: op.multi_result)
TOUCHES_MEMORY = ops_where(lambda op: bool(op.effects or op.accesses))


class NotLowered(Exception):
    def __init__(self, op: Op, reason: str = ""):
        super().__init__(op.name)
        self.op, self.reason = op, reason


# Region terminators are handled by `lower_ops`; an op may declare why it has no lowering.
LOWERINGS: Registry[Callable] = Registry("LLVM lowering", "intentc.codegen.llvm",
                                         exempt=lambda op: op.terminator or bool(op.no_lowering))


def lower_op(em: Emitter, op: Op) -> None:
    impl = LOWERINGS.get(op.name) if op.registered else None
    if impl is None:
        raise NotLowered(op)
    em.element_memo = {}
    if em.trip_effects and op.name in TOUCHES_MEMORY:
        for flag in em.trip_effects:
            em.b.store(ir.Constant(ir.IntType(8), 1), flag)
    outer, em.current_op = em.current_op, op
    try:
        out = impl(em, op)
    finally:
        em.current_op = outer
    em.defs.update(dict.fromkeys(op.results, op))
    if op.results:
        values = list(out) if op.name in MULTI else [out]
        for name, value in zip(op.results, values):
            if isinstance(value, Lazy) and value.costly and em.uses.get(name, 0) > 1 and not em.hooks.keep_lazy(em, True):
                value = em.materialize(value)
            em.env[name] = value
    em.flush_checks()


def lower_ops(em: Emitter, ops: Iterable[Op]) -> list | None:
    """Lower a block; return the yielded values, or None when it ends without `yield`."""
    for op in ops:
        if op.name == "yield":
            return [em.env[name] for name in op.operands]
        lower_op(em, op)
    return None


def count_uses(ops: Iterable[Op], uses: dict, depth: int = 0, defined: dict | None = None) -> dict:
    """How often each SSA name is used; a use inside a region deeper than the name's
    definition counts twice (it may repeat)."""
    defined = {} if defined is None else defined
    for op in ops:
        names = list(op.operands) + [v for g in op.groups for v in g.values]
        for name in names:
            uses[name] = uses.get(name, 0) + (2 if depth > defined.get(name, 0) else 1)
        for region in op.regions:
            defined.update(dict.fromkeys((arg.name for arg in region.args), depth + 1))
            count_uses(region.ops, uses, depth + 1, defined)
        defined.update(dict.fromkeys(op.results, depth))
    return uses
