"""`loop`s and `if`s that run per coordinate (docs/gpu.md, "Regions per coordinate").

A loop or if whose results are tensors of one shape S, whose loop-carried values have that
shape, and whose body is element-wise per coordinate (every tensor of the body has shape S
or is a scalar; no effects; reads only of `in` views) computes each coordinate of its
results from the same coordinate of its operands alone: iteration k's value at coordinate e
needs only the values at e of iteration k-1, and a branch's value at e only the operands at
e (the condition is a scalar, the same for every coordinate). So a mapping that spreads a
tensor's coordinates over threads may run the region inside each thread, for its own
coordinates, with the carried values in registers (`codegen/llvm/coordinate_region.py`);
a loop's order is kept per coordinate, which is all the ordered loop (§10) observes of a
loop without effects.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import TensorType

REGION_OPS = ops_where(lambda op: op.region_per_coordinate)


def coordinate_regions(ops: Sequence[Op], per_coordinate: Callable[[Op], bool]) -> frozenset[str]:
    """The first result names of the loops and ifs among `ops` (nested ones included) that
    may run per coordinate; `per_coordinate(op)` says whether a region-free op is
    element-wise (and its reads allowed)."""
    found: set[str] = set()

    def visit(block: Sequence[Op]) -> None:
        for op in block:
            if op.name in REGION_OPS and _runs_per_coordinate(op, per_coordinate, found):
                found.add(op.results[0])
            else:
                for region in op.regions:
                    visit(region.ops)
    visit(ops)
    return frozenset(found)


def _runs_per_coordinate(op: Op, per_coordinate: Callable[[Op], bool], found: set[str]) -> bool:
    shapes = {type_.shape if isinstance(type_, TensorType) else None for type_ in op.result_types}
    if len(shapes) != 1 or not next(iter(shapes)):
        return False
    if op.name == "loop" and len(op.result_types) != len(op.group("iter") or ()):
        return False
    if op.name == "if" and len(op.regions) != 2:
        return False
    (shape,) = shapes
    inner: set[str] = set()
    for region in op.regions:
        for nested in region.ops:
            if nested.name == "yield":
                continue
            if nested.name in REGION_OPS:
                if not _runs_per_coordinate(nested, per_coordinate, inner):
                    return False
                inner.add(nested.results[0])
            elif nested.regions or not per_coordinate(nested):
                return False
            if not all(isinstance(t, TensorType) and t.shape in (shape, ()) for t in nested.result_types):
                return False
    found |= inner
    return True
