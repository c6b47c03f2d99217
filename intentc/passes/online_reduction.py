"""online-reduction: under `numerics = relaxed_normalization` with `online_reduction` on,
rewrite a normalized summary — maximum, exponential weights, their sum and a weighted
contraction over one axis — into a segmented online `region_fold` with explicit validity
(§5.6, §6). The pattern is in `online/match.py`, the fold it becomes in `online/fold.py`.

Never fires under `source` numerics (the default) nor with `online_reduction = false`: the
module comes back unchanged, the same object. Option `segment` (default 64) is recorded on
the fold as the preferred slice length for lowering; it is not part of the meaning.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module, Op
from .base import Pass, PassContext, register_pass
from .ir_walk import Block, Namer, defined_names, map_bodies, use_counts, value_types
from .online.fold import build_online_fold
from .online.match import find_summaries


@register_pass
@dataclass(frozen=True)
class OnlineReduction(Pass):
    name = "online-reduction"
    summary = "relaxed_normalization only: normalized summary → segmented online region_fold"
    segment: int = 64

    def __post_init__(self):
        if self.segment <= 0:
            raise ValueError("segment must be a positive slice length")

    def run(self, module: Module, ctx: PassContext) -> Module:
        if ctx.options.numerics != "relaxed_normalization" or not ctx.options.online_reduction:
            return module

        def body(item: Kernel | Helper) -> Block:
            rewriter = _Rewriter(item, self.segment, ctx)
            return rewriter.block(item.body)
        return map_bodies(module, body)


class _Rewriter:
    def __init__(self, item, segment: int, ctx: PassContext):
        self.uses, self.types = use_counts(item.body), value_types(item)
        self.namer = Namer(defined_names(item))
        self.segment, self.ctx = segment, ctx

    def block(self, ops: Block) -> Block:
        block = [self._regions(op) for op in ops]
        summaries = find_summaries(block, self.uses)
        if not summaries:
            return ops if all(a is b for a, b in zip(block, ops)) else tuple(block)
        replacements: dict[int, list[Op]] = {}
        removed: set[int] = set()
        for summary in summaries:
            replacements[max(summary.indices)] = build_online_fold(block, summary, self.namer, self.segment,
                                                                   self.types)
            removed.update(summary.indices)
            self.ctx.count("online-reduction.rewritten")
        out: list[Op] = []
        for index, op in enumerate(block):
            out.extend(replacements.get(index, ()))
            if index not in removed:
                out.append(op)
        return tuple(out)

    def _regions(self, op: Op) -> Op:
        if not op.regions:
            return op
        regions = tuple(r if (inner := self.block(r.ops)) is r.ops else r.model_copy(update={"ops": inner})
                        for r in op.regions)
        return op if all(a is b for a, b in zip(regions, op.regions)) else op.model_copy(update={"regions": regions})
