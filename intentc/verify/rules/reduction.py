"""Reductions and scans (§3, §6): builtin accumulators and identities, generic reduce/scan
schemas, region fold/scan schemas. Regions are walked as pure frames."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.dtypes import sum_accumulator
from ...ir.nodes import Op
from ...ir.types import TensorType
from ..context import Frame
from ..typesys import fmt, same_type, tensor_text
from . import Args, rule
from .common import (
    Results, check_axes, check_axis, region_args, region_yields, tensor_of, without_axes,
)

if TYPE_CHECKING:
    from ..walk import Verifier

_BOOL_KINDS = ("any", "all")


def _kind_ok(ctx, op, kind: str, dtype: str) -> bool:
    wants_bool = kind in _BOOL_KINDS
    if wants_bool == (dtype == "bool"):
        return True
    need = "bool" if wants_bool else "an integer or float dtype"
    ctx.error("E501", op, f"`{op.name}` kind `{kind}` needs {need}, got `{dtype}`",
              "use any/all on bool and sum/prod/max/min on numbers; compare or cast first")
    return False


def _accumulator(ctx, op, kind: str, dtype: str) -> str | None:
    """The result dtype (§3): `acc` if given, sum widening, otherwise the input dtype."""
    acc = op.attributes.get("acc")
    if acc is None:
        return sum_accumulator(dtype) if kind == "sum" else dtype
    if not isinstance(acc, TensorType) or acc.shape or (acc.dtype == "bool") != (kind in _BOOL_KINDS):
        ctx.error("E206", op, f"`acc = {fmt(acc)}` is not a scalar accumulator dtype for `{kind}`",
                  "give a scalar numeric dtype such as `acc = f32`")
        return None
    return acc.dtype


def _expect(ctx, op, dtype: str, shape: tuple, position: int, why: str) -> None:
    if position >= len(op.result_types):
        return
    written = op.result_types[position]
    expected = tensor_text(dtype, shape)
    if not isinstance(written, TensorType) or not ctx.same_shape(written.shape, shape):
        ctx.error("E502", op, f"result `{fmt(written)}` of `{op.name}` should have shape of `{expected}`",
                  "reductions drop the reduced axes; scans keep the source shape")
    elif written.dtype != dtype:
        ctx.error("E205", op, f"result dtype `{written.dtype}` of `{op.name}` should be `{dtype}`: {why}",
                  f"write `: {expected}`, or give `acc = {written.dtype}` to choose the accumulator")


def _why(kind: str, dtype: str, result: str, op) -> str:
    if "acc" in op.attributes:
        return "the result has the `acc` dtype"
    if kind == "sum" and result != dtype:
        return f"sum of `{dtype}` accumulates in `{result}` (widening table)"
    return "this reduction keeps the input dtype"


@rule("reduce")
def reduce(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    kind = op.keyword_attr("kind")
    axes = op.int_list_attr("axes")
    if source is None or not check_axes(ctx, op, axes, source.rank) or not _kind_ok(ctx, op, kind, source.dtype):
        return None
    result = _accumulator(ctx, op, kind, source.dtype)
    if result is not None:
        _expect(ctx, op, result, without_axes(source.shape, axes), 0, _why(kind, source.dtype, result, op))
    return None


@rule("scan")
def scan(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    kind = op.keyword_attr("kind")
    if source is None or not check_axis(ctx, op, op.int_attr("axis"), source.rank) or \
            not _kind_ok(ctx, op, kind, source.dtype):
        return None
    result = _accumulator(ctx, op, kind, source.dtype)
    if result is not None:
        _expect(ctx, op, result, source.shape, 0, _why(kind, source.dtype, result, op))
    return None


@rule("arg_reduce")
def arg_reduce(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    axis = op.int_attr("axis")
    if source is None or not check_axis(ctx, op, axis, source.rank) or \
            not _kind_ok(ctx, op, op.keyword_attr("kind"), source.dtype):
        return None
    if source.shape[axis] == 0:
        ctx.error("E511", op, f"`arg_reduce` over axis {axis} of static extent 0 has no extremum and no position",
                  "reduce a non-empty axis; a `reduce` of kind max/min gives the identity of an empty one")
        return None
    shape = without_axes(source.shape, (axis,))
    _expect(ctx, op, source.dtype, shape, 0, "the extremum keeps the input dtype")
    _expect(ctx, op, "index", shape, 1, "the position is an index")
    return None


# ---- generic reduce / scan ----------------------------------------------------------
def _sources(ctx, op, args, paired: bool = True) -> list[TensorType] | None:
    """Source tensors; generic reduce/scan pair each source with one identity (`paired`),
    region fold/scan summaries have their own components."""
    found = [tensor_of(ctx, op, v, f"source {k}") for k, v in enumerate(args.operands)]
    sources = [s for s in found if s is not None]
    if len(sources) < len(found):
        return None
    inits = args.group("init")
    if not sources or (paired and len(inits) != len(sources)):
        ctx.error("E503", op, f"`{op.name}` has {len(sources)} source(s) and {len(inits)} identit(y/ies)",
                  "give one identity in init(...) per source component (at least one)")
        return None
    return sources


def _same_source_shapes(ctx, op, sources) -> bool:
    if all(ctx.same_shape(s.shape, sources[0].shape) for s in sources):
        return True
    ctx.error("E504", op, f"the sources of `{op.name}` have different shapes",
              "every source component spans the same domain; broadcast them to one shape")
    return False


def _identities(ctx, op, args, components) -> bool:
    for k, (value, expected) in enumerate(zip(args.group("init"), components)):
        if not same_type(ctx, value.type, expected):
            ctx.error("E208", op, f"identity {k} of `{op.name}` is `{fmt(value.type)}`, expected `{fmt(expected)}`",
                      "each identity has its component's dtype and the source shape without the reduced axes")
            return False
    return True


def _results(ctx, op, expected: list) -> None:
    written = list(op.result_types)
    if len(written) == len(expected) and all(same_type(ctx, w, e) for w, e in zip(written, expected)):
        return
    ctx.error("E510", op, f"results of `{op.name}` are ({', '.join(fmt(t) for t in written)}), expected "
              f"({', '.join(fmt(t) for t in expected)})", f"write `: {', '.join(fmt(t) for t in expected)}`")


def _combine(ctx, op, region, components: list) -> None:
    terminator = ctx.walk_region(region, Frame("combine", pure=True))
    region_args(ctx, op, region, components + components, "E505", "combine")
    region_yields(ctx, op, region, terminator, components, "E506", "combine")


@rule("generic_reduce")
def generic_reduce(ctx: Verifier, op: Op, args: Args) -> Results:
    axes = op.int_list_attr("axes")
    return _generic(ctx, op, args, axes, lambda rank: check_axes(ctx, op, axes, rank), scan=False)


@rule("generic_scan")
def generic_scan(ctx: Verifier, op: Op, args: Args) -> Results:
    axis = op.int_attr("axis")
    return _generic(ctx, op, args, (axis,), lambda rank: check_axis(ctx, op, axis, rank), scan=True)


def _generic(ctx, op, args, axes, axes_ok, scan: bool):
    """A generic reduce or scan: same-shaped sources, one component each with `axes`
    removed, identities and combine typed by the components; a reduce yields the
    components, a scan one result like each source."""
    sources = _sources(ctx, op, args)
    if sources is None or not _same_source_shapes(ctx, op, sources) or not axes_ok(sources[0].rank):
        return _walk_all(ctx, op)
    shape = without_axes(sources[0].shape, axes)
    components = [TensorType(dtype=s.dtype, shape=shape) for s in sources]
    _identities(ctx, op, args, components)
    _combine(ctx, op, op.regions[0], components)
    _results(ctx, op, list(sources) if scan else components)
    return None


def _walk_all(ctx, op):
    for region in op.regions:
        ctx.walk_region(region, Frame("combine", pure=True))
    return None


# ---- region fold / scan -------------------------------------------------------------
def _source_axis(ctx, op, sources, axis: int):
    """The common extent of every source along the folded axis (§6: source-axis consistency)."""
    if not all(check_axis(ctx, op, axis, s.rank) for s in sources):
        return None
    extent = sources[0].shape[axis]
    if all(ctx.same_extent(s.shape[axis], extent) for s in sources):
        return extent
    ctx.error("E504", op, f"the sources of `{op.name}` differ along axis {axis}",
              "every source must span the same folded axis (the same extent identity)")
    return None


def _segment_args(region, sources, axis: int, name_hint: str = "len"):
    """Expected leading arguments of summarize/emit: %len, %pos and one slice per source."""
    len_name = region.args[0].name if region.args else name_hint
    expected = [TensorType(dtype="index"), TensorType(dtype="index", shape=(len_name,))]
    for source in sources:
        shape = list(source.shape)
        shape[axis] = len_name
        expected.append(TensorType(dtype=source.dtype, shape=tuple(shape)))
    facts = [{"role": "segment_len"}, {}] + [{"role": f"slice:{axis}"} for _ in sources]
    return len_name, expected, facts


def _summaries(ctx, op, args, sources, axis):
    summary = [v.type for v in args.group("init")]
    _, expected, facts = _segment_args(op.regions[0], sources, axis)
    terminator = ctx.walk_region(op.regions[0], Frame("summarize", pure=True), facts)
    region_args(ctx, op, op.regions[0], expected, "E505", "summarizer")
    region_yields(ctx, op, op.regions[0], terminator, summary, "E506", "summarizer")
    _combine(ctx, op, op.regions[1], summary)
    return summary


@rule("region_fold")
def region_fold(ctx: Verifier, op: Op, args: Args) -> Results:
    sources = _sources(ctx, op, args, paired=False)
    axis = op.int_attr("axis")
    if sources is None or _source_axis(ctx, op, sources, axis) is None:
        return _walk_all(ctx, op)
    _results(ctx, op, _summaries(ctx, op, args, sources, axis))
    return None


@rule("region_scan")
def region_scan(ctx: Verifier, op: Op, args: Args) -> Results:
    sources = _sources(ctx, op, args, paired=False)
    axis = op.int_attr("axis")
    extent = None if sources is None else _source_axis(ctx, op, sources, axis)
    if extent is None:
        return _walk_all(ctx, op)
    summary = _summaries(ctx, op, args, sources, axis)
    emit = op.regions[2]
    len_name, expected, facts = _segment_args(emit, sources, axis)
    terminator = ctx.walk_region(emit, Frame("emit", pure=True), facts)
    region_args(ctx, op, emit, expected + summary, "E505", "emitter")
    outputs = _emitted(ctx, op, emit, terminator, len_name)
    if outputs is not None:
        whole = [TensorType(dtype=t.dtype, shape=(extent, *t.shape[1:])) for t in outputs]
        _results(ctx, op, summary + whole)
    return None


def _emitted(ctx, op, emit, terminator, len_name: str):
    if terminator is None:
        ctx.error("E0055", emit, f"emitter `^{emit.label}` of `region_scan` must end with `yield`",
                  "yield the outputs of the slice")
        return None
    yield_op, values = terminator
    if None in values:
        return None
    types = [v.type for v in values]
    for type_ in types:
        if not isinstance(type_, TensorType) or not type_.shape or not ctx.same_extent(type_.shape[0], len_name):
            ctx.error("E506", yield_op, f"emitter output `{fmt(type_)}` must have the slice length "
                      f"`%{len_name}` as its axis 0", f"yield tensors shaped [%{len_name}, ...]")
            return None
    return types

