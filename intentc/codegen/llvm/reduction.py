"""reduce, scan, arg_reduce, generic_reduce/scan, region_fold/scan (spec §3, §6).

Reductions fold sequentially along the reduced coordinates, except that a float `sum`
carries the `reassoc` flag on its add alone — §6 lets the compiler choose the
parenthesization — so LLVM can vectorize it. Scans keep source order (a sequential prefix).
Generic reductions fold left (a legal parenthesization). Region folds and scans take the
whole axis as one slice (slicing is the compiler's choice).
"""
from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from ...ir.ops.reduction import COMBINE, EMPTY_ARG_REDUCE_MESSAGE, accumulator, identity
from .control import make_slot, read_slot, run_region, write_slots
from .conversion import convert
from .emitter import CheckSite
from .pointwise import binary
from .types import I1, I64, const, is_float, is_signed, register_type
from .values import Lazy, Memory, Scalar
from .lowering import LOWERINGS

if TYPE_CHECKING:
    from .emitter import Emitter

def identity_const(kind: str, dtype: str) -> ir.Constant:
    value = identity(kind, dtype)
    if dtype == "bool":
        return ir.Constant(I1, int(bool(value)))
    if is_float(dtype):
        return ir.Constant(register_type(dtype), float(value))
    return const(dtype, int(value))


def scan_neutral(kind: str, dtype: str) -> ir.Constant:
    """The element a scan may combine with any prefix without changing its bits: the canonical
    identity, except -0.0 for a float sum (x + -0.0 == x for every x; +0.0 turns a -0.0 prefix
    into +0.0). A scan's prefixes hold only their members (§6), as the interpreter computes them."""
    if kind == "sum" and is_float(dtype):
        return ir.Constant(register_type(dtype), -0.0)
    return identity_const(kind, dtype)


def combine_builtin(em: Emitter, op: Op, kind: str, acc: ir.Value, element: ir.Value, dtype: str) -> ir.Value:
    if kind == "sum" and dtype in ("f32", "f64"):
        return em.b.fadd(acc, element, flags=("reassoc",))
    return binary(em, op, COMBINE[kind], acc, element, dtype)


def merge_index(axes: Collection[int], reduced: list[ir.Value], rest: list[ir.Value]) -> list[ir.Value]:
    """Full coordinate from the coordinates of the reduced `axes` and of the other axes."""
    reduced_iter, rest_iter = iter(reduced), iter(rest)
    return [next(reduced_iter) if a in axes else next(rest_iter) for a in range(len(reduced) + len(rest))]


def _split(shape, axes):
    return [shape[a] for a in axes], [e for a, e in enumerate(shape) if a not in axes]


def _into(em, shape, dtype, compute):
    """A result of `shape` whose element at idx is compute(idx) (a Scalar when rank 0)."""
    if not shape:
        return Scalar(dtype, (), compute([]))
    return em.tabulate(dtype, shape, compute)


@LOWERINGS.register("reduce")
def _reduce_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    kind = op.attributes["kind"].name
    axes = sorted(a % max(x.rank, 1) for a in op.attributes["axes"])
    acc = accumulator(kind, x.dtype, op.attributes.get("acc"))
    reduced_shape, rest_shape = _split(x.shape, axes)
    slot = em.entry_alloca(register_type(acc))

    def compute(rest):
        em.b.store(identity_const(kind, acc), slot)

        def step(reduced):
            element = convert(em, op, x.at(em, merge_index(axes, reduced, rest)), x.dtype, acc)
            before = em.b.load(slot)
            after = combine_builtin(em, op, kind, before, element, acc)
            em.b.store(after if em.lane_mask is None else em.b.select(em.lane_mask, after, before), slot)
        em.for_each(reduced_shape, step, lane_safe=True)
        return em.hooks.combine_partials(em, op, kind, em.b.load(slot), acc,
                                         lambda a, b: combine_builtin(em, op, kind, a, b, acc))
    return _into(em, rest_shape, acc, compute)


