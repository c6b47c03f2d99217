"""What a CTA-mapped iteration may hold beyond the row form (docs/gpu.md, "Tiles, gathers
and effects"): tensors of several shapes and ranks, shape ops, gathers and scatters with
computed indices, scalar atomics and control flow.

- Tensors of several shapes (a tile and its row and column vectors, a join, a reshape, a
  broadcast along an axis, an outer product): each op's coordinates are spread over the
  iteration's threads by its own shape's row-major linearization (the fastest axis across
  neighbouring threads, so tile reads and writes coalesce). In the register form the
  tensors of the iteration's largest size S live in the threads' slots (`register_size`:
  when every value of S elements flows only into values and accesses of S elements, so a
  slot is only ever read at its own coordinate); every smaller tensor is an element
  expression evaluated where it is used (reads re-issued, L1 hits), so a coordinate may read
  it at any other coordinate (a broadcast or transposed index) with no exchange between
  threads. Without static sizes the dynamic form treats every tensor that way.
- `unique_store` and `scatter_reduce` of a computed tensor update each element from the
  one thread that owns its coordinate (atomically for scatter_reduce, as every iteration
  may hit the same element), so each element's update happens exactly once.
- Scalar atomics happen once an iteration, on its thread 0, and every thread gets the
  result through shared memory (`cta_effects.py`); relaxed tensor atomics whose results
  nobody uses are made coordinate by coordinate on the owning threads (an atomic histogram); `if` and `loop` with scalar results run
  on every thread (their conditions are the same on every thread: scalars are computed
  redundantly or broadcast), so reductions and barriers inside them stay collective.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import RecordType, TensorType, TupleType, Type

SHAPE_OPS = ops_where(lambda op: op.family == "shape")
ATOMICS = ops_where(lambda op: op.family == "atomics")
AGGREGATES = ops_where(lambda op: op.family == "aggregate")
CONTROL = ops_where(lambda op: op.family == "control" and bool(op.regions) and op.name != "parallel")
QUANT = ops_where(lambda op: op.family == "quant")

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


def _used(op: Op, ops: list[Op]) -> bool:
    """Whether a result of `op` is an operand anywhere in `ops`."""
    names = {name for o in every_op(ops) for name in list(o.operands) + [v for g in o.groups for v in g.values]}
    return any(result in names for result in op.results)


def _read_views(ops: list[Op]) -> set[str]:
    return {op.operands[0] for op in every_op(ops) if op.name == "read"}


def _count(type_: Type, known: dict[str, int]) -> int | None:
    """The element count of a tensor type with static extents, else None."""
    if not isinstance(type_, TensorType):
        return None
    extents = [e if isinstance(e, int) else known.get(e) for e in type_.shape]
    static = [e for e in extents if e is not None]
    return math.prod(static) if len(static) == len(extents) else None


def _access_values(op: Op) -> list[str]:
    """The tensors an effect without results visits coordinate by coordinate (its value)."""
    return list(op.operands[1:2]) if not op.results and op.name != "assume_in_bounds" else []


def register_size(body: list[Op], ops: list[Op], known: dict[str, int]) -> int | None:
    """S, the register form's size: the largest tensor of the iteration `ops` (of the kernel
    `body`), when every tensor result of the iteration but histogram counts has a static size
    and no value of S elements reaches a value or access of another size (or a quantization
    op, which reads its operand at other coordinates)."""
    sizes: dict[str, int | None] = {}
    for op in every_op(body):
        for name, type_ in zip(op.results, op.result_types):
            if isinstance(type_, TensorType):
                sizes[name] = _count(type_, known)
    iteration = [_count(t, known) for op in every_op(ops) if op.name != "histogram"
                 for result in op.result_types for t in tensor_types(result) if t.shape]
    if not iteration or None in iteration:
        return None
    size = max(s for s in iteration if s is not None)
    for op in every_op(body):
        if op.name == "parallel" or op.name == "histogram":
            continue
        names = list(op.operands) + [v for g in op.groups for v in g.values]
        if not any(sizes.get(name) == size for name in names):
            continue
        if op.name in QUANT:                 # reads its records at other coordinates
            return None
        reached = [_count(t, known) for result in op.result_types for t in tensor_types(result) if t.shape]
        reached += [sizes.get(name) for name in _access_values(op)]
        if any(count != size for count in reached):
            return None
    return size


def accepts(op: Op, ops: list[Op], views: dict[str, str], known: dict[str, int], shared_bytes: int,
            body_ok: BodyCheck) -> bool:
    """Whether `op` (of the iteration `ops`) is one the CTA mapping lowers beyond the row
    form's ops; `body_ok` checks a nested region's ops."""
    if op.name in AGGREGATES or op.name == "assume_in_bounds":
        return True
    if op.name == "dequantize":              # an element expression of its records
        return True
    if op.name == "quantize":                # blocks spread over the threads, records in shared memory
        records = _count(op.result_types[0], known)
        return records is not None and records <= shared_bytes
    if op.name in SHAPE_OPS or op.name == "outer":
        return any(t.shape for t in tensor_types(op.result_types[0]))
    if op.name == "unique_store":
        return views.get(op.operands[0]) == "out"
    if op.name == "scatter_reduce":
        # any view the iteration does not also read (another iteration may update it meanwhile)
        return views.get(op.operands[0]) in ("out", "inout") and op.operands[0] not in _read_views(ops)
    if op.name in ATOMICS:       # scalar: once an iteration; a tensor: each coordinate on its thread
        relaxed = getattr(op.attributes.get("order"), "name", "relaxed") == "relaxed"
        return op.operands[0] in views and (_scalar_results(op) or (relaxed and not _used(op, ops)))
    if op.name in CONTROL:
        return _scalar_results(op) and all(body_ok([o for o in region.ops if o.name != "yield"])
                                           for region in op.regions)
    return False
