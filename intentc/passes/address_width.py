"""address-width: give every memory access an `address_width` of 32 or 64 (§2).

32 is chosen only when the offset of every active lane, `Σ c_i · stride_i` in elements,
provably fits a signed 32-bit integer: the coordinate ranges come from index provenance
and `assume_in_bounds` facts (`address/ranges.py`), the strides from buffer layout and the
specialization's contiguity facts (`address/bounds.py`). Otherwise 64. The attribute only
tells the backend how wide to make offset arithmetic; logical index values (`index`,
always signed 64-bit) and every result stay as they are. Accesses: `read`, `write`,
`unique_store`, `scatter_reduce` and the atomics.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Helper, Kernel, Module, Op
from ..ir.optable import ops_where
from ..ir.types import BufferType, ViewType
from .address.bounds import fits_int32, offset_range, strides
from .address.ranges import Ranges
from .base import Pass, PassContext, register_pass
from .ir_walk import Block, map_bodies, value_types

ACCESSES = ops_where(lambda op: op.accesses)
# Which operand names the accessed resource.
RESOURCE_OPERAND = 0


@register_pass
@dataclass(frozen=True)
class AddressWidth(Pass):
    name = "address-width"
    summary = "32-bit offsets where extents, strides and bounds facts prove they fit, else 64"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper) -> Block:
            chooser = _Chooser(item, ctx)
            ranges = Ranges(dict(ctx.specialization.extents))
            return chooser.block(item.body, ranges)
        return map_bodies(module, body)


class _Chooser:
    def __init__(self, item, ctx: PassContext):
        self.types = value_types(item)
        self.ctx = ctx

    def block(self, ops: Block, ranges: Ranges) -> Block:
        out, changed = [], False
        for op in ops:
            new = self.op(op, ranges)
            changed |= new is not op
            out.append(new)
        return tuple(out) if changed else ops

    def op(self, op: Op, ranges: Ranges) -> Op:
        if op.name == "assume_in_bounds":
            self._assume(op, ranges)
            return op
        if op.regions:
            op = self._regions(op, ranges)
        ranges.define(op)
        if op.name not in ACCESSES:
            return op
        width = self.width(op, ranges)
        self.ctx.count(f"address-width.{width}")
        if op.attributes.get("address_width") == width:
            return op
        return op.model_copy(update={"attributes": {**op.attributes, "address_width": width}})

    def width(self, op: Op, ranges: Ranges) -> int:
        resource = op.operands[RESOURCE_OPERAND]
        type_ = self.types.get(resource)
        stride_list = strides(resource, type_, ranges, self.ctx.specialization)
        if stride_list is None:
            return 64
        coordinates = [ranges.get(name) for name in op.group("index") or ()]
        return 32 if fits_int32(offset_range(coordinates, stride_list)) else 64

    def _assume(self, op: Op, ranges: Ranges) -> None:
        index, resource = op.operands
        type_ = self.types.get(resource)
        axis = op.int_attr("axis", 0)
        if isinstance(type_, ViewType | BufferType) and axis < len(type_.shape):
            ranges.narrow(index, ranges.below(type_.shape[axis]))

    def _regions(self, op: Op, ranges: Ranges) -> Op:
        regions = []
        for region in op.regions:
            scope = ranges.child()
            self._bind_arguments(op, region, scope, ranges)
            ops = self.block(region.ops, scope)
            regions.append(region if ops is region.ops else region.model_copy(update={"ops": ops}))
        if all(a is b for a, b in zip(regions, op.regions)):
            return op
        return op.model_copy(update={"regions": tuple(regions)})

    def _bind_arguments(self, op: Op, region, scope: Ranges, outer: Ranges) -> None:
        """Induction variables of `parallel` and `loop` lie in their iteration ranges."""
        if op.name == "parallel":
            for arg, extent in zip(region.args, op.operands):
                scope.known[arg.name] = scope.below(extent)
        elif op.name == "loop" and region.args:
            lower, upper = outer.get(op.operands[0]), outer.get(op.operands[1])
            if lower is not None and upper is not None:
                scope.known[region.args[0].name] = (lower[0], max(upper[1] - 1, lower[0]))
