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
from ...ir.types import TensorType
from ...ir.ops.reduction import COMBINE, EMPTY_ARG_REDUCE_MESSAGE, accumulator, identity
from .control import make_slot, read_slot, run_region, write_slots
from .conversion import convert
from .emitter import CheckSite
from .pointwise import binary
from .types import I1, I64, const, is_float, is_signed, register_type
from .values import Lazy, Memory, RecordVal, Scalar
from .lowering import LOWERINGS

TRUE, FALSE = ir.Constant(I1, 1), ir.Constant(I1, 0)

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
    # The max/min of 16-bit floats is one of them, and each is exactly an f32: f32 registers
    # (f32 compares, 32-bit shuffles) give the value their f64 images would.
    work = "f32" if kind in ("max", "min") and acc in ("f16", "bf16") and x.dtype == acc else acc
    slot = em.entry_alloca(register_type(work))

    def compute(rest):
        accumulator = _Accumulator(em, slot, identity_const(kind, work))

        def step(reduced):
            element = convert(em, op, x.at(em, merge_index(axes, reduced, rest)), x.dtype, work)
            before = accumulator.value()
            after = combine_builtin(em, op, kind, before, element, work)
            accumulator.store(after if em.lane_mask is None else em.b.select(em.lane_mask, after, before))
        em.for_each(reduced_shape, step, lane_safe=True)
        extreme = em.hooks.combine_partials(em, op, kind, accumulator.value(), work,
                                            lambda a, b: combine_builtin(em, op, kind, a, b, work))
        return convert(em, op, extreme, work, acc)
    return _into(em, rest_shape, acc, compute)


class _Accumulator:
    """A reduction's running value in its entry-block slot. Its value is the one stored last
    where that store is in the block being built (an unrolled register form's slots are one
    block: no load to build and print for LLVM to forward), else the slot's load (the first
    step of a loop over the coordinates, the value after it). Only the reduction stores to
    its slot, so nothing comes between."""

    def __init__(self, em, slot: ir.Value, initial: ir.Value):
        self.em, self.slot = em, slot
        self.store(initial)

    def store(self, value: ir.Value) -> None:
        self.em.b.store(value, self.slot)
        self.stored = (self.em.b.block, value)

    def value(self) -> ir.Value:
        block, value = self.stored
        return value if block is self.em.b.block else self.em.b.load(self.slot)


@LOWERINGS.register("scan")
def _scan_op(em, op):
    (x,) = (em.env[n] for n in op.operands)
    kind = op.attributes["kind"].name
    axis = op.attributes["axis"] % x.rank
    acc = accumulator(kind, x.dtype, op.attributes.get("acc"))
    exclusive, reverse = bool(op.attributes.get("exclusive", False)), bool(op.attributes.get("reverse", False))
    if axis == x.rank - 1:
        # Every combine with "nothing yet" uses the neutral element, so no prefix gains a
        # member it does not have; only an exclusive scan's first output is the identity.
        scanned = em.hooks.scan(em, x.shape, lambda idx: [convert(em, op, x.at(em, idx), x.dtype, acc)],
                                lambda a, b: [binary(em, op, COMBINE[kind], a[0], b[0], acc)], [acc],
                                exclusive, reverse, [identity_const(kind, acc)], [scan_neutral(kind, acc)])
        if scanned is not None:
            return scanned[0]
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
    axis = op.attributes["axis"] % x.rank
    n = x.shape[axis]
    em.check(CheckSite(op, errors.EMPTY_ARG_REDUCE, EMPTY_ARG_REDUCE_MESSAGE),
             em.b.icmp_signed("==", n, ir.Constant(I64, 0)))
    _, rest_shape = _split(x.shape, [axis])
    value_slot = em.entry_alloca(register_type(x.dtype))
    index_slot = em.entry_alloca(I64)
    b = em.b
    index_dtype = op.result_types[1].dtype
    combine, identities = arg_reduce_combine(em, op)

    def scan_line(rest):
        """Fold (element, position) pairs from (identity, NO_INDEX) along the axis; a
        target may spread the positions over threads and combine the partial pairs."""
        for slot, start in zip((value_slot, index_slot), identities):
            b.store(start, slot)

        def step(k):
            element = x.at(em, merge_index([axis], k, rest))
            best, best_index = combine((b.load(value_slot), b.load(index_slot)), (element, k[0]))
            b.store(best, value_slot)
            b.store(best_index, index_slot)
        em.for_each((n,), step)
        return em.hooks.combine_tuple(em, op, [b.load(value_slot), b.load(index_slot)], identities, combine)

    if not rest_shape:
        value, index = scan_line([])
        return [Scalar(x.dtype, (), value), Scalar(index_dtype, (), _cast_index(em, index, index_dtype))]
    (value_out, index_out), finish = em.hooks.result_arrays(em, op, [x.dtype, index_dtype], rest_shape)

    def both(rest):
        value, index = scan_line(rest)
        b.store(value, value_out.address(em, rest))
        b.store(_cast_index(em, index, index_dtype), index_out.address(em, rest))
    em.for_each(rest_shape, both)
    finish()
    return [value_out, index_out]


