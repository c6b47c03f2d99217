"""Recognizing an iteration that is a batch of independent dot products: the kernel shape the
lane-group dot mapping runs (docs/gpu.md, "Lane-group dots"; `lane_dots.py` emits it).

The kernel's top level is `iota`s, broadcasts, pure scalars and one `parallel` over one
extent P; its iteration reads two whole slices of views — every view axis indexed by the
iteration's coordinate (an axis of extent P) or by an `iota` running along one axis of the
read's result whose extent is that view axis's extent, no mask — contracts them along ONE
axis (`contract`, or a named form) with any batch and free axes, optionally multiplies the
result by a broadcast scalar, and writes it whole to a slice of a third view indexed the
same way. Every output element is then one dot product of two strided rows of length D,
each independent of the others, which the mapping spreads over groups of lanes. Anything
else raises NoMatch: the kernel keeps its other mappings.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.nodes import Kernel, Op
from ...ir.ops.contraction import contraction_axes
from ...ir.types import TensorType, ViewType
from .tile_contraction import NoMatch, _is_contraction

DOT_OPERANDS = ("f32", "f16", "bf16")   # widened exactly to the f32 accumulator


@dataclass(frozen=True)
class Iota:
    """An index tensor of `shape` whose element is its coordinate along `axis`."""
    shape: tuple
    axis: int


@dataclass(frozen=True)
class Slice:
    """A whole slice of a view: `axes[r]` is the view axis result axis r runs along; the view
    axis `coordinate_axis` is indexed by the iteration's coordinate."""
    view: str
    axes: tuple
    coordinate_axis: int
    shape: tuple


@dataclass(frozen=True)
class IterationDots:
    """out[it, r...] = scale · sum_d lhs[it, ...d...] · rhs[it, ...d...] for every coordinate
    r of the contraction's result (batch axes, lhs free axes, rhs free axes)."""
    parallel: Op
    lhs: Slice
    rhs: Slice
    out: Slice
    lhs_of_result: tuple          # result axis -> lhs result axis (None: not an lhs axis)
    rhs_of_result: tuple
    lhs_contract: int             # the contracted axis of each operand's result
    rhs_contract: int
    operand_dtypes: tuple
    acc_dtype: str
    scale: str | None             # the kernel scalar multiplying each dot, if any
    depth: int | str              # D: the contracted extent (int, or its name)
    values: tuple = ()            # the iteration's tensor values, for the layout record


def _broadcast_axis(value, shape: tuple) -> int | None:
    """The result axis an iota varies along once broadcast (numpy rule) to `shape`."""
    if not isinstance(value, Iota):
        raise NoMatch("an index that is not an iota or the iteration's coordinate")
    lead = len(shape) - len(value.shape)
    if lead < 0 or any(e != 1 and e != shape[lead + a] for a, e in enumerate(value.shape)):
        raise NoMatch("an index that does not broadcast to the access")
    axis = lead + value.axis
    return axis if value.shape[value.axis] != 1 else None


def _tensor(type_) -> TensorType:
    if not isinstance(type_, TensorType):
        raise NoMatch("a value that is not a tensor")
    return type_


def _slice(env: dict, op: Op, coordinate: str, domain, views: dict) -> Slice:
    """The whole slice a read or write accesses, or NoMatch."""
    name = op.operands[0]
    view = views.get(name)
    written = op.result_types[0] if op.name == "read" else env["types"][op.operands[1]]
    shape = tuple(_tensor(written).shape)
    if view is None or op.group("mask") or op.group("fill"):
        raise NoMatch("an access with a mask, or not of a kernel view")
    indices = op.group("index") or ()
    if len(indices) != len(view.shape):
        raise NoMatch("an access that does not index every view axis")
    axes: list[int | None] = [None] * len(shape)
    coordinate_axis = None
    for view_axis, index in enumerate(indices):
        if index == coordinate:
            if coordinate_axis is not None or view.shape[view_axis] != domain:
                raise NoMatch("the coordinate indexes an axis of another extent")
            coordinate_axis = view_axis
            continue
        axis = _broadcast_axis(env.get(index), shape)
        if axis is None or axes[axis] is not None or shape[axis] != view.shape[view_axis]:
            raise NoMatch("an index that is not a whole view axis")
        axes[axis] = view_axis
    if coordinate_axis is None or None in axes:
        raise NoMatch("an access that is not one whole slice at the coordinate")
    return Slice(name, tuple(axes), coordinate_axis, shape)


