"""A top-level `parallel` as an outlined chunk function, run over the host's cores.

The iterations of the flattened domain are split into chunks [begin, end); the kernel
calls

    void chunk(i8 *ctx, i64 *status, i64 begin, i64 end)

through the runner in the global `intentc_cpu_runner` (set by the runtime to a thread pool,
`intentc.runtime.cpu_threads`), or directly for the whole domain when the global is null
(an object file linked without the runtime runs serially).

`ctx` is a stack struct holding every non-constant LLVM value the region can see (view
pointers, extents, scalars, temporaries); lazy tensors the region uses are materialized
first. The region is lowered into the chunk function by swapping the emitter's
per-function state (builders, env, check flags, scopes) and restoring it afterwards; the
check sites are shared, so a failing check reports the same id from any thread.

Iterations may share an element only through atomics, unique_store and scatter_reduce
(docs/kir.md); scatter_reduce into a shared resource is atomic in a chunk (`HostHooks.
scatter_update`), and a parallel whose shared element cannot be updated atomically (bool,
16-bit floats in a view) keeps its iterations serial.
"""
from __future__ import annotations

import dataclasses

from llvmlite import ir

from ...ir.nodes import Op
from ..llvm.emitter import Emitter
from ..llvm.types import I8, I64, register_type, storage_type
from ..llvm.values import Body, BufferRef, Lazy, Scalar, Shape, ViewRef

RUNNER = "intentc_cpu_runner"
CHUNK_TYPE = ir.FunctionType(ir.VoidType(), [I8.as_pointer(), I64.as_pointer(), I64, I64])
RUNNER_TYPE = ir.FunctionType(ir.VoidType(), [CHUNK_TYPE.as_pointer(), I8.as_pointer(), I64.as_pointer(), I64])
# Per-function state of the emitter; everything else (sites, module, hooks) is shared.
_SHARED = ("sites", "_site_ids")


# ---- which parallels run concurrently ----------------------------------------------------------
def _ops(ops, module):
    """Every op of a block, nested regions and called helpers included."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from _ops(region.ops, module)
        if op.name == "call":
            helper = module.find(op.attributes["callee"].name)
            yield from _ops(getattr(helper, "body", ()), module)


def atomic_capable(resource: ViewRef | BufferRef) -> bool:
    """Whether scatter_reduce into `resource` can update one element indivisibly (a
    register-width element: not bool, not a low-precision float in a view)."""
    dtype = resource.dtype
    return dtype != "bool" and (isinstance(resource, BufferRef) or storage_type(dtype) == register_type(dtype))


def concurrent_safe(em: Emitter, op: Op) -> bool:
    """Whether the iterations of `op` may run on several threads: every scatter_reduce into
    a resource shared by the iterations (defined outside the region) is atomic-capable."""
    if not op.operands:
        return False
    shared = [em.env.get(o.operands[0]) for o in _ops(op.regions[0].ops, em.kir_module) if o.name == "scatter_reduce"]
    return all(atomic_capable(r) for r in shared if r is not None)


# ---- capturing the region's environment ----------------------------------------------------------
def _map_values(value, fn):
    """`value` (a KIR value, resource, tuple, record) with every LLVM value v replaced by fn(v)."""
    if isinstance(value, ir.Value):
        return fn(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_map_values(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_values(v, fn) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _map_values(getattr(value, f.name), fn)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def _settled(em, value):
    """`value` with its lazy tensors computed into temporaries (scalars into registers)."""
    if isinstance(value, Lazy):
        return Scalar(value.dtype, (), value.at(em, [])) if not value.shape else em.materialize(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_settled(em, v) for v in value)
    if dataclasses.is_dataclass(value) and type(value).__name__ == "RecordVal":
        return dataclasses.replace(value, fields={k: _settled(em, v) for k, v in value.fields.items()})
    return value


def _holds_lazy(value) -> bool:
    if isinstance(value, Lazy):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_lazy(v) for v in value)
    return type(value).__name__ == "RecordVal" and any(_holds_lazy(v) for v in value.fields.values())


def _names_used(ops, module, names: set) -> set:
    for op in _ops(ops, module):
        names.update(op.operands)
        names.update(v for g in op.groups for v in g.values)
    return names


class _Capture:
    """The outer values the chunk needs, in the order of the ctx struct."""

    def __init__(self):
        self.values: list[ir.Value] = []
        self._index: dict[int, int] = {}

    def __call__(self, value: ir.Value) -> ir.Value:
        if not isinstance(value, (ir.Constant, ir.GlobalValue)) and id(value) not in self._index:
            self._index[id(value)] = len(self.values)
            self.values.append(value)
        return value

    def struct(self) -> ir.LiteralStructType:
        return ir.LiteralStructType([v.type for v in self.values])

    def loader(self, builder, ctx):
        """fn(outer value) -> its copy loaded from ctx in the chunk's prologue."""
        pointer = builder.bitcast(ctx, self.struct().as_pointer())
        loaded = [builder.load(builder.gep(pointer, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), i)],
                                           inbounds=True)) for i in range(len(self.values))]
        return lambda v: v if isinstance(v, (ir.Constant, ir.GlobalValue)) else loaded[self._index[id(v)]], loaded


