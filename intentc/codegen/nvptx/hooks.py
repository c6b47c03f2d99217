"""NVPTX hooks for the shared lowering: the grid for `parallel`, libdevice for math,
device malloc/free for dynamic temporaries. Atomics use the shared LLVM atomics (LLVM's
NVPTX backend emits scoped `atom`/`ld.acquire`/`st.release` for them)."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.reduction import identity_const
from ..llvm.special import i0
from ..llvm.target import TargetHooks
from ..llvm.types import F32, F64, I32, I64, I8
from .cta import block_combine, block_stride, on_thread_zero, sreg

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

    def __init__(self, grid_op=None, cta_views: set[str] | None = None):
        """`grid_op`: the top-level `parallel` spread over the grid; `cta_views` (the CTA
        mapping, docs/gpu.md): the views read at each use, None for one thread an iteration."""
        self.grid_op, self.cta_views = grid_op, cta_views
        self.in_cta = False      # lowering the body of a CTA-mapped iteration

    # ---- the physical mapping ----------------------------------------------------------------
    def parallel(self, em, op, extents, iteration) -> None:
        if op is not self.grid_op or em.loop_depth:
            em.serial_for_each(extents, iteration)
            return
        b = em.b
        total = ir.Constant(I64, 1)
        for extent in extents:
            total = b.mul(total, extent)
        if self.cta_views is not None:     # iteration it on CTA it mod nctaid, all its threads
            start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)
        else:                               # iteration it on thread it mod (nctaid * ntid)
            start = b.zext(b.add(b.mul(sreg(em, "ctaid.x"), sreg(em, "ntid.x")), sreg(em, "tid.x")), I64)
            stride = b.zext(b.mul(sreg(em, "nctaid.x"), sreg(em, "ntid.x")), I64)

        def body(linear):
            idx, rest = [], linear
            for extent in reversed(extents[1:]):
                idx.append(em.b.urem(rest, extent))
                rest = em.b.udiv(rest, extent)
            idx.append(rest)
            self.in_cta = self.cta_views is not None
            try:
                iteration(list(reversed(idx)))
            finally:
                self.in_cta = False
        em.loop(start, total, body, stride, name="grid")

    def for_each(self, em, shape, body) -> None:
        if not self.in_cta:
            em.serial_for_each(shape, body)
        elif not shape:
            on_thread_zero(em, lambda: body([]))
        else:
            self.in_cta = False            # a coordinate's own work stays on its thread
            try:
                block_stride(em, shape, body)
            finally:
                self.in_cta = True

    def combine_partials(self, em, op, kind, value, dtype, combine):
        if not self.in_cta:
            return value
        return block_combine(em, value, identity_const(kind, dtype), combine)

    def keep_lazy(self, em, before_parallel=False) -> bool:
        return self.in_cta or (before_parallel and self.cta_views is not None)

    def lazy_read(self, em, resource) -> bool:
        return self.cta_views is not None and getattr(resource, "name", None) in self.cta_views

    # ---- math ---------------------------------------------------------------------------------
    def math_f64(self, em, name, x):
        if name == "i0":
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        return em.b.call(em.declare(LIBDEVICE[name], F64, [F64]), [x])

    def approximate(self, em, name, args, flush):
        """ex2.approx[.ftz].f32, tanh.approx.f32, div.approx[.ftz].f32 (PTX ISA §9.7.3),
        whose bounds §5.1 adopts; ftz flushes subnormal inputs and results as §5.1 says."""
        ftz = ".ftz" if flush and name != "tanh" else ""
        if name == "tanh" and flush:
            return None
        text = {"exp2": f"ex2.approx{ftz}.f32 $0, $1;", "tanh": "tanh.approx.f32 $0, $1;",
                "fdiv": f"div.approx{ftz}.f32 $0, $1, $2;"}[name]
        constraints = "=f," + ",".join("f" for _ in args)
        return em.b.asm(ir.FunctionType(F32, [F32] * len(args)), text, constraints, list(args), side_effect=False)

    def float_bits(self, em, value):
        # A register move the optimizer cannot see through: ptxas stored the low byte of
        # `st.b8` from an f32 register wrongly (quantize_q8_k's scale, byte 0 read as 0).
        return em.b.asm(ir.FunctionType(I32, [F32]), "mov.b32 $0, $1;", "=r,f", [value], side_effect=False)

    # ---- atomics (device scope: a kernel's threads share one GPU) -------------------------------
    def scoped(self, order):
        return f'syncscope("device") {order}'

    def scatter_update(self, em, op, acc, pointer, new, kind, combine):
        """An indivisible update: atomicrmw for the builtin kinds of register-width views,
        a CAS loop (bitwise compare) for float max/min and combine regions."""
        from ..llvm.values import ViewRef
        from ..llvm.types import register_type, storage_type
        dtype = acc.resource.dtype
        if not isinstance(acc.resource, ViewRef) or storage_type(dtype) != register_type(dtype) or dtype == "bool":
            return super().scatter_update(em, op, acc, pointer, new, kind, combine)
        builtin = {"add": "add", "and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min"}
        if kind in builtin and not (kind in ("max", "min") and dtype in ("f32", "f64")):
            self.atomic_rmw(em, op, kind, pointer, new, dtype, "monotonic")
            return
        self.cas_loop(em, pointer, new, "monotonic", lambda old: combine(old, new))

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
