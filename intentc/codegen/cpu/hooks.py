"""Host hooks: libm for math, malloc/free for large temporaries, a loop nest for `parallel`."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.special import i0
from ..llvm.target import TargetHooks
from ..llvm.types import F64, I64, I8

# glibc's libm meets the spec's bounds for these (log1p 1/1, erfc 4/5 and the rest within
# a few ULP in f64; f32 evaluates them in f64 and rounds once).
LIBM = {"exp": "exp", "log": "log", "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sin": "sin",
        "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
        "cosh": "cosh", "tanh": "tanh", "erf": "erf", "erfc": "erfc", "lgamma": "lgamma", "exp2": "exp2"}


class HostHooks(TargetHooks):
    name = "host"

    def parallel(self, em, op, extents, iteration) -> None:
        em.for_each(extents, iteration)

    def math_f64(self, em, name, x):
        if name == "i0":
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        function = em.declare(LIBM[name], F64, [F64])
        return em.b.call(function, [x])

    def heap_alloc(self, em, builder, nbytes):
        return builder.call(em.declare("malloc", I8.as_pointer(), [I64]), [nbytes])

    def heap_free(self, em, builder, pointer):
        builder.call(em.declare("free", ir.VoidType(), [I8.as_pointer()]), [pointer])
