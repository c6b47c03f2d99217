"""Helpers the family rules share: operand kinds, result expectations, axes, regions."""
from __future__ import annotations

from collections.abc import Collection, Iterable

from ...ir.nodes import Op, Region
from ...ir.types import Extent, TensorType, Type
from ..context import Context, Value
from ..typesys import fmt, same_type, tensor_text

# What a family rule returns: the Values of the op's results (facts for later rules), or None
# when it reported an error or defines nothing the walk does not infer from the written types.
Results = list[Value] | None


def tensor_of(ctx: Context, op: Op, value: Value, what: str) -> TensorType | None:
    """The tensor type of an operand, or a diagnostic (E104) when it is something else."""
    if isinstance(value.type, TensorType):
        return value.type
    ctx.error("E104", op, f"{what} of `{op.name}` must be a tensor, got `{fmt(value.type)}`",
              "pass a tensor or scalar value here")
    return None


def scalar_of(ctx: Context, op: Op, value: Value, what: str, dtypes: Collection[str], code: str, hint: str) -> bool:
    """Whether an operand is a rank-0 tensor of one of `dtypes`; reports `code` otherwise."""
    type_ = value.type
    if isinstance(type_, TensorType) and not type_.shape and type_.dtype in dtypes:
        return True
    ctx.error(code, op, f"{what} of `{op.name}` must be a scalar of {' or '.join(dtypes)}, "
              f"got `{fmt(type_)}`", hint)
    return False


def expect_result(ctx: Context, op: Op, dtype: str, shape: tuple[Extent, ...], code: str, why: str,
                  position: int = 0) -> None:
    """Check the written result type against the inferred tensor<dtype, shape>."""
    if position >= len(op.result_types):
        return
    written = op.result_types[position]
    if isinstance(written, TensorType) and written.dtype == dtype and ctx.same_shape(written.shape, shape):
        return
    expected = tensor_text(dtype, shape)
    ctx.error(code, op, f"result type `{fmt(written)}` of `{op.name}` should be `{expected}`: {why}",
              f"write `: {expected}`" + _extent_hint(written, shape))


def expect_type(ctx: Context, op: Op, expected: Type, code: str, why: str, position: int = 0) -> None:
    if position >= len(op.result_types):
        return
    written = op.result_types[position]
    if not same_type(ctx, written, expected):
        ctx.error(code, op, f"result type `{fmt(written)}` of `{op.name}` should be `{fmt(expected)}`: {why}",
                  f"write `: {fmt(expected)}`")


def _extent_hint(written, shape) -> str:
    if isinstance(written, TensorType) and len(written.shape) == len(shape) and written.shape != shape:
        return "; different dynamic extents are equal only through identity (the same name, or a `dim`)"
    return ""


def check_axis(ctx: Context, op: Op, axis: int, rank: int, name: str = "axis") -> bool:
    if 0 <= axis < rank:
        return True
    ctx.error("E107", op, f"`{name} = {axis}` is out of range for rank {rank}",
              f"axes count from 0 and must be below the rank ({rank})")
    return False


def check_axes(ctx: Context, op: Op, axes: list[int], rank: int, name: str = "axes") -> bool:
    if not all(check_axis(ctx, op, axis, rank, name) for axis in axes):
        return False
    if len(set(axes)) != len(axes):
        ctx.error("E107", op, f"`{name}` repeats an axis: {axes}", "name each axis once")
        return False
    return True


def without_axes(shape: tuple[Extent, ...], axes: Iterable[int]) -> tuple[Extent, ...]:
    dropped = set(axes)
    return tuple(e for k, e in enumerate(shape) if k not in dropped)


def region_args(ctx: Context, op: Op, region: Region, expected: list[Type], code: str, what: str) -> bool:
    """Check a region's argument types against the expected list."""
    written = [a.type for a in region.args]
    if len(written) == len(expected) and all(same_type(ctx, w, e) for w, e in zip(written, expected)):
        return True
    want = ", ".join(fmt(t) for t in expected)
    got = ", ".join(fmt(t) for t in written)
    ctx.error(code, region, f"{what} `^{region.label}` of `{op.name}` takes ({want}), written ({got})",
              f"declare `^{region.label}({', '.join('%a' + str(k) + ': ' + fmt(t) for k, t in enumerate(expected))})`")
    return False


def region_yields(ctx: Context, op: Op, region: Region, terminator: tuple[Op, list[Value | None]] | None,
                  expected: list[Type], code: str, what: str) -> bool:
    """Check what a region yields against the expected types."""
    if terminator is None:
        if not expected:
            return True
        ctx.error("E0055", region, f"{what} `^{region.label}` of `{op.name}` must end with `yield`",
                  f"end it with `yield` of {len(expected)} value(s)")
        return False
    yield_op, values = terminator
    got = [v.type for v in values if v is not None]
    if len(got) < len(values):             # an undefined value was reported already
        return False
    if len(got) == len(expected) and all(same_type(ctx, g, e) for g, e in zip(got, expected)):
        return True
    ctx.error(code, yield_op, f"{what} `^{region.label}` of `{op.name}` yields "
              f"({', '.join(fmt(t) for t in got)}), expected ({', '.join(fmt(t) for t in expected)})",
              "yield one value of each expected type, in order")
    return False
