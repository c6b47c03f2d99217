"""Per-family rules. Each rule checks one op whose structure matches the op table and whose
operands are all defined, and returns the Values of its results (facts for later rules)."""
from __future__ import annotations

from typing import Callable

RULES: dict[str, Callable] = {}


class Args:
    """The resolved operands of an op: positional Values and keyword groups."""
    __slots__ = ("operands", "groups")

    def __init__(self, operands, groups):
        self.operands = operands
        self.groups = groups

    def __getitem__(self, position: int):
        return self.operands[position]

    def group(self, key: str) -> list:
        return self.groups.get(key, [])

    def all(self) -> list:
        return self.operands + [v for values in self.groups.values() for v in values]


def rule(*names: str):
    def register(function):
        for name in names:
            RULES[name] = function
        return function
    return register


from . import (  # noqa: E402,F401  (registers the rules)
    aggregate, atomics, contraction, control, conversion, memory, pointwise, reduction, rng,
    shape, structured,
)
from ...ir.optable import all_ops  # noqa: E402

_missing = set(all_ops()) - set(RULES)
assert not _missing, f"ops without a verifier rule: {sorted(_missing)}"
