"""Transposed tile reads (docs/gpu.md, "Beyond the row form"): a read whose index for the
view's last (contiguous) axis runs along an axis of the tile other than its last one (a tile
read in the other orientation, `y[j, i] = x[i, j]`) would give neighbouring lanes addresses
a row apart. Such a read is staged in shared memory instead (cta_staging.py), visiting the
tile with that axis and its last axis swapped, so neighbouring lanes read neighbouring
addresses; its users then read the tile from shared memory in any order.

Which axes an index varies along is found from its definition: iota along its axis,
broadcasts moving axes right-aligned (or by `dims`), reshapes that only add or drop axes of
extent 1 keeping the others in order, element-wise ops the union of their operands'. Anything else (a gathered index, a reshape) is unknown, and the read stays as it
is.
"""
from __future__ import annotations

from collections.abc import Iterable

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import TensorType
from .cta_tiles import every_op

ELEMENTWISE = ops_where(lambda op: op.cta_per_coordinate)
Axes = frozenset[int] | None          # the axes a value varies along; None: unknown


def _shape(op: Op) -> tuple:
    type_ = op.result_types[0]
    return type_.shape if isinstance(type_, TensorType) else ()


def varying(name: str, defs: dict[str, Op], memo: dict[str, Axes]) -> Axes:
    """The axes (of its own shape) along which value `name` varies."""
    if name in memo:
        return memo[name]
    op = defs.get(name)
    if op is None or not _shape(op):           # scalars, block arguments: the same everywhere
        axes: Axes = frozenset()
    elif op.name == "iota":
        axes = frozenset({op.int_attr("axis", 0)})
    elif op.name == "full" or op.name == "constant":
        axes = frozenset()
    elif op.name == "broadcast":
        axes = _placed_at(op.operands[0], _shape(op), defs, memo, op.attributes.get("dims"))
    elif op.name == "reshape":
        axes = _unit_reshape(op, defs, memo)
    elif op.name in ELEMENTWISE:
        parts = [_placed_at(n, _shape(op), defs, memo) for n in op.operands]
        axes = None if any(p is None for p in parts) else frozenset().union(*[p for p in parts if p is not None])
    else:
        axes = None
    memo[name] = axes
    return axes


def _unit_reshape(op: Op, defs: dict[str, Op], memo: dict[str, Axes]) -> Axes:
    """A reshape that only inserts or drops axes of extent 1 keeps the other axes in order."""
    inner = varying(op.operands[0], defs, memo)
    source = _shape(defs[op.operands[0]]) if op.operands[0] in defs else ()
    kept = [i for i, extent in enumerate(source) if extent != 1]
    placed = [i for i, extent in enumerate(_shape(op)) if extent != 1]
    if inner is None or [source[i] for i in kept] != [_shape(op)[i] for i in placed]:
        return None
    return frozenset(placed[kept.index(i)] for i in inner if i in kept)


def _placed_at(name: str, shape: tuple, defs: dict[str, Op], memo: dict[str, Axes], dims=None) -> Axes:
    """The axes of `shape` along which value `name`, broadcast to it (right-aligned or by
    `dims`), varies."""
    inner = varying(name, defs, memo)
    if inner is None:
        return None
    source = _shape(defs[name]) if name in defs else ()
    targets = list(dims) if dims is not None else [len(shape) - len(source) + i for i in range(len(source))]
    return frozenset(targets[i] for i in inner if source[i] != 1)


def transposed_reads(body: list[Op], ops: list[Op]) -> dict[str, tuple[int, ...]]:
    """Reads of the iteration `ops` (of the kernel `body`) to visit in another axis order:
    name -> the permutation (a swap of the last axis with the axis the contiguous index
    runs along)."""
    defs = {name: op for op in every_op(body) for name in op.results}
    memo: dict[str, Axes] = {}
    found = {}
    for op in every_op(ops):
        shape = _shape(op) if op.name == "read" else ()
        indices = list(op.group("index") or ()) if shape else []
        if len(shape) < 2 or not indices:
            continue
        last = len(shape) - 1
        placed = [_placed_at(n, shape, defs, memo) for n in indices]
        lanes = [_placed_at(n, shape, defs, memo) for key in ("mask", "fill") for n in op.group(key) or ()]
        contiguous = placed[-1]
        if contiguous is None or not contiguous or last in contiguous or None in lanes:
            continue                       # evaluated at other coordinates: lazily computable only
        if any(p is None for p in placed) or not any(last in p for p in placed if p is not None):
            continue
        axis = max(contiguous)
        order = list(range(len(shape)))
        order[axis], order[last] = last, axis
        found[op.results[0]] = tuple(order)
    return found


def permuted(values: Iterable, order: tuple[int, ...]) -> list:
    """`values` (a shape or a coordinate) with its axes in `order`."""
    items = list(values)
    return [items[axis] for axis in order]
