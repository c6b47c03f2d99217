"""Which axes of an access its mask keeps inside the view, so that no bounds check is emitted
for them (issue #13: a vector add's checks were a quarter of its LLVM instructions).

A masked access checks every active lane's index against the view's extent (§10: an active
lane outside it is an illegal input). Where the mask is `lt %i, E` (alone or one operand of
an `and`), `%i` the access's index along an axis and `E` that axis' extent (its name, a
`dim` of a view with the same extent, or a broadcast of one), every active lane already has
`%i < E`; if `%i` is also never negative, the lane lies inside along that axis, and the check
could never fire. `%i ≥ 0` is proved by interval arithmetic over the index ops that compute
it, with 64-bit wrapping taken into account (an interval that may wrap becomes the whole
range): `parallel` coordinates lie in [0, count), `iota` in [0, extent), extents are never
negative. The blocked vector add's `%b * 1024 + iota` is the case this serves: `%b` <
(N + 1023) / 1024 keeps it below 2^63 for every N.

An index read from data (`segment_sum`'s segment ids, i32) has no interval; its mask may
bound it instead: a conjunct `ge %i, c` (c ≥ 0) or `gt %i, c` (c ≥ -1), c an integer
constant, keeps every active lane's `%i` non-negative, and `lt %i, cast(E)` bounds it by E
(an extent cast to an integer dtype is at most E: a narrowing keeps a non-negative value or
wraps it below itself).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from ...ir.dtypes import is_int
from ...ir.nodes import Kernel, Op
from ...ir.types import TensorType, ViewType

LOWEST, HIGHEST = -(1 << 63), (1 << 63) - 1
WHOLE = (LOWEST, HIGHEST)
Interval = tuple[int, int]


def _wrapping(low: int, high: int) -> Interval:
    """[low, high], or the whole range when some value in it does not fit 64 bits."""
    return (low, high) if LOWEST <= low <= high <= HIGHEST else WHOLE


def _product(a: Interval, b: Interval) -> Interval:
    corners = [x * y for x in a for y in b]
    return _wrapping(min(corners), max(corners))


def _floordiv(a: Interval, b: Interval) -> Interval:
    if b[0] != b[1] or b[0] <= 0:
        return WHOLE
    return a[0] // b[0], a[1] // b[0]


# interval arithmetic of the index ops whose result is a function of their operands' intervals
ARITHMETIC: dict[str, Callable[[Interval, Interval], Interval]] = {
    "add": lambda a, b: _wrapping(a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: _wrapping(a[0] - b[1], a[1] - b[0]),
    "mul": _product,
    "floordiv": _floordiv,
}


class _IndexRanges:
    """The interval of every index value of a kernel body (regions included)."""

    def __init__(self, kernel: Kernel):
        self.producers: dict[str, Op] = {}
        self.ranges: dict[str, Interval] = {}
        # name -> the extent it equals, or at most equals (a narrowing cast): a symbol or an int
        self.extents: dict[str, object] = {}
        self.view_shapes = {p.name: p.type.shape for p in kernel.params if isinstance(p.type, ViewType)}
        for shape in self.view_shapes.values():
            for extent in shape:
                if isinstance(extent, str):
                    self.ranges[extent] = (0, HIGHEST)
                    self.extents[extent] = extent
        self._visit(kernel.body)

    def of(self, name: str) -> Interval:
        return self.ranges.get(name, WHOLE)

    def _visit(self, ops: Iterable[Op]) -> None:
        for op in ops:
            for name in op.results:
                self.producers[name] = op
            if op.results and isinstance(op.result_types[0], TensorType) and is_int(op.result_types[0].dtype):
                if op.result_types[0].dtype == "index":
                    self.ranges[op.results[0]] = self._interval(op)
                extent = self._extent(op)
                if extent is not None:
                    self.extents[op.results[0]] = extent
            if op.name == "parallel":
                for arg, count in zip(op.regions[0].args, op.operands):
                    self.ranges[arg.name] = (0, max(0, self.of(count)[1] - 1))
            for region in op.regions:
                self._visit(region.ops)

    def _interval(self, op: Op) -> Interval:
        if op.name == "constant":
            value = op.attributes.get("value")
            return (value, value) if isinstance(value, int) and not isinstance(value, bool) else WHOLE
        if op.name == "iota":
            shape = op.result_types[0].shape if isinstance(op.result_types[0], TensorType) else ()
            static = [e for e in shape if isinstance(e, int)]
            return (0, max(static) - 1) if static and len(static) == len(shape) else (0, HIGHEST)
        if op.name == "dim":
            return 0, HIGHEST
        if op.name == "broadcast":
            return self.of(op.operands[0])
        if op.name in ARITHMETIC and len(op.operands) == 2:
            return ARITHMETIC[op.name](self.of(op.operands[0]), self.of(op.operands[1]))
        return WHOLE

    def _extent(self, op: Op) -> object | None:
        """The view extent `op`'s result equals (at every element), if it is one."""
        if op.name == "constant" and isinstance(op.attributes.get("value"), int):
            return op.attributes["value"]
        if op.name == "dim" and op.operands[0] in self.view_shapes:
            return self.view_shapes[op.operands[0]][op.int_attr("axis")]
        if op.name == "broadcast":
            return self.extents.get(op.operands[0])
        if op.name == "cast" and isinstance(self.extents.get(op.operands[0]), str):
            return self.extents[op.operands[0]]      # at most the extent (a bound for `lt` only)
        return None

    def repeated(self, name: str) -> tuple[str, tuple]:
        """(the tensor whose elements `name` repeats, the shapes from it to `name`): through
        `reshape`s and `broadcast`s without `dims` (numpy's rule), whose element at each
        coordinate is a function of those shapes alone — so two values with the same source
        and the same shapes hold the same source element at every coordinate."""
        shapes: list = []
        op = self.producers.get(name)
        while op is not None and _repeats(op) and op.operands[0] in self.producers:
            shapes.append(_shape(op))
            name = op.operands[0]
            op = self.producers[name]
        return name, tuple(reversed(shapes))

    def conjuncts(self, mask: str, after: tuple = ()) -> Iterable[tuple[Op, tuple]]:
        """(op, the shapes from its result to `mask`) for each op other than `and` and the
        repeats whose result `mask` is the conjunction of (through `and`s, reshapes and
        broadcasts): its compares."""
        op = self.producers.get(mask)
        if op is None:
            return
        if op.name == "and":
            for operand in op.operands:
                yield from self.conjuncts(operand, after)
        elif _repeats(op):
            yield from self.conjuncts(op.operands[0], (_shape(op), *after))
        else:
            yield op, after

    def lanes(self, index: str, access_shape: tuple, floors: set | frozenset = frozenset()) -> tuple[str, tuple] | None:
        """What the access's lanes hold of `index` (implicitly broadcast to `access_shape`):
        (source, shapes), with the index's interval starting at 0 or more, or the mask's
        `floors` keeping it there on active lanes; else None."""
        source, shapes = self.repeated(index)
        held = source, _steps((*shapes, access_shape))
        if self.of(source)[0] < 0 and held not in floors:
            return None
        return held

    def _compared(self, mask: str, access_shape: tuple, name: str) -> Iterable[tuple[tuple[str, tuple], str]]:
        """((source, shapes), right operand) for each conjunct `name source, right` of `mask`
        that compares element-wise at the left operand's own shape."""
        for compare, after in self.conjuncts(mask):
            if compare.name != name or _shape(compare) != _shape(self.producers.get(compare.operands[0])):
                continue
            source, shapes = self.repeated(compare.operands[0])
            yield (source, _steps((*shapes, *after, access_shape))), compare.operands[1]

    def bounds(self, mask: str, access_shape: tuple) -> set[tuple[tuple[str, tuple], object]]:
        """((source, shapes), extent) for every `lt source, extent` conjunct of `mask`."""
        return {(held, self.extents.get(right)) for held, right in self._compared(mask, access_shape, "lt")}

    def floors(self, mask: str, access_shape: tuple) -> set[tuple[str, tuple]]:
        """(source, shapes) of every conjunct of `mask` that keeps its source non-negative on
        active lanes: `ge source, c` with c ≥ 0 and `gt source, c` with c ≥ -1, c an integer
        constant."""
        found = set()
        for name, lowest in (("ge", 0), ("gt", -1)):
            for held, right in self._compared(mask, access_shape, name):
                constant = self.extents.get(right)
                if isinstance(constant, int) and constant >= lowest:
                    found.add(held)
        return found


