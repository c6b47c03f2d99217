"""Shape ops (§2, and docs/kir.md for broadcast/reshape/join): full, iota, dim, broadcast,
reshape, join. `dim` states an extent equality; iota and broadcast carry index facts."""
from __future__ import annotations

import itertools
from collections import Counter
from typing import TYPE_CHECKING

from ...ir.dtypes import is_int, representable
from ...ir.nodes import Op
from ...ir.types import BufferType, TensorType, ViewType
from .. import affine
from ..context import Value
from ..typesys import fmt, fmt_shape
from . import Args, rule
from .common import Results, check_axis, expect_result, tensor_of
from .conversion import _literal, _representable_hint

if TYPE_CHECKING:
    from ..walk import Verifier


@rule("full")
def full(ctx: Verifier, op: Op, args: Args) -> Results:
    written = op.result_types[0]
    value = op.attributes["value"]
    if not isinstance(written, TensorType):
        ctx.error("E109", op, f"`full` makes a tensor, not `{fmt(written)}`", "write `: tensor<D, [extents]>`")
        return None
    if not representable(value, written.dtype):
        ctx.error("E109", op, f"fill {_literal(value)} is not representable in `{written.dtype}`",
                  _representable_hint(written.dtype))
        return None
    return [Value(written, const=value, splat=True, fact=affine.constant(value))]


@rule("iota")
def iota(ctx: Verifier, op: Op, args: Args) -> Results:
    written = op.result_types[0]
    if not isinstance(written, TensorType) or not (written.dtype == "index" or is_int(written.dtype)):
        ctx.error("E120", op, f"`iota` yields index or integer coordinates, not `{fmt(written)}`",
                  "write `: tensor<index, [extents]>` and cast afterwards if needed")
        return None
    axis = op.int_attr("axis", 0)
    if not check_axis(ctx, op, axis, written.rank):
        return None
    return [Value(written, fact=affine.lane(axis, written.rank))]


@rule("dim")
def dim(ctx: Verifier, op: Op, args: Args) -> Results:
    source = args[0].type
    if not isinstance(source, (TensorType, ViewType, BufferType)):
        ctx.error("E121", op, f"`dim` needs a tensor, view or buffer, got `{fmt(source)}`",
                  "take the extent of a shaped value")
        return None
    axis = op.int_attr("axis")
    if not check_axis(ctx, op, axis, len(source.shape)):
        return None
    expect_result(ctx, op, "index", (), "E121", "`dim` yields an index scalar")
    if op.results:
        ctx.extent_alias[op.results[0]] = ctx.canon(source.shape[axis])
    return None


@rule("broadcast")
def broadcast(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    written = op.result_types[0]
    if source is None:
        return None
    if not isinstance(written, TensorType) or written.dtype != source.dtype:
        ctx.error("E122", op, f"`broadcast` keeps the dtype `{source.dtype}`", "cast before or after broadcasting")
        return None
    dims = op.attributes.get("dims")
    target = _aligned_axes(ctx, op, source.rank, written.rank, dims)
    if target is None:
        return None
    for k, extent in enumerate(source.shape):
        if extent != 1 and not ctx.same_extent(extent, written.shape[target[k]]):
            ctx.error("E122", op, f"cannot broadcast `{fmt(source)}` to `{fmt(written)}`: source axis {k} "
                      f"({_extent(extent)}) differs from result axis {target[k]} ({_extent(written.shape[target[k]])})",
                      "each source extent must equal the aligned result extent or be the static 1")
            return None
    return [Value(written, splat=args[0].splat or not source.shape, const=args[0].const,
                  fact=affine.move_lanes(args[0].fact, {source.rank - k: written.rank - t
                                                        for k, t in enumerate(target)}))]


def _aligned_axes(ctx, op, source_rank: int, result_rank: int, dims):
    if dims is None:
        if source_rank > result_rank:
            ctx.error("E122", op, f"cannot broadcast rank {source_rank} to rank {result_rank}",
                      "broadcast never drops axes; use `reshape` or a reduction")
            return None
        return [result_rank - source_rank + k for k in range(source_rank)]
    increasing = all(a < b for a, b in itertools.pairwise(dims))
    if len(dims) != source_rank or not increasing or any(not 0 <= d < result_rank for d in dims):
        ctx.error("E122", op, f"`dims = {dims}` must give one strictly increasing result axis per source axis",
                  f"list {source_rank} result axes below {result_rank}, in increasing order")
        return None
    return list(dims)


def _extent(extent) -> str:
    return str(extent) if isinstance(extent, int) else f"%{extent}"


@rule("reshape")
def reshape(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    written = op.result_types[0]
    if source is None:
        return None
    if not isinstance(written, TensorType) or written.dtype != source.dtype:
        ctx.error("E123", op, f"`reshape` keeps the dtype `{source.dtype}`", "cast separately")
        return None
    if _element_count(ctx, source.shape) != _element_count(ctx, written.shape):
        ctx.error("E123", op, f"`reshape` from {fmt_shape(source.shape)} to {fmt_shape(written.shape)} "
                  "changes the element count",
                  "static products must be equal and the dynamic extents the same multiset")
        return None
    return [Value(written, fact=affine.move_lanes(args[0].fact, _unit_axis_moves(ctx, source.shape, written.shape)))]


def _unit_axis_moves(ctx, source: tuple, target: tuple) -> dict:
    """Lane renumbering of a reshape that only inserts or drops extent-1 axes ({} otherwise)."""
    kept_source = [k for k, e in enumerate(source) if e != 1]
    kept_target = [k for k, e in enumerate(target) if e != 1]
    if len(kept_source) != len(kept_target) or not all(
            ctx.same_extent(source[a], target[b]) for a, b in zip(kept_source, kept_target)):
        return {}
    return {len(source) - a: len(target) - b for a, b in zip(kept_source, kept_target)}


def _element_count(ctx, shape):
    product, dynamic = 1, Counter[str]()
    for extent in shape:
        extent = ctx.canon(extent)
        if isinstance(extent, int):
            product *= extent
        else:
            dynamic[extent] += 1
    return (0, Counter()) if product == 0 else (product, dynamic)


@rule("join")
def join(ctx: Verifier, op: Op, args: Args) -> Results:
    lhs, rhs = tensor_of(ctx, op, args[0], "lhs"), tensor_of(ctx, op, args[1], "rhs")
    if lhs is None or rhs is None:
        return None
    if lhs.dtype != rhs.dtype or not ctx.same_shape(lhs.shape, rhs.shape):
        ctx.error("E124", op, f"`join` needs two tensors of one type, got `{fmt(lhs)}` and `{fmt(rhs)}`",
                  "cast and broadcast the operands to one type first")
        return None
    expect_result(ctx, op, lhs.dtype, (*lhs.shape, 2), "E124", "join adds a minor axis of extent 2")
    return None
