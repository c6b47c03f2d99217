"""Software rounding into, encoding of and decoding from the float formats narrower than f64.

Low-precision values compute as exact f64 images. `round_f64` rounds an f64 value onto a
format's grid with round-to-nearest-even in one step (the interpreter's `round_to_format`:
scale by the quantum of the value's binade, `rint`, scale back); `encode` and `decode` move
between grid values and bit patterns. All of it is branch-free, so loops stay vectorizable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .types import F32, F64, I1, I64, LOW_FORMATS, LowFormat, ir_int

if TYPE_CHECKING:
    from .emitter import Emitter


def _f64_bits(b, x):
    return b.bitcast(x, I64)


def _power_of_two(b, exponent: ir.Value) -> ir.Value:
    """2**exponent as f64 for a normal-range i64 exponent."""
    return b.bitcast(b.shl(b.add(exponent, ir.Constant(I64, 1023)), ir.Constant(I64, 52)), F64)


def _abs(em, x):
    return em.call_intrinsic("fabs", x)


def is_finite(em: Emitter, x: ir.Value) -> ir.Value:
    return em.b.fcmp_ordered("<", _abs(em, x), ir.Constant(x.type, float("inf")))


def round_f64(em: Emitter, x: ir.Value, dtype: str, overflow: str = "inf") -> tuple[ir.Value, ir.Value]:
    """(rounded f64, finite overflow i1). `overflow`: "inf" gives ±inf (NaN in a format
    without infinities), "max" clamps to ±max_finite."""
    b = em.b
    if dtype == "f64":
        return x, ir.Constant(I1, 0)
    if dtype == "f32":
        narrowed = b.fpext(b.fptrunc(x, F32), F64)
        overflowed = b.and_(is_finite(em, x), b.fcmp_ordered("==", _abs(em, narrowed), ir.Constant(F64, float("inf"))))
        if overflow == "max":
            narrowed = b.select(overflowed, em.call_intrinsic("copysign", ir.Constant(F64, 3.4028234663852886e38), x),
                                narrowed)
        return narrowed, overflowed
    fmt = LOW_FORMATS[dtype]
    bits = _f64_bits(b, x)
    biased = b.and_(b.lshr(bits, ir.Constant(I64, 52)), ir.Constant(I64, 0x7FF))
    exponent = b.sub(biased, ir.Constant(I64, 1023))
    lowest = ir.Constant(I64, fmt.min_exponent)
    lead = b.select(b.icmp_signed(">", exponent, lowest), exponent, lowest)
    quantum_exp = b.sub(lead, ir.Constant(I64, fmt.mantissa_bits))
    scaled = b.fmul(x, _power_of_two(b, b.neg(quantum_exp)))
    rounded = b.fmul(em.call_intrinsic("rint", scaled), _power_of_two(b, quantum_exp))
    finite = is_finite(em, x)
    rounded = b.select(finite, rounded, x)
    overflowed = b.and_(finite, b.fcmp_ordered(">", _abs(em, rounded), ir.Constant(F64, fmt.max_finite)))
    if overflow == "max":
        limit = ir.Constant(F64, fmt.max_finite)
    elif fmt.has_inf:
        limit = ir.Constant(F64, float("inf"))
    else:
        limit = ir.Constant(F64, float("nan"))
    replacement = em.call_intrinsic("copysign", limit, x)
    result = b.select(overflowed, replacement, rounded)
    if not fmt.has_inf and overflow != "max":   # ±inf itself has no encoding: NaN
        result = b.select(b.fcmp_ordered("==", _abs(em, result), ir.Constant(F64, float("inf"))),
                          ir.Constant(F64, float("nan")), result)
    return result, overflowed


def remember_pattern(em: Emitter, image: ir.Value, pattern: ir.Value) -> ir.Value:
    """`image` (returned), noting that `pattern` is exactly what `encode` makes of it, NaNs
    included: a target's cast that computed the format's code beside the image (nvptx's
    `cvt` conversions) spares encoding it again when the current op stores it."""
    em.element_memo[("pattern", id(image))] = (image, pattern)
    return image


def encode(em: Emitter, value: ir.Value, dtype: str) -> ir.Value:
    """Bit pattern (iN) of an f64 value that lies on `dtype`'s grid (or is ±inf / NaN): the
    code its cast computed with it (`remember_pattern`), else its numbers through the
    target's own exact narrowing where it has one (`TargetHooks.narrow_exactly`), else all
    of it here."""
    fmt: LowFormat = LOW_FORMATS[dtype]
    b = em.b
    out = ir_int(fmt.width)
    known = em.element_memo.get(("pattern", id(value)))
    if known is not None and known[0] is value and known[1].type == out:
        return known[1]
    narrowed = em.hooks.narrow_exactly(em, value, dtype)
    if narrowed is not None:
        return _pattern_or_nan(em, fmt, value, narrowed)
    bits = _f64_bits(b, value)
    sign = b.lshr(bits, ir.Constant(I64, 63))
    magnitude = _abs(em, value)
    mbits = _f64_bits(b, magnitude)
    exponent = b.sub(b.lshr(mbits, ir.Constant(I64, 52)), ir.Constant(I64, 1023))
    mantissa_mask = (1 << fmt.mantissa_bits) - 1
    exponent_mask = (1 << fmt.exponent_bits) - 1
    normal_e = b.add(exponent, ir.Constant(I64, fmt.bias))
    normal_m = b.and_(b.lshr(mbits, ir.Constant(I64, 52 - fmt.mantissa_bits)), ir.Constant(I64, mantissa_mask))
    normal = b.or_(b.shl(normal_e, ir.Constant(I64, fmt.mantissa_bits)), normal_m)
    sub_scale = float(2.0 ** (fmt.mantissa_bits - fmt.min_exponent))
    subnormal = b.fptoui(b.fmul(b.select(is_finite(em, magnitude), magnitude, ir.Constant(F64, 0.0)),
                                ir.Constant(F64, sub_scale)), I64)
    is_normal = b.icmp_signed(">=", exponent, ir.Constant(I64, fmt.min_exponent))
    body = b.select(is_normal, normal, subnormal)
    if fmt.has_inf:
        inf_code = exponent_mask << fmt.mantissa_bits
        nan_code = inf_code | (1 << (fmt.mantissa_bits - 1))
    else:
        inf_code = nan_code = (exponent_mask << fmt.mantissa_bits) | mantissa_mask
    is_nan = b.fcmp_unordered("uno", value, value)
    is_inf = b.fcmp_ordered("==", magnitude, ir.Constant(F64, float("inf")))
    body = b.select(is_inf, ir.Constant(I64, inf_code), body)
    # The payload comes from the raw bits, not from the magnitude: LLVM turns a sign mask into
    # `fabs`, and NVPTX's abs.f64 quiets a signalling NaN, which must keep its bits (§5.2).
    body = b.select(is_nan, _nan_code(b, bits, fmt, inf_code, nan_code), body)
    word = b.or_(b.shl(sign, ir.Constant(I64, fmt.width - 1)), body)
    return b.trunc(word, out)


def _pattern_or_nan(em: Emitter, fmt: LowFormat, value: ir.Value, pattern: ir.Value) -> ir.Value:
    """`pattern` (a value's exact encoding unless it is a NaN), or the code `encode` makes of
    a NaN: its sign and payload's top bits (§5.2: a read then write keeps a NaN's bits; a
    format without infinities has one NaN code a sign)."""
    b = em.b
    bits = _f64_bits(b, value)
    inf_code = ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    nan_code = inf_code | (1 << (fmt.mantissa_bits - 1)) if fmt.has_inf else inf_code | ((1 << fmt.mantissa_bits) - 1)
    code = _nan_code(b, bits, fmt, inf_code, nan_code)
    sign = b.shl(b.lshr(bits, ir.Constant(I64, 63)), ir.Constant(I64, fmt.width - 1))
    nan = b.trunc(b.or_(sign, code), ir_int(fmt.width))
    return b.select(b.fcmp_unordered("uno", value, value), nan, pattern)


def _nan_code(b: ir.IRBuilder, bits: ir.Value, fmt: LowFormat, inf_code: int, nan_code: int) -> ir.Value:
    """The NaN code of an f64 NaN: its payload's top bits, as `decode` placed them (a read
    then write, or a bitcast, keeps a NaN's bits, §5.2); the default NaN when they are zero
    or the format has a single NaN."""
    if not fmt.has_inf:
        return ir.Constant(I64, nan_code)
    payload = b.and_(b.lshr(bits, ir.Constant(I64, 52 - fmt.mantissa_bits)),
                     ir.Constant(I64, (1 << fmt.mantissa_bits) - 1))
    empty = b.icmp_unsigned("==", payload, ir.Constant(I64, 0))
    return b.select(empty, ir.Constant(I64, nan_code), b.or_(ir.Constant(I64, inf_code), payload))


def decode(em: Emitter, word: ir.Value, dtype: str, nan_bits: bool = True) -> ir.Value:
    """The exact f64 value of a bit pattern of `dtype`: its numbers through the target's own
    exact widening where it has one (`TargetHooks.widen_exactly`), else all of it here.
    Without `nan_bits` (no use observes them, `nan_payloads.py`) a NaN may come out as any
    NaN."""
    fmt: LowFormat = LOW_FORMATS[dtype]
    widened = em.hooks.widen_exactly(em, word, dtype)
    if widened is not None:
        return _number_or_nan(em, fmt, word, widened) if nan_bits else widened
    b = em.b
    bits = b.zext(word, I64)
    mantissa_mask = (1 << fmt.mantissa_bits) - 1
    exponent_mask = (1 << fmt.exponent_bits) - 1
    sign = b.and_(b.lshr(bits, ir.Constant(I64, fmt.width - 1)), ir.Constant(I64, 1))
    biased = b.and_(b.lshr(bits, ir.Constant(I64, fmt.mantissa_bits)), ir.Constant(I64, exponent_mask))
    mantissa = b.and_(bits, ir.Constant(I64, mantissa_mask))
    normal = b.or_(b.shl(b.add(biased, ir.Constant(I64, 1023 - fmt.bias)), ir.Constant(I64, 52)),
                   b.shl(mantissa, ir.Constant(I64, 52 - fmt.mantissa_bits)))
    normal = b.bitcast(normal, F64)
    subnormal = b.fmul(b.uitofp(mantissa, F64), ir.Constant(F64, float(2.0 ** (fmt.min_exponent - fmt.mantissa_bits))))
    magnitude = b.select(b.icmp_unsigned("==", biased, ir.Constant(I64, 0)), subnormal, normal)
    if fmt.has_inf:
        special = b.icmp_unsigned("==", biased, ir.Constant(I64, exponent_mask))
        magnitude = b.select(special, ir.Constant(F64, float("inf")), magnitude)
        nan = b.and_(special, b.icmp_unsigned("!=", mantissa, ir.Constant(I64, 0)))
    else:
        nan = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I64, (1 << (fmt.width - 1)) - 1)),
                              ir.Constant(I64, (1 << (fmt.width - 1)) - 1))
    negative = b.icmp_unsigned("!=", sign, ir.Constant(I64, 0))
    value = b.select(negative, b.fneg(magnitude), magnitude)
    # a NaN keeps its sign and payload at the top of the f64 fraction (quiet bit onto quiet bit)
    nan_bits = b.or_(b.or_(b.shl(sign, ir.Constant(I64, 63)), ir.Constant(I64, 0x7FF << 52)),
                     b.shl(b.select(b.icmp_unsigned("==", mantissa, ir.Constant(I64, 0)),
                                    ir.Constant(I64, 1 << (fmt.mantissa_bits - 1)), mantissa),
                           ir.Constant(I64, 52 - fmt.mantissa_bits)))
    return b.select(nan, b.bitcast(nan_bits, F64), value)


def _number_or_nan(em: Emitter, fmt: LowFormat, word: ir.Value, number: ir.Value) -> ir.Value:
    """`number` (a pattern's exact value unless it is a NaN), or the f64 NaN `decode` makes
    of the pattern: its sign and payload at the top of the fraction (a format with
    infinities: a NaN's mantissa is never zero)."""
    assert fmt.has_inf, fmt
    b = em.b
    bits = b.zext(word, I64)
    magnitude = b.and_(bits, ir.Constant(I64, (1 << (fmt.width - 1)) - 1))
    infinity = ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    nan = b.icmp_unsigned(">", magnitude, ir.Constant(I64, infinity))
    sign = b.and_(b.shl(bits, ir.Constant(I64, 64 - fmt.width)), ir.Constant(I64, 1 << 63))
    payload = b.shl(b.and_(bits, ir.Constant(I64, (1 << fmt.mantissa_bits) - 1)), ir.Constant(I64, 52 - fmt.mantissa_bits))
    nan_bits = b.or_(b.or_(sign, payload), ir.Constant(I64, 0x7FF << 52))
    return b.select(nan, b.bitcast(nan_bits, F64), number)


def to_register(em: Emitter, word: ir.Value, dtype: str, nan_bits: bool = True) -> ir.Value:
    """A loaded storage element as a register value (`nan_bits`: see `decode`)."""
    b = em.b
    if dtype == "bool":
        return b.icmp_unsigned("!=", word, ir.Constant(word.type, 0))
    if dtype in LOW_FORMATS:
        return decode(em, word, dtype, nan_bits)
    return word


def to_storage(em: Emitter, value: ir.Value, dtype: str) -> ir.Value:
    b = em.b
    if dtype == "bool":
        return b.zext(value, ir.IntType(8))
    if dtype in LOW_FORMATS:
        return encode(em, value, dtype)
    return value
