"""canonicalize: local simplifications that are exact for every input (bit for bit).

Rules (each replaces the op's result by an existing value and drops the op):

- `broadcast`, `reshape`, `cast`, `bitcast` whose result type equals the operand's type;
- `neg (neg x)` → `x`;
- `select c, x, x` → `x`; `select` of a literal true/false condition → that branch;
- `mul x, 1` / `mul 1, x` → `x` (integers and floats; NaN stays NaN);
- integers: `add x, 0`, `add 0, x`, `sub x, 0`, `or x, 0`, `xor x, 0`, `shl x, 0`, `shr x, 0` → `x`;
- floats: `add x, -0.0`, `add -0.0, x`, `sub x, +0.0` → `x` (`x + +0.0` is *not* `x`: it
  turns `-0.0` into `+0.0`, so it stays).

Nothing here reassociates, folds float arithmetic or touches an op with effects.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.dtypes import is_float, is_int
from ..ir.nodes import Helper, Kernel, Module, Op
from ..ir.optable import ops_where
from ..ir.types import TensorType
from .base import Pass, PassContext, register_pass
from .constants import is_literal, splat_value
from .ir_walk import Block, definitions, map_bodies, rename_op, value_types

_SAME_TYPE_IDENTITIES = ops_where(lambda op: op.identity_at_same_type)
_INT_RIGHT_ZERO = ops_where(lambda op: op.int_identity == 0)
_INT_LEFT_ZERO = ops_where(lambda op: op.int_identity == 0 and op.commutative)


@register_pass
@dataclass(frozen=True)
class Canonicalize(Pass):
    name = "canonicalize"
    summary = "exact local simplifications: identity conversions, neg-neg, select, x*1, x+0"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper) -> Block:
            return _Simplifier(item, ctx).block(item.body)
        return map_bodies(module, body)


class _Simplifier:
    def __init__(self, item, ctx: PassContext):
        self.defs = definitions(item)
        self.types = value_types(item)
        self.ctx = ctx
        self.mapping: dict[str, str] = {}

    def block(self, ops: Block) -> Block:
        out, changed = [], False
        for op in ops:
            renamed = rename_op(op, self.mapping)
            if renamed is not op:
                changed = True
            renamed = self._inner(renamed)
            if renamed is not op:
                changed = True
            self.defs.update(dict.fromkeys(renamed.results, renamed))
            replacement = self.simplify(renamed)
            if replacement is None:
                out.append(renamed)
                continue
            self.mapping[renamed.results[0]] = self.mapping.get(replacement, replacement)
            self.ctx.count("canonicalize.folded")
            changed = True
        return tuple(out) if changed else ops

    def _inner(self, op: Op) -> Op:
        if not op.regions:
            return op
        regions = tuple(r if (ops := self.block(r.ops)) is r.ops else r.model_copy(update={"ops": ops})
                        for r in op.regions)
        return op if all(a is b for a, b in zip(regions, op.regions)) else op.model_copy(update={"regions": regions})

    def simplify(self, op: Op) -> str | None:
        """The existing value that replaces the op's single result, or None."""
        if len(op.results) != 1 or op.regions or op.groups or not op.registered:
            return None
        if op.name in _SAME_TYPE_IDENTITIES and op.attributes == {}:
            return op.operands[0] if self.types.get(op.operands[0]) == op.result_types[0] else None
        if op.name == "neg":
            inner = self.defs.get(op.operands[0])
            return inner.operands[0] if inner is not None and inner.name == "neg" else None
        if op.name == "select":
            return self._select(op)
        if len(op.operands) == 2 and not op.attributes:
            return self._neutral_operand(op)
        return None

    def _select(self, op: Op) -> str | None:
        cond, on_true, on_false = op.operands
        if on_true == on_false:
            return on_true
        value = splat_value(cond, self.defs)
        choice = {True: on_true, False: on_false}.get(value) if isinstance(value, bool) else None
        return choice if choice is not None and self.types.get(choice) == op.result_types[0] else None

    def _neutral_operand(self, op: Op) -> str | None:
        result = op.result_types[0]
        if not isinstance(result, TensorType):
            return None
        lhs, rhs = op.operands
        dtype, defs = result.dtype, self.defs
        if op.name == "mul" and (is_int(dtype) or is_float(dtype)):
            if is_literal(rhs, defs, 1):
                return lhs
            if is_literal(lhs, defs, 1):
                return rhs
            return None
        if is_int(dtype):
            if op.name in _INT_RIGHT_ZERO and is_literal(rhs, defs, 0):
                return lhs
            if op.name in _INT_LEFT_ZERO and is_literal(lhs, defs, 0):
                return rhs
            return None
        if is_float(dtype):
            if op.name == "add" and is_literal(rhs, defs, 0, negative_zero=True):
                return lhs
            if op.name == "add" and is_literal(lhs, defs, 0, negative_zero=True):
                return rhs
            if op.name == "sub" and is_literal(rhs, defs, 0):
                return lhs
        return None
