"""Named math functions, classification and the approximate modes (spec §5, §5.1).

f64 evaluates in f64; f32 evaluates in the target's own f32 function when it has one
within the spec's bounds (`hooks.math_f32`), else in f64 rounded once (as the interpreter
does); the formats below f32 go through f32 and back by the cast rules. Where an exact LLVM
operation exists (sqrt, floor, ceil, trunc, rint) it is used in the value's own precision.
Everything else is the target's business: `hooks.math_f64(em, name, x)`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from .conversion import to_float
from .pointwise import elementwise
from .types import F32, F64, I1, is_float, is_low
from .lowering import LOWERINGS
from ...ir.optable import ops_where

if TYPE_CHECKING:
    from .emitter import Emitter

EXACT_INTRINSICS = {"sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint"}


def _in_f64(em, name, x):
    if name == "rsqrt":
        return em.b.fdiv(ir.Constant(F64, 1.0), em.call_intrinsic("sqrt", x))
    if name in EXACT_INTRINSICS:
        return em.call_intrinsic(EXACT_INTRINSICS[name], x)
    return em.hooks.math_f64(em, name, x)


def evaluate(em: Emitter, op: Op, name: str, x: ir.Value, dtype: str) -> ir.Value:
    """One element of math function `name` on a register value of float `dtype`."""
    b = em.b
    if name in EXACT_INTRINSICS and not is_low(dtype):
        return em.call_intrinsic(EXACT_INTRINSICS[name], x)
    if dtype == "f64":
        return _in_f64(em, name, x)
    if dtype == "f32":
        native = em.hooks.math_f32(em, name, x)
        return native if native is not None else b.fptrunc(_in_f64(em, name, b.fpext(x, F64)), F32)
    in_f32 = b.fptrunc(_in_f64(em, name, x), F32)
    return to_float(em, op, in_f32, "f32", dtype, saturate=False)


def _target_approximation(em, op, name, args, dtype):
    """The target's approximate instruction for an approximate f32 op, or None."""
    approximate, flush = _flags(op)
    if not approximate or dtype != "f32":
        return None
    return em.hooks.approximate(em, name, args, flush)


def _function_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    if op.name == "tanh" and op.attributes.get("approximate", False) and x.dtype == "f32":
        return elementwise(em, op, [x], lambda e, v: _target_approximation(e, op, "tanh", v, "f32") or
                           evaluate(e, op, "tanh", v[0], "f32"), "f32", costly=True)
    cheap = op.name in EXACT_INTRINSICS
    return elementwise(em, op, [x], lambda e, v: evaluate(e, op, op.name, v[0], x.dtype), x.dtype, costly=not cheap)


@LOWERINGS.register("isnan", "isinf")
def _classify_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    if not is_float(x.dtype):
        return elementwise(em, op, [x], lambda e, v: ir.Constant(I1, 0), "bool")

    def classify(e, v):
        if op.name == "isnan":
            return e.b.fcmp_unordered("uno", v[0], v[0])
        return e.b.fcmp_ordered("==", e.call_intrinsic("fabs", v[0]), ir.Constant(v[0].type, float("inf")))
    return elementwise(em, op, [x], classify, "bool")


# ---- approximate modes (§5.1) --------------------------------------------------------------
def _flags(op):
    return bool(op.attributes.get("approximate", False)), bool(op.attributes.get("flush_to_zero", False))


def flush_subnormal(em: Emitter, x: ir.Value) -> ir.Value:
    b = em.b
    tiny = b.fcmp_ordered("<", em.call_intrinsic("fabs", x), ir.Constant(F32, 2.0 ** -126))
    return b.select(tiny, em.call_intrinsic("copysign", ir.Constant(F32, 0.0), x), x)


def approximate_fdiv(em: Emitter, lhs: ir.Value, rhs: ir.Value, flush: bool) -> ir.Value:
    """The interpreter's approximate division: the correctly rounded quotient, and for
    2^126 < |rhs| < 2^128 a zero of the quotient's sign (NaN for an infinite lhs)."""
    b = em.b
    if flush:
        lhs, rhs = flush_subnormal(em, lhs), flush_subnormal(em, rhs)
    quotient = b.fdiv(lhs, rhs)
    magnitude = em.call_intrinsic("fabs", rhs)
    huge = b.and_(b.fcmp_ordered(">", magnitude, ir.Constant(F32, 2.0 ** 126)),
                  b.fcmp_ordered("<", magnitude, ir.Constant(F32, float("inf"))))
    lhs_finite = b.fcmp_ordered("<", em.call_intrinsic("fabs", lhs), ir.Constant(F32, float("inf")))
    special = b.select(lhs_finite, em.call_intrinsic("copysign", ir.Constant(F32, 0.0), quotient),
                       ir.Constant(F32, float("nan")))
    lhs_nan = b.fcmp_unordered("uno", lhs, lhs)
    quotient = b.select(b.and_(huge, b.not_(lhs_nan)), special, quotient)
    return flush_subnormal(em, quotient) if flush else quotient


@LOWERINGS.register("fdiv")
def _fdiv_op(em, op):
    lhs, rhs = (em.env[n] for n in op.operands)
    approximate, flush = _flags(op)
    if not approximate:
        from .pointwise import binary
        return elementwise(em, op, [lhs, rhs], lambda e, v: binary(e, op, "div", v[0], v[1], lhs.dtype), lhs.dtype,
                           costly=True)
    return elementwise(em, op, [lhs, rhs], lambda e, v: _target_approximation(e, op, "fdiv", v, "f32") or
                       approximate_fdiv(e, v[0], v[1], flush), "f32", costly=True)


@LOWERINGS.register("exp2")
def _exp2_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    approximate, flush = _flags(op)

    def element(e, v):
        native = _target_approximation(e, op, "exp2", v, x.dtype)
        if native is not None:
            return native
        value = flush_subnormal(e, v[0]) if approximate and flush else v[0]
        result = evaluate(e, op, "exp2", value, x.dtype)
        return flush_subnormal(e, result) if approximate and flush else result
    return elementwise(em, op, [x], element, x.dtype, costly=True)


# Math functions on one operand, except those with a flush_to_zero mode (exp2, fdiv above).
LOWERINGS.add(ops_where(lambda op: op.family == "math" and op.same_type and len(op.operands) == 1
                        and "flush_to_zero" not in op.attrs), _function_op)
