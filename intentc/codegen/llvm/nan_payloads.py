"""Which reads may drop their NaN bits (spec §5.2).

A value read from a view of a low-precision float keeps a NaN's sign and payload in its f64
register image, because a read then write, a `select` or a `bitcast` must give back the very
bits. Where every use of the read's result is an op whose NaN results are new NaNs (the
`fresh_nan` trait: IEEE arithmetic, casts, comparisons, builtin reductions; §5.2 defines
only their NaN-ness), nothing can observe those bits, and a target that widens in hardware
(`TargetHooks.widen_exactly`) skips keeping them: in a row of f16 summed in f32 the select
that kept them stopped LLVM folding f16 -> f64 -> f32 into one conversion.
"""
from __future__ import annotations

from collections.abc import Iterable

from ...ir.nodes import Op
from ...ir.optable import ops_where

FRESH_NAN = ops_where(lambda op: op.fresh_nan)
SAME_TYPE_IDENTITY = ops_where(lambda op: op.identity_at_same_type)


class _Uses:
    """The users and result types of every SSA name of a kernel body, regions included."""

    def __init__(self, body: list[Op]):
        self.users: dict[str, list[Op]] = {}
        self.types: dict[str, object] = {}
        self._add(body)

    def _add(self, ops: Iterable[Op]) -> None:
        for op in ops:
            for name in list(op.operands) + [v for g in op.groups for v in g.values]:
                self.users.setdefault(name, []).append(op)
            self.types.update(zip(op.results, op.result_types))
            for region in op.regions:
                self._add(region.ops)

    def bits_observed(self, name: str) -> bool:
        """Whether some use may pass the NaN bits of `name` on to something that sees them."""
        return any(self._observes(op, name) for op in self.users.get(name, ()))

    def _observes(self, op: Op, name: str) -> bool:
        if op.name not in FRESH_NAN:
            return True
        if op.name in SAME_TYPE_IDENTITY and op.result_types[0] == self.types.get(name):
            return self.bits_observed(op.results[0])   # a cast to its operand's own type is no conversion
        return False


def _reads(ops: Iterable[Op]) -> Iterable[Op]:
    for op in ops:
        if op.name == "read":
            yield op
        for region in op.regions:
            yield from _reads(region.ops)


def payload_free_reads(body: Iterable[Op]) -> set[int]:
    """ids of the `read` ops of a kernel body whose results' NaN bits no use can observe."""
    body = list(body)
    uses = _Uses(body)
    return {id(op) for op in _reads(body) if op.results and not uses.bits_observed(op.results[0])}
