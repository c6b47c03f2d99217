"""Which ops with regions, helper calls and multi-component reductions a CTA-mapped
iteration may hold (docs/gpu.md), beside `cta.py`'s rules for the rest.

Every thread of the CTA runs the iteration's scalar code redundantly (reductions give every
thread the same bits), so a `loop` or `if` whose results are scalars stays uniform: every
thread takes the same trips and branches, and the tensor ops inside spread over the CTA as
they do at the top of the iteration. A helper call is inlined at lowering, so it qualifies
when its body does. arg_reduce and generic_reduce to scalars combine per-thread partials
(`cta_reduce.py`); region_fold to scalars summarizes the whole axis as one slice, whose
tensor ops spread over the CTA like the iteration's own.
"""
from __future__ import annotations

import math

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ...ir.nodes import Helper, Op, SymbolRef
from ...ir.optable import ops_where
from ...ir.types import RecordType, TensorType, TupleType, Type

AGGREGATES = ops_where(lambda op: op.family == "aggregate")
# Ops whose regions are code the iteration runs inline (loop, if, generic_reduce's combine,
# region_fold's summarizer), not a domain of their own (`parallel`) or an effect's combine.
INLINE_REGIONS = ops_where(lambda op: bool(op.regions) and not op.effects and op.name != "parallel")
SCANS = ops_where(lambda op: "reverse" in op.attrs)

BlockOk = Callable[[Sequence[Op]], bool]


def _scalar(type_: Type) -> bool:
    if isinstance(type_, TensorType):
        return not type_.shape
    if isinstance(type_, TupleType):
        return all(_scalar(t) for t in type_.elements)
    if isinstance(type_, RecordType):
        return all(_scalar(f.type) for f in type_.fields)
    return True


def _body(ops: Sequence[Op]) -> list[Op]:
    return [op for op in ops if op.name != "yield"]


def _rank(type_: Type) -> int | None:
    return type_.rank if isinstance(type_, TensorType) else None


def scans_last_axis(op: Op) -> bool:
    """Whether a scan runs along the last axis of its (tensor) results, which block scans
    take as the segments of one scan in row-major order."""
    ranks = {_rank(t) for t in op.result_types}
    axis = op.attributes.get("axis")
    return len(ranks) == 1 and isinstance(axis, int) and (rank := ranks.pop() or 0) >= 1 and axis % rank == rank - 1


def callee(op: Op, helpers: Mapping[str, Helper]) -> Helper | None:
    """The helper a `call` op calls (None for another op)."""
    symbol = op.attributes.get("callee") if op.name == "call" else None
    return helpers.get(symbol.name) if isinstance(symbol, SymbolRef) else None


def region_op_ok(op: Op, helpers: Mapping[str, Helper], block_ok: BlockOk) -> bool | None:
    """Whether the iteration may hold `op`, or None when `op` is none of the kinds this
    module decides (`block_ok` judges a nested block by cta.py's rules)."""
    if op.name in AGGREGATES:
        return True
    if op.name == "arg_reduce":            # partial: staged in shared memory (staged_reductions)
        return True
    if op.name == "generic_scan":          # rank 1 (its combine takes whole slices): block scans
        return all(_rank(t) == 1 for t in op.result_types) and block_ok(_body(op.regions[0].ops))
    if op.name == "region_scan":          # the whole axis one slice, emit's outputs kept as they are
        k = len(op.group("init") or ())
        return (all(_scalar(t) for t in op.result_types[:k]) and all(_rank(t) == 1 for t in op.result_types[k:])
                and all(block_ok(_body(r.ops)) for r in op.regions))
    if op.name in INLINE_REGIONS:         # scalar results: loop, if, generic_reduce, region_fold
        return all(_scalar(t) for t in op.result_types) and all(block_ok(_body(r.ops)) for r in op.regions)
    if op.name == "call":
        helper = callee(op, helpers)
        return helper is not None and block_ok(_body(helper.body))
    return None


def nested_ops(ops: Sequence[Op], helpers: Mapping[str, Helper]) -> Iterator[Op]:
    """`ops`, the ops of their regions and the bodies of the helpers they call, depth first."""
    for op in ops:
        yield op
        for region in op.regions:
            yield from nested_ops(region.ops, helpers)
        helper = callee(op, helpers)
        if helper is not None:
            yield from nested_ops(helper.body, helpers)



ELEMENTWISE = ops_where(lambda op: op.cta_per_coordinate)
# Reductions combined over the whole CTA through shared memory (tuple combines, block scans,
# a summarizer's): an iteration holding one keeps its CTA to itself (no short-row groups).
CTA_WIDE = ops_where(lambda op: op.family == "reduction" and op.name != "reduce")
# Reductions whose loop visits every coordinate of their source, and whose region (if any)
# sees one element: reduce, arg_reduce, generic_reduce and the contractions.
FOLDS = ops_where(lambda op: op.contraction or (op.family == "reduction" and "reverse" not in op.attrs
                                                and len(op.regions) <= 1))


def _names_used(op: Op) -> Iterator[str]:
    yield from op.operands
    for group in op.groups:
        yield from group.values


