"""Casts of f32 to the fp8 formats in the GPU's own conversion (sm_89+): one
`cvt.rn.satfinite.{e4m3,e5m2}x2.f32` rounds the value to nearest even, and one
`cvt.rn.f16x2.{e4m3,e5m2}x2` widens the code back to an f16 (exact: both fp8 formats lie
inside f16), which becomes the f64 register image the shared lowering computes with. The
shared software rounding (`lowfloat.round_f64`) takes about 40 instructions, many of them f64
selects, an element: in the f8 row quantizers' unrolled rows (16 slots a thread) it was most
of the IR and of LLVM's time.

What `.satfinite` does and the spec's casts (§5.2) need, case by case:
- `saturating_cast`: a magnitude above the largest finite (infinities too) gives it, signed:
  exactly `.satfinite` (e4m3fn 448, e5m2 57344).
- plain `cast` to f8e5m2: a finite overflow rounds to infinity. RNE carries every magnitude at
  or above the midpoint between 57344 (odd last mantissa bit) and 2^16, 61440, to infinity;
  below it `.satfinite` rounds as RNE does. So |x| >= 61440 (infinities included) is the
  signed infinity, chosen beside the instruction.
- plain `cast` to f8e4m3fn keeps the shared code: its overflow is an error the lowering checks.
- a NaN: the image is the input NaN itself, as the shared rounding leaves it (the store's
  encoding then keeps its sign, as it does today); `.satfinite`'s canonical NaN is not used.
The cast also computes the code a store of it writes (`lowfloat.remember_pattern`): the
conversion's own byte, an overflow's infinity, a NaN's code from the f32 bits, so a write of
the cast in the same op skips encoding the f64 image again (f64 bit work an element).
Subnormal results round as RNE; every f32 subnormal lies below half the smallest fp8
subnormal and becomes a signed zero either way (no `.ftz` here)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.lowfloat import remember_pattern
from ..llvm.types import F32, F64, I8, I16, I32

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

PTX_FORMAT = {"f8e4m3fn": "e4m3", "f8e5m2": "e5m2"}
# archs with the fp8 conversions (sm_89: Ada; the backend's ARCHS from sm_90 up)
ARCHS = frozenset({"sm_90", "sm_90a"})
E5M2_OVERFLOW = 61440.0     # halfway from 57344 to 2^16: RNE rounds it and above to infinity


def round_to_f8(em: Emitter, x: ir.Value, src: str, dst: str, saturate: bool, arch: str) -> ir.Value | None:
    """The f64 image of the f32 `x` cast (`saturate`: saturating_cast) to the fp8 `dst`, or
    None where the shared code keeps it (other sources, a plain cast to f8e4m3fn, archs
    without the instructions)."""
    if src != "f32" or dst not in PTX_FORMAT or arch not in ARCHS or (dst == "f8e4m3fn" and not saturate):
        return None
    b = em.b
    codes = _narrowing(em, x, PTX_FORMAT[dst])
    code = b.trunc(codes, I8)      # x's code: the low byte
    image = b.fpext(b.bitcast(b.trunc(_widening(em, codes, PTX_FORMAT[dst]), I16), ir.HalfType()), F64)
    if not saturate:
        overflow = b.fcmp_ordered(">=", em.call_intrinsic("fabs", x), ir.Constant(F32, E5M2_OVERFLOW))
        infinity = em.call_intrinsic("copysign", ir.Constant(F64, float("inf")), image)
        image = b.select(overflow, infinity, image)
        code = b.select(overflow, b.or_(b.and_(code, ir.Constant(I8, 0x80)), ir.Constant(I8, 0x7C)), code)
    nan = b.fcmp_unordered("uno", x, x)
    image = b.select(nan, b.fpext(x, F64), image)
    return remember_pattern(em, image, b.select(nan, _nan_code(em, x, dst), code))


def _narrowing(em: Emitter, x: ir.Value, fmt: str) -> ir.Value:
    """The fp8 pair (i16) of `cvt.rn.satfinite` of (0, x): x's code in the low byte."""
    return em.b.asm(ir.FunctionType(I16, [F32]), f"cvt.rn.satfinite.{fmt}x2.f32 $0, 0f00000000, $1;", "=h,f", [x],
                    side_effect=False)


def _widening(em: Emitter, codes: ir.Value, fmt: str) -> ir.Value:
    """The f16 pair (i32) of an fp8 pair. An asm of its own, apart from the narrowing: where
    only the code is used (a store of the cast, which takes the remembered code), LLVM deletes
    it (joined in one asm, every cast paid for both conversions)."""
    return em.b.asm(ir.FunctionType(I32, [I16]), f"cvt.rn.f16x2.{fmt}x2 $0, $1;", "=r,h", [codes], side_effect=False)


def _nan_code(em: Emitter, x: ir.Value, dst: str) -> ir.Value:
    """The code `lowfloat.encode` gives the f64 image of the f32 NaN `x` (its sign; f8e5m2
    keeps the payload's top two bits, 0b10 where they are zero; f8e4m3fn has one NaN code)."""
    b = em.b
    bits = b.bitcast(x, I32)
    sign = b.trunc(b.lshr(bits, ir.Constant(I32, 24)), I8)
    sign = b.and_(sign, ir.Constant(I8, 0x80))
    if dst == "f8e4m3fn":
        return b.or_(sign, ir.Constant(I8, 0x7F))
    payload = b.trunc(b.and_(b.lshr(bits, ir.Constant(I32, 21)), ir.Constant(I32, 3)), I8)
    empty = b.icmp_unsigned("==", payload, ir.Constant(I8, 0))
    return b.or_(sign, b.select(empty, ir.Constant(I8, 0x7E), b.or_(payload, ir.Constant(I8, 0x7C))))


def f8_pattern(em: Emitter, value: ir.Value, dtype: str, arch: str) -> ir.Value | None:
    """The stored pattern (i8) of an f64 `value` on the fp8 `dtype`'s grid (±inf too for
    f8e5m2; the caller handles NaNs), or None where the shared encoding keeps it. Both
    formats lie inside f16, so the f16 narrowing is exact: f8e5m2 is the f16's top byte
    (any arch); f8e4m3fn is `cvt.rn.satfinite.e4m3x2.f16x2` of it, exact on the grid."""
    b = em.b
    if dtype not in PTX_FORMAT or (dtype == "f8e4m3fn" and arch not in ARCHS):
        return None
    half = b.bitcast(b.fptrunc(value, ir.HalfType()), ir.IntType(16))
    if dtype == "f8e5m2":
        return b.trunc(b.lshr(half, ir.Constant(ir.IntType(16), 8)), ir.IntType(8))
    pair = b.asm(ir.FunctionType(ir.IntType(16), [I32]), "cvt.rn.satfinite.e4m3x2.f16x2 $0, $1;", "=h,r",
                 [b.zext(half, I32)], side_effect=False)
    return b.trunc(pair, ir.IntType(8))