@LOWERINGS.register("scan")
def _scan_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    kind = op.attributes["kind"].name
    axis = op.attributes["axis"] % x.rank
    acc = accumulator(kind, x.dtype, op.attributes.get("acc"))
    exclusive, reverse = bool(op.attributes.get("exclusive", False)), bool(op.attributes.get("reverse", False))
    if x.rank == 1:
        scanned = em.hooks.scan(em, x, kind, acc, exclusive, reverse,
                                lambda idx: convert(em, op, x.at(em, idx), x.dtype, acc),
                                lambda a, b: binary(em, op, COMBINE[kind], a, b, acc))
        if scanned is not None:
            return scanned
    out = em.alloc(acc, x.shape)
    n = x.shape[axis]
    slot = em.entry_alloca(register_type(acc))
    _, rest_shape = _split(x.shape, [axis])
    b = em.b

    def line(rest):
        b.store(identity_const(kind, acc), slot)

        def step(k):
            position = b.sub(b.sub(n, ir.Constant(I64, 1)), k) if reverse else k
            idx = merge_index([axis], [position], rest)
            element = convert(em, op, x.at(em, idx), x.dtype, acc)
            before = b.load(slot)
            # The first prefix is the first element itself: the identity is no member (§6).
            first = b.icmp_signed("==", k, ir.Constant(I64, 0))
            after = b.select(first, element, binary(em, op, COMBINE[kind], before, element, acc))
            b.store(after, slot)
            b.store(before if exclusive else after, out.address(em, idx))
        em.loop(ir.Constant(I64, 0), n, step, name="s")
    em.for_each(rest_shape, line)
    return out


@LOWERINGS.register("arg_reduce")
def _arg_reduce_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    kind = op.attributes["kind"].name
    axis = op.attributes["axis"] % x.rank
    n = x.shape[axis]
    em.check(CheckSite(op, errors.EMPTY_ARG_REDUCE, EMPTY_ARG_REDUCE_MESSAGE),
             em.b.icmp_signed("==", n, ir.Constant(I64, 0)))
    _, rest_shape = _split(x.shape, [axis])
    value_slot = em.entry_alloca(register_type(x.dtype))
    index_slot = em.entry_alloca(I64)
    floating = is_float(x.dtype)
    b = em.b
    index_dtype = op.result_types[1].dtype

    def scan_line(rest):
        b.store(identity_const(kind, x.dtype), value_slot)
        b.store(ir.Constant(I64, -1), index_slot)

        def step(k):
            element = x.at(em, merge_index([axis], [k], rest))
            best, best_index = b.load(value_slot), b.load(index_slot)
            first = b.icmp_signed("==", best_index, ir.Constant(I64, -1))
            if floating:
                better = b.fcmp_ordered(">" if kind == "max" else "<", element, best)
                best_nan = b.fcmp_unordered("uno", best, best)
                element_nan = b.fcmp_unordered("uno", element, element)
                take = b.and_(b.not_(b.and_(best_nan, b.not_(first))), b.or_(b.or_(first, element_nan), better))
            else:
                predicate = ">" if kind == "max" else "<"
                better = b.icmp_signed(predicate, element, best) if is_signed(x.dtype) else \
                    b.icmp_unsigned(predicate, element, best)
                take = b.or_(first, better)
            b.store(b.select(take, element, best), value_slot)
            b.store(b.select(take, k, best_index), index_slot)
        em.loop(ir.Constant(I64, 0), n, step, name="a")

    if not rest_shape:
        scan_line([])
        index = b.load(index_slot)
        return [Scalar(x.dtype, (), b.load(value_slot)), Scalar(index_dtype, (), _cast_index(em, index, index_dtype))]
    value_out = em.alloc(x.dtype, rest_shape)
    index_out = em.alloc(index_dtype, rest_shape)

    def both(rest):
        scan_line(rest)
        b.store(b.load(value_slot), value_out.address(em, rest))
        b.store(_cast_index(em, b.load(index_slot), index_dtype), index_out.address(em, rest))
    em.for_each(rest_shape, both)
    return [value_out, index_out]


def _cast_index(em, value, dtype):
    target = register_type(dtype)
    return value if target.width == 64 else em.b.trunc(value, target)


# ---- generic reduce / scan ------------------------------------------------------------------
def _slice(em, source, axes, fixed):
    """`source` with the coordinates of `axes` fixed: a lazy tensor over the other axes."""
    _, rest_shape = _split(source.shape, axes)
    if not rest_shape:
        return Scalar(source.dtype, (), source.at(em, merge_index(axes, fixed, [])))
    return Lazy(source.dtype, tuple(rest_shape), lambda e, rest: source.at(e, merge_index(axes, fixed, rest)))


