"""Indexed access, buffers and collisions (§8, §9, §10, §13): access directions, index
relations, masks and fills, buffer escape, unique-store injectivity, parallel conflicts."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import is_float, is_int
from ...ir.nodes import Op
from ...ir.optable import op_def
from ...ir.types import BufferType, Extent, TensorType, ViewType
from ..context import Context, Frame, Value
from ..effects import conflicting_var, record_access, unique_store_unproven
from ..typesys import broadcastable, fmt, fmt_shape
from . import Args, rule
from .common import Results, region_args, region_yields, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier



def resource_of(ctx: Context, op: Op, value: Value) -> ViewType | BufferType | None:
    type_ = value.type
    if isinstance(type_, (ViewType, BufferType)):
        return type_
    ctx.error("E709", op, f"`{op.name}` accesses `{fmt(type_)}`, which is not a view or buffer",
              "memory ops name a view parameter or a `buffer`; values are used directly")
    return None


def check_access(ctx: Context, op: Op, args: Args, resource: ViewType | BufferType,
                 access_shape: tuple[Extent, ...]) -> bool:
    """Direction, index relation and mask of an access with the given access shape."""
    return _direction(ctx, op, resource) and _indices(ctx, op, args.group("index"), resource, access_shape) \
        and _mask(ctx, op, args.group("mask"), access_shape)


def _direction(ctx, op, resource) -> bool:
    if not isinstance(resource, ViewType):
        return True
    if op_def(op.name).writes and resource.direction == "in":
        ctx.error("E701", op, f"`{op.name}` writes an `in` view", "declare the view `out` or `inout`")
        return False
    if op_def(op.name).reads and resource.direction == "out":
        ctx.error("E702", op, f"`{op.name}` reads an `out` view", "declare the view `in` or `inout`")
        return False
    return True


def _indices(ctx, op, indices, resource, access_shape) -> bool:
    rank = len(resource.shape)
    if len(indices) != rank:
        ctx.error("E703", op, f"`{op.name}` gives {len(indices)} index(es) for a rank-{rank} resource",
                  "give one index per resource axis")
        return False
    for position, value in enumerate(indices):
        index = tensor_of(ctx, op, value, f"index {position}")
        if index is None:
            return False
        if not is_int(index.dtype):
            ctx.error("E704", op, f"index {position} of `{op.name}` is `{index.dtype}`, not an integer",
                      "indices are `index` or integer tensors; cast floats explicitly")
            return False
        if not broadcastable(ctx, index.shape, access_shape):
            ctx.error("E705", op, f"index {position} `{fmt(index)}` does not broadcast to the access shape "
                      f"{_shape(access_shape)}", "broadcast indices (right-aligned) to the accessed shape")
            return False
    return True


def _shape(shape) -> str:
    return fmt_shape(shape)


def _mask(ctx, op, masks, access_shape) -> bool:
    if not masks:
        return True
    mask = tensor_of(ctx, op, masks[0], "mask")
    if mask is None:
        return False
    if mask.dtype != "bool":
        ctx.error("E706", op, f"mask of `{op.name}` is `{mask.dtype}`, not bool",
                  "compare to make a bool mask (`lt %idx, %n`)")
        return False
    if not broadcastable(ctx, mask.shape, access_shape):
        ctx.error("E705", op, f"mask `{fmt(mask)}` does not broadcast to the access shape {_shape(access_shape)}",
                  "broadcast the mask (right-aligned) to the accessed shape")
        return False
    return True


def element_dtype_ok(ctx: Context, op: Op, resource: ViewType | BufferType, dtype: str, what: str) -> bool:
    if dtype == resource.dtype:
        return True
    ctx.error("E708", op, f"{what} of `{op.name}` is `{dtype}` but the resource holds `{resource.dtype}`",
              "cast explicitly to the element dtype; memory holds one scalar dtype")
    return False


@rule("read")
def read(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = resource_of(ctx, op, args[0])
    written = op.result_types[0]
    if resource is None:
        return None
    if not isinstance(written, TensorType):
        ctx.error("E708", op, f"`read` yields a tensor, not `{fmt(written)}`", "write `: tensor<D, [extents]>`")
        return None
    if not (check_access(ctx, op, args, resource, written.shape) and
            element_dtype_ok(ctx, op, resource, written.dtype, "the result")):
        return None
    _fill(ctx, op, args, resource, written.shape)
    record_access(ctx, op, args[0], args.group("index"), bool(args.group("mask")), writes=False)
    return None


def _fill(ctx, op, args, resource, access_shape) -> None:
    mask, fill = args.group("mask"), args.group("fill")
    if mask and not fill:
        ctx.error("E707", op, "a masked `read` needs `fill(...)`", f"add `fill(%z)` with a `{resource.dtype}` value "
                  "for the masked-off lanes")
    elif fill and not mask:
        ctx.error("E707", op, "`fill(...)` without `mask(...)`", "drop the fill, or add the mask it is for")
    elif fill:
        type_ = fill[0].type
        if not (isinstance(type_, TensorType) and type_.dtype == resource.dtype and
                broadcastable(ctx, type_.shape, access_shape)):
            ctx.error("E707", op, f"fill `{fmt(type_)}` must be `{resource.dtype}` and broadcastable to "
                      f"{_shape(access_shape)}", "give a scalar or broadcastable tensor of the element dtype")


def _stored(ctx, op, args, resource):
    value = tensor_of(ctx, op, args[1], "value")
    if value is None or not check_access(ctx, op, args, resource, value.shape):
        return None
    if not element_dtype_ok(ctx, op, resource, value.dtype, "the value"):
        return None
    return value


@rule("write")
def write(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = resource_of(ctx, op, args[0])
    if resource is None or _stored(ctx, op, args, resource) is None:
        return None
    name = conflicting_var(ctx, args[0], args.group("index") + args.group("mask"))
    if name is not None:
        ctx.error("E731", op, f"every iteration of the parallel over `%{name}` writes the same addresses",
                  f"make the index depend on `%{name}`, or use scatter_reduce or an atomic for a shared result")
        return None
    record_access(ctx, op, args[0], args.group("index"), bool(args.group("mask")), writes=True)
    return None


@rule("unique_store")
def unique_store(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = resource_of(ctx, op, args[0])
    value = None if resource is None else _stored(ctx, op, args, resource)
    if value is None:
        return None
    reason = unique_store_unproven(ctx, args[0], args.group("index"), value.shape)
    if reason is not None:
        ctx.error("E730", op, f"cannot prove the destinations of `unique_store` injective: {reason}",
                  "use scatter_reduce (colliding values combine) or an atomic when addresses may repeat")
    return None


_SCATTER_KINDS = {"add": "numeric", "max": "numeric", "min": "numeric", "and": "integer", "or": "integer",
                  "xor": "integer"}


@rule("scatter_reduce")
def scatter_reduce(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = resource_of(ctx, op, args[0])
    value = None if resource is None else _stored(ctx, op, args, resource)
    kind = op.keyword_attr("kind") if "kind" in op.attributes else None
    if (kind is None) == (not op.regions):
        ctx.error("E732", op, "`scatter_reduce` needs exactly one of `kind` and a combine region",
                  "give `{kind = add}` or a `^combine(%old: D, %new: D)` region, not both")
        return _walk_combine(ctx, op, None)
    if resource is None or value is None:
        return _walk_combine(ctx, op, None)
    if kind is not None and not _scatter_kind_ok(kind, resource.dtype):
        ctx.error("E732", op, f"`kind = {kind}` is not defined on `{resource.dtype}`",
                  "and/or/xor need integers; add/max/min need numbers")
    return _walk_combine(ctx, op, TensorType(dtype=resource.dtype))


def _scatter_kind_ok(kind: str, dtype: str) -> bool:
    if _SCATTER_KINDS[kind] == "integer":
        return is_int(dtype)
    return is_int(dtype) or is_float(dtype)


def _walk_combine(ctx, op, element):
    for region in op.regions:
        terminator = ctx.walk_region(region, Frame("combine", pure=True))
        if element is not None:
            region_args(ctx, op, region, [element, element], "E732", "combine")
            region_yields(ctx, op, region, terminator, [element], "E732", "combine")
    return None


@rule("buffer")
def buffer(ctx: Verifier, op: Op, args: Args) -> Results:
    written = op.result_types[0]
    if not isinstance(written, BufferType):
        ctx.error("E721", op, f"`buffer` makes a buffer type, not `{fmt(written)}`", "write `: buffer<D, [extents]>`")
        return None
    init = args.group("init")
    if init:
        type_ = init[0].type
        if not (isinstance(type_, TensorType) and type_.dtype == written.dtype and
                ctx.same_shape(type_.shape, written.shape)):
            ctx.error("E721", op, f"initial value `{fmt(type_)}` does not fill `{fmt(written)}`",
                      "give a complete initial tensor of the buffer's dtype and shape, or none")
    return None


@rule("assume_in_bounds")
def assume_in_bounds(ctx: Verifier, op: Op, args: Args) -> Results:
    resource = resource_of(ctx, op, args[1])
    index = args[0].type
    if resource is None:
        return None
    if not isinstance(index, TensorType) or not is_int(index.dtype):
        ctx.error("E911", op, f"`assume_in_bounds` constrains an integer index relation, not `{fmt(index)}`",
                  "pass the index tensor or scalar that is used to access the resource")
        return None
    axis = op.int_attr("axis")
    if not 0 <= axis < len(resource.shape):
        ctx.error("E911", op, f"`axis = {axis}` is not an axis of `{fmt(resource)}`",
                  f"name a real axis, 0 to {len(resource.shape) - 1}")
    return None

