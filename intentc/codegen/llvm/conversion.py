"""constant, full's element, cast, saturating_cast, bitcast and the microscaling decoders
(spec §3, §5.2, §7). Literal values come from the rule the interpreter uses too
(`ir.dtypes.instantiate`), so both agree to the bit."""
from __future__ import annotations

from llvmlite import ir

from ...ir import errors
from ...ir.dtypes import FLOAT_MAX, instantiate, int_range
from ...ir.nodes import AttrValue, Op, SymbolRef, member_ordinal
from ...ir.types import BIT_WIDTH
from .emitter import CheckSite, Emitter
from .lowfloat import decode, encode, is_finite, round_f64
from .pointwise import elementwise
from .types import F32, F64, I64, LOW_FORMATS, const, is_float, is_low, is_signed, register_type
from .values import Scalar
from .lowering import LOWERINGS


def constant_value(em: Emitter, value: AttrValue, dtype: str) -> ir.Constant:
    """The register constant of a KIR literal in `dtype` (an enum member by its position in
    the declaration, a private encoding: only equality of members is observable, §2)."""
    if isinstance(value, SymbolRef):
        enum, _, member = value.name.partition(".")
        decl = em.kir_module.find(enum)
        return ir.Constant(I64, member_ordinal(decl, member))
    number = instantiate(value, dtype)
    if dtype == "bool":
        return ir.Constant(ir.IntType(1), int(bool(number)))
    if is_float(dtype):
        return ir.Constant(register_type(dtype), float(number))
    return const(dtype, int(number))


# ---- element conversions ---------------------------------------------------------------------
def _to_f64(em, x, src):
    b = em.b
    if src == "f32":
        return b.fpext(x, F64)
    return x


def _int_to_f64_round_to_odd(em, x, src):
    """f64 image of an integer that rounds like the exact integer into formats of <= 51 bits."""
    b = em.b
    wide = b.sext(x, I64) if is_signed(src) and x.type.width < 64 else (
        b.zext(x, I64) if x.type.width < 64 else x)
    if BIT_WIDTH.get(src, 64) < 54 or src == "bool":
        return b.sitofp(wide, F64) if is_signed(src) else b.uitofp(wide, F64)
    negative = b.icmp_signed("<", wide, ir.Constant(I64, 0)) if is_signed(src) else ir.Constant(ir.IntType(1), 0)
    magnitude = b.select(negative, b.sub(ir.Constant(I64, 0), wide), wide)
    leading = em.b.call(em.declare("llvm.ctlz.i64", I64, [I64, ir.IntType(1)]), [magnitude, ir.Constant(ir.IntType(1), 0)])
    shift = b.sub(ir.Constant(I64, 11), leading)            # bits beyond 53
    shift = b.select(b.icmp_signed(">", shift, ir.Constant(I64, 0)), shift, ir.Constant(I64, 0))
    kept = b.lshr(magnitude, shift)
    dropped = b.and_(magnitude, b.sub(b.shl(ir.Constant(I64, 1), shift), ir.Constant(I64, 1)))
    odd = b.or_(kept, b.zext(b.icmp_unsigned("!=", dropped, ir.Constant(I64, 0)), I64))
    scale = b.bitcast(b.shl(b.add(shift, ir.Constant(I64, 1023)), ir.Constant(I64, 52)), F64)
    value = b.fmul(b.uitofp(odd, F64), scale)
    return b.select(negative, b.fneg(value), value)


def _saturate_inf(em, value, dst):
    b = em.b
    infinite = b.fcmp_ordered("==", em.call_intrinsic("fabs", value), ir.Constant(value.type, float("inf")))
    return b.select(infinite, em.call_intrinsic("copysign", ir.Constant(value.type, FLOAT_MAX[dst]), value), value)