def _consumes_by_coordinate(op: Op, shape: tuple) -> bool:
    """Whether `op` reads a scan-derived operand of `shape` only at the coordinates its own
    loop visits: a write, a full reduction (generic_reduce's region sees one element), or
    an element-wise op of that shape."""
    if op.name == "write":
        return True
    if op.name in FOLDS:
        return all(_scalar(t) for t in op.result_types)
    return (op.name in ELEMENTWISE and op.name != "broadcast"
            and all(isinstance(t, TensorType) and t.shape == shape for t in op.result_types))


Fact = tuple[bool, tuple] | None       # a scan-derived value: (reversed, the scan's shape)


def chunk_scans_ok(ops: Sequence[Op], helpers: Mapping[str, Helper]) -> bool:
    """Whether the dynamic form can recompute every scan of the iteration in its consumers'
    loops (`cta_scan.ChunkScan`): each scan is rank 1 and reads no scan, and every value
    derived from scans, all of one direction, is consumed coordinate by coordinate in the
    scan's own block (never inside a region other than generic_reduce's combine, never
    yielded out of a region or helper but a region_scan's emit, whose outputs it is)."""
    return _scan_flow(ops, helpers) is not None


def _scan_flow(ops: Sequence[Op], helpers: Mapping[str, Helper]) -> list[Fact] | None:
    """What `ops` yields, as facts (None: not scan-derived), or None when the block breaks
    the rules of chunk_scans_ok."""
    derived: dict[str, Fact] = {}
    for op in ops:
        if op.name == "yield":
            return [derived.get(name) for name in op.operands]
        helper = callee(op, helpers)
        blocks = [region.ops for region in op.regions] + ([helper.body] if helper is not None else [])
        flows = [flow for block in blocks if (flow := _scan_flow(block, helpers)) is not None]
        if len(flows) != len(blocks):
            return None
        emitted = flows.pop(2) if op.name == "region_scan" else []
        if any(any(flow) for flow in flows):
            return None
        inner = {name for region in op.regions for nested in nested_ops(region.ops, {}) for name in _names_used(nested)}
        if op.name != "generic_reduce" and inner & derived.keys():
            return None
        found = {derived[name] for name in _names_used(op) if name in derived}
        if op.name in SCANS:
            if found:
                return None
            reverse = bool(op.attributes.get("reverse", False))
            derived.update({name: (reverse, type_.shape) for name, type_ in zip(op.results, op.result_types)
                            if isinstance(type_, TensorType)})
            continue
        first_output = len(op.results) - len(emitted)       # emit yields the region_scan's outputs
        for name, type_, fact in zip(op.results[first_output:], op.result_types[first_output:], emitted):
            if fact is not None and isinstance(type_, TensorType):
                derived[name] = (fact[0], type_.shape)
        if not found:
            continue
        fact = next(iter(found))
        if len(found) > 1 or fact is None or not _consumes_by_coordinate(op, fact[1]):
            return None
        if op.name in ELEMENTWISE:
            derived.update(dict.fromkeys(op.results, fact))
    return []


# reduce and arg_reduce: reductions without a region that keep no reduced axis
BUILTIN_REDUCTIONS = ops_where(lambda op: op.family == "reduction" and not op.regions and "reverse" not in op.attrs)
BLOCK_LINE = 64             # a line this long is reduced by the whole CTA, not one thread
STAGED_BYTES = 12 * 1024     # partial reductions' results in shared memory (48 KiB static in all)


def staged_reductions(ops: Iterable[Op], known: Mapping[str, int], threads: int) -> tuple | None:
    """The partial reductions (`reduce` along some axes, a result per remaining coordinate)
    whose results the dynamic form stages in shared memory, as (name, elements, by_block),
    or None when one has a dynamic shape or they do not fit STAGED_BYTES. by_block: at most
    one result a warp, each over a long line (BLOCK_LINE or dynamic), so each result is one
    CTA-wide reduction; otherwise each thread reduces the results it owns on its own."""
    staged: list[tuple[str, int, bool]] = []
    total = 0
    types: dict[str, Type] = {}
    for op in ops:
        types.update(zip(op.results, op.result_types))
        result, source = op.result_types[0] if op.results else None, types.get(op.operands[0] if op.operands else "")
        if op.name not in BUILTIN_REDUCTIONS or not isinstance(result, TensorType) or not result.shape:
            continue
        count, line = _elements(result, known), _elements(source, known) if isinstance(source, TensorType) else None
        if count is None:
            return None
        total += count * 8 * len(op.results)
        long_line = line is None or line >= BLOCK_LINE * count
        # arg_reduce: a thread per result (its pair fold has no CTA-wide form per result)
        by_block = op.name == "reduce" and count * 32 <= threads and long_line
        staged.extend((name, count, by_block) for name in op.results)
    return tuple(staged) if total <= STAGED_BYTES else None


def _elements(type_: TensorType, known: Mapping[str, int]) -> int | None:
    extents = [e if isinstance(e, int) else known.get(e) for e in type_.shape]
    return math.prod(e for e in extents if e is not None) if None not in extents else None
