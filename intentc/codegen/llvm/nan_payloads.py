"""Which reads may drop their NaN bits, and which need no value at all (spec §5.2).

A value read from a view of a low-precision float keeps a NaN's sign and payload in its f64
register image, because a read then write, a `select` or a `bitcast` must give back the very
bits. Where every use of the read's result is an op whose NaN results are new NaNs (the
`fresh_nan` trait: IEEE arithmetic, casts, comparisons, builtin reductions; §5.2 defines
only their NaN-ness), nothing can observe those bits, and a target that widens in hardware
(`TargetHooks.widen_exactly`) skips keeping them: in a row of f16 summed in f32 the select
that kept them stopped LLVM folding f16 -> f64 -> f32 into one conversion.

A read whose result is only stored, as it is, into views of its own dtype (an embedding row
copied out) is a copy of bits: it moves the storage words (`bit_copy_reads`), where the f64
image cost a decoding and an encoding an element (and a branch around every 16-bit store).
"""
from __future__ import annotations

from collections.abc import Iterable

from ...ir.nodes import Op
from ...ir.optable import ops_where

FRESH_NAN = ops_where(lambda op: op.fresh_nan)
# Stores of a value operand as it is (no combine, no atomicity).
PLAIN_STORES = ops_where(lambda op: op.accesses == ("write",) and not op.regions and "atomic" not in op.effects)
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


def bit_copy_reads(body: Iterable[Op], view_dtypes: dict[str, str]) -> set[int]:
    """ids of the `read` ops of views whose results are used only as the stored value of
    plain stores into views of the same dtype (`view_dtypes`: the kernel's views)."""
    body = list(body)
    uses = _Uses(body)

    def copied(op: Op) -> bool:
        dtype = view_dtypes.get(op.operands[0])
        users = uses.users.get(op.results[0], ())
        return dtype is not None and bool(users) and all(
            user.name in PLAIN_STORES and view_dtypes.get(user.operands[0]) == dtype
            and list(user.operands[1:]) == [op.results[0]] and op.results[0] not in _group_values(user)
            for user in users)
    return {id(op) for op in _reads(body) if op.results and copied(op)}


def _group_values(op: Op) -> set[str]:
    return {v for g in op.groups for v in g.values}


def payload_free_reads(body: Iterable[Op]) -> set[int]:
    """ids of the `read` ops of a kernel body whose results' NaN bits no use can observe."""
    body = list(body)
    uses = _Uses(body)
    return {id(op) for op in _reads(body) if op.results and not uses.bits_observed(op.results[0])}