def to_float(em: Emitter, op: Op, x: ir.Value, src: str, dst: str, saturate: bool) -> ir.Value:
    b = em.b
    from_int = not is_float(src)
    if from_int:
        if src == "bool":
            x = b.zext(x, I64)
            src = "u64"
        if dst == "f32":
            value = b.sitofp(x, F32) if is_signed(src) else b.uitofp(x, F32)
            return _saturate_inf(em, value, dst) if saturate else value
        wide = _int_to_f64_round_to_odd(em, x, src) if dst != "f64" else (
            b.sitofp(x, F64) if is_signed(src) else b.uitofp(x, F64))
        finite_source = ir.Constant(ir.IntType(1), 1)
    elif dst == "f32" and is_low(src) and not saturate:
        # every low float is an f32 (LOW_FORMATS: within its exponent range and precision),
        # so the rounding below would be exact: f32 and f64 NaNs and infinities alike
        return b.fptrunc(x, F32)
    else:
        native = em.hooks.round_to_format(em, x, src, dst, saturate)
        if native is not None:
            return native
        wide = _to_f64(em, x, src)
        finite_source = is_finite(em, wide)
    if dst == "f64":
        return _saturate_inf(em, wide, dst) if saturate else wide
    rounded, overflowed = round_f64(em, wide, dst, "max" if saturate else "inf")
    if saturate:
        rounded = _saturate_inf(em, rounded, dst)
    elif dst in LOW_FORMATS and not LOW_FORMATS[dst].has_inf and op is not None:
        em.check(CheckSite(op, errors.F8E4M3_OVERFLOW, f"finite value overflows {dst} (max 448)",
                           "use saturating_cast to clamp"), b.and_(overflowed, finite_source))
        infinite = b.fcmp_ordered("==", em.call_intrinsic("fabs", wide), ir.Constant(F64, float("inf")))
        em.check(CheckSite(op, errors.F8E4M3_OVERFLOW, f"infinity has no {dst} encoding",
                           "use saturating_cast to clamp"), infinite)
    return b.fptrunc(rounded, F32) if dst == "f32" else rounded


def float_to_int(em: Emitter, op: Op, x: ir.Value, src: str, dst: str, saturate: bool) -> ir.Value:
    b = em.b
    wide = _to_f64(em, x, src)
    truncated = em.call_intrinsic("trunc", wide)
    low, high = int_range(dst)
    too_high = b.fcmp_ordered(">=", truncated, ir.Constant(F64, float(high + 1)))
    too_low = b.fcmp_ordered("<", truncated, ir.Constant(F64, float(low)))
    nan = b.fcmp_unordered("uno", wide, wide)
    if saturate:
        em.check(CheckSite(op, errors.FLOAT_TO_INT, f"NaN has no {dst} value"), nan)
    else:
        em.check(CheckSite(op, errors.FLOAT_TO_INT, f"cannot convert NaN or infinity to {dst}"),
                 b.or_(nan, b.fcmp_ordered("==", em.call_intrinsic("fabs", wide), ir.Constant(F64, float("inf")))))
        em.check(CheckSite(op, errors.FLOAT_TO_INT, f"value out of the range of {dst}"),
                 b.and_(b.or_(too_high, too_low), is_finite(em, wide)))
    target = register_type(dst)
    safe = b.select(b.or_(b.or_(too_high, too_low), nan), ir.Constant(F64, 0.0), truncated)
    converted = b.fptosi(safe, target) if is_signed(dst) else b.fptoui(safe, target)
    converted = b.select(too_high, ir.Constant(target, high & ((1 << target.width) - 1)), converted)
    return b.select(too_low, ir.Constant(target, low & ((1 << target.width) - 1)), converted)


def int_to_int(em: Emitter, x: ir.Value, src: str, dst: str, saturate: bool) -> ir.Value:
    b = em.b
    target = register_type(dst)
    if saturate:
        src_low, src_high = int_range(src)
        dst_low, dst_high = int_range(dst)
        low, high = max(src_low, dst_low), min(src_high, dst_high)
        if is_signed(src):
            x = b.select(b.icmp_signed("<", x, ir.Constant(x.type, low)), ir.Constant(x.type, low), x)
            x = b.select(b.icmp_signed(">", x, ir.Constant(x.type, high)), ir.Constant(x.type, high), x)
        else:
            x = b.select(b.icmp_unsigned(">", x, ir.Constant(x.type, high)), ir.Constant(x.type, high), x)
    if target.width == x.type.width:
        return x
    if target.width < x.type.width:
        return b.trunc(x, target)
    return b.sext(x, target) if is_signed(src) else b.zext(x, target)


