"""Atomics (§11): memory orders per op, derived CAS failure order (structure.py), RMW kinds
per dtype, the element dtypes atomics take, typed values and results ({old_value, success}
for CAS)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import ATOMIC_DTYPES, is_float, is_int
from ...ir.nodes import Op
from ...ir.ops.memory import UPDATE_COMBINE
from ...ir.optable import op_def
from ...ir.types import RecordField, RecordType, TensorType
from ..effects import record_access
from ..typesys import broadcast_shapes, broadcastable, fmt
from . import Args, rule
from .common import Results, expect_result, expect_type, tensor_of
from .memory import check_access, element_dtype_ok, resource_of

if TYPE_CHECKING:
    from ..walk import Verifier

_ORDERS = {
    "atomic_load": ("relaxed", "acquire"),
    "atomic_store": ("relaxed", "release"),
}
# The kinds whose combine is bitwise: defined on integers only.
_BITWISE = {kind for kind, combine in UPDATE_COMBINE.items() if op_def(combine).dtypes == "int_or_bool"}


def _atomic_resource(ctx, op, arg):
    """The view or buffer of an atomic, when its element dtype is one atomics take."""
    resource = resource_of(ctx, op, arg)
    if resource is None or resource.dtype in ATOMIC_DTYPES:
        return resource
    ctx.error("E805", op, f"atomics on `{resource.dtype}` elements are not supported; atomic dtypes are "
              f"{', '.join(ATOMIC_DTYPES)}", "keep the atomic object in a 32- or 64-bit element dtype")
    return None


def _order_ok(ctx, op) -> bool:
    allowed = _ORDERS.get(op.name)
    order = op.attributes["order"].name
    if allowed is None or order in allowed:
        return True
    ctx.error("E801", op, f"`order = {order}` is not allowed on `{op.name}`",
              f"`{op.name}` takes {' or '.join(allowed)}")
    return False


@rule("atomic_load")
def atomic_load(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = _atomic_resource(ctx, op, args[0])
    written = op.result_types[0]
    if resource is None or not _order_ok(ctx, op):
        return None
    if not isinstance(written, TensorType):
        ctx.error("E804", op, f"`atomic_load` yields a tensor, not `{fmt(written)}`", "write `: D` or `: tensor<D, S>`")
        return None
    if check_access(ctx, op, args, resource, written.shape) and \
            element_dtype_ok(ctx, op, resource, written.dtype, "the result"):
        _record(ctx, op, args, writes=False)
    return None


@rule("atomic_store")
def atomic_store(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = _atomic_resource(ctx, op, args[0])
    value = tensor_of(ctx, op, args[1], "value")
    if resource is None or value is None or not _order_ok(ctx, op):
        return None
    if check_access(ctx, op, args, resource, value.shape) and \
            element_dtype_ok(ctx, op, resource, value.dtype, "the value"):
        _record(ctx, op, args, writes=True)
    return None


@rule("atomic_rmw")
def atomic_rmw(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = _atomic_resource(ctx, op, args[0])
    value = tensor_of(ctx, op, args[1], "value")
    written = op.result_types[0]
    if resource is None or value is None:
        return None
    shape = written.shape if isinstance(written, TensorType) else value.shape
    if not (check_access(ctx, op, args, resource, shape) and
            element_dtype_ok(ctx, op, resource, value.dtype, "the value") and _kind_ok(ctx, op, resource.dtype)):
        return None
    if not broadcastable(ctx, value.shape, shape):
        ctx.error("E804", op, f"value `{fmt(value)}` does not broadcast to the result shape",
                  "each lane is one atomic operation: give one value per lane or a scalar")
        return None
    expect_result(ctx, op, resource.dtype, shape, "E804", "RMW returns the old value in the element dtype")
    _record(ctx, op, args, writes=True)
    return None


def _kind_ok(ctx, op, dtype: str) -> bool:
    kind = op.attributes["kind"].name
    if kind == "exchange" or (kind in _BITWISE and is_int(dtype)) or \
            (kind not in _BITWISE and (is_int(dtype) or is_float(dtype))):
        return True
    need = "an integer dtype" if kind in _BITWISE else "an integer or float dtype"
    ctx.error("E803", op, f"atomic `{kind}` needs {need}, got `{dtype}`",
              "use `exchange` or a compare-exchange loop for other dtypes")
    return False


@rule("atomic_cas")
def atomic_cas(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = _atomic_resource(ctx, op, args[0])
    expected, desired = tensor_of(ctx, op, args[1], "expected"), tensor_of(ctx, op, args[2], "desired")
    if resource is None or expected is None or desired is None:
        return None
    shape = broadcast_shapes(ctx, [v.type.shape for v in args.group("index") if isinstance(v.type, TensorType)]
                             + [expected.shape, desired.shape])
    if shape is None:
        ctx.error("E804", op, "the index, expected and desired shapes of `atomic_cas` do not broadcast together",
                  "broadcast them to one lane shape")
        return None
    if not (check_access(ctx, op, args, resource, shape) and
            element_dtype_ok(ctx, op, resource, expected.dtype, "the expected value") and
            element_dtype_ok(ctx, op, resource, desired.dtype, "the desired value")):
        return None
    record = RecordType(fields=(RecordField(name="old_value", type=TensorType(dtype=resource.dtype, shape=shape)),
                                RecordField(name="success", type=TensorType(dtype="bool", shape=shape))))
    expect_type(ctx, op, record, "E804", "CAS returns {old_value, success}")
    _record(ctx, op, args, writes=True)
    return None


def _record(ctx, op, args, writes: bool) -> None:
    """An atomic access, for the collision rule against plain accesses (effects.py)."""
    record_access(ctx, op, args[0], args.group("index"), bool(args.group("mask")), writes=writes, atomic=True)
