"""Pointwise arithmetic, bitwise ops, shifts, comparisons and select (spec §3, §4, §5).

Integers wrap (plain LLVM add/sub/mul, no nsw); signed floordiv/mod fix up LLVM's truncating
sdiv/srem to the floor relation, unsigned ones are Euclidean already. Floats use IEEE ops
with no fast-math flags; low-precision formats compute in f64 and round once.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from ...ir.dtypes import int_range
from ...ir.optable import op_def, ops_where
from ...ir.types import BIT_WIDTH
from .emitter import CheckSite, Emitter
from .lowfloat import round_f64
from .types import F64, LOW_FORMATS, is_float, is_low, is_signed
from .lowering import LOWERINGS
from .values import Derived, Scalar, Tensor


def elementwise(em: Emitter, op: Op | None, operands: list[Tensor], fn: Callable[[Emitter, list[ir.Value]], ir.Value],
                dtype: str, costly: bool = False) -> Tensor:
    """A value whose element is `fn(em, elements of operands)` at the same coordinate."""
    costly = costly or any(getattr(o, "costly", False) for o in operands)
    if all(isinstance(o, Scalar) for o in operands):
        return Scalar(dtype, (), fn(em, [o.value for o in operands]))
    shape = em.shape_of(op.result_types[0]) if op is not None else next(o.shape for o in operands if o.shape)
    return Derived(dtype, shape, costly=costly, combine=fn, operands=tuple(operands))


# ---- integers -------------------------------------------------------------------------------
def _safe_divisor(em, op, a, b, dtype, quotient: bool):
    """The divisor, 1 where the machine division would trap (0, or signed_min / -1, whose
    remainder 0 is then what srem by 1 gives); reports division by zero, and for a
    quotient signed_min // -1 (§4: the remainder is legal)."""
    builder = em.b
    zero = ir.Constant(b.type, 0)
    by_zero = builder.icmp_unsigned("==", b, zero)
    em.check(CheckSite(op, errors.DIVISION_BY_ZERO, "integer division by zero",
                       "guard the divisor, e.g. with `select`"), by_zero)
    bad = by_zero
    if is_signed(dtype):
        low = ir.Constant(a.type, int_range(dtype)[0])
        overflow = builder.and_(builder.icmp_signed("==", a, low),
                                builder.icmp_signed("==", b, ir.Constant(b.type, -1)))
        if quotient:
            em.check(CheckSite(op, errors.DIVISION_OVERFLOW, f"{dtype} minimum // -1 overflows (spec §4)"),
                     overflow)
        bad = builder.or_(bad, overflow)
    return builder.select(bad, ir.Constant(b.type, 1), b)


