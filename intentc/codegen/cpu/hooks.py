"""Host hooks: libm for math, malloc/free for large temporaries, and `parallel` over the
host's cores (a top-level `parallel` becomes an outlined chunk function, `outline.py`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ..llvm.special import i0
from ..llvm.target import Combine, TargetHooks
from ..llvm.types import F64, I64, I8, is_float
from ..llvm.values import Body, Shape
from .outline import atomic_capable, concurrent_safe, outline_parallel

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from ..llvm.memory import Access

# glibc's libm meets the spec's bounds for these (log1p 1/1, erfc 4/5 and the rest within
# a few ULP in f64; f32 evaluates them in f64 and rounds once).
LIBM = {name: name for name in ops_where(lambda op: op.libm)}


class HostHooks(TargetHooks):
    name = "host"

    def __init__(self, threads: bool = True):
        self.threads = threads      # outline top-level parallels for the runtime's thread pool
        self._outlining = False

    def parallel(self, em: Emitter, op: Op, extents: Shape, iteration: Body) -> None:
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

    def scatter_update(self, em: Emitter, op: Op, acc: Access, pointer: ir.Value, new: ir.Value, kind: str | None,
                       combine: Combine) -> None:
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

    def math_f64(self, em: Emitter, name: str, x: ir.Value) -> ir.Value:
        if name == "i0":
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        function = em.declare(LIBM[name], F64, [F64])
        return em.b.call(function, [x])

    def heap_alloc(self, em: Emitter, builder: ir.IRBuilder, nbytes: ir.Value) -> ir.Value:
        return builder.call(em.declare("malloc", I8.as_pointer(), [I64]), [nbytes])

    def heap_free(self, em: Emitter, builder: ir.IRBuilder, pointer: ir.Value) -> None:
        builder.call(em.declare("free", ir.VoidType(), [I8.as_pointer()]), [pointer])