def convert(em: Emitter, op: Op, x: ir.Value, src: str, dst: str, saturate: bool = False) -> ir.Value:
    """One element of `cast` (or `saturating_cast`) from `src` to `dst`."""
    b = em.b
    if src == dst or (src in ("index", "i64") and dst in ("index", "i64")):
        return x
    if dst == "bool":
        if is_float(src):
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if is_float(dst):
        return to_float(em, op, x, src, dst, saturate)
    if src == "bool":
        return b.zext(x, register_type(dst))
    if is_float(src):
        return float_to_int(em, op, x, src, dst, saturate)
    return int_to_int(em, x, src, dst, saturate)


def bits_of(em: Emitter, x: ir.Value, dtype: str) -> ir.Value:
    """The storage bit pattern of a register value (an integer of the dtype's width)."""
    b = em.b
    if is_low(dtype):
        return encode(em, x, dtype)
    if is_float(dtype):
        return b.bitcast(x, ir.IntType(BIT_WIDTH[dtype]))
    return x


def from_bits(em: Emitter, bits: ir.Value, dtype: str) -> ir.Value:
    b = em.b
    if is_low(dtype):
        return decode(em, bits, dtype)
    if is_float(dtype):
        return b.bitcast(bits, register_type(dtype))
    return bits


# ---- microscaling decoders -------------------------------------------------------------------
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def decode_e2m1(em: Emitter, code: ir.Value) -> ir.Value:
    b = em.b
    table = em.module.globals.get("intentc.e2m1")
    if table is None:
        array = ir.ArrayType(F32, 16)
        table = ir.GlobalVariable(em.module, array, "intentc.e2m1")
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(array, [ir.Constant(F32, v) for v in E2M1])
    nibble = b.zext(b.and_(code, ir.Constant(code.type, 15)), I64)
    return b.load(b.gep(table, [ir.Constant(I64, 0), nibble], inbounds=True))


def decode_e8m0(em: Emitter, code: ir.Value) -> ir.Value:
    b = em.b
    wide = b.zext(code, I64)
    power = b.bitcast(b.shl(b.add(wide, ir.Constant(I64, 1023 - 127)), ir.Constant(I64, 52)), F64)
    value = b.fptrunc(power, F32)
    return b.select(b.icmp_unsigned("==", wide, ir.Constant(I64, 255)), ir.Constant(F32, float("nan")), value)


# ---- ops ---------------------------------------------------------------------------------------
@LOWERINGS.register("constant")
def _constant_op(em, op):
    type_ = op.result_types[0]
    dtype = getattr(type_, "dtype", "enum")
    return Scalar(dtype, (), constant_value(em, op.attributes["value"], dtype))


@LOWERINGS.register("cast", "saturating_cast")
def _cast_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    dst = op.result_types[0].dtype
    saturate = op.name == "saturating_cast"
    return elementwise(em, op, [x], lambda e, v: convert(e, op, v[0], x.dtype, dst, saturate), dst)


@LOWERINGS.register("bitcast")
def _bitcast_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    dst = op.result_types[0].dtype
    return elementwise(em, op, [x], lambda e, v: from_bits(e, bits_of(e, v[0], x.dtype), dst), dst)


def _decode_op(decoder):
    def lower(em, op):
        (x,) = (em.env[n] for n in op.operands)
        return elementwise(em, op, [x], lambda e, v: decoder(e, v[0]), "f32")
    return lower


LOWERINGS.add(["decode_e2m1"], _decode_op(decode_e2m1))
LOWERINGS.add(["decode_e8m0"], _decode_op(decode_e8m0))
