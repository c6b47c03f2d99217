"""Collision rules of §10 inside `parallel`: unique stores must be provably injective,
plain writes whose address cannot depend on an iteration are provable conflicts, and a
plain read or write whose affine address equals another access's address in a different
iteration (`x[i + 1]` read, `x[i]` written) is a provable collision.

Facts (affine.py) come from the walk: parallel body arguments, iotas, integer constants and
the affine index arithmetic over them. Deps are the parallel variables a value depends on.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ir.nodes import Op
from ..ir.types import Extent
from .affine import determined
from .context import NO_DEPS, Context, Value


def _relevant_vars(ctx, resource) -> list[str]:
    """Parallel variables whose iterations share the resource (it is defined outside them)."""
    names = []
    for depth, frame in ctx.parallel_frames():
        if depth > resource.depth:
            names += [name for name, extent in frame.parallel_vars if not _at_most_one(ctx, extent)]
    return names


def _at_most_one(ctx, extent) -> bool:
    extent = ctx.canon(extent)
    return isinstance(extent, int) and extent <= 1


def unique_store_unproven(ctx: Context, resource: Value, indices: Sequence[Value],
                          access_shape: tuple[Extent, ...]) -> str | None:
    """What keeps a unique_store from being provably injective, or None when it is."""
    ranges = _ranges(ctx, resource, access_shape)
    covered: set = set()
    for value in indices:
        covered |= determined(value.fact, ranges)
    for term in ranges:
        if term not in covered and ranges[term] != 1:
            if term[0] == "var":
                return f"no index determines the iteration variable `%{term[1]}`"
            return f"no index determines the lane coordinate along access axis {len(access_shape) - term[1]}"
    return None


def _ranges(ctx, resource, access_shape) -> dict:
    """Each variable the address must determine, with its static range (None if dynamic)."""
    ranges: dict = {}
    for depth, frame in ctx.parallel_frames():
        if depth > resource.depth:
            for name, extent in frame.parallel_vars:
                ranges[("var", name)] = _static(ctx, extent)
    rank = len(access_shape)
    for axis, extent in enumerate(access_shape):
        ranges[("lane", rank - axis)] = _static(ctx, extent)
    return ranges


def _static(ctx, extent):
    extent = ctx.canon(extent)
    return extent if isinstance(extent, int) else None


def conflicting_var(ctx: Context, resource: Value, values: Sequence[Value]) -> str | None:
    """A parallel variable none of the address, mask or control depends on, if any."""
    deps = ctx.control_deps()
    for value in values:
        deps = deps | (value.deps or NO_DEPS)
    for name in _relevant_vars(ctx, resource):
        if name not in deps:
            return name
    return None


# ---- affine collisions between iterations --------------------------------------------------
@dataclass(frozen=True)
class Access:
    resource: str
    writes: bool
    atomic: bool
    facts: tuple            # one affine fact per index, None where not affine
    op: object


# The iteration difference of accesses whose common address ignores every iteration variable.
EVERY_ITERATION: dict = {}


def record_access(ctx: Context, op: Op, resource: Value, indices: Sequence[Value], masked: bool, writes: bool,
                  atomic: bool = False) -> None:
    """Note a read or write of a resource shared by parallel iterations, and report E733 if
    it provably meets an access of another iteration where one of them is a plain write, or
    one is plain and the other an atomic write (§11: atomics only order atomics). Masked
    accesses and those with lane or non-affine indices are left to run time."""
    if masked:
        return
    access = Access(op.operands[0], writes, atomic, tuple(v.fact for v in indices), op)
    for depth, frame in ctx.parallel_frames():
        if depth <= resource.depth:
            continue
        names = [name for name, _ in frame.parallel_vars]
        for earlier in frame.accesses:
            if earlier.resource != access.resource or not (earlier.writes or writes) or (earlier.atomic and atomic):
                continue
            step = _iteration_step(earlier.facts, access.facts, names)
            if step is not None and _within(ctx, frame, step):
                _report(ctx, op, earlier, access, step)
                return
        frame.accesses.append(access)


def _iteration_step(first: tuple, second: tuple, names: list[str]) -> dict | None:
    """The nonzero iteration difference δ (per variable of the frame) for which `second` at
    iteration i + δ reaches what `first` reaches at i, if the facts prove one exists;
    EVERY_ITERATION when both reach one address that no iteration variable moves."""
    step: dict = {}
    varying = False
    for a, b in zip(first, second):
        if a is None or b is None or any(t[0] == "lane" for t in (*a[1], *b[1])):
            return None
        if {t: c for t, c in a[1].items() if t[1] not in names} != \
                {t: c for t, c in b[1].items() if t[1] not in names}:
            return None     # outer variables enter differently: not provable here
        inner = {t[1]: c for t, c in a[1].items() if t[1] in names}
        if inner != {t[1]: c for t, c in b[1].items() if t[1] in names} or len(inner) > 1:
            return None
        difference = a[0] - b[0]
        if not inner:
            if difference:
                return None      # this index never agrees
            continue
        varying = True
        ((name, coefficient),) = inner.items()
        if difference % coefficient or step.get(name, difference // coefficient) != difference // coefficient:
            return None
        step[name] = difference // coefficient
    if not varying:
        return EVERY_ITERATION
    return {n: d for n, d in step.items() if d} or None


def _within(ctx, frame, step: dict) -> bool:
    """Whether two iterations δ apart exist (a dynamic extent may be large enough)."""
    extents = {name: ctx.canon(extent) for name, extent in frame.parallel_vars}
    if step is EVERY_ITERATION:
        return any(not isinstance(e, int) or e > 1 for e in extents.values())
    return all(not isinstance(extents[n], int) or abs(d) < extents[n] for n, d in step.items())


def _report(ctx, op, earlier: Access, later: Access, step: dict) -> None:
    kinds = (("an atomic " if earlier.atomic else "a ") + ("write" if earlier.writes else "read"),
             ("atomically " if later.atomic else "") + ("writes" if later.writes else "reads"))
    apart = "any two iterations" if step is EVERY_ITERATION else ", ".join(f"`%{n}` {d:+d}" for n, d in step.items())
    ctx.error("E733", op, f"this access {kinds[1]} the element of `%{later.resource}` that {kinds[0]} reaches in "
              f"another iteration ({apart}): a collision of unordered iterations (§10)",
              "read from one view and write another, or order the steps with a loop")