# The position of "no element yet": above every real one (unsigned), so any element ties it
# and wins on position.
NO_INDEX = ir.Constant(I64, -1)


def arg_reduce_combine(em, op: Op) -> tuple:
    """(the combine of two [value, position] partials of arg_reduce `op`, their identities)."""
    kind, dtype = op.attributes["kind"].name, op.result_types[0].dtype
    return (lambda a, c: list(arg_combine(em, kind, dtype, a, c))), [identity_const(kind, dtype), NO_INDEX]


def arg_combine(em, kind: str, dtype: str, a: tuple, c: tuple) -> tuple[ir.Value, ir.Value]:
    """The arg_reduce winner of two (value, position) candidates: a NaN over any number
    (NaN propagates), else the extremum, the lower position on a tie (NaN against NaN
    too). Associative and commutative, so any tree of combines gives the sequential
    fold's pair, bit for bit."""
    b = em.b
    (value_a, index_a), (value_c, index_c) = a, c
    earlier = b.icmp_unsigned("<", index_c, index_a)
    predicate = ">" if kind == "max" else "<"
    if is_float(dtype):
        nan_a, nan_c = b.fcmp_unordered("uno", value_a, value_a), b.fcmp_unordered("uno", value_c, value_c)
        tie = b.or_(b.fcmp_ordered("==", value_c, value_a), b.and_(nan_a, nan_c))
        # (c > a) or (c NaN and a not) is "c > a or unordered" and "a not NaN": two
        # instructions a fold step fewer (argmax over a row: a compare a slot)
        better = b.and_(b.fcmp_unordered(predicate, value_c, value_a), b.not_(nan_a))
    else:
        tie = b.icmp_signed("==", value_c, value_a)
        better = b.icmp_signed(predicate, value_c, value_a) if is_signed(dtype) else \
            b.icmp_unsigned(predicate, value_c, value_a)
    take = b.or_(better, b.and_(tie, earlier))
    return b.select(take, value_c, value_a), b.select(take, index_c, index_a)


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
    """Each fold starts from its first member, never from the identity, like the
    interpreter's tree: an identity that is not neutral for every value (nan_max's -inf
    under maximum_num) must not join a non-empty fold on one target and not another. A
    presence flag marks partials that hold a member; only an empty domain gives the
    identity."""
    b = em.b
    sources = [em.env[n] for n in op.operands]
    axes = sorted(op.attributes["axes"])
    slots = [make_slot(em, t) for t in op.result_types]
    inits = [em.env[n] for n in op.group("init")]
    write_slots(em, slots, inits)
    present = em.entry_alloca(I1)
    b.store(FALSE, present)
    reduced_shape, _ = _split(sources[0].shape, axes)
    region = op.regions[0]

    def step(reduced):
        with em.scope():
            accumulators = [read_slot(em, s) for s in slots]
            elements = [_slice(em, s, axes, reduced) for s in sources]
            folded = run_region(em, region, accumulators + elements)
            seen = b.load(present)
            write_slots(em, slots, [_select_tensor(em, seen, f, e) for f, e in zip(folded, elements)])
            b.store(TRUE, present)
    em.for_each(reduced_shape, step)
    if not all(isinstance(t, TensorType) and not t.shape for t in op.result_types):
        return [read_slot(em, s) for s in slots]
    dtypes = [t.dtype for t in op.result_types]
    partials = [read_slot(em, s).value for s in slots] + [b.load(present)]
    identities = [i.at(em, []) for i in inits]
    *values, seen = em.hooks.combine_tuple(em, op, partials, [*identities, FALSE], generic_reduce_combine(em, op))
    return [Scalar(d, (), b.select(seen, v, i)) for d, v, i in zip(dtypes, values, identities)]


