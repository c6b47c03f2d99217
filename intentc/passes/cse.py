"""cse: merge pure ops that compute the same thing from the same values.

Two ops are the same computation only when their name, operands, operand groups, result
types and *every attribute* are identical, attribute values compared by their exact printed
text (`-0.0` is not `0.0`, `1` is not `1.0`, a missing `approximate` is not
`approximate = false`). So `exp2 {approximate = true}` never merges with a plain `exp2`, and
`fdiv {flush_to_zero = true}` never with one without (§5.1). Ops with effects (memory,
atomics, buffers, `assume_in_bounds`) and ops with regions are never merged.

Scoping follows SSA visibility: an op may be replaced by an identical op earlier in its
own block or in an enclosing block, never by one inside a sibling region.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module, Op
from ..printer import attr_text
from .base import Pass, PassContext, register_pass
from .ir_walk import Block, is_pure_op, map_bodies, rename_op


@register_pass
@dataclass(frozen=True)
class CommonSubexpressionElimination(Pass):
    name = "cse"
    summary = "merge identical pure ops (all attributes equal), scoped by SSA visibility"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper) -> Block:
            return _Scope(ctx).block(item.body, {})
        return map_bodies(module, body)


def computation_key(op: Op):
    """What identifies the value an op computes, or None when it must never be merged."""
    if op.regions or not op.results or not is_pure_op(op):
        return None
    attrs = tuple(sorted((name, attr_text(value)) for name, value in op.attributes.items())) if op.attributes else ()
    groups = tuple((g.key, g.values) for g in op.groups) if op.groups else ()
    return op.name, op.operands, groups, attrs, op.result_types


class _Scope:
    def __init__(self, ctx: PassContext):
        self.ctx = ctx
        self.mapping: dict[str, str] = {}

    def block(self, ops: Block, visible: dict) -> Block:
        available = dict(visible)
        out, changed = [], False
        for op in ops:
            current = rename_op(op, self.mapping)
            if current.regions:
                current = self._regions(current, available)
            changed |= current is not op
            key = computation_key(current)
            earlier = available.get(key) if key is not None else None
            if earlier is not None:
                self.mapping.update(zip(current.results, earlier))
                self.ctx.count("cse.merged")
                changed = True
                continue
            if key is not None:
                available[key] = current.results
            out.append(current)
        return tuple(out) if changed else ops

    def _regions(self, op: Op, available: dict) -> Op:
        regions = tuple(r if (ops := self.block(r.ops, available)) is r.ops else r.model_copy(update={"ops": ops})
                        for r in op.regions)
        return op if all(a is b for a, b in zip(regions, op.regions)) else op.model_copy(update={"regions": regions})
