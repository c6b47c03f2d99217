"""Narrowing to f16 and bf16 in the GPU's own conversions.

`narrow_exactly` (the mirror of `widen.py`) stores an f64 register image that lies on the
format's grid: `cvt.rn.f16.f64` for f16, the top half of the exact f32 for bf16; both exact,
subnormals included (no `.ftz`); NaNs keep the shared encoding's code (`lowfloat.encode`: a
read then write keeps a NaN's bits, §5.2). The shared branch-free encoding costs about 25
instructions an element: `embedding_lookup`'s f16 row copy was compute-bound on it (0.19 of
torch on the H200, round 1 of issue 13).

`round_to_format` is the cast itself (§5.2: round to nearest even, finite overflow to
infinity): `cvt.rn.f16.f32` / `cvt.rn.f16.f64` and `cvt.rn.bf16.f32` (sm_80+), one
rounding each, where the shared code rounds an f64 image in software (about 20 f64
instructions: `stochastic_round_bf16`'s final cast). A NaN comes out as a NaN, whose bits
a cast need not keep. bf16 from f64 has no single-rounding instruction on sm_80 and keeps
the shared code."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.lowfloat import remember_pattern
from ..llvm.types import F32, F64, I32

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def narrow_exactly(em: Emitter, value: ir.Value, dtype: str) -> ir.Value | None:
    b = em.b
    if dtype == "f16":
        return b.bitcast(b.fptrunc(value, ir.HalfType()), ir.IntType(16))
    if dtype == "bf16":
        return b.trunc(b.lshr(b.bitcast(b.fptrunc(value, F32), I32), ir.Constant(I32, 16)), ir.IntType(16))
    return None


def round_to_format(em: Emitter, x: ir.Value, src: str, dst: str) -> ir.Value | None:
    """The f64 image of the cast, its 16-bit code remembered beside it (`lowfloat.remember_pattern`:
    encoding the image gives the code back exactly, a NaN's payload too, so a store of the
    cast takes the code)."""
    b = em.b
    if dst == "f16" and src in ("f32", "f64"):
        half = b.fptrunc(x, ir.HalfType())
        return remember_pattern(em, b.fpext(half, F64), b.bitcast(half, ir.IntType(16)))
    if dst == "bf16" and src == "f32":
        bits = b.asm(ir.FunctionType(ir.IntType(16), [F32]), "cvt.rn.bf16.f32 $0, $1;", "=h,f", [x],
                     side_effect=False)
        image = b.fpext(b.bitcast(b.shl(b.zext(bits, I32), ir.Constant(I32, 16)), F32), F64)
        return remember_pattern(em, image, bits)
    return None
