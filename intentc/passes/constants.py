"""Reading literal values through `constant`, `full` and `broadcast` chains."""
from __future__ import annotations

import math

from ..ir.nodes import Op
from ..ir.optable import ops_where

_SPLAT_SOURCES = ops_where(lambda op: op.rearranges)
# Ops whose `value` attribute is every element of their result.
_LITERALS = ops_where(lambda op: "value" in op.attrs)


def splat_value(name: str, defs: dict[str, Op]):
    """The one literal every element of `name` equals, or None when it is not a literal splat."""
    seen = 0
    while seen < 64:
        op = defs.get(name)
        if op is None:
            return None
        if op.name in _LITERALS:
            value = op.attributes.get("value")
            return value if isinstance(value, (bool, int, float)) else None
        if op.name not in _SPLAT_SOURCES:
            return None
        name, seen = op.operands[0], seen + 1
    return None


def is_literal(name: str, defs: dict[str, Op], wanted: float, *, negative_zero: bool = False) -> bool:
    """Whether `name` is a splat of exactly `wanted` (with `-0.0` told apart from `0.0`)."""
    value = splat_value(name, defs)
    if value is None or isinstance(value, bool) or value != wanted:
        return False
    if wanted == 0 and isinstance(value, float):
        return math.copysign(1.0, value) < 0 if negative_zero else math.copysign(1.0, value) > 0
    return not negative_zero
