"""reduce, scan, generic_reduce/scan, arg_reduce, region_fold/scan (spec §3, §6).

Builtin reductions use numpy's reductions (pairwise sums for f32/f64, wrapping integer
sums); f16/bf16/f8 accumulators reduce as a balanced tree of rounded adds. Generic
reductions combine adjacent pairs level by level (a legal parenthesization); a combine made
only of element-wise ops runs once per level on all pairs at once. Region folds cut the axis
into seeded random segments and merge adjacent summaries in a seeded random order, so a
summary that is not a homomorphism shows it.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..ir import errors
from ..ir.ops.reduction import COMBINE, EMPTY_ARG_REDUCE_MESSAGE, accumulator, identity
from ..ir.types import TensorType
from .conversion import convert
from .errors import InterpError
from .pointwise import binary, dtype_of
from .values import LOW_PRECISION, is_float, np_dtype
from .machine import IMPLS


def identity_array(kind: str, dtype: str) -> np.ndarray:
    """The §6 identity of a builtin reduction kind as a 0-d array of `dtype` (bool for any/all)."""
    value = identity(kind, dtype)
    return np.asarray(value) if isinstance(value, bool) else np.asarray(value, dtype=np_dtype(dtype))


def leading(x: np.ndarray, axes) -> np.ndarray:
    """Move `axes` to the front and flatten them into one axis of length n."""
    x = np.asarray(x)
    axes = [a % x.ndim for a in axes]
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, axes + rest)
    if not axes:
        return moved[None]
    # The length is spelled out: `-1` is ambiguous (numpy refuses it) when a kept axis is empty.
    length = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    return moved.reshape((length, *(x.shape[a] for a in rest)))


# ---- tree and prefix combination -----------------------------------------------------------
def tree_reduce(components: list[np.ndarray], identities: list, combine) -> list[np.ndarray]:
    """Reduce axis 0 of every component by combining adjacent pairs, level by level."""
    n = components[0].shape[0]
    if n == 0:
        rest = components[0].shape[1:]
        return [np.broadcast_to(np.asarray(i), rest).astype(c.dtype) for i, c in zip(identities, components)]
    while n > 1:
        even = n - n % 2
        merged = combine([c[0:even:2] for c in components], [c[1:even:2] for c in components])
        if n % 2:
            merged = [np.concatenate([m, c[-1:]]) for m, c in zip(merged, components)]
        components, n = merged, (n + 1) // 2
    return [c[0] for c in components]


def prefix_scan(components: list[np.ndarray], combine) -> list[np.ndarray]:
    """Inclusive scan along axis 0 by doubling (Hillis–Steele); source order is kept."""
    n = components[0].shape[0]
    step = 1
    while step < n:
        merged = combine([c[: n - step] for c in components], [c[step:] for c in components])
        components = [np.concatenate([c[:step], m]) for c, m in zip(components, merged)]
        step *= 2
    return components


def builtin_combine(kind: str):
    name = COMBINE[kind]
    return lambda left, right: [binary(name, left[0], right[0])]


def region_combine(machine, region):
    """A pairwise combine running `region` (accumulators first), batched when it can be."""
    if machine.batchable(region):
        def combine(left, right):
            out = machine.run_region_batched(region, list(left) + list(right))
            return [np.broadcast_to(np.asarray(v), like.shape).astype(like.dtype) for v, like in zip(out, left)]
        return combine

    def sequential(left, right):
        rows = [machine.run_region(region, [c[p] for c in left] + [c[p] for c in right])
                for p in range(left[0].shape[0])]
        return [np.stack([np.asarray(r[k]) for r in rows]) if rows else np.empty_like(left[k])
                for k in range(len(left))]
    return sequential


# ---- builtin reduce / scan -----------------------------------------------------------------
def reduce_builtin(x: np.ndarray, kind: str, axes, acc: str) -> np.ndarray:
    x = convert(np.asarray(x), dtype_of(x), acc)
    flat = leading(x, axes)
    ident = identity_array(kind, acc)
    with np.errstate(all="ignore"):
        if kind in ("any", "all"):
            return np.asarray(np.any(flat, axis=0) if kind == "any" else np.all(flat, axis=0))
        if acc in LOW_PRECISION:
            if kind in ("max", "min"):
                wide = flat.astype(np.float64)
                ufunc = np.maximum if kind == "max" else np.minimum
                extreme = np.asarray(ufunc.reduce(wide, axis=0, initial=float(ident)))
                return ieee_zero_order(wide, extreme, kind, running=False).astype(flat.dtype)
            return tree_reduce([flat], [ident], builtin_combine(kind))[0]
        ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[kind]
        result = np.asarray(ufunc.reduce(flat, axis=0, dtype=flat.dtype, initial=ident[()]), dtype=flat.dtype)
        return ieee_zero_order(flat, result, kind, running=False)


def ieee_zero_order(values: np.ndarray, extreme: np.ndarray, kind: str, running: bool) -> np.ndarray:
    """`extreme` (numpy's max/min of `values` along axis 0, or its running form) with IEEE
    754-2019's order of zeros, which the kinds' combines `maximum`/`minimum` use: -0 below
    +0. numpy keeps whichever zero comes first, so a max that is zero becomes +0 where a
    member is +0 (a min -0 where a member is -0), whatever the order."""
    if kind not in ("max", "min") or not np.issubdtype(values.dtype, np.floating):
        return extreme
    winner = (values == 0) & (np.signbit(values) == (kind == "min"))
    present = np.logical_or.accumulate(winner, axis=0) if running else np.any(winner, axis=0)
    zero = np.asarray(0.0 if kind == "max" else -0.0, dtype=extreme.dtype)
    return np.where((extreme == 0) & present, zero, extreme)


def _exclusive(inclusive: list[np.ndarray], identities: list) -> list[np.ndarray]:
    out = []
    for c, i in zip(inclusive, identities):
        first = np.broadcast_to(np.asarray(i, dtype=c.dtype), (1, *c.shape[1:]))
        out.append(np.concatenate([first, c[:-1]]))
    return out


def scan_components(components, identities, combine, exclusive: bool, reverse: bool):
    """Scan along axis 0 of every component, with the exclusive/reverse variants."""
    if reverse:
        components = [c[::-1] for c in components]
    result = prefix_scan(components, combine) if components[0].shape[0] else components
    if exclusive and components[0].shape[0]:
        result = _exclusive(result, identities)
    return [r[::-1] if reverse else r for r in result]


def scan_builtin(x: np.ndarray, kind: str, axis: int, acc: str, exclusive: bool, reverse: bool) -> np.ndarray:
    x = convert(np.asarray(x), dtype_of(x), acc)
    moved = np.moveaxis(x, axis, 0)
    ident = identity_array(kind, acc)
    if acc in LOW_PRECISION:
        combine = builtin_combine(kind)
        (out,) = scan_components([moved], [ident], combine, exclusive, reverse)
    else:
        ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[kind]
        source = moved[::-1] if reverse else moved
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(source, axis=0, dtype=source.dtype) if source.shape[0] else source.copy()
            out = ieee_zero_order(source, out, kind, running=True)
        if exclusive and source.shape[0]:
            (out,) = _exclusive([out], [ident])
        out = out[::-1] if reverse else out
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


@IMPLS.register("reduce")
def _reduce_op(machine, op):
    (x,) = machine.operands(op)
    kind = op.attributes["kind"].name
    acc = accumulator(kind, dtype_of(x), op.attributes.get("acc"))
    return reduce_builtin(x, kind, op.attributes["axes"], acc)


@IMPLS.register("scan")
def _scan_op(machine, op):
    (x,) = machine.operands(op)
    kind = op.attributes["kind"].name
    acc = accumulator(kind, dtype_of(x), op.attributes.get("acc"))
    return scan_builtin(x, kind, op.attributes["axis"], acc,
                        bool(op.attributes.get("exclusive", False)), bool(op.attributes.get("reverse", False)))


# ---- generic reduce / scan ---------------------------------------------------------------------
@IMPLS.register("generic_reduce")
def _generic_reduce_op(machine, op):
    sources = [np.asarray(s) for s in machine.operands(op)]
    identities = [np.asarray(i) for i in machine.group(op, "init")]
    axes = op.attributes["axes"]
    flat = [leading(s, axes) for s in sources]
    return tree_reduce(flat, identities, region_combine(machine, op.regions[0]))


@IMPLS.register("generic_scan")
def _generic_scan_op(machine, op):
    sources = [np.asarray(s) for s in machine.operands(op)]
    identities = [np.asarray(i) for i in machine.group(op, "init")]
    axis = op.attributes["axis"]
    moved = [np.moveaxis(s, axis, 0) for s in sources]
    out = scan_components(moved, identities, region_combine(machine, op.regions[0]),
                          bool(op.attributes.get("exclusive", False)), bool(op.attributes.get("reverse", False)))
    return [np.ascontiguousarray(np.moveaxis(o, 0, axis)) for o in out]


@IMPLS.register("arg_reduce")
def _arg_reduce_op(machine, op):
    (x,) = machine.operands(op)
    x = np.asarray(x)
    kind = op.attributes["kind"].name
    axis = op.attributes["axis"]
    moved = np.moveaxis(x, axis, 0)
    index_dtype = np_dtype(machine.result_dtype(op, 1))
    if moved.shape[0] == 0:
        raise InterpError(errors.EMPTY_ARG_REDUCE, EMPTY_ARG_REDUCE_MESSAGE)
    wide = moved.astype(np.float64) if dtype_of(x) in LOW_PRECISION else moved
    position = np.argmax(wide, axis=0) if kind == "max" else np.argmin(wide, axis=0)
    if is_float(dtype_of(x)):
        nan = np.isnan(wide)
        position = np.where(nan.any(axis=0), np.argmax(nan, axis=0), position)
    position = np.asarray(position)
    value = np.take_along_axis(moved, position[None], axis=0)[0]
    return [np.asarray(value), position.astype(index_dtype)]


# ---- region fold / scan ------------------------------------------------------------------------
def segments(machine, n: int) -> list[tuple[int, int]]:
    """Seeded random contiguous slices covering [0, n)."""
    if n == 0:
        return []
    count = int(machine.rng.integers(1, min(n, 4) + 1))
    cuts = sorted(machine.rng.choice(np.arange(1, n), size=count - 1, replace=False).tolist()) if count > 1 else []
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _slice_args(sources, axis, start, stop):
    length = np.asarray(stop - start, dtype=np.int64)
    positions = np.arange(start, stop, dtype=np.int64)
    slices = [np.asarray(s)[(slice(None),) * axis + (slice(start, stop),)] for s in sources]
    return [length, positions, *slices]


def _summaries(machine, op, sources, axis, parts):
    summarize = op.regions[0]
    return [machine.run_region(summarize, _slice_args(sources, axis, a, b)) for a, b in parts]


def _merge_in_random_order(machine, combine_region, summaries):
    """Merge adjacent summaries, picking the pair each time at random (order kept)."""
    summaries = list(summaries)
    while len(summaries) > 1:
        k = int(machine.rng.integers(0, len(summaries) - 1))
        merged = machine.run_region(combine_region, list(summaries[k]) + list(summaries[k + 1]))
        summaries[k:k + 2] = [merged]
    return summaries[0]


@IMPLS.register("region_fold")
def _region_fold_op(machine, op):
    sources = machine.operands(op)
    identities = machine.group(op, "init")
    axis = op.attributes["axis"]
    parts = segments(machine, np.shape(sources[0])[axis])
    if not parts:
        return list(identities)
    return list(_merge_in_random_order(machine, op.regions[1], _summaries(machine, op, sources, axis, parts)))


@IMPLS.register("region_scan")
def _region_scan_op(machine, op):
    sources = machine.operands(op)
    state = list(machine.group(op, "init"))
    axis = op.attributes["axis"]
    summarize, combine, emit = op.regions
    k = len(state)
    pieces: list[list] = []
    for start, stop in segments(machine, np.shape(sources[0])[axis]):
        args = _slice_args(sources, axis, start, stop)
        pieces.append(machine.run_region(emit, args + state))
        summary = machine.run_region(summarize, args)
        state = machine.run_region(combine, state + summary)
    outputs = []
    for index, type_ in enumerate(op.result_types[k:]):
        if pieces:
            outputs.append(np.concatenate([np.asarray(p[index]) for p in pieces], axis=0))
        else:
            outputs.append(np.empty(machine.shape(type_), dtype=np_dtype(type_.dtype))
                           if isinstance(type_, TensorType) else None)
    return state + outputs
