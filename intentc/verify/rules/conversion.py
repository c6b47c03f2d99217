"""Literals and conversions (§3, §5.2): constants representable in their dtype, cast,
saturating_cast and bitcast legality, the microscaling decoders (§7)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import is_float, is_int, representable, width
from ...ir.nodes import Op, SymbolRef
from ...ir.types import EnumType, TensorType
from .. import affine
from ..context import Value
from ..typesys import fmt, tensor_text
from . import Args, rule
from .common import Results, expect_result, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier


@rule("constant")
def constant(ctx: Verifier, op: Op, args: Args) -> Results:
    value = op.attributes["value"]
    written = op.result_types[0]
    if isinstance(value, SymbolRef) or isinstance(written, EnumType):
        _enum_constant(ctx, op, value, written)
        return None
    if not isinstance(written, TensorType) or written.shape:
        ctx.error("E202", op, f"`constant` makes a scalar, not `{fmt(written)}`",
                  "use `full` for a filled tensor, or `broadcast` a scalar constant")
        return None
    if not representable(value, written.dtype):
        ctx.error("E202", op, f"literal {_literal(value)} is not representable in `{written.dtype}`",
                  _representable_hint(written.dtype))
        return None
    return [Value(written, const=value, splat=True, fact=affine.constant(value))]


def _literal(value) -> str:
    from ...printer.printer import attr_text
    return attr_text(value)


def _representable_hint(dtype: str) -> str:
    if dtype == "bool":
        return "a bool literal is `true` or `false`"
    if is_int(dtype):
        return f"use an integral value within the range of `{dtype}`, or a wider dtype"
    return f"use a value within the finite range of `{dtype}` (f8e4m3fn has no infinity)"


def _enum_constant(ctx, op, value, written) -> None:
    if not isinstance(value, SymbolRef) or not isinstance(written, EnumType):
        ctx.error("E113", op, "an enum constant needs an enum member value and an enum result type",
                  "write `constant {value = @E.member} : enum<@E>`")
        return
    if written.name not in ctx.enums:
        return  # reported as an unknown symbol where the type is checked
    enum_name, _, member = value.name.rpartition(".")
    enum = ctx.enums.get(enum_name)
    if enum is None or member not in {m.name for m in enum.members}:
        ctx.error("E113", op, f"`@{value.name}` is not a member of a declared enum",
                  "name a member of a declared enum as `@Enum.member`")
    elif enum_name != written.name:
        ctx.error("E113", op, f"`@{value.name}` is a member of `@{enum_name}`, not of `@{written.name}`",
                  f"write `: enum<@{enum_name}>`")


def _conversion_target(ctx: Verifier, op: Op, args: Args) -> tuple[TensorType, TensorType] | None:
    source = tensor_of(ctx, op, args[0], "source")
    written = op.result_types[0]
    if source is None:
        return None
    if not isinstance(written, TensorType) or not ctx.same_shape(written.shape, source.shape):
        ctx.error("E404", op, f"`{op.name}` keeps the source shape: result should be "
                  f"`{tensor_text(getattr(written, 'dtype', source.dtype), source.shape)}`",
                  "convert first, then reshape or broadcast explicitly")
        return None
    return source, written


@rule("cast")
def cast(ctx: Verifier, op: Op, args: Args) -> Results:
    target = _conversion_target(ctx, op, args)
    if target is not None:
        source, written = target
        return [Value(written, splat=args[0].splat, fact=_cast_fact(args[0], source.dtype, written.dtype))]
    return None


def _cast_fact(value: Value, source: str, target: str):
    """A widening integer cast keeps an index injectivity fact."""
    if value.fact and is_int(source) and is_int(target) and width(target) >= width(source):
        return value.fact
    return None


@rule("saturating_cast")
def saturating_cast(ctx: Verifier, op: Op, args: Args) -> Results:
    target = _conversion_target(ctx, op, args)
    if target is None:
        return None
    source, written = target
    for dtype, side in ((source.dtype, "source"), (written.dtype, "result")):
        if not (is_int(dtype) or is_float(dtype)):
            ctx.error("E404", op, f"`saturating_cast` {side} must be an integer or float dtype, got `{dtype}`",
                      "saturation clamps to a numeric range; compare to make a bool")
            return None
    return [Value(written)]


@rule("bitcast")
def bitcast(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    written = op.result_types[0]
    if source is None:
        return None
    if isinstance(written, TensorType) and "index" in (source.dtype, written.dtype):
        ctx.error("E407", op, f"`bitcast` from `{fmt(source)}` to `{fmt(written)}`: `index` is a logical integer "
                  "(§2), not a bit container", "use `cast` between `index` and an integer dtype")
        return None
    if not isinstance(written, TensorType) or not ctx.same_shape(written.shape, source.shape) or \
            width(written.dtype) != width(source.dtype):
        ctx.error("E405", op, f"`bitcast` from `{fmt(source)}` to `{fmt(written)}` changes the bit width or shape",
                  f"bitcast to a {width(source.dtype)}-bit dtype of the same shape; repack with shifts "
                  "and masks, or use `cast` for a numeric conversion")
        return None
    return [Value(written)]


@rule("decode_e2m1", "decode_e8m0")
def decode(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    if source is None:
        return None
    if source.dtype != "u8":
        ctx.error("E630", op, f"`{op.name}` decodes u8 codes, got `{source.dtype}`",
                  "bitcast or cast the carrier to u8 first")
        return None
    expect_result(ctx, op, "f32", source.shape, "E630", "decoders yield f32 of the source shape")
    return None