def generic_reduce_combine(em, op: Op):
    """The combine of two partials of generic_reduce `op` to scalars: its components, then
    the presence flag; the author's region joins two present partials, an absent one gives
    way to the other."""
    b = em.b
    dtypes = [t.dtype for t in op.result_types]

    def combine(first, second):
        *values_a, seen_a = first
        *values_c, seen_c = second
        with em.scope():
            args = [Scalar(d, (), v) for d, v in zip(dtypes + dtypes, values_a + values_c)]
            merged = [value.at(em, []) for value in run_region(em, op.regions[0], args)]
        return [b.select(seen_a, b.select(seen_c, m, a), c) for m, a, c in zip(merged, values_a, values_c)] + \
            [b.or_(seen_a, seen_c)]
    return combine


def _select_tensor(em, condition, then, otherwise):
    """`then` where `condition` holds, else `otherwise`: tensors of any shape."""
    if not then.shape:
        return Scalar(then.dtype, (), em.b.select(condition, then.at(em, []), otherwise.at(em, [])))
    return Lazy(then.dtype, then.shape, lambda e, idx: e.b.select(condition, then.at(e, idx), otherwise.at(e, idx)))


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
    region = op.regions[0]
    if sources[0].rank == 1:           # (along an axis of more, the combine takes whole slices)
        def combine(first, second):
            with em.scope():
                args = [Scalar(t.dtype, (), v) for t, v in zip(slot_types + slot_types, list(first) + list(second))]
                return [value.at(em, []) for value in run_region(em, region, args)]
        scanned = em.hooks.scan(em, sources[0].shape, lambda idx: [s.at(em, idx) for s in sources], combine,
                                [t.dtype for t in op.result_types], exclusive, reverse,
                                [i.at(em, []) for i in inits], None)
        if scanned is not None:
            return scanned
    outs = [em.alloc(t.dtype, em.shape_of(t)) for t in op.result_types]
    n = sources[0].shape[axis]
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
    args, n = _whole_slice_args(em, sources, axis)
    if em.hooks.inline_region_scan(em):
        return _inline_region_scan(em, op, inits, args, n)
    summarize, combine, emit = op.regions
    state = [make_slot(em, t) for t in op.result_types[:k]]
    outputs = [make_slot(em, t) for t in op.result_types[k:]]
    write_slots(em, state, inits)

    def run():
        with em.scope():
            incoming = [read_slot(em, s) for s in state]
            write_slots(em, outputs, run_region(em, emit, args + incoming))
            summary = run_region(em, summarize, args)
            write_slots(em, state, run_region(em, combine, incoming + summary))
    em.if_then(em.b.icmp_signed(">", n, ir.Constant(I64, 0)), run)
    return [read_slot(em, s) for s in state + outputs]


def _inline_region_scan(em, op, inits, args, n):
    """The whole axis as one slice, its regions run unconditionally: emit's outputs are
    the results as they are (no copy), the final state is combine(init, summary) where the
    axis is non-empty, else the init; checks in the regions count only where it is
    non-empty (an empty slice is no illegal input)."""
    summarize, combine, emit = op.regions
    nonempty = em.b.icmp_signed(">", n, ir.Constant(I64, 0))
    with em.checks_only_where(nonempty):
        outputs = run_region(em, emit, args + inits)
        summary = run_region(em, summarize, args)
        merged = run_region(em, combine, inits + summary)
    return [_select_value(em, nonempty, a, b) for a, b in zip(merged, inits)] + outputs


def _select_value(em, condition, then, otherwise):
    """`then` where `condition` holds, else `otherwise`: scalars, tuples and records of them."""
    if isinstance(then, RecordVal):
        return RecordVal({k: _select_value(em, condition, v, otherwise.fields[k]) for k, v in then.fields.items()})
    if isinstance(then, tuple):
        return tuple(_select_value(em, condition, a, b) for a, b in zip(then, otherwise))
    return Scalar(then.dtype, (), em.b.select(condition, then.at(em, []), otherwise.at(em, [])))
