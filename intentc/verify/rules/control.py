"""Structured control (§10 and docs/kir.md §3): parallel domains, ordered loops, if, yield,
helper calls (typed, pure, not recursive), and buffers never leaving their kernel (§9)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.nodes import Helper, Module, Op
from ...ir.types import BufferType, RecordType, TensorType, TupleType
from .. import affine
from ..context import Context, Frame, Value
from ..typesys import fmt, same_type
from . import Args, rule
from .common import Results, region_args, region_yields, scalar_of

if TYPE_CHECKING:
    from ..walk import Verifier

_INDEX = TensorType(dtype="index")


def _everything(ctx) -> frozenset:
    return frozenset(name for _, frame in ctx.parallel_frames() for name, _ in frame.parallel_vars)


@rule("parallel")
def parallel(ctx: Verifier, op: Op, args: Args) -> Results:
    body = op.regions[0]
    ok = all(scalar_of(ctx, op, v, f"extent {k}", ("index",), "E740",
                       "a domain extent is an index scalar") for k, v in enumerate(args.operands))
    if len(body.args) != len(op.operands) or any(a.type != _INDEX for a in body.args):
        ctx.error("E740", body, f"the body of `parallel` takes one index argument per extent "
                  f"({len(op.operands)}), got ({', '.join(fmt(a.type) for a in body.args)})",
                  "write `^body(%i0: index, ...)` with one argument per extent")
        ok = False
    extents = [v.const if isinstance(v.const, int) else name for v, name in zip(args.operands, op.operands)]
    variables = tuple(zip((a.name for a in body.args), extents)) if ok else ()
    facts = [{"fact": affine.var(a.name), "deps": frozenset([a.name]), "splat": True} for a in body.args]
    ctx.walk_region(body, Frame("parallel", parallel_vars=variables), facts)
    return None


@rule("loop")
def loop(ctx: Verifier, op: Op, args: Args) -> Results:
    body = op.regions[0]
    bounds = args.operands
    ok = all(scalar_of(ctx, op, v, name, ("index",), "E741", "loop bounds and step are index scalars")
             for v, name in zip(bounds, ("lower bound", "upper bound", "step")))
    step = bounds[2].const
    if isinstance(step, int) and not isinstance(step, bool) and step <= 0:
        ctx.error("E741", op, f"loop step {step} is not positive", "a loop step must be positive")
    carried = [v.type for v in args.group("iter")]
    control = bounds[0].deps | bounds[1].deps | bounds[2].deps
    facts = [{"deps": control}] + [{"deps": _everything(ctx)} for _ in carried]
    terminator = ctx.walk_region(body, Frame("loop", control=control), facts)
    if ok and region_args(ctx, op, body, [_INDEX, *carried], "E741", "body"):
        region_yields(ctx, op, body, terminator, carried, "E741", "body")
    _results(ctx, op, carried, "E741", "a loop yields its carried values")
    return None


def _results(ctx, op, expected, code: str, why: str) -> None:
    written = list(op.result_types)
    if len(written) == len(expected) and all(same_type(ctx, w, e) for w, e in zip(written, expected)):
        return
    ctx.error(code, op, f"results of `{op.name}` are ({', '.join(fmt(t) for t in written)}), expected "
              f"({', '.join(fmt(t) for t in expected)}): {why}", "write one result type per carried/yielded value")


@rule("if")
def if_(ctx: Verifier, op: Op, args: Args) -> Results:
    scalar_of(ctx, op, args[0], "condition", ("bool",), "E742", "compare to make a bool scalar condition")
    results = list(op.result_types)
    frame_control = args[0].deps
    for region in op.regions:
        terminator = ctx.walk_region(region, Frame("if", control=frame_control))
        region_yields(ctx, op, region, terminator, results, "E742", "branch")
    if results and len(op.regions) < 2:
        ctx.error("E742", op, "an `if` with results needs an else region",
                  "add `{ ^else: ... yield ... }` yielding the same types")
    return None


@rule("yield")
def yield_(ctx: Verifier, op: Op, args: Args) -> Results:
    for value in args.operands:
        if _holds_buffer(value.type):
            ctx.error("E720", op, "a buffer is yielded out of its region",
                      "buffers are lexical: read the values you need and yield those")
            return None
    return None


def _holds_buffer(type_) -> bool:
    if isinstance(type_, BufferType):
        return True
    if isinstance(type_, TupleType):
        return any(_holds_buffer(t) for t in type_.elements)
    if isinstance(type_, RecordType):
        return any(_holds_buffer(f.type) for f in type_.fields)
    return False


@rule("call")
def call(ctx: Verifier, op: Op, args: Args) -> Results:
    callee = op.symbol_attr("callee")
    helper = ctx.helpers.get(callee)
    if helper is None:
        ctx.error("E0053", op, f"`@{callee}` is not a helper", "call a `helper` declared in this module")
        return None
    ctx.calls.setdefault(ctx.current_item, {}).setdefault(callee, op)
    if any(_holds_buffer(v.type) for v in args.operands):
        ctx.error("E720", op, "a buffer is passed to a helper", "pass the values read from the buffer instead")
        return None
    binding = _bind(ctx, helper, args.operands, op.operands)
    if binding is None:
        params = ", ".join(fmt(p.type) for p in helper.params)
        ctx.error("E743", op, f"arguments ({', '.join(fmt(v.type) for v in args.operands)}) do not match "
                  f"`@{callee}`({params})", "pass one value of each parameter type, in order")
        return None
    expected = [_substitute(t, binding) for t in helper.result_types]
    written = list(op.result_types)
    if len(written) != len(expected) or not all(_matches(ctx, e, w, dict(binding)) for e, w in zip(expected, written)):
        ctx.error("E743", op, f"results ({', '.join(fmt(t) for t in written)}) do not match `@{callee}` -> "
                  f"({', '.join(fmt(t) for t in expected)})", "write the helper's result types")
    return None


def _bind(ctx, helper: Helper, values, names) -> dict | None:
    """Bind the helper's extent names to the caller's extents; None when a type does not match."""
    if len(values) != len(helper.params):
        return None
    binding = {p.name: ctx.canon(n) for p, n in zip(helper.params, names) if p.type == _INDEX}
    for param, value in zip(helper.params, values):
        if not _matches(ctx, param.type, value.type, binding):
            return None
    return binding


def _matches(ctx, pattern, actual, binding: dict) -> bool:
    if isinstance(pattern, TensorType) and isinstance(actual, TensorType):
        if pattern.dtype != actual.dtype or pattern.rank != actual.rank:
            return False
        return all(_extent_matches(ctx, p, a, binding) for p, a in zip(pattern.shape, actual.shape))
    if isinstance(pattern, TupleType) and isinstance(actual, TupleType):
        return len(pattern.elements) == len(actual.elements) and all(
            _matches(ctx, p, a, binding) for p, a in zip(pattern.elements, actual.elements))
    if isinstance(pattern, RecordType) and isinstance(actual, RecordType):
        return [f.name for f in pattern.fields] == [f.name for f in actual.fields] and all(
            _matches(ctx, p.type, a.type, binding) for p, a in zip(pattern.fields, actual.fields))
    return same_type(ctx, pattern, actual)


def _extent_matches(ctx, pattern, actual, binding: dict) -> bool:
    actual = ctx.canon(actual)
    if isinstance(pattern, int):
        return pattern == actual
    bound = binding.setdefault(pattern, actual)
    return bound == actual


def _substitute(type_, binding: dict):
    if isinstance(type_, TensorType):
        return TensorType(dtype=type_.dtype, shape=tuple(binding.get(e, e) if isinstance(e, str) else e
                                                         for e in type_.shape))
    if isinstance(type_, TupleType):
        return TupleType(elements=tuple(_substitute(t, binding) for t in type_.elements))
    if isinstance(type_, RecordType):
        return RecordType(fields=tuple(f.model_copy(update={"type": _substitute(f.type, binding)})
                                       for f in type_.fields))
    return type_


def check_helper_body(ctx: Context, helper: Helper, terminator: tuple[Op, list[Value | None]] | None) -> None:
    expected = list(helper.result_types)
    if terminator is None:
        ctx.error("E744", helper, f"helper `@{helper.name}` must end with `yield` of its results",
                  f"end the body with `yield` of ({', '.join(fmt(t) for t in expected)})")
        return
    yield_op, values = terminator
    got = [v.type for v in values if v is not None]
    if len(got) < len(values):             # an undefined value was reported already
        return
    if len(got) != len(expected) or not all(same_type(ctx, g, e) for g, e in zip(got, expected)):
        ctx.error("E744", yield_op, f"helper `@{helper.name}` yields ({', '.join(fmt(t) for t in got)}), "
                  f"declared -> ({', '.join(fmt(t) for t in expected)})", "yield the declared result types")
    for type_ in expected:
        if _holds_buffer(type_):
            ctx.error("E720", helper, f"helper `@{helper.name}` returns a buffer",
                      "buffers never leave their kernel; return values")
            return


def report_recursion(ctx: Context, module: Module) -> None:
    """Helpers do not recurse (docs §3): report each call that closes a cycle."""
    for start, calls in ctx.calls.items():
        for callee, op in calls.items():
            if _reaches(ctx.calls, callee, start):
                ctx.error("E743", op, f"`@{callee}` leads back to `@{start}`: helpers do not recurse",
                          "write the repetition as a `loop`")


def _reaches(calls: dict, source: str, target: str) -> bool:
    seen, stack = set(), [source]
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(calls.get(node, {}))
    return False
