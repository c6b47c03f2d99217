"""Per-family rules. Each rule checks one op whose structure matches the op table and whose
operands are all defined, and returns the Values of its results (facts for later rules)."""
from __future__ import annotations

from collections.abc import Callable

from ...ir.registry import Registry
from ..context import Value

# One rule per op, registered by the family modules of this package (named like those of
# `intentc.ir.ops`) with `@rule(name, ...)`.
RULES: Registry[Callable] = Registry("verifier", "intentc.verify.rules")
rule = RULES.register


class Args:
    """The resolved operands of an op: positional Values and keyword groups."""
    __slots__ = ("groups", "operands")

    def __init__(self, operands: list[Value], groups: dict[str, list[Value]]):
        self.operands = operands
        self.groups = groups

    def __getitem__(self, position: int) -> Value:
        return self.operands[position]

    def group(self, key: str) -> list[Value]:
        return self.groups.get(key, [])

    def all(self) -> list[Value]:
        return self.operands + [v for values in self.groups.values() for v in values]


