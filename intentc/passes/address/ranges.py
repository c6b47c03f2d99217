"""Integer ranges of index values from their SSA provenance (§2, §10, §13).

A range is a closed interval `(lo, hi)` of Python ints. Where a value comes from decides
its range: `iota` and `parallel`/`loop` induction variables lie in `[0, extent)`,
constants are exact, `add`/`sub`/`mul`/`floordiv`/`mod`/`minimum`/`maximum`/`select` and
integer `cast` combine ranges (a result that could wrap gets its dtype's whole range),
and anything data-derived (a `read`, a loop-carried value) gets its dtype's whole range.
`assume_in_bounds %i, %r {axis = a}` narrows `%i` to `[0, extent_a)` for the ops after it.

Extents are known when static or fixed by the specialization (`Specialization.extents`);
an unknown extent gives an unknown (dtype-wide) bound. Nothing here relies on "an
out-of-bounds access is an illegal input": a range is only narrowed by provenance or by
an explicit `assume_in_bounds` fact.
"""
from __future__ import annotations

from ...ir.dtypes import int_range, is_int
from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import TensorType

# Ops whose result holds their source's elements: the source's range (cast: clamped to the type).
_REARRANGES = ops_where(lambda op: op.rearranges)

Range = tuple[int, int]
INDEX_RANGE: Range = int_range("index")


def dtype_range(type_) -> Range | None:
    if isinstance(type_, TensorType) and is_int(type_.dtype):
        return int_range(type_.dtype)
    return None


def clamp(value: Range, whole: Range) -> Range:
    """The range if every value fits the dtype's `whole` range, else `whole` (it may wrap)."""
    return value if whole[0] <= value[0] and value[1] <= whole[1] else whole


def intersect(a: Range, b: Range) -> Range:
    return max(a[0], b[0]), min(a[1], b[1])


class Ranges:
    """The ranges known at one point of a block; `child()` opens a nested region's scope."""

    def __init__(self, extents: dict[str, int], parent: Ranges | None = None):
        self.extents = extents
        self.known: dict[str, Range] = {}
        self.parent = parent

    def child(self) -> Ranges:
        return Ranges(self.extents, self)

    def get(self, name: str) -> Range | None:
        scope: Ranges | None = self
        while scope is not None:
            if name in scope.known:
                return scope.known[name]
            scope = scope.parent
        if name in self.extents:
            return self.extents[name], self.extents[name]
        return None

    def extent_bound(self, extent) -> int | None:
        """The largest value an extent can have, when known."""
        if isinstance(extent, int):
            return extent
        if extent in self.extents:
            return self.extents[extent]
        known = self.get(extent)
        return known[1] if known is not None and known[1] < INDEX_RANGE[1] else None

    def below(self, extent) -> Range:
        """The range of a coordinate along an axis of this extent: [0, extent)."""
        bound = self.extent_bound(extent)
        return (0, max(bound - 1, 0)) if bound is not None else (0, INDEX_RANGE[1])

    def narrow(self, name: str, to: Range) -> None:
        current = self.get(name) or INDEX_RANGE
        self.known[name] = intersect(current, to)

    # ---- transfer functions -----------------------------------------------------------
    def define(self, op: Op) -> None:
        """Record the ranges of the op's integer results."""
        for index, (result, type_) in enumerate(zip(op.results, op.result_types)):
            whole = dtype_range(type_)
            if whole is None:
                continue
            found = self._transfer(op, type_) if index == 0 else None
            self.known[result] = clamp(found, whole) if found is not None else whole

    def _transfer(self, op: Op, type_) -> Range | None:
        name, args = op.name, [self.get(v) for v in op.operands]
        if name == "constant":
            value = op.attributes.get("value")
            return (value, value) if isinstance(value, int) and not isinstance(value, bool) else None
        if name == "iota":
            return self.below(type_.shape[op.attributes.get("axis", 0)]) if type_.shape else (0, 0)
        if name == "dim":
            return None
        if (name in _REARRANGES or name == "cast") and args and args[0] is not None:
            return args[0]
        if name == "select":
            return select_range(self, op)
        if any(a is None for a in args) or not args:
            return None
        return _ARITHMETIC.get(name, lambda *_: None)(*args)


def _add(a: Range, b: Range) -> Range:
    return a[0] + b[0], a[1] + b[1]


def _sub(a: Range, b: Range) -> Range:
    return a[0] - b[1], a[1] - b[0]


def _mul(a: Range, b: Range) -> Range:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def _floordiv(a: Range, b: Range) -> Range | None:
    if b[0] <= 0:
        return None
    corners = [x // y for x in a for y in b]
    return min(corners), max(corners)


def _mod(a: Range, b: Range) -> Range | None:
    return (0, b[1] - 1) if b[0] > 0 else None


_ARITHMETIC = {
    "add": _add, "sub": _sub, "mul": _mul, "floordiv": _floordiv, "mod": _mod,
    "maximum": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "minimum": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
}


def select_range(ranges: Ranges, op: Op) -> Range | None:
    a, b = ranges.get(op.operands[1]), ranges.get(op.operands[2])
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