def match_iteration_dots(kernel: Kernel) -> IterationDots:
    """The kernel as a batch of dot products per iteration, or NoMatch saying why not."""
    views = {p.name: p.type for p in kernel.params if isinstance(p.type, ViewType)}
    scalars = {p.name for p in kernel.params if isinstance(p.type, TensorType) and not p.type.shape}
    env: dict = {"types": {}}
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1 or len(parallels[0].operands) != 1:
        raise NoMatch("not one top-level parallel over one extent")
    for op in kernel.body:
        if op is parallels[0] or op.name == "yield":
            continue
        if op.name != "iota" or op.regions:
            raise NoMatch(f"op `{op.name}` at the top level")
        type_ = _tensor(op.result_types[0])
        env[op.results[0]] = Iota(tuple(type_.shape), op.int_attr("axis", len(type_.shape) - 1))
    parallel = parallels[0]
    domain = parallel.operands[0]
    region = parallel.regions[0]
    coordinate = region.args[0].name
    ops = [op for op in region.ops if op.name != "yield"]
    reads: dict[str, Slice] = {}
    position = 0
    while position < len(ops) and ops[position].name == "read":
        op = ops[position]
        reads[op.results[0]] = _slice(env, op, coordinate, domain, views)
        env["types"][op.results[0]] = op.result_types[0]
        position += 1
    if position >= len(ops) or not _is_contraction(ops[position]):
        raise NoMatch("the iteration does not read two slices and contract them")
    contraction = ops[position]
    if contraction.group("init") or any(name not in reads for name in contraction.operands):
        raise NoMatch("a contraction of other than two whole slices")
    lhs, rhs = (reads[name] for name in contraction.operands)
    current, scale, write = contraction.results[0], None, None
    for op in ops[position + 1:]:
        if op.name == "broadcast" and op.operands[0] in scalars and "dims" not in op.attributes:
            env[op.results[0]] = ("scalar", op.operands[0])
        elif op.name == "mul" and scale is None and current in op.operands:
            other = env.get(op.operands[1 - op.operands.index(current)])
            if not (isinstance(other, tuple) and other[0] == "scalar"):
                raise NoMatch("a product with other than a broadcast scalar")
            scale, current = other[1], op.results[0]
        elif op.name == "write" and write is None and op.operands[1] == current:
            env["types"][current] = contraction.result_types[0]
            write = _slice(env, op, coordinate, domain, views)
        else:
            raise NoMatch(f"op `{op.name}` after the contraction")
    if write is None:
        raise NoMatch("the contraction is not written")
    return _dots(parallel, contraction, lhs, rhs, write, views, scale)


def _dots(parallel, contraction, lhs: Slice, rhs: Slice, out: Slice, views: dict, scale) -> IterationDots:
    lhs_contract, rhs_contract, lhs_batch, rhs_batch = contraction_axes(contraction)
    if len(lhs_contract) != 1:
        raise NoMatch("a contraction over several axes")
    acc = contraction.attributes["acc"].dtype
    dtypes = (views[lhs.view].dtype, views[rhs.view].dtype)
    if acc != "f32" or views[out.view].dtype != "f32" or not set(dtypes) <= set(DOT_OPERANDS):
        raise NoMatch("dtypes other than f32/f16/bf16 operands into an f32 accumulator and output")
    lhs_free = [a for a in range(len(lhs.shape)) if a not in lhs_contract and a not in lhs_batch]
    rhs_free = [a for a in range(len(rhs.shape)) if a not in rhs_contract and a not in rhs_batch]
    lhs_of_result = tuple(lhs_batch) + tuple(lhs_free) + (None,) * len(rhs_free)
    rhs_of_result = tuple(rhs_batch) + (None,) * len(lhs_free) + tuple(rhs_free)
    values = (*contraction.operands, contraction.results[0])
    return IterationDots(parallel, lhs, rhs, out, lhs_of_result, rhs_of_result, lhs_contract[0], rhs_contract[0],
                         dtypes, acc, scale, lhs.shape[lhs_contract[0]], values)
