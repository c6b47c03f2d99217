"""fusion-legality: apply the three local fusion permissions of §5.3–§5.5 exactly where the
spec allows them (the legality rules live in `passes/fusion/`, one module per section).

Options (each on by default): `contract-add` (§5.3), `multiply-reduce` (§5.4), `fma`
(§5.5). These are permissions of `source` numerics, so the pass runs under both numerics
modes; no rule reassociates anything else.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module, Op
from .base import Pass, PassContext, register_pass
from .fusion.common import ItemFacts
from .fusion.contract_add import fuse_contract_add
from .fusion.fma_marks import mark_fma
from .fusion.multiply_reduce import fuse_multiply_reduce
from .ir_walk import Block, definitions, map_bodies, use_counts


@register_pass
@dataclass(frozen=True)
class FusionLegality(Pass):
    name = "fusion-legality"
    summary = "§5.3 contract+add → contract init, §5.4 mul+sum → contract, §5.5 FMA marks"
    contract_add: bool = True
    multiply_reduce: bool = True
    fma: bool = True

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper) -> Block:
            facts = ItemFacts(definitions(item), use_counts(item.body))
            return self._block(item.body, facts, ctx)
        return map_bodies(module, body)

    def _block(self, ops: Block, facts: ItemFacts, ctx: PassContext) -> Block:
        block: list[Op | None] = [self._regions(op, facts, ctx) for op in ops]
        changed = any(a is not b for a, b in zip(block, ops))
        if self.contract_add:
            count = fuse_contract_add(block, facts)
            ctx.count("fusion-legality.contract-add", count)
            changed |= bool(count)
        if self.multiply_reduce:
            count = fuse_multiply_reduce(block, facts)
            ctx.count("fusion-legality.multiply-reduce", count)
            changed |= bool(count)
        if self.fma:
            count = mark_fma(block)
            ctx.count("fusion-legality.fma", count)
            changed |= bool(count)
        return tuple(op for op in block if op is not None) if changed else ops

    def _regions(self, op: Op, facts: ItemFacts, ctx: PassContext) -> Op:
        if not op.regions:
            return op
        regions = tuple(r if (inner := self._block(r.ops, facts, ctx)) is r.ops else r.model_copy(update={"ops": inner})
                        for r in op.regions)
        return op if all(a is b for a, b in zip(regions, op.regions)) else op.model_copy(update={"regions": regions})