def _capture_env(em, region, extents):
    """(env for the chunk with outer values, extents, the capture) — lazies the region uses settled."""
    used = _names_used(region.ops, em.kir_module, set())
    env = {}
    for name, value in em.env.items():
        if _holds_lazy(value):
            if name not in used:
                continue
            value = _settled(em, value)
        env[name] = value
    capture = _Capture()
    _map_values((env, extents), capture)
    return env, capture


# ---- the chunk function and its call --------------------------------------------------------------
def _runner(module: ir.Module) -> ir.GlobalVariable:
    existing = module.globals.get(RUNNER)
    if existing is not None:
        return existing
    runner = ir.GlobalVariable(module, RUNNER_TYPE.as_pointer(), RUNNER)
    runner.initializer = ir.Constant(RUNNER_TYPE.as_pointer(), None)
    return runner


def _odometer(em, extents, begin, end, iteration) -> None:
    """iteration(idx) for the flattened coordinates begin..end-1, row-major."""
    b = em.b
    if len(extents) == 1:
        em.loop(begin, end, lambda n: iteration([n]), name="chunk")
        return
    coords = [em.entry_alloca(I64) for _ in extents]
    rest = begin
    for axis in range(len(extents) - 1, 0, -1):
        b.store(b.urem(rest, extents[axis]), coords[axis])
        rest = b.udiv(rest, extents[axis])
    b.store(rest, coords[0])

    def body(_):
        idx = [em.b.load(c) for c in coords]
        iteration(idx)
        carry = ir.Constant(I64, 1)
        for axis in range(len(extents) - 1, 0, -1):
            following = em.b.add(idx[axis], carry)
            wrap = em.b.icmp_unsigned("==", following, extents[axis])
            em.b.store(em.b.select(wrap, ir.Constant(I64, 0), following), coords[axis])
            carry = em.b.zext(wrap, I64)
        em.b.store(em.b.add(idx[0], carry), coords[0])
    em.loop(begin, end, body, name="chunk")


def _lower_chunk(em, name, env, extents, capture, iteration) -> ir.Function:
    chunk = ir.Function(em.module, CHUNK_TYPE, name)
    chunk.linkage = "internal"
    ctx, status, begin, end = chunk.args
    saved = dict(em.__dict__)
    fresh = Emitter(em.module, chunk, status, em.hooks)
    em.__dict__.update({k: v for k, v in fresh.__dict__.items() if k not in _SHARED})
    try:
        inside, loaded = capture.loader(em.prologue, ctx)
        em.invariant = {id(v) for v in loaded}
        em.env, em.defs = _map_values(env, inside), {}
        _odometer(em, _map_values(extents, inside), begin, end, iteration)
        em.finish()
    finally:
        em.__dict__.clear()
        em.__dict__.update(saved)
    return chunk


def outline_parallel(em: Emitter, op: Op, extents: Shape, total: ir.Value, iteration: Body) -> None:
    """Lower `op`'s region into a chunk function and run it over [0, total)."""
    env, capture = _capture_env(em, op.regions[0], extents)
    name = f"{em.function.name}.chunk{sum(1 for g in em.module.globals if '.chunk' in g)}"
    chunk = _lower_chunk(em, name, env, extents, capture, iteration)
    b = em.b
    context = em.entry_alloca(capture.struct())
    for i, value in enumerate(capture.values):
        b.store(value, b.gep(context, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), i)],
                             inbounds=True))
    ctx = b.bitcast(context, I8.as_pointer())
    runner = b.load(_runner(em.module))
    threaded = b.and_(b.icmp_unsigned("!=", runner, ir.Constant(runner.type, None)),
                      b.icmp_signed(">", total, ir.Constant(I64, 1)))
    em.if_then(threaded, lambda: em.b.call(runner, [chunk, ctx, em.status, total]),
               lambda: em.b.call(chunk, [ctx, em.status, ir.Constant(I64, 0), total]))
