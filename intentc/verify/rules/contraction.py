"""Contractions (§3, §5.3): explicit accumulator dtype, paired axes with equal extents,
result axes batch + lhs free + rhs free, `init` of the result type; named forms, outer and
histogram (§7)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import is_int
from ...ir.nodes import Op
from ...ir.ops.contraction import NAMED_FORMS
from ...ir.types import TensorType
from ..context import Context
from ..typesys import broadcastable, fmt
from . import Args, rule
from .common import Results, check_axes, expect_result, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier


def _operands(ctx: Verifier, op: Op, args: Args) -> tuple[TensorType, TensorType] | None:
    lhs, rhs = tensor_of(ctx, op, args[0], "lhs"), tensor_of(ctx, op, args[1], "rhs")
    if lhs is None or rhs is None:
        return None
    for side, type_ in (("lhs", lhs), ("rhs", rhs)):
        if type_.dtype == "bool":
            ctx.error("E213", op, f"`{op.name}` {side} must be numeric, got `{type_.dtype}`",
                      "cast bool operands to a numeric dtype first")
            return None
    return lhs, rhs


def accumulator(ctx: Context, op: Op) -> str | None:
    acc = op.attributes["acc"]
    if isinstance(acc, TensorType) and not acc.shape and acc.dtype not in ("bool",):
        return acc.dtype
    ctx.error("E206", op, f"`acc = {fmt(acc)}` is not a scalar numeric dtype",
              "contractions carry an explicit accumulator/result dtype such as `acc = f32`")
    return None


def _axes(ctx, op, lhs, rhs):
    attrs = op.attributes
    lc, rc = attrs["lhs_contract"], attrs["rhs_contract"]
    lb, rb = attrs.get("lhs_batch", []), attrs.get("rhs_batch", [])
    if len(lc) != len(rc) or len(lb) != len(rb):
        ctx.error("E210", op, "contracted and batch axes must pair up one to one",
                  "give lhs_contract/rhs_contract (and lhs_batch/rhs_batch) lists of equal length")
        return None
    if not (check_axes(ctx, op, lc + lb, lhs.rank, "lhs axes") and check_axes(ctx, op, rc + rb, rhs.rank, "rhs axes")):
        return None
    return lc, rc, lb, rb


def _paired(ctx, op, lhs, rhs, pairs) -> bool:
    for a, b in pairs:
        if not ctx.same_extent(lhs.shape[a], rhs.shape[b]):
            ctx.error("E211", op, f"lhs axis {a} and rhs axis {b} are paired but their extents differ",
                      "paired axes need equal extents: the same static value or the same extent identity")
            return False
    return True


def _finish(ctx, op, args, dtype: str, shape: tuple) -> None:
    expect_result(ctx, op, dtype, shape, "E207", "the result has the `acc` dtype and the batch, lhs free, "
                  "rhs free axes")
    init = args.group("init")
    if init and not (isinstance(init[0].type, TensorType) and init[0].type.dtype == dtype
                     and ctx.same_shape(init[0].type.shape, shape)):
        ctx.error("E212", op, f"`init` is `{fmt(init[0].type)}` but the result is `{fmt(op.result_types[0])}`",
                  "the fused initial value has the accumulator/result type (§5.3)")


@rule("contract")
def contract(ctx: Verifier, op: Op, args: Args) -> Results:
    operands = _operands(ctx, op, args)
    axes = None if operands is None else _axes(ctx, op, *operands)
    acc = accumulator(ctx, op)
    if operands is None or axes is None or acc is None:
        return None
    lhs, rhs = operands
    lc, rc, lb, rb = axes
    if not _paired(ctx, op, lhs, rhs, list(zip(lc, rc)) + list(zip(lb, rb))):
        return None
    shape = tuple(lhs.shape[a] for a in lb) + \
        tuple(e for k, e in enumerate(lhs.shape) if k not in lc and k not in lb) + \
        tuple(e for k, e in enumerate(rhs.shape) if k not in rc and k not in rb)
    _finish(ctx, op, args, acc, shape)
    return None


@rule(*NAMED_FORMS)
def named_contraction(ctx: Verifier, op: Op, args: Args) -> Results:
    operands = _operands(ctx, op, args)
    acc = accumulator(ctx, op)
    if operands is None or acc is None:
        return None
    lhs, rhs = operands
    form = NAMED_FORMS[op.name]
    lhs_rank, rhs_rank, a, b = form.lhs_rank, form.rhs_rank, form.lhs_axis, form.rhs_axis
    if (lhs.rank, rhs.rank) != (lhs_rank, rhs_rank):
        ctx.error("E213", op, f"`{op.name}` takes ranks ({lhs_rank}, {rhs_rank}), got ({lhs.rank}, {rhs.rank})",
                  "use `contract` with explicit axes for other ranks")
        return None
    if not _paired(ctx, op, lhs, rhs, [(a, b)]):
        return None
    shape = tuple(e for k, e in enumerate(lhs.shape) if k != a) + tuple(e for k, e in enumerate(rhs.shape) if k != b)
    _finish(ctx, op, args, acc, shape)
    return None


@rule("outer")
def outer(ctx: Verifier, op: Op, args: Args) -> Results:
    operands = _operands(ctx, op, args)
    if operands is None:
        return None
    lhs, rhs = operands
    if (lhs.rank, rhs.rank) != (1, 1):
        ctx.error("E213", op, f"`outer` takes two rank-1 tensors, got ranks ({lhs.rank}, {rhs.rank})",
                  "reshape the operands to rank 1")
        return None
    if lhs.dtype != rhs.dtype:
        ctx.error("E201", op, f"`outer` operands have dtypes `{lhs.dtype}` and `{rhs.dtype}`",
                  "outer is ordinary same-dtype multiplication: cast one side explicitly")
        return None
    expect_result(ctx, op, lhs.dtype, lhs.shape + rhs.shape, "E207", "outer is [M] x [N] -> [M, N] in the operand dtype")
    return None


@rule("histogram")
def histogram(ctx: Verifier, op: Op, args: Args) -> Results:
    values = tensor_of(ctx, op, args[0], "values")
    if values is None:
        return None
    if not is_int(values.dtype):
        ctx.error("E620", op, f"histogram values must be an integer tensor, got `{values.dtype}`",
                  "cast or bin the values into integer bin numbers first")
        return None
    valid = args.group("valid")
    if valid and not _validity(ctx, op, valid[0].type, values):
        return None
    written = op.result_types[0]
    if not isinstance(written, TensorType) or written.rank != 1 or \
            (isinstance(written.shape[0], int) and written.shape[0] <= 0):
        ctx.error("E622", op, f"histogram result `{fmt(written)}` must be tensor<C, [bins]> with bins > 0",
                  "give a positive number of bins as the single result extent")
        return None
    if not is_int(written.dtype):
        ctx.error("E623", op, f"histogram count dtype must be an integer, got `{written.dtype}`",
                  "counts wrap in an explicit integer dtype such as i32")
    return None


def _validity(ctx, op, valid, values) -> bool:
    if isinstance(valid, TensorType) and valid.dtype == "bool" and broadcastable(ctx, valid.shape, values.shape):
        return True
    ctx.error("E621", op, f"histogram validity `{fmt(valid)}` must be a bool scalar or a bool tensor "
              f"broadcastable to {fmt(values)}", "compare to make a bool mask of the values' shape")
    return False
