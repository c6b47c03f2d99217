"""What a CTA-mapped iteration may hold beyond the row form (docs/gpu.md, "Tiles, gathers
and effects"): tensors of several shapes and ranks, shape ops, gathers and scatters with
computed indices, scalar atomics and control flow.

- Tensors of several shapes (a tile and its row and column vectors, a join, a reshape, a
  broadcast along an axis, an outer product) take the dynamic form: each op's coordinates
  are spread over the CTA by its own shape's row-major linearization (the fastest axis
  across neighbouring threads, so tile reads and writes coalesce), and every value is an
  element expression evaluated where it is used, so a coordinate may read its operands at
  any other coordinate (a transposed or broadcast index) with no exchange between threads.
- `unique_store` and `scatter_reduce` of a computed tensor update each element from the
  one thread that owns its coordinate (atomically for scatter_reduce, as every iteration
  may hit the same element), so each element's update happens exactly once.
- Scalar atomics happen once an iteration, on its thread 0, and every thread gets the
  result through shared memory (`cta_effects.py`); `if` and `loop` with scalar results run
  on every thread (their conditions are the same on every thread: scalars are computed
  redundantly or broadcast), so reductions and barriers inside them stay collective.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import RecordType, TensorType, TupleType, Type

SHAPE_OPS = ops_where(lambda op: op.family == "shape")
ATOMICS = ops_where(lambda op: op.family == "atomics")
AGGREGATES = ops_where(lambda op: op.family == "aggregate")
CONTROL = ops_where(lambda op: op.family == "control" and bool(op.regions) and op.name != "parallel")

BodyCheck = Callable[[list[Op]], bool]


def tensor_types(type_: Type) -> Iterable[TensorType]:
    """The tensor types inside a result type (a record's or tuple's fields, flattened)."""
    if isinstance(type_, TensorType):
        yield type_
    elif isinstance(type_, RecordType):
        for field in type_.fields:
            yield from tensor_types(field.type)
    elif isinstance(type_, TupleType):
        for element in type_.elements:
            yield from tensor_types(element)


def every_op(ops: Iterable[Op]) -> Iterable[Op]:
    """`ops` and the ops of their regions, depth first."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from every_op(region.ops)


def _scalar_results(op: Op) -> bool:
    return all(not t.shape for type_ in op.result_types for t in tensor_types(type_))


def _read_views(ops: list[Op]) -> set[str]:
    return {op.operands[0] for op in every_op(ops) if op.name == "read"}


def accepts(op: Op, ops: list[Op], views: dict[str, str], register_form: bool, body_ok: BodyCheck) -> bool:
    """Whether `op` (of the iteration `ops`) is one the CTA mapping lowers beyond the row
    form's ops; `body_ok` checks a nested region's ops."""
    if op.name in AGGREGATES or op.name == "assume_in_bounds":
        return True
    if op.name in SHAPE_OPS or op.name == "outer":
        # several shapes: only the dynamic form (the register form holds one shape)
        return not register_form and (op.name != "outer" or bool(op.result_types[0].shape))
    if op.name == "unique_store":
        return views.get(op.operands[0]) == "out"
    if op.name == "scatter_reduce":
        # any view the iteration does not also read (another iteration may update it meanwhile)
        return views.get(op.operands[0]) in ("out", "inout") and op.operands[0] not in _read_views(ops)
    if op.name in ATOMICS:
        return op.operands[0] in views and _scalar_results(op)
    if op.name in CONTROL:
        return _scalar_results(op) and all(body_ok([o for o in region.ops if o.name != "yield"])
                                           for region in op.regions)
    return False
