"""dce: remove pure ops whose results nobody uses.

A result is used when it appears as an operand, inside an operand group, or as a dynamic
extent in any type below its definition. Ops with effects are never removed, whatever
their results: memory accesses, atomics, `buffer`, `assume_in_bounds`, and any op whose
regions hold an effect (a `loop` that writes memory stays even if its results are unused).

One backward sweep removes whole dead chains: uses always follow definitions, so walking
each block from its end and forgetting the uses of every removed op leaves nothing dead.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module
from .base import Pass, PassContext, register_pass
from .ir_walk import Block, all_uses, is_pure_tree, map_bodies, use_counts


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    name = "dce"
    summary = "remove unused pure ops (effects are never removed)"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper) -> Block:
            return remove_dead(item.body, ctx)
        return map_bodies(module, body)


def remove_dead(body: Block, ctx: PassContext | None = None) -> Block:
    """The block with every unused pure op (at any depth) removed."""
    counts = use_counts(body)
    removed = [0]
    result = _sweep(body, counts, removed)
    if ctx is not None and removed[0]:
        ctx.count("dce.removed", removed[0])
    return result


def _sweep(ops: Block, counts: Counter, removed: list[int]) -> Block:
    kept, changed = [], False
    for op in reversed(ops):
        if op.results and not any(counts[r] for r in op.results) and is_pure_tree(op):
            counts.subtract(all_uses(op))
            removed[0] += 1
            changed = True
            continue
        if op.regions:
            regions = tuple(r if (inner := _sweep(r.ops, counts, removed)) is r.ops
                            else r.model_copy(update={"ops": inner}) for r in reversed(op.regions))[::-1]
            if any(a is not b for a, b in zip(regions, op.regions)):
                op, changed = op.model_copy(update={"regions": regions}), True
        kept.append(op)
    return tuple(reversed(kept)) if changed else ops
