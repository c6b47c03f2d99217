"""The CTA mapping (docs/gpu.md): one iteration of the top-level `parallel` per CTA, the
iteration's tensor coordinates spread over the CTA's threads.

Coordinate e of every tensor (row-major linear position) belongs to thread e mod ntid, for
every op of the iteration, so element-wise chains stay thread-local and neighbouring
threads touch neighbouring elements (coalesced). Nothing is materialized: a costly value
with several uses is recomputed and reads are re-issued at each use (they hit L1/L2), so no
per-thread temporaries exist. A full reduction combines per-thread partials through warp
shuffles (`shfl.sync.bfly`) and shared memory, every thread receiving the result; a rank-0
write is made by thread 0.

`cta_parallel` decides when this applies: every op of the iteration is one of those above
(no regions, no scans — they keep source order —, no atomics or scatters, no buffers) and
reads touch only read-only views, or an inout view whose one write uses the read's own
indices and mask and ends the iteration. Otherwise the kernel keeps the grid-stride mapping.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ...ir.types import ViewType
from ...passes.ir_walk import is_pure_tree
from ..llvm.mathfns import FUNCTIONS
from ..llvm.pointwise import BINARY_NAMES
from ..llvm.types import F32, F64, I32, I64

ELEMENTWISE = frozenset({*BINARY_NAMES, *FUNCTIONS, "neg", "abs", "not", "select", "fdiv", "exp2", "isnan", "isinf",
                         "cast", "saturating_cast", "constant", "iota", "full", "dim", "broadcast"})
SHUFFLED = {"f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index", "bool"}
SHARED_WORDS = 32          # one i64 per warp: 1024 threads at most


def _views(kernel: Kernel) -> dict[str, str]:
    return {p.name: p.type.direction for p in kernel.params if isinstance(p.type, ViewType)}


def _body_ok(body: list[Op], views: dict[str, str]) -> set[str] | None:
    """The views whose reads may be re-issued at each use, or None if the body is not
    one the CTA mapping handles."""
    ops = [op for op in body if op.name != "yield"]
    lazy = {name for name, direction in views.items() if direction == "in"}
    for position, op in enumerate(ops):
        if op.regions:
            return None
        if op.name in ELEMENTWISE:
            if op.name == "broadcast" and op.attributes.get("dims") is not None:
                return None
            continue
        if op.name in ("reduce", "contract", "dot"):   # full reductions: a scalar per iteration
            allowed = SHUFFLED if op.name == "reduce" else SHUFFLED | {"f16", "bf16"}   # contract sums in f64
            if op.result_types[0].shape or op.result_types[0].dtype not in allowed:
                return None
            continue
        if op.name == "write":
            target = op.operands[0]
            if target not in views:
                return None
            if views[target] == "inout" and not _read_then_write(ops, position, target):
                return None
            if views[target] == "inout":
                lazy.add(target)
            continue
        if op.name == "read":
            if views.get(op.operands[0]) not in ("in", "inout"):
                return None
            continue
        return None
    for op in ops:
        if op.name == "read" and op.operands[0] not in lazy:
            return None
    return lazy


def _read_then_write(ops: list[Op], position: int, view: str) -> bool:
    """An inout view written once, by the iteration's last op, at exactly the lanes (index
    and mask operands) of every read of it: each element is read, then written, by its
    own thread."""
    write = ops[position]
    if position != len(ops) - 1:
        return False
    reads = [op for op in ops if op.name == "read" and op.operands[0] == view]
    writes = [op for op in ops if op.name == "write" and op.operands[0] == view]
    lanes = (tuple(write.group("index") or ()), tuple(write.group("mask") or ()))
    return len(writes) == 1 and all((tuple(r.group("index") or ()), tuple(r.group("mask") or ())) == lanes
                                    for r in reads)


def cta_parallel(kernel: Kernel) -> tuple[Op, set[str]] | None:
    """(the top-level `parallel`, the views read lazily) when the CTA mapping applies."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    views = _views(kernel)
    for op in kernel.body:
        if op is parallels[0] or op.name == "yield" or is_pure_tree(op):
            continue
        if op.name == "read" and views.get(op.operands[0]) == "in":
            continue
        return None
    lazy = _body_ok(parallels[0].regions[0].ops, views)
    if lazy is None:
        return None
    return parallels[0], lazy | {name for name, direction in views.items() if direction == "in"}