def _repeats(op: Op) -> bool:
    return op.name == "reshape" or (op.name == "broadcast" and op.attributes.get("dims") is None)


def _shape(op: Op | None) -> tuple | None:
    type_ = op.result_types[0] if op is not None and op.result_types else None
    return type_.shape if isinstance(type_, TensorType) else None


def _steps(shapes: tuple) -> tuple:
    """`shapes` without repeats (a broadcast to its own shape moves nothing)."""
    return tuple(shape for position, shape in enumerate(shapes) if position == 0 or shapes[position - 1] != shape)


def masked_in_bounds(kernel: Kernel) -> dict[int, frozenset[int]]:
    """id(access op) -> the axes of its view along which its mask keeps every active lane
    inside the extent (for accesses of views with a mask)."""
    facts = _IndexRanges(kernel)
    found: dict[int, frozenset[int]] = {}
    for op in _masked_view_accesses(kernel.body, facts.view_shapes):
        shape = facts.view_shapes[op.operands[0]]
        (mask,), indices = op.group("mask") or ("",), op.group("index") or ()
        access_shape = _shape(facts.producers.get(mask))
        if access_shape is None:
            continue
        bounded, floors = facts.bounds(mask, access_shape), facts.floors(mask, access_shape)
        axes = frozenset(axis for axis, (index, extent) in enumerate(zip(indices, shape))
                         if (facts.lanes(index, access_shape, floors), extent) in bounded)
        if axes:
            found[id(op)] = axes
    return found


def _masked_view_accesses(ops: Iterable[Op], views: dict) -> Iterable[Op]:
    for op in ops:
        if op.operands and op.operands[0] in views and op.group("mask") and op.group("index"):
            yield op
        for region in op.regions:
            yield from _masked_view_accesses(region.ops, views)
