"""Pointwise ops (§3, §4, §5, §5.1): one operand type, no implicit promotion, dtype classes,
constant shift amounts and divisors, approximate-math modes."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import in_class, int_range, is_int, is_signed, width
from ...ir.nodes import Op
from ...ir.optable import op_def, ops_where
from ...ir.types import EnumType
from .. import affine
from ..context import Value
from . import Args, rule
from .common import Results, expect_result, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier

# What a dtype outside an op's class (op table `dtypes`) is told: (code, what it needs, hint).
_CLASS_ERRORS = {
    "float": ("E401", "a float dtype", "cast the operand to a float dtype first (`cast`)"),
    "numeric": ("E214", "an integer or float dtype",
                "bool has no arithmetic: use and/or/xor/not, or cast to an integer"),
    "int": ("E303", "an integer dtype", "bitwise ops and shifts act on integer bit patterns; "
            "bitcast floats to an unsigned integer of the same width first"),
    "int_or_bool": ("E303", "an integer or bool dtype",
                    "bitwise ops act on integer bit patterns (and on bool); bitcast floats first"),
}
# The division and remainder ops point to their counterpart instead.
_OP_ERRORS = {
    "div": ("E301", "a float dtype: `/` is not defined on integers",
            "use `floordiv` for integer `//`, or cast both operands to a float dtype first"),
    "mod": ("E302", "an integer dtype: `%` is integer remainder only",
            "use the named float remainder `fmod` on floats"),
    "fmod": ("E302", "a float dtype", "use `mod` for integer remainder"),
    "floordiv": ("E302", "an integer dtype", "use `div` and `floor` on floats"),
}


def _class_ok(ctx, op, dtype: str) -> bool:
    dtype_class = op_def(op.name).dtypes
    if in_class(dtype, dtype_class):
        return True
    code, needs, hint = _OP_ERRORS.get(op.name) or _CLASS_ERRORS[dtype_class]
    ctx.error(code, op, f"`{op.name}` needs {needs}, got `{dtype}`", hint)
    return False


def _result_dtype(op, operand_dtype: str) -> str:
    return operand_dtype if op_def(op.name).same_type else "bool"


@rule(*ops_where(lambda op: op.family == "pointwise" and len(op.operands) == 2))
def binary(ctx: Verifier, op: Op, args: Args) -> Results:
    lhs, rhs = args[0], args[1]
    if isinstance(lhs.type, EnumType) or isinstance(rhs.type, EnumType):
        return _enum_compare(ctx, op, lhs, rhs)
    a, b = tensor_of(ctx, op, lhs, "lhs"), tensor_of(ctx, op, rhs, "rhs")
    if a is None or b is None:
        return None
    if a.dtype != b.dtype:
        ctx.error("E201", op, f"`{op.name}` operands have different dtypes `{a.dtype}` and `{b.dtype}`",
                  f"convert one side explicitly, e.g. `cast %x : {_retyped(b, a.dtype)}`; "
                  "there is no implicit promotion")
        return None
    if not ctx.same_shape(a.shape, b.shape):
        ctx.error("E103", op, f"`{op.name}` operand shapes differ", "broadcast explicitly to one shape; "
                  "different dynamic extents are equal only through identity")
        return None
    if not _class_ok(ctx, op, a.dtype):
        return None
    _constant_operand_checks(ctx, op, a.dtype, lhs, rhs)
    _approximate_modes(ctx, op, a.dtype)
    result_dtype = _result_dtype(op, a.dtype)
    expect_result(ctx, op, result_dtype, a.shape, "E203",
                  "comparisons yield bool" if result_dtype == "bool" else "pointwise ops keep the operand type")
    return [Value(op.result_types[0], splat=lhs.splat and rhs.splat, fact=_arith_fact(op, lhs, rhs))]


def _retyped(type_, dtype: str) -> str:
    from ..typesys import tensor_text
    return tensor_text(dtype, type_.shape)


def _enum_compare(ctx, op, lhs: Value, rhs: Value):
    same = isinstance(lhs.type, EnumType) and isinstance(rhs.type, EnumType) and lhs.type.name == rhs.type.name
    if not op_def(op.name).enum_operands:
        ctx.error("E112", op, f"`{op.name}` cannot take an enum operand",
                  "enums have no order or arithmetic; compare them with `eq`/`ne` only")
        return None
    if not same:
        ctx.error("E111", op, "an enum is compared with a different enum or a non-enum value",
                  "compare an enum only with a member of the same enum (`constant {value = @E.m} : enum<@E>`)")
        return None
    expect_result(ctx, op, "bool", (), "E203", "comparisons yield bool")
    return None


def _constant_operand_checks(ctx, op, dtype: str, lhs: Value, rhs: Value) -> None:
    check = _CONSTANT_RHS_CHECKS.get(op.name)
    amount = rhs.const
    if check is None or amount is None or isinstance(amount, bool) or not is_int(dtype):
        return
    check(ctx, op, dtype, lhs.const, amount)


def _shift_amount(ctx, op, dtype: str, _value, amount: int) -> None:
    if not 0 <= amount < width(dtype):
        ctx.error("E304", op, f"shift amount {amount} is outside [0, {width(dtype)}) for `{dtype}`",
                  f"use an amount from 0 to {width(dtype) - 1}; mask it (`and` with {width(dtype) - 1}) if it is data")


def _divisor(ctx, op, dtype: str, dividend, amount: int) -> None:
    if amount == 0:
        ctx.error("E305", op, f"`{op.name}` by the constant 0", "division by zero is an illegal input; "
                  "guard the divisor with `select` or a mask")
    if op.name == "floordiv" and is_signed(dtype) and amount == -1 and dividend == int_range(dtype)[0]:
        ctx.error("E306", op, f"`{dividend} // -1` overflows `{dtype}`",
                  "signed_min // -1 is an illegal input; widen the dtype first")


# Illegal constant right operands (§4): shift amounts outside the width, zero divisors.
_CONSTANT_RHS_CHECKS = {"shl": _shift_amount, "shr": _shift_amount, "floordiv": _divisor, "mod": _divisor}


def _approximate_modes(ctx, op, dtype: str) -> None:
    approximate = op.attributes.get("approximate") is True
    flush = op.attributes.get("flush_to_zero") is True
    if (approximate or flush) and dtype != "f32":
        ctx.error("E402", op, f"approximate/flush_to_zero `{op.name}` needs f32 operands, got `{dtype}`",
                  "cast to f32 first; non-default modes are defined only on f32 and never convert implicitly")
    if flush and not approximate:
        ctx.error("E403", op, "`flush_to_zero = true` needs `approximate = true`",
                  "set `approximate = true` as well, or drop flush_to_zero")


def _arith_fact(op, lhs: Value, rhs: Value):
    """Affine index facts through add, sub and multiplication by a constant."""
    if op.name == "add":
        return affine.add(lhs.fact, rhs.fact)
    if op.name == "sub":
        return affine.add(lhs.fact, rhs.fact, -1)
    if op.name == "mul":
        return affine.mul(lhs.fact, rhs.fact)
    return None


@rule(*ops_where(lambda op: op.family == "pointwise" and len(op.operands) == 1))
def unary(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    if source is None or not _class_ok(ctx, op, source.dtype):
        return None
    _approximate_modes(ctx, op, source.dtype)
    result_dtype = _result_dtype(op, source.dtype)
    expect_result(ctx, op, result_dtype, source.shape, "E203",
                  f"`{op.name}` yields bool" if result_dtype == "bool" else "math functions keep dtype and shape")
    return [Value(op.result_types[0], splat=args[0].splat)]


@rule("select")
def select(ctx: Verifier, op: Op, args: Args) -> Results:
    cond, on_true, on_false = (tensor_of(ctx, op, v, w) for v, w in zip(args.operands, ("cond", "on_true", "on_false")))
    if cond is None or on_true is None or on_false is None:
        return None
    if cond.dtype != "bool":
        ctx.error("E204", op, f"`select` condition must be bool, got `{cond.dtype}`",
                  "compare first (`ne %x, %zero`) to make a bool condition")
        return None
    if on_true.dtype != on_false.dtype:
        ctx.error("E201", op, f"`select` branches have dtypes `{on_true.dtype}` and `{on_false.dtype}`",
                  "cast one branch explicitly; there is no implicit promotion")
        return None
    if not (ctx.same_shape(cond.shape, on_true.shape) and ctx.same_shape(on_true.shape, on_false.shape)):
        ctx.error("E103", op, "`select` operands must have one shape", "broadcast explicitly to one shape")
        return None
    expect_result(ctx, op, on_true.dtype, on_true.shape, "E203", "select keeps the branch type")
    return None
