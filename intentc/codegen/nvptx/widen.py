"""Exact widening of the 16-bit floats to their f64 register images in the GPU's own
conversions (`NvptxHooks.widen_exactly`): `cvt.f64.f16` for f16, a shift into the top half
of an f32 and `cvt.f64.f32` for bf16. Both are exact for every number, subnormals included
(no `.ftz`); NaNs keep the shared decoding's path (`lowfloat.decode`), which keeps their
payload. The shared branch-free decoding costs about 20 instructions an element: in an
unrolled register-form row (row sums, dots over f16) it was most of the kernel's IR and
of its compile time."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import F32, F64, I32

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def widen_exactly(em: Emitter, word: ir.Value, dtype: str) -> ir.Value | None:
    b = em.b
    if dtype == "f16":
        return b.fpext(b.bitcast(word, ir.HalfType()), F64)
    if dtype == "bf16":
        return b.fpext(b.bitcast(b.shl(b.zext(word, I32), ir.Constant(I32, 16)), F32), F64)
    return None