def int_floordiv(em: Emitter, op: Op, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    d = _safe_divisor(em, op, a, b, dtype, quotient=True)
    if not is_signed(dtype):
        return builder.udiv(a, d)
    q, r = builder.sdiv(a, d), builder.srem(a, d)
    adjust = _floor_adjust(builder, r, d)
    return builder.sub(q, builder.zext(adjust, q.type))


def int_mod(em: Emitter, op: Op, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    d = _safe_divisor(em, op, a, b, dtype, quotient=False)
    if not is_signed(dtype):
        return builder.urem(a, d)
    r = builder.srem(a, d)
    return builder.select(_floor_adjust(builder, r, d), builder.add(r, d), r)


def _floor_adjust(builder, r, d):
    zero = ir.Constant(r.type, 0)
    return builder.and_(builder.icmp_signed("!=", r, zero),
                        builder.icmp_signed("<", builder.xor(r, d), zero))


def _safe_shift(em, op, amount, dtype):
    builder = em.b
    width = BIT_WIDTH[dtype]
    if is_signed(dtype):
        bad = builder.or_(builder.icmp_signed("<", amount, ir.Constant(amount.type, 0)),
                          builder.icmp_signed(">=", amount, ir.Constant(amount.type, width)))
    else:
        bad = builder.icmp_unsigned(">=", amount, ir.Constant(amount.type, width))
    em.check(CheckSite(op, errors.SHIFT_OUT_OF_RANGE, f"shift amount outside [0, {width}) for {dtype}"), bad)
    return builder.select(bad, ir.Constant(amount.type, 0), amount)


def int_binary(em: Emitter, op: Op, name: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    signed = is_signed(dtype)
    simple = {"add": builder.add, "sub": builder.sub, "mul": builder.mul, "and": builder.and_,
              "or": builder.or_, "xor": builder.xor}
    if name in simple:
        return simple[name](a, b)
    if name == "floordiv":
        return int_floordiv(em, op, a, b, dtype)
    if name == "mod":
        return int_mod(em, op, a, b, dtype)
    if name == "shl":
        return builder.shl(a, _safe_shift(em, op, b, dtype))
    if name == "shr":
        amount = _safe_shift(em, op, b, dtype)
        return builder.ashr(a, amount) if signed else builder.lshr(a, amount)
    if name in EXTREMES:
        greater = builder.icmp_signed(">", a, b) if signed else builder.icmp_unsigned(">", a, b)
        return builder.select(greater, a, b) if EXTREMES[name] else builder.select(greater, b, a)
    raise AssertionError(f"the verifier admits no integer `{name}`")


# The maximum/minimum ops: whether each picks the greater operand.
EXTREMES = {"maximum": True, "maximum_num": True, "minimum": False, "minimum_num": False}


def bool_binary(em: Emitter, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    builder = em.b
    table = {"and": builder.and_, "or": builder.or_, "xor": builder.xor, "maximum": builder.or_,
             "minimum": builder.and_, "maximum_num": builder.or_, "minimum_num": builder.and_}
    return table[name](a, b)


# ---- floats ---------------------------------------------------------------------------------
def float_extreme(em: Emitter, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """IEEE 754-2019 maximum/minimum (NaN propagates, -0 < +0) and the *_num forms."""
    native = em.hooks.float_extreme(em, name, a, b)
    if native is not None:
        return native
    builder = em.b
    want_max = EXTREMES[name]
    pick = builder.select(builder.fcmp_ordered(">" if want_max else "<", a, b), a, b)
    int_type = ir.IntType(64 if a.type == F64 else 32)
    ia, ib = builder.bitcast(a, int_type), builder.bitcast(b, int_type)
    equal_bits = builder.bitcast(builder.and_(ia, ib) if want_max else builder.or_(ia, ib), a.type)
    pick = builder.select(builder.fcmp_ordered("==", a, b), equal_bits, pick)
    a_nan = builder.fcmp_unordered("uno", a, a)
    b_nan = builder.fcmp_unordered("uno", b, b)
    if name.endswith("_num"):
        return builder.select(a_nan, b, builder.select(b_nan, a, pick))
    return builder.select(builder.or_(a_nan, b_nan), builder.fadd(a, b), pick)


def float_binary(em: Emitter, op: Op, name: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    simple = {"add": builder.fadd, "sub": builder.fsub, "mul": builder.fmul, "div": builder.fdiv,
              "fmod": lambda x, y: em.hooks.float_remainder(em, x, y) or builder.frem(x, y)}
    if name in simple:
        result = simple[name](a, b)
        if not is_low(dtype):
            return result
        rounded, overflowed = round_f64(em, result, dtype)
        if not LOW_FORMATS[dtype].has_inf:     # no encoding for it: illegal, as the cast (docs/kir.md §4)
            infinite = builder.fcmp_ordered("==", em.call_intrinsic("fabs", result), ir.Constant(F64, float("inf")))
            em.check(CheckSite(op, errors.F8E4M3_OVERFLOW, f"the {dtype} result overflows its largest finite "
                               f"value (spec §5.2)", "compute in a wider dtype and `saturating_cast` back"),
                     builder.or_(overflowed, infinite))
        return rounded
    if name in EXTREMES:
        return float_extreme(em, name, a, b)
    raise AssertionError(f"the verifier admits no float `{name}`")


COMPARE_SIGNED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(em: Emitter, name: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    predicate = COMPARE_SIGNED[name]
    if is_float(dtype):
        return builder.fcmp_unordered(predicate, a, b) if name == "ne" else builder.fcmp_ordered(predicate, a, b)
    if is_signed(dtype) or dtype == "enum":
        return builder.icmp_signed(predicate, a, b)
    return builder.icmp_unsigned(predicate, a, b)


def binary(em: Emitter, op: Op, name: str, a: ir.Value, b: ir.Value, dtype: str) -> ir.Value:
    """One element of binary op `name` on register values of `dtype`."""
    if name in COMPARE_SIGNED:
        return compare(em, name, a, b, dtype)
    if dtype == "bool":
        return bool_binary(em, name, a, b)
    if is_float(dtype):
        return float_binary(em, op, name, a, b, dtype)
    return int_binary(em, op, name, a, b, dtype)


def unary(em: Emitter, name: str, x: ir.Value, dtype: str) -> ir.Value:
    builder = em.b
    if name == "not":
        return builder.xor(x, ir.Constant(x.type, -1 if dtype != "bool" else 1))
    if is_float(dtype):
        return builder.fneg(x) if name == "neg" else em.call_intrinsic("fabs", x)
    if name == "neg":
        return builder.sub(ir.Constant(x.type, 0), x)
    negative = builder.icmp_signed("<", x, ir.Constant(x.type, 0))
    return builder.select(negative, builder.sub(ir.Constant(x.type, 0), x), x) if is_signed(dtype) else x


# ---- ops --------------------------------------------------------------------------------------


def _fused_multiply_add(em, op):
    """add/sub marked `fma = lhs|rhs` by fusion-legality (§5.5): one llvm.fma, one rounding."""
    side = op.attributes.get("fma")
    if side is None or em.env[op.operands[0]].dtype not in ("f32", "f64"):
        return None
    product_index = 0 if side.name == "lhs" else 1
    producer = em.defs.get(op.operands[product_index])
    if producer is None or producer.name != "mul":
        return None
    x, y = (em.env[n] for n in producer.operands)
    other = em.env[op.operands[1 - product_index]]
    negate_product = op.name == "sub" and product_index == 1
    negate_other = op.name == "sub" and product_index == 0

    def element(e, v):
        first = e.b.fneg(v[0]) if negate_product else v[0]
        addend = e.b.fneg(v[2]) if negate_other else v[2]
        return e.call_intrinsic("fma", first, v[1], addend)
    return elementwise(em, op, [x, y, other], element, other.dtype)


def _binary_op(em, op):
    if "fma" in op.attributes:
        fused = _fused_multiply_add(em, op)
        if fused is not None:
            return fused
    a, b = (em.env[n] for n in op.operands)
    dtype = a.dtype
    result = op.result_types[0].dtype
    return elementwise(em, op, [a, b], lambda e, v: binary(e, op, op.name, v[0], v[1], dtype), result,
                       costly=op_def(op.name).costly)


@LOWERINGS.register("neg", "abs", "not")
def _unary_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    return elementwise(em, op, [x], lambda e, v: unary(e, op.name, v[0], x.dtype), x.dtype)


@LOWERINGS.register("select")
def _select_op(em, op):
    c, t, f = (em.env[n] for n in op.operands)
    return elementwise(em, op, [c, t, f], lambda e, v: e.b.select(v[0], v[1], v[2]), t.dtype)


LOWERINGS.add(ops_where(lambda op: op.family == "pointwise" and len(op.operands) == 2), _binary_op)
