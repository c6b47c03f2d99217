"""Math functions a C library does not provide, written in LLVM IR for every target.

i0 follows Cephes (numpy's coefficients, the interpreter's formula): a Chebyshev series in
x/2 - 2 for |x| <= 8, in 32/x - 2 beyond, and exp(x/2)^2 split for |x| > 700 so that the
result overflows only where the true value does.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from llvmlite import ir

from .types import F64

if TYPE_CHECKING:
    from .emitter import Emitter

try:
    from numpy.lib._function_base_impl import _i0A, _i0B
except ImportError:  # pragma: no cover - older numpy layout
    from numpy.lib.function_base import _i0A, _i0B


def chebyshev(em: Emitter, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
    """Cephes chbevl: Clenshaw's recurrence, unrolled."""
    b = em.b
    b0, b1, b2 = ir.Constant(F64, float(coefficients[0])), ir.Constant(F64, 0.0), ir.Constant(F64, 0.0)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = b.fadd(b.fsub(b.fmul(x, b1), b2), ir.Constant(F64, float(c)))
    return b.fmul(ir.Constant(F64, 0.5), b.fsub(b0, b2))


def i0(em: Emitter, x: ir.Value, exp: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """Modified Bessel function I0 of an f64 value; `exp(v)` emits e^v."""
    b = em.b
    ax = em.call_intrinsic("fabs", x)
    small = b.fmul(exp(ax), chebyshev(em, b.fsub(b.fmul(ax, ir.Constant(F64, 0.5)), ir.Constant(F64, 2.0)), _i0A))
    series = chebyshev(em, b.fsub(b.fdiv(ir.Constant(F64, 32.0), ax), ir.Constant(F64, 2.0)), _i0B)
    root = em.call_intrinsic("sqrt", ax)
    large = b.fdiv(b.fmul(exp(ax), series), root)
    half = exp(b.fmul(ax, ir.Constant(F64, 0.5)))
    huge = b.fmul(half, b.fdiv(b.fmul(half, series), root))
    result = b.select(b.fcmp_ordered("<=", ax, ir.Constant(F64, 8.0)), small,
                      b.select(b.fcmp_ordered("<=", ax, ir.Constant(F64, 700.0)), large, huge))
    result = b.select(b.fcmp_ordered("==", ax, ir.Constant(F64, float("inf"))), ir.Constant(F64, float("inf")), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)