@LOWERINGS.register("generic_reduce")
def _generic_reduce_op(em, op):
    sources = [em.env[n] for n in op.operands]
    axes = sorted(op.attributes["axes"])
    slots = [make_slot(em, t) for t in op.result_types]
    write_slots(em, slots, [em.env[n] for n in op.group("init")])
    reduced_shape, _ = _split(sources[0].shape, axes)
    region = op.regions[0]

    def step(reduced):
        with em.scope():
            accumulators = [read_slot(em, s) for s in slots]
            elements = [_slice(em, s, axes, reduced) for s in sources]
            write_slots(em, slots, run_region(em, region, accumulators + elements))
    em.for_each(reduced_shape, step)
    return [read_slot(em, s) for s in slots]


def _write_line(em, out: Memory, axis, k, value):
    _, rest_shape = _split(out.shape, [axis])
    em.for_each(rest_shape, lambda rest: em.b.store(value.at(em, rest), out.address(em, merge_index([axis], [k], rest))))


@LOWERINGS.register("generic_scan")
def _generic_scan_op(em, op):
    sources = [em.env[n] for n in op.operands]
    axis = op.attributes["axis"] % sources[0].rank
    exclusive, reverse = bool(op.attributes.get("exclusive", False)), bool(op.attributes.get("reverse", False))
    inits = [em.env[n] for n in op.group("init")]
    slot_types = [type(t)(dtype=t.dtype, shape=tuple(e for a, e in enumerate(t.shape) if a != axis))
                  for t in op.result_types]
    slots = [make_slot(em, t) for t in slot_types]
    write_slots(em, slots, inits)
    outs = [em.alloc(t.dtype, em.shape_of(t)) for t in op.result_types]
    n = sources[0].shape[axis]
    region = op.regions[0]
    b = em.b

    def step(k, fold: bool):
        """Member k of the prefix; the first prefix is the first element itself, as in the
        interpreter: the identity never joins a prefix's member set (§6)."""
        position = b.sub(b.sub(n, ir.Constant(I64, 1)), k) if reverse else k
        with em.scope():
            before = [read_slot(em, s) for s in slots]
            elements = [_slice(em, s, [axis], [position]) for s in sources]
            after = run_region(em, region, before + elements) if fold else elements
            if exclusive:
                for out, value in zip(outs, before):
                    _write_line(em, out, axis, position, value)
            write_slots(em, slots, after)
            if not exclusive:
                for out, slot in zip(outs, slots):
                    _write_line(em, out, axis, position, read_slot(em, slot))
    em.if_then(b.icmp_signed(">", n, ir.Constant(I64, 0)), lambda: step(ir.Constant(I64, 0), fold=False))
    em.loop(ir.Constant(I64, 1), n, lambda k: step(k, fold=True), name="g")
    return outs


# ---- region fold / scan (one slice: the whole axis) -------------------------------------------
def _whole_slice_args(em, sources, axis):
    n = sources[0].shape[axis]
    positions = Lazy("index", (n,), lambda e, idx: idx[0])
    return [Scalar("index", (), n), positions, *sources], n


@LOWERINGS.register("region_fold")
def _region_fold_op(em, op):
    sources = [em.env[n] for n in op.operands]
    axis = op.attributes["axis"]
    slots = [make_slot(em, t) for t in op.result_types]
    write_slots(em, slots, [em.env[n] for n in op.group("init")])
    args, n = _whole_slice_args(em, sources, axis)

    def summarize():
        with em.scope():
            write_slots(em, slots, run_region(em, op.regions[0], args))
    em.if_then(em.b.icmp_signed(">", n, ir.Constant(I64, 0)), summarize)
    return [read_slot(em, s) for s in slots]


@LOWERINGS.register("region_scan")
def _region_scan_op(em, op):
    sources = [em.env[n] for n in op.operands]
    axis = op.attributes["axis"]
    inits = [em.env[n] for n in op.group("init")]
    k = len(inits)
    state = [make_slot(em, t) for t in op.result_types[:k]]
    outputs = [make_slot(em, t) for t in op.result_types[k:]]
    write_slots(em, state, inits)
    args, n = _whole_slice_args(em, sources, axis)
    summarize, combine, emit = op.regions

    def run():
        with em.scope():
            incoming = [read_slot(em, s) for s in state]
            write_slots(em, outputs, run_region(em, emit, args + incoming))
            summary = run_region(em, summarize, args)
            write_slots(em, state, run_region(em, combine, incoming + summary))
    em.if_then(em.b.icmp_signed(">", n, ir.Constant(I64, 0)), run)
    return [read_slot(em, s) for s in state + outputs]
