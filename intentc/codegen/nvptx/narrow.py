"""Exact narrowing of f64 register images to f16 storage in the GPU's own conversion
(`NvptxHooks.narrow_exactly`, the mirror of `widen.py`): `cvt.rn.f16.f64`, exact for a value
on f16's grid (every f16 register value is), subnormals included (no `.ftz`); NaNs keep the
shared encoding's code (`lowfloat.encode`: a read then write keeps a NaN's bits, §5.2). The
shared branch-free encoding costs about 25 instructions an element: `embedding_lookup`'s
f16 row copy was compute-bound on it (0.19 of torch on the H200, round 1 of issue 13)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def narrow_exactly(em: Emitter, value: ir.Value, dtype: str) -> ir.Value | None:
    if dtype == "f16":
        return em.b.bitcast(em.b.fptrunc(value, ir.HalfType()), ir.IntType(16))
    return None