# ---- code ------------------------------------------------------------------------------------------
def sreg(em, name: str) -> ir.Value:
    return em.b.call(em.declare(f"llvm.nvvm.read.ptx.sreg.{name}", I32, []), [])


def barrier(em) -> None:
    em.b.call(em.declare("llvm.nvvm.barrier0", ir.VoidType(), []), [])


def block_stride(em, shape, body) -> None:
    """body(idx) for the coordinates of `shape` this thread owns (linear e ≡ tid mod ntid)."""
    b = em.b
    total = ir.Constant(I64, 1)
    for extent in shape:
        total = b.mul(total, extent)
    tid, ntid = b.zext(sreg(em, "tid.x"), I64), b.zext(sreg(em, "ntid.x"), I64)

    def each(linear):
        idx, rest = [], linear
        for extent in reversed(shape[1:]):
            idx.append(b.urem(rest, extent))
            rest = b.udiv(rest, extent)
        idx.append(rest)
        body(list(reversed(idx)))
    em.loop(tid, total, each, ntid, name="lane")


def on_thread_zero(em, body) -> None:
    with em.b.if_then(em.b.icmp_unsigned("==", sreg(em, "tid.x"), ir.Constant(I32, 0))):
        body()


def _to_i64(em, value: ir.Value) -> ir.Value:
    b = em.b
    if value.type == F64:
        return b.bitcast(value, I64)
    if value.type == F32:
        return b.zext(b.bitcast(value, I32), I64)
    return value if value.type == I64 else b.zext(value, I64)


def _from_i64(em, word: ir.Value, type_: ir.Type) -> ir.Value:
    b = em.b
    if type_ == F64:
        return b.bitcast(word, F64)
    if type_ == F32:
        return b.bitcast(b.trunc(word, I32), F32)
    return word if type_ == I64 else b.trunc(word, type_)


def _shuffle_xor(em, value: ir.Value, lanes: int) -> ir.Value:
    b = em.b
    shfl = em.declare("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
    word = _to_i64(em, value)
    mask, clamp, offset = ir.Constant(I32, -1), ir.Constant(I32, 31), ir.Constant(I32, lanes)
    low = b.call(shfl, [mask, b.trunc(word, I32), offset, clamp])
    if value.type in (I64, F64):
        high = b.call(shfl, [mask, b.trunc(b.lshr(word, ir.Constant(I64, 32)), I32), offset, clamp])
        word = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
    else:
        word = b.zext(low, I64)
    return _from_i64(em, word, value.type)


def _shared(em) -> ir.Value:
    name = "intentc_cta_partials"
    existing = em.module.globals.get(name)
    if existing is None:
        existing = ir.GlobalVariable(em.module, ir.ArrayType(I64, SHARED_WORDS), name, addrspace=3)
        existing.linkage = "internal"
        existing.initializer = ir.Constant(ir.ArrayType(I64, SHARED_WORDS), None)
    return existing


def block_combine(em, value: ir.Value, identity: ir.Value, combine) -> ir.Value:
    """The CTA-wide combination of every thread's `value` (each thread gets it): a butterfly
    within each warp, then every thread folds the warps' results in warp order."""
    b = em.b
    for lanes in (16, 8, 4, 2, 1):
        value = combine(value, _shuffle_xor(em, value, lanes))
    tid = sreg(em, "tid.x")
    warp = b.zext(b.lshr(tid, ir.Constant(I32, 5)), I64)
    shared = _shared(em)
    zero = ir.Constant(I32, 0)
    with b.if_then(b.icmp_unsigned("==", b.and_(tid, ir.Constant(I32, 31)), zero)):
        b.store(_to_i64(em, value), b.gep(shared, [zero, warp], inbounds=True))
    barrier(em)
    warps = b.zext(b.lshr(b.add(sreg(em, "ntid.x"), ir.Constant(I32, 31)), ir.Constant(I32, 5)), I64)
    slot = em.entry_alloca(value.type)
    b.store(identity, slot)

    def fold(w):
        word = b.load(b.gep(shared, [zero, w], inbounds=True))
        b.store(combine(b.load(slot), _from_i64(em, word, value.type)), slot)
    em.loop(ir.Constant(I64, 0), warps, fold, name="warp")
    result = b.load(slot)
    barrier(em)          # the partials may be overwritten by the next reduction only now
    return result


