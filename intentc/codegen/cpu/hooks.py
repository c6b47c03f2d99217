"""Host hooks: libm for math, malloc/free for large temporaries, and `parallel` over the
host's cores (a top-level `parallel` becomes an outlined chunk function, `outline.py`)."""
from __future__ import annotations

from llvmlite import ir

from ...ir.optable import ops_where
from ..llvm.special import i0
from ..llvm.target import TargetHooks
from ..llvm.types import F64, I64, I8, is_float
from .outline import atomic_capable, concurrent_safe, outline_parallel

# glibc's libm meets the spec's bounds for these (log1p 1/1, erfc 4/5 and the rest within
# a few ULP in f64; f32 evaluates them in f64 and rounds once).
LIBM = {name: name for name in ops_where(lambda op: op.libm)}


class HostHooks(TargetHooks):
    name = "host"

    def __init__(self, threads: bool = True):
        self.threads = threads      # outline top-level parallels for the runtime's thread pool
        self._outlining = False

    def parallel(self, em, op, extents, iteration) -> None:
        """A top-level parallel without plain-memory combines runs in chunks on the thread pool
        (the shared lowering has already checked the domain)."""
        b = em.b
        if not self.threads or self._outlining or not concurrent_safe(em, op):
            em.for_each(extents, iteration)
            return
        total = ir.Constant(I64, 1)
        for extent in extents:
            total = b.mul(total, extent)
        self._outlining = True
        try:
            outline_parallel(em, op, extents, total, iteration)
        finally:
            self._outlining = False

    def scatter_update(self, em, op, acc, pointer, new, kind, combine):
        """Inside a chunk (iterations on several threads) an indivisible update: atomicrmw for
        integer kinds and float add, a CAS loop for float max/min and combine regions."""
        if not self._outlining or not atomic_capable(acc.resource):
            return super().scatter_update(em, op, acc, pointer, new, kind, combine)
        dtype = acc.resource.dtype
        if (kind in ("add", "and", "or", "xor", "max", "min") and not is_float(dtype)) or (
                kind == "add" and dtype in ("f32", "f64")):
            self.atomic_rmw(em, op, kind, pointer, new, dtype, "monotonic")
        else:
            self.cas_loop(em, pointer, new, "monotonic", lambda old: combine(old, new))

    def math_f64(self, em, name, x):
        if name == "i0":
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        function = em.declare(LIBM[name], F64, [F64])
        return em.b.call(function, [x])

    def heap_alloc(self, em, builder, nbytes):
        return builder.call(em.declare("malloc", I8.as_pointer(), [I64]), [nbytes])

    def heap_free(self, em, builder, pointer):
        builder.call(em.declare("free", ir.VoidType(), [I8.as_pointer()]), [pointer])
