"""NVPTX hooks for the shared lowering: the grid for `parallel`, libdevice for math,
device malloc/free for dynamic temporaries. Atomics use the shared LLVM atomics (LLVM's
NVPTX backend emits scoped `atom`/`ld.acquire`/`st.release` for them)."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.special import i0
from ..llvm.target import TargetHooks
from ..llvm.types import F64, I32, I64, I8

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

# libdevice's f64 functions (https://docs.nvidia.com/cuda/libdevice-users-guide): all
# within 1-4 ulp in f64, so f32 (evaluated in f64, rounded once) gets the interpreter's bits.
LIBDEVICE = {name: f"__nv_{name}" for name in (
    "exp", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "erf", "erfc", "lgamma", "exp2")}

# The status word's value when the device heap is exhausted (ids of checks are positive).
STATUS_OUT_OF_HEAP = -1


class NvptxHooks(TargetHooks):
    name = "nvptx"
    triple = TRIPLE
    data_layout = DATA_LAYOUT

    def __init__(self, grid_op=None):
        self.grid_op = grid_op

    # ---- the physical mapping ----------------------------------------------------------------
    def parallel(self, em, op, extents, iteration) -> None:
        if op is not self.grid_op or em.loop_depth:
            em.for_each(extents, iteration)
            return
        b = em.b
        total = ir.Constant(I64, 1)
        for extent in extents:
            total = b.mul(total, extent)
        start = b.zext(b.add(b.mul(self._sreg(em, "ctaid.x"), self._sreg(em, "ntid.x")), self._sreg(em, "tid.x")), I64)
        stride = b.zext(b.mul(self._sreg(em, "nctaid.x"), self._sreg(em, "ntid.x")), I64)

        def body(linear):
            idx, rest = [], linear
            for extent in reversed(extents[1:]):
                idx.append(em.b.urem(rest, extent))
                rest = em.b.udiv(rest, extent)
            idx.append(rest)
            iteration(list(reversed(idx)))
        em.loop(start, total, body, stride, name="grid")

    @staticmethod
    def _sreg(em, name):
        function = em.declare(f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])
        return em.b.call(function, [])

    # ---- math ---------------------------------------------------------------------------------
    def math_f64(self, em, name, x):
        if name == "i0":
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        return em.b.call(em.declare(LIBDEVICE[name], F64, [F64]), [x])

    # ---- memory ---------------------------------------------------------------------------------
    def heap_alloc(self, em, builder, nbytes):
        """Device malloc; an exhausted heap stores STATUS_OUT_OF_HEAP and ends the thread
        (PTX `exit`), without splitting the caller's block."""
        return builder.call(_checked_malloc(em), [nbytes, em.status])

    def heap_free(self, em, builder, pointer):
        builder.call(em.declare("free", ir.VoidType(), [I8.as_pointer()]), [pointer])


def _checked_malloc(em) -> ir.Function:
    name = "intentc_checked_malloc"
    existing = em.module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(em.module, ir.FunctionType(I8.as_pointer(), [I64, I64.as_pointer()]), name)
    function.linkage = "internal"
    nbytes, status = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    raw = b.call(em.declare("malloc", I8.as_pointer(), [I64]), [nbytes])
    failed = b.icmp_unsigned("==", b.ptrtoint(raw, I64), ir.Constant(I64, 0))
    out, ok = function.append_basic_block("exhausted"), function.append_basic_block("ok")
    b.cbranch(failed, out, ok)
    b.position_at_end(out)
    b.store_atomic(ir.Constant(I64, STATUS_OUT_OF_HEAP), status, "monotonic", 8)
    b.asm(ir.FunctionType(ir.VoidType(), []), "exit;", "", [], side_effect=True)
    b.unreachable()
    b.position_at_end(ok)
    b.ret(raw)
    return function
